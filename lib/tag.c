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

/* One piece only: the tags cover a frame that lies whole in memory */
static void siphash128(const uint64_t k[2], const uint8_t *p, size_t n,
    uint8_t out[16])
{
	uint64_t v[4] = {
		k[0] ^ 0x736f6d6570736575ull,
		k[1] ^ 0x646f72616e646f6dull ^ 0xee,
		k[0] ^ 0x6c7967656e657261ull,
		k[1] ^ 0x7465646279746573ull,
	};
	uint8_t last[8] = { 0 };
	size_t i;

	for (i = 0; i + 8 <= n; i += 8)
		sipword(v, gd_get64(p + i));
	memcpy(last, p + i, n - i);
	last[7] = (uint8_t)n;
	sipword(v, gd_get64(last));
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

	siphash128(k, p, n, out);
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

size_t gd_tag_sframe_put(const struct gd_tagkey *k, uint8_t *dst,
    const struct gd_sframe *f)
{
	size_t n = gd_sframe_put_body(dst, f);

	siphash128(k->sk, dst, n, dst + n);
	n += GD_SFRAME_TAG;
	gd_put32(dst + n, gd_crc32c(0, dst, n));
	return n + GD_SFRAME_TRAILER;
}

int gd_tag_check(const struct gd_tagkey *k, const struct gd_sframe *f)
{
	uint8_t want[GD_SFRAME_TAG];

	if (!k->set || f->tag_len != GD_SFRAME_TAG || f->tag == NULL ||
	    f->origin != (const char *)f->data + f->len)
		return 0;
	siphash128(k->sk, f->data - GD_SFRAME_HDR,
	    GD_SFRAME_HDR + (size_t)f->len + f->origin_len, want);
	return CRYPTO_memcmp(want, f->tag, GD_SFRAME_TAG) == 0;
}
