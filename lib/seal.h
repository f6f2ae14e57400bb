/* The seals of the plain TCP wire between gdpub and gdsub (wire protocol
 * 4): each side follows every write with a SEAL frame that covers every
 * byte it wrote since its previous seal (the span), and the receiver acts
 * on no frame before the seal after it verifies. Seals are numbered
 * implicitly, per direction, from 0: a span replayed, dropped or
 * reordered within the connection fails the next seal.
 *
 *   MAC  (both sides have GDpub_authKeyFile / GDsub_authKeyFile): the
 *        seal is the 16-byte GMAC (AES-256-GCM over no plaintext, the span
 *        as additional data) under the direction's session key, the IV
 *        the seal's number. The session keys are HMAC-SHA256(key, label
 *        of the direction || nc || ns || SHA-256 of the HELLO's body):
 *        fresh for each connection (both nonces), one per direction (a
 *        seal cannot be reflected), and bound to what the HELLO said.
 *   CRC  (no key): the seal is the CRC32C of the seal's number (u64) and
 *        the span: it finds damage on the way, not an adversary.
 *   OFF  with TLS (which protects every byte already), and for the few
 *        frames the handshake reads before the mode is known (wire.h).
 *
 * A span holds at most GD_SEAL_SPAN bytes, or one frame of any size. */
#ifndef GD_SEAL_H
#define GD_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "wire.h"

#define GD_SEAL_SPAN (256u * 1024)	/* bytes of frames under one seal */
#define GD_SEAL_TAG 16			/* a MAC seal's body */
#define GD_SEAL_CRC_LEN 4		/* a CRC seal's body */
#define GD_SEAL_FRAME_MAX (GD_WIRE_HDR + GD_SEAL_TAG)
#define GD_SEAL_KEY 32			/* a session key: AES-256 */

enum gd_seal_mode { GD_SEAL_OFF = 0, GD_SEAL_CRC = 1, GD_SEAL_MAC = 2 };
/* which way the bytes go: the session keys differ */
enum gd_seal_dir { GD_SEAL_P2S = 0, GD_SEAL_S2P = 1 };

/* One direction of one connection, at either end. */
struct gd_seal {
	int mode;
	uint64_t seq;		/* the number of the next seal */
	void *ctx;		/* MAC: its cipher context */
	/* the receiving end: of the bytes after the rbuf's head, scanned
	 * are frames read without a seal yet; ready are frames whose seal
	 * verified (acted on one by one), followed by their seal of
	 * seal_len bytes */
	size_t scanned, ready, seal_len;
	uint32_t limit;		/* the block limit of the whole scan */
	int relimit;		/* ... which changed during it: read the
				 * frames again as they are handed out */
	size_t bad_at;		/* where the frame gd_seal_next found
				 * malformed starts, after the head */
};

/* SHA-256 of a HELLO frame's body: 0, or -1. */
int gd_seal_hello_hash(const uint8_t *body, size_t len, uint8_t out[32]);

/* Start sealing (or checking) in mode, with its session key for MAC
 * (NULL otherwise); a seal already started is freed first. 0, or -1 out
 * of memory. */
int gd_seal_start(struct gd_seal *s, int mode, const uint8_t *key);
void gd_seal_free(struct gd_seal *s);
/* Both directions of a connection in MAC mode: tx seals what role
 * writes, rx checks what the other side writes, under the session keys
 * of key, the subscriber's nonce nc, the publisher's ns and the HELLO's
 * hash hh (gd_seal_hello_hash). 0, or -1. */
int gd_seal_start_macs(struct gd_seal *tx, struct gd_seal *rx,
    const struct gd_auth_key *key, enum gd_auth_role role,
    const uint8_t nc[GD_AUTH_NONCE], const uint8_t ns[GD_AUTH_NONCE],
    const uint8_t hh[32]);
static inline int gd_seal_on(const struct gd_seal *s)
{
	return s->mode != GD_SEAL_OFF;
}

/* The seal of span[0..len) written at dst (GD_SEAL_FRAME_MAX bytes of
 * room), the seal's number counted: its size, or 0 when the cipher
 * failed. */
size_t gd_seal_make(struct gd_seal *s, const uint8_t *span, size_t len,
    uint8_t *dst);
/* The same for a span in two parts, a[0..alen) then b[0..blen): a large
 * block's frame whose payload is written from where it was read. */
size_t gd_seal_make2(struct gd_seal *s, const uint8_t *a, size_t alen,
    const uint8_t *b, size_t blen, uint8_t *dst);
/* 1 when the seal frame f is the one for span[0..len) (the number
 * counted), else 0. */
int gd_seal_check(struct gd_seal *s, const uint8_t *span, size_t len,
    const struct gd_frame *f);

/* How many bytes at the front of buf[0..len) (whole frames) go under the
 * first seal: up to GD_SEAL_SPAN, or the first frame alone when it is
 * larger. A sender cuts its write into such pieces, each followed by its
 * seal. */
size_t gd_seal_cut(const uint8_t *buf, size_t len);

/* The receiving end: the next frame to act on from r, once the seal after
 * it verified (the seal frames themselves skipped); with the mode off,
 * simply the next frame. 1 and *f; 0 when more bytes are needed; -1 a
 * malformed frame (at s->bad_at after the head), or a span over its
 * bound; GD_SEAL_BAD (-2) the seal did not verify. */
#define GD_SEAL_BAD (-2)
int gd_seal_next(struct gd_seal *s, struct gd_rbuf *r, uint32_t max_block,
    struct gd_frame *f);
/* Frames are waiting for their seal, or verified and not acted on yet:
 * the mode may not change now. */
static inline int gd_seal_busy(const struct gd_seal *s)
{
	return s->scanned > 0 || s->ready > 0;
}

#endif
