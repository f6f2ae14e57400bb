/* Frame tags (see tag.h): SipHash-2-4 with its 128-bit output, keyed with
 * the first 16 bytes of the run key, which HMAC-SHA256 derives once per
 * run. SipHash is a PRF made for short inputs: a 150-byte frame costs it
 * about 20 message words of 2 rounds and 8 rounds to finish, where the
 * HMAC-SHA256 it replaced cost 4 SHA-256 compressions (2.5 times as long
 * per frame on the bench machine, with SHA-NI). It needs no nonce, so a
 * block resent under its ID, or a frame written twice, costs no care.
 * Written from the SipHash paper (Aumasson, Bernstein 2012), its 128-bit
 * variant: v1 ^= 0xee at the start, v2 ^= 0xee before the first 4 final
 * rounds, v1 ^= 0xdd before the second 4. No branch and no table depends
 * on the key or the message. */
#include "tag.h"
#include "wire.h"

#include <string.h>

#include <openssl/crypto.h>

/* 20 bytes, its NUL included: nothing else the key proves starts so */
static const char label[] = "gdkit-stream-tag-v2";

struct sip {
	uint64_t v[4];
	uint64_t m;	/* the bytes of the word not yet complete */
	size_t n;	/* bytes so far */
};

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline void sipround(uint64_t v[4])
{
	v[0] += v[1]; v[1] = rotl(v[1], 13); v[1] ^= v[0]; v[0] = rotl(v[0], 32);
	v[2] += v[3]; v[3] = rotl(v[3], 16); v[3] ^= v[2];
	v[0] += v[3]; v[3] = rotl(v[3], 21); v[3] ^= v[0];
	v[2] += v[1]; v[1] = rotl(v[1], 17); v[1] ^= v[2]; v[2] = rotl(v[2], 32);
}

static inline void sipword(uint64_t v[4], uint64_t m)
{
	v[3] ^= m;
	sipround(v);
	sipround(v);
	v[0] ^= m;
}

static void sip_init(struct sip *s, const uint64_t k[2])
{
	s->v[0] = k[0] ^ 0x736f6d6570736575ull;
	s->v[1] = k[1] ^ 0x646f72616e646f6dull ^ 0xee;
	s->v[2] = k[0] ^ 0x6c7967656e657261ull;
	s->v[3] = k[1] ^ 0x7465646279746573ull;
	s->m = 0;
	s->n = 0;
}

static void sip_update(struct sip *s, const uint8_t *p, size_t len)
{
	/* in locals: a store to s could be a byte of p, as far as the
	 * compiler knows, so it would store and reload s per word */
	uint64_t v[4] = { s->v[0], s->v[1], s->v[2], s->v[3] }, m = s->m;
	size_t have = s->n & 7, i;

	s->n += len;
	if (have != 0) {
		for (; len > 0 && have < 8; len--, have++)
			m |= (uint64_t)*p++ << (8 * have);
		if (have == 8) {
			sipword(v, m);
			m = 0;
		}
	}
	for (; len >= 8; p += 8, len -= 8)
		sipword(v, gd_get64(p));
	for (i = 0; i < len; i++)
		m |= (uint64_t)p[i] << (8 * i);
	memcpy(s->v, v, sizeof(v));
	s->m = m;
}

static void sip_final(struct sip *s, uint8_t out[16])
{
	uint64_t *v = s->v;
	int i;

	sipword(v, s->m | (uint64_t)s->n << 56);
	v[2] ^= 0xee;
	for (i = 0; i < 4; i++)
		sipround(v);
	gd_put64(out, v[0] ^ v[1] ^ v[2] ^ v[3]);
	v[1] ^= 0xdd;
	for (i = 0; i < 4; i++)
		sipround(v);
	gd_put64(out + 8, v[0] ^ v[1] ^ v[2] ^ v[3]);
}

void gd_siphash128(const uint8_t key[16], const void *p, size_t n,
    uint8_t out[16])
{
	uint64_t k[2] = { gd_get64(key), gd_get64(key + 8) };
	struct sip s;

	sip_init(&s, k);
	sip_update(&s, p, n);
	sip_final(&s, out);
}

int gd_tagkey_derive(struct gd_tagkey *k, const struct gd_auth_key *psk,
    uint64_t epoch, const char *origin, size_t origin_len)
{
	uint8_t msg[sizeof(label) + 8 + GD_STREAM_ORIGIN_MAX];
	uint8_t rk[GD_AUTH_MAC];
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
		k->sk[0] = gd_get64(rk);
		k->sk[1] = gd_get64(rk + 8);
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

void gd_tag_sframe(const struct gd_tagkey *k, const struct gd_sframe *f,
    uint8_t tag[GD_SFRAME_TAG])
{
	uint8_t hdr[GD_SFRAME_HDR];
	struct sip s;

	gd_sframe_hdr(hdr, f);
	sip_init(&s, k->sk);
	sip_update(&s, hdr, sizeof(hdr));
	if (f->len)
		sip_update(&s, f->data, f->len);
	sip_update(&s, (const uint8_t *)f->origin, f->origin_len);
	sip_final(&s, tag);
}

int gd_tag_check(const struct gd_tagkey *k, const struct gd_sframe *f)
{
	uint8_t want[GD_SFRAME_TAG];
	struct sip s;

	if (!k->set || f->tag_len != GD_SFRAME_TAG || f->tag == NULL ||
	    f->origin != (const char *)f->data + f->len)
		return 0;
	sip_init(&s, k->sk);
	sip_update(&s, f->data - GD_SFRAME_HDR,
	    GD_SFRAME_HDR + (size_t)f->len + f->origin_len);
	sip_final(&s, want);
	return CRYPTO_memcmp(want, f->tag, GD_SFRAME_TAG) == 0;
}
