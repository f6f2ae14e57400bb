/* Frame tags (gdkit-stream(5), TAGS): with a pre-shared key, every frame
 * of gdpub -o carries
 *
 *   SipHash-2-4-128(first 16 bytes of the run key,
 *                   every byte of the frame before the tag)
 *   run key = HMAC-SHA256(pre-shared key, "gdkit-stream-tag-v2" NUL
 *                         u64 epoch (little-endian), origin)
 *
 * so that a client of the engine the frames travel through, who can read
 * them but has no key, cannot make one gdsub -i accepts, and a frame of
 * one run (epoch) or publisher (origin) does not verify as another's.
 * The header's tag length is covered too: stripping a tag changes what
 * it covers.
 *
 * Why SipHash per frame: issue 24 allows tags 15 % of the stream's rate.
 * HMAC-SHA256 per frame (4 SHA-256 compressions, ~250 ns per 158-byte
 * frame on the 2-core bench machine, SHA-NI and all) cost 23 to 41 % of
 * the gdkit_stream rate; SipHash-2-4-128 takes ~100 ns (~110 ns in a
 * running gdpub or gdsub, 13-16 % of its CPU), and the keyed row came
 * within 4 to 13 % on a quiet machine (tests/bench: RUNS=5 N=200000).
 * It is a PRF built for short inputs, with a 128-bit key and output, and
 * needs no nonce: blocks are resent under the same ID, and a journal
 * restart keeps the epoch, so a nonce-based MAC (GMAC, Poly1305) would
 * need a counter kept across restarts. AES through libcrypto was slower
 * (CMAC by EVP_MAC ~450 ns; a CBC-MAC chain of EVP calls ~250 ns); an
 * AES-NI MAC of our own would need its own key schedule and, to beat
 * SipHash, a parallel mode (PMAC) or a polynomial hash: more to get
 * wrong than the gain. One tag over several frames would hold each frame
 * back until the batch's tag came, and save only SipHash's final rounds.
 * HMAC-SHA256 still derives the run key, once per run.
 * The label says v2: this key feeds another algorithm than v1's did, and
 * one key serves one algorithm. */
#ifndef GD_TAG_H
#define GD_TAG_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "stream.h"

/* A run key, ready to tag: SipHash's two key words (little-endian, as
 * the reference reads its 16 key bytes). */
struct gd_tagkey {
	int set;
	uint64_t epoch;
	size_t origin_len;
	char origin[GD_STREAM_ORIGIN_MAX];
	uint64_t sk[2];
};

/* Derive the key of the run (epoch, origin) from psk into k: 0, or -1
 * (libcrypto failed). */
int gd_tagkey_derive(struct gd_tagkey *k, const struct gd_auth_key *psk,
    uint64_t epoch, const char *origin, size_t origin_len);
/* 1 when k is the key of (epoch, origin). */
int gd_tagkey_is(const struct gd_tagkey *k, uint64_t epoch,
    const char *origin, size_t origin_len);
/* Forget k (wiped). */
void gd_tagkey_clear(struct gd_tagkey *k);

/* Encode f, a frame with f->tag_len GD_SFRAME_TAG, at dst (gd_sframe_tsize
 * bytes) with the tag k gives it; returns the size. The tag is made from
 * the bytes just written, so that SipHash reads one piece. */
size_t gd_tag_sframe_put(const struct gd_tagkey *k, uint8_t *dst,
    const struct gd_sframe *f);
/* 1 when f, a frame read in place by gd_sreader_next (its header at
 * f->data - GD_SFRAME_HDR, its origin right after the payload), carries
 * the tag k gives it; 0 when it does not or carries none. The comparison
 * takes the same time wherever the bytes differ. */
int gd_tag_check(const struct gd_tagkey *k, const struct gd_sframe *f);

/* SipHash-2-4 with 128-bit output of p[0..n) under key, as the reference
 * implementation's vectors_sip128 give it (what the tags are made of). */
void gd_siphash128(const uint8_t key[16], const void *p, size_t n,
    uint8_t out[16]);

#endif
