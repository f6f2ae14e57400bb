/* Frame tags (gdkit-stream(5), TAGS): with a pre-shared key, every frame
 * of gdpub -o carries the first GD_SFRAME_TAG bytes of
 *
 *   HMAC-SHA256(run key, every byte of the frame before the tag)
 *   run key = HMAC-SHA256(pre-shared key, "gdkit-stream-tag-v1" NUL
 *                         u64 epoch (little-endian), origin)
 *
 * so that a client of the engine the frames travel through, who can read
 * them but has no key, cannot make one gdsub -i accepts, and a frame of
 * one run (epoch) or publisher (origin) does not verify as another's.
 * The header's tag length is covered too: stripping a tag changes what
 * it covers. The run key is derived once per run, and both HMAC pads of
 * it are hashed once, so a frame costs the hash of itself and of 32 more
 * bytes. */
#ifndef GD_TAG_H
#define GD_TAG_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "stream.h"

/* A run key, ready to tag: the SHA-256 states after each HMAC pad, kept
 * as bytes so that this header needs no OpenSSL one. */
struct gd_tagkey {
	int set;
	uint64_t epoch;
	size_t origin_len;
	char origin[GD_STREAM_ORIGIN_MAX];
	uint64_t st[2][16];
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

/* The tag of f, a frame to write with f->tag_len GD_SFRAME_TAG, from its
 * fields (its header as gd_sframe_hdr writes it, payload, origin). */
void gd_tag_sframe(const struct gd_tagkey *k, const struct gd_sframe *f,
    uint8_t tag[GD_SFRAME_TAG]);
/* 1 when f, a frame read in place by gd_sreader_next (its header at
 * f->data - GD_SFRAME_HDR, its origin right after the payload), carries
 * the tag k gives it; 0 when it does not or carries none. The comparison
 * takes the same time wherever the bytes differ. */
int gd_tag_check(const struct gd_tagkey *k, const struct gd_sframe *f);

#endif
