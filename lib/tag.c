/* Frame tags (see tag.h). HMAC-SHA256 truncated to 16 bytes: libcrypto is
 * linked already for the handshake's HMAC, and HMAC needs no nonce, so a
 * block resent under its ID, or the same frame written twice, costs no
 * care (GMAC or Poly1305 would need a fresh nonce per frame, a counter
 * to keep across a journal's restart). 128 bits leave a forger one
 * chance in 2^128 per try.
 *
 * The low-level SHA256_* calls, rather than EVP: a precomputed HMAC is
 * two SHA-256 states after the pads, and SHA256_CTX is a plain struct
 * copied by assignment, where EVP_MD_CTX_copy_ex allocates per copy and
 * goes through the provider: 1.4 to 1.9 times as long per 70- to
 * 200-byte frame on the 2-core bench machine (EVP_MAC re-initialised
 * per frame: as slow). A tag then costs its SHA-256 blocks and little
 * else: 4 for a 100-byte block. OpenSSL 3 marks these calls deprecated,
 * not gone; asking for the 1.1.1 API here keeps the warning (an error
 * under -Werror) out. */
#define OPENSSL_API_COMPAT 10101
#include "tag.h"
#include "wire.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#ifdef OPENSSL_NO_DEPRECATED_3_0
#error "frame tags need libcrypto's SHA256_Init family (an OpenSSL built without no-deprecated)"
#endif

/* 20 bytes, its NUL included: nothing else the key proves starts so */
static const char label[] = "gdkit-stream-tag-v1";

_Static_assert(sizeof(SHA256_CTX) <= sizeof(((struct gd_tagkey *)0)->st[0]),
    "a SHA-256 state fits the room gd_tagkey keeps for it");

static void pad_state(uint64_t *dst, const uint8_t key[SHA256_DIGEST_LENGTH],
    uint8_t with)
{
	uint8_t blk[SHA256_CBLOCK];
	SHA256_CTX c;
	size_t i;

	memset(blk, with, sizeof(blk));
	for (i = 0; i < SHA256_DIGEST_LENGTH; i++)
		blk[i] ^= key[i];
	SHA256_Init(&c);
	SHA256_Update(&c, blk, sizeof(blk));
	memcpy(dst, &c, sizeof(c));
	OPENSSL_cleanse(blk, sizeof(blk));
	OPENSSL_cleanse(&c, sizeof(c));
}

int gd_tagkey_derive(struct gd_tagkey *k, const struct gd_auth_key *psk,
    uint64_t epoch, const char *origin, size_t origin_len)
{
	uint8_t msg[sizeof(label) + 8 + GD_STREAM_ORIGIN_MAX];
	uint8_t rk[SHA256_DIGEST_LENGTH];
	int rc;

	gd_tagkey_clear(k);
	if (origin_len == 0 || origin_len > GD_STREAM_ORIGIN_MAX)
		return -1;
	memcpy(msg, label, sizeof(label));
	gd_put64(msg + sizeof(label), epoch);
	memcpy(msg + sizeof(label) + 8, origin, origin_len);
	rc = gd_auth_hmac(psk->k, psk->len, msg, sizeof(label) + 8 + origin_len,
	    rk);
	if (rc == 0) {
		pad_state(k->st[0], rk, 0x36);
		pad_state(k->st[1], rk, 0x5c);
		k->epoch = epoch;
		memcpy(k->origin, origin, origin_len);
		k->origin_len = origin_len;
		k->set = 1;
	}
	OPENSSL_cleanse(rk, sizeof(rk));
	return rc;
}

int gd_tagkey_is(const struct gd_tagkey *k, uint64_t epoch,
    const char *origin, size_t origin_len)
{
	return k->set && k->epoch == epoch && k->origin_len == origin_len &&
	    memcmp(k->origin, origin, origin_len) == 0;
}

void gd_tagkey_clear(struct gd_tagkey *k)
{
	OPENSSL_cleanse(k, sizeof(*k));
}

/* The inner hash's state after the pad, to feed the frame's bytes to. */
static void inner(const struct gd_tagkey *k, SHA256_CTX *c)
{
	memcpy(c, k->st[0], sizeof(*c));
}

static void outer(const struct gd_tagkey *k, SHA256_CTX *c,
    uint8_t tag[GD_SFRAME_TAG])
{
	uint8_t h[SHA256_DIGEST_LENGTH];

	SHA256_Final(h, c);
	memcpy(c, k->st[1], sizeof(*c));
	SHA256_Update(c, h, sizeof(h));
	SHA256_Final(h, c);
	memcpy(tag, h, GD_SFRAME_TAG);
}

void gd_tag_sframe(const struct gd_tagkey *k, const struct gd_sframe *f,
    uint8_t tag[GD_SFRAME_TAG])
{
	uint8_t hdr[GD_SFRAME_HDR];
	SHA256_CTX c;

	gd_sframe_hdr(hdr, f);
	inner(k, &c);
	SHA256_Update(&c, hdr, sizeof(hdr));
	if (f->len)
		SHA256_Update(&c, f->data, f->len);
	SHA256_Update(&c, f->origin, f->origin_len);
	outer(k, &c, tag);
}

int gd_tag_check(const struct gd_tagkey *k, const struct gd_sframe *f)
{
	uint8_t want[GD_SFRAME_TAG];
	SHA256_CTX c;

	if (!k->set || f->tag_len != GD_SFRAME_TAG || f->tag == NULL ||
	    f->origin != (const char *)f->data + f->len)
		return 0;
	inner(k, &c);
	SHA256_Update(&c, f->data - GD_SFRAME_HDR,
	    GD_SFRAME_HDR + (size_t)f->len + f->origin_len);
	outer(k, &c, want);
	return CRYPTO_memcmp(want, f->tag, GD_SFRAME_TAG) == 0;
}
