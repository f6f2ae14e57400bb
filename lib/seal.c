/* Seals of the plain TCP wire (seal.h): the session keys, GMAC or CRC32C
 * over each span, and the receiving end's scan for the seal that lets the
 * frames before it be acted on. GMAC rather than HMAC-SHA256: with AES-NI
 * and carry-less multiplication OpenSSL's GHASH takes a fraction of a
 * cycle a byte, several times less than SHA-256 even with the SHA
 * extensions, and a connection's key with a counter IV never repeats an
 * IV under one key. */
#include "seal.h"
#include "stream.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

/* 21 bytes each, NUL excluded: the direction the key seals */
static const char label_p2s[] = "gdkit-seal-v4 pub>sub";
static const char label_s2p[] = "gdkit-seal-v4 sub>pub";

int gd_seal_hello_hash(const uint8_t *body, size_t len, uint8_t out[32])
{
	unsigned int n = 0;

	return EVP_Digest(body, len, out, &n, EVP_sha256(), NULL) == 1 &&
	    n == 32 ? 0 : -1;
}

/* The session key of direction dir. */
static int seal_key(const struct gd_auth_key *key, enum gd_seal_dir dir,
    const uint8_t nc[GD_AUTH_NONCE], const uint8_t ns[GD_AUTH_NONCE],
    const uint8_t hh[32], uint8_t out[GD_SEAL_KEY])
{
	uint8_t msg[sizeof(label_p2s) - 1 + 2 * GD_AUTH_NONCE + 32];
	size_t ll = sizeof(label_p2s) - 1;
	int rc;

	memcpy(msg, dir == GD_SEAL_P2S ? label_p2s : label_s2p, ll);
	memcpy(msg + ll, nc, GD_AUTH_NONCE);
	memcpy(msg + ll + GD_AUTH_NONCE, ns, GD_AUTH_NONCE);
	memcpy(msg + ll + 2 * GD_AUTH_NONCE, hh, 32);
	rc = gd_auth_hmac(key->k, key->len, msg, sizeof(msg), out);
	OPENSSL_cleanse(msg, sizeof(msg));
	return rc;
}

void gd_seal_free(struct gd_seal *s)
{
	if (s->ctx != NULL)
		EVP_CIPHER_CTX_free(s->ctx);	/* wipes the key schedule */
	memset(s, 0, sizeof(*s));
}

int gd_seal_start(struct gd_seal *s, int mode, const uint8_t *key)
{
	EVP_CIPHER_CTX *c;

	gd_seal_free(s);
	if (mode == GD_SEAL_MAC) {
		if ((c = EVP_CIPHER_CTX_new()) == NULL)
			return -1;
		if (EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key,
		    NULL) != 1) {
			EVP_CIPHER_CTX_free(c);
			return -1;
		}
		s->ctx = c;
	}
	s->mode = mode;
	return 0;
}

int gd_seal_start_macs(struct gd_seal *tx, struct gd_seal *rx,
    const struct gd_auth_key *key, enum gd_auth_role role,
    const uint8_t nc[GD_AUTH_NONCE], const uint8_t ns[GD_AUTH_NONCE],
    const uint8_t hh[32])
{
	enum gd_seal_dir out = role == GD_AUTH_PUB ? GD_SEAL_P2S : GD_SEAL_S2P;
	enum gd_seal_dir in = role == GD_AUTH_PUB ? GD_SEAL_S2P : GD_SEAL_P2S;
	uint8_t k[GD_SEAL_KEY];
	int rc;

	rc = seal_key(key, out, nc, ns, hh, k) != 0 ||
	    gd_seal_start(tx, GD_SEAL_MAC, k) != 0 ||
	    seal_key(key, in, nc, ns, hh, k) != 0 ||
	    gd_seal_start(rx, GD_SEAL_MAC, k) != 0 ? -1 : 0;
	OPENSSL_cleanse(k, sizeof(k));
	return rc;
}

/* The seal's body for the span a[0..alen) then b[0..blen) (a large
 * block's head and payload, apart in memory) under the seal numbered
 * s->seq: 0, or -1. */
static int seal_body2(struct gd_seal *s, const uint8_t *a, size_t alen,
    const uint8_t *b, size_t blen, uint8_t *out)
{
	const uint8_t *part[2] = { a, b };
	size_t plen[2] = { alen, blen }, len;
	uint8_t iv[12] = { 0 }, sq[8];
	uint32_t crc;
	int n, i;

	if (s->mode == GD_SEAL_CRC) {
		gd_put64(sq, s->seq);
		crc = gd_crc32c(0, sq, 8);
		for (i = 0; i < 2; i++)
			if (plen[i] > 0)
				crc = gd_crc32c(crc, part[i], plen[i]);
		gd_put32(out, crc);
		return 0;
	}
	gd_put64(iv + 4, s->seq);
	if (EVP_EncryptInit_ex(s->ctx, NULL, NULL, NULL, iv) != 1)
		return -1;
	for (i = 0; i < 2; i++) {
		const uint8_t *span = part[i];

		/* the span as additional data, int-sized */
		for (len = plen[i]; len > 0; ) {
			size_t k = len > (1u << 30) ? (1u << 30) : len;
			if (EVP_EncryptUpdate(s->ctx, NULL, &n, span,
			    (int)k) != 1)
				return -1;
			span += k;
			len -= k;
		}
	}
	if (EVP_EncryptFinal_ex(s->ctx, sq, &n) != 1 ||
	    EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_GCM_GET_TAG, GD_SEAL_TAG,
	    out) != 1)
		return -1;
	return 0;
}

static int seal_body(struct gd_seal *s, const uint8_t *span, size_t len,
    uint8_t *out)
{
	return seal_body2(s, span, len, NULL, 0, out);
}

static size_t body_len(const struct gd_seal *s)
{
	return s->mode == GD_SEAL_MAC ? GD_SEAL_TAG : GD_SEAL_CRC_LEN;
}

size_t gd_seal_make(struct gd_seal *s, const uint8_t *span, size_t len,
    uint8_t *dst)
{
	return gd_seal_make2(s, span, len, NULL, 0, dst);
}

size_t gd_seal_make2(struct gd_seal *s, const uint8_t *a, size_t alen,
    const uint8_t *b, size_t blen, uint8_t *dst)
{
	size_t bl = body_len(s);

	if (seal_body2(s, a, alen, b, blen, dst + GD_WIRE_HDR) != 0)
		return 0;
	gd_wire_hdr(dst, GD_F_SEAL, 0, (uint32_t)bl);
	s->seq++;
	return GD_WIRE_HDR + bl;
}

int gd_seal_check(struct gd_seal *s, const uint8_t *span, size_t len,
    const struct gd_frame *f)
{
	uint8_t want[GD_SEAL_TAG];
	size_t bl = body_len(s);

	if (f->type != GD_F_SEAL || f->len != bl ||
	    seal_body(s, span, len, want) != 0 ||
	    CRYPTO_memcmp(want, f->body, bl) != 0)
		return 0;
	s->seq++;
	return 1;
}

size_t gd_seal_cut(const uint8_t *buf, size_t len)
{
	size_t pos = 0, flen;

	if (len <= GD_SEAL_SPAN)
		return len;
	while (pos + GD_WIRE_HDR <= len) {
		flen = GD_WIRE_HDR + (size_t)gd_get32(buf + pos);
		if (pos > 0 && pos + flen > GD_SEAL_SPAN)
			break;
		pos += flen;
		if (pos >= GD_SEAL_SPAN)
			break;	/* one frame over the bound: alone */
	}
	return pos < len ? pos : len;
}

int gd_seal_next(struct gd_seal *s, struct gd_rbuf *r, uint32_t max_block,
    struct gd_frame *f)
{
	const uint8_t *h;
	size_t avail, used;
	int rc;

	for (;;) {
		h = gd_rbuf_head(r);
		avail = gd_rbuf_avail(r);
		s->bad_at = 0;
		if (s->mode == GD_SEAL_OFF) {
			if ((rc = gd_wire_next(h, avail, max_block, f,
			    &used)) == 1)
				gd_rbuf_skip(r, used);
			return rc;
		}
		if (s->ready > 0) {
			/* checked by the scan, unless the limit changed since
			 * (a welcome's block size): then read again */
			if (max_block == s->limit && !s->relimit) {
				f->len = gd_get32(h);
				f->type = h[4];
				f->flags = h[5];
				f->body = h + GD_WIRE_HDR;
				used = GD_WIRE_HDR + (size_t)f->len;
			} else if (gd_wire_next(h, s->ready, max_block, f,
			    &used) != 1)
				return -1;
			gd_rbuf_skip(r, used);
			if ((s->ready -= used) == 0) {
				gd_rbuf_skip(r, s->seal_len);
				s->seal_len = 0;
			}
			return 1;
		}
		if (s->scanned == 0)
			s->limit = max_block, s->relimit = 0;
		else if (s->limit != max_block)
			s->relimit = 1;
		for (;;) {
			rc = gd_wire_next(h + s->scanned, avail - s->scanned,
			    max_block, f, &used);
			if (rc <= 0) {
				s->bad_at = s->scanned;
				return rc;
			}
			if (f->type == GD_F_SEAL)
				break;
			if (s->scanned > 0 && s->scanned + used > GD_SEAL_SPAN) {
				s->bad_at = s->scanned;
				return -1;
			}
			s->scanned += used;
		}
		if (!gd_seal_check(s, h, s->scanned, f))
			return GD_SEAL_BAD;
		s->ready = s->scanned;
		s->scanned = 0;
		if (s->ready == 0)	/* an empty span */
			gd_rbuf_skip(r, used);
		else
			s->seal_len = used;
	}
}
