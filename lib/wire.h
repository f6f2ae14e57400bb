/* The wire codec between gdpub and gdsub: length-prefixed frames with a
 * fixed 8-byte header, little-endian integers. Blocks carry id, sequence
 * index and publish time; acks carry many (id, sequence index) pairs per
 * frame: the pair names the very block acknowledged, so an ack of an
 * earlier block with a re-published id never counts for the new one.
 * Every decoder checks lengths against an explicit bound before touching
 * the body. */
#ifndef GD_WIRE_H
#define GD_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "auth.h"
#include "dbuf.h"

/* 2: acks name (id, seq); 3: the hello carries a nonce and says whether
 * the subscriber has a key (CHALLENGE and PROOF, see below), the gdsub's
 * run and its QoS; CONFIRM and REFUSE; 4: SEAL frames (seal.h) follow
 * every write on plain TCP, a MAC with a key, else a CRC32C */
#define GD_WIRE_VERSION 4
#define GD_WIRE_HDR 8			/* u32 body length, u8 type, u8 flags, u16 0 */
#define GD_BLOCK_HDR (GD_WIRE_HDR + 24)	/* + u64 id, u64 seq, u64 time_ns */
#define GD_CTRL_MAX 4096		/* bound on every non-block frame body */
#define GD_ACK_SIZE 16			/* u64 id, u64 seq */
#define GD_ACKS_PER_FRAME (GD_CTRL_MAX * 64 / GD_ACK_SIZE)

enum gd_ftype {
	GD_F_HELLO = 1,		/* sub -> pub: version, gd, want data, name */
	GD_F_WELCOME = 2,	/* pub -> sub: version, ack status, limits, origin */
	GD_F_BLOCK = 3,		/* pub -> sub: one event block */
	GD_F_ACK = 4,		/* sub -> pub: n x (u64 id, u64 seq) */
	GD_F_FLOOR = 5,		/* pub -> sub: every seq below this is resolved */
	GD_F_END = 6,		/* pub -> sub: the stream has ended */
	GD_F_BYE = 7,		/* sub -> pub: unsubscribe */
	GD_F_CHALLENGE = 8,	/* pub -> sub: nonce, publisher's proof */
	GD_F_PROOF = 9,		/* sub -> pub: subscriber's proof */
	GD_F_CONFIRM = 10,	/* sub -> pub: u64 seq of the last block it wrote
				 * out (reliability=ordered) */
	GD_F_REFUSE = 11,	/* pub -> sub: the subscription is refused, why */
	GD_F_CONSUMED = 12,	/* sub -> pub: u64 seq: the first stage of the
				 * pipeline has read every block up to it that
				 * gdsub wrote (sent only to a publisher whose
				 * welcome has GD_WF_CONSUMED) */
	GD_F_SEAL = 13,		/* both ways, plain TCP: the seal of every byte
				 * written since the last (seal.h) */
	GD_F_MAX = 13,
	/* a number apart from the handshake's: multisend clusters (cluster.h) */
	GD_F_PREACK = 32,	/* sub -> cluster member: n x u64 id, the keys
				 * @CLUSTER/ID acknowledged from another member */
};
#define GD_PREACK_SIZE 8

/* The handshake (version 4). The subscriber speaks first:
 *   HELLO      version, gd, want data, flags (GD_HF_AUTH: it has a key),
 *              its nonce nc, its run, name, QoS (struct gd_hello)
 * Neither side has a key: the publisher answers WELCOME at once. Both do:
 *   CHALLENGE  the publisher's nonce ns, HMAC(key, "...pub >" nc ns)
 *   PROOF      HMAC(key, "...sub <" nc ns), once the subscriber checked
 *              the publisher's proof (it closes otherwise)
 *   WELCOME    when the proof is right, else a refusal and the close.
 * Only one side has a key, or the versions differ: a WELCOME whose ack
 * status says why (GD_ACK_AUTH_*, GD_ACK_VERSION), and the close; a
 * subscriber of an earlier version reads the WELCOME as a refusal. Nothing
 * but HELLO, PROOF and SEAL is read before the handshake is done, within
 * GD_HANDSHAKE_MS of the connect.
 *
 * Seals (seal.h), on plain TCP only (TLS protects every byte already):
 * without keys (CRC), each side seals everything it writes from its
 * first byte, HELLO and WELCOME included. With keys (MAC), the HELLO and
 * CHALLENGE go unsealed (the session keys bind the HELLO, the CHALLENGE
 * carries its proof), and everything after them is sealed, PROOF and
 * WELCOME included. Two refusals go unsealed: of another version (a
 * subscriber reads a WELCOME of an earlier version unsealed, as the
 * refusal it is) and of a subscriber with a key by a gdpub without one
 * (that subscriber reads unsealed until its PROOF is out). */
#define GD_HF_AUTH 0x01
#define GD_HELLO_FIXED (8 + GD_AUTH_NONCE)	/* before the run */
#define GD_HELLO_NAME_AT (GD_HELLO_FIXED + 9)	/* run, name length */
#define GD_CHALLENGE_LEN (GD_AUTH_NONCE + GD_AUTH_MAC)
#define GD_PROOF_LEN GD_AUTH_MAC
#define GD_HANDSHAKE_MS 5000

/* block flags */
#define GD_FL_RESENT 0x01
#define GD_FL_SNAPSHOT 0x02

/* WELCOME ack status */
enum gd_ack_status {
	GD_ACK_OK = 0,		/* this connection counts as a GD subscriber */
	GD_ACK_NONE = 1,	/* subscriber asked for no acknowledgements */
	GD_ACK_FULL = 2,	/* refused: numSubs GD subscribers already */
	GD_ACK_NAME = 3,	/* refused: a subscriber of that name is connected */
	GD_ACK_OFF = 4,		/* refused: the publisher runs with numSubs=0 */
	/* the connection is refused, not only its acknowledgements: */
	GD_ACK_AUTH_NEEDED = 5,	/* the publisher has a key, the subscriber none */
	GD_ACK_AUTH_FAILED = 6,	/* the subscriber's proof was wrong */
	GD_ACK_AUTH_NOKEY = 7,	/* the subscriber has a key, the publisher none */
	GD_ACK_VERSION = 8,	/* the subscriber speaks another version */
};
/* a WELCOME with this status closes the connection */
static inline int gd_ack_refused_conn(int st)
{
	return st >= GD_ACK_AUTH_NEEDED && st <= GD_ACK_VERSION;
}
/* a refusal of the key (GDpub_authKeyFile, GDsub_authKeyFile): one that
 * no retry can change */
static inline int gd_ack_auth_refused(int st)
{
	return st >= GD_ACK_AUTH_NEEDED && st <= GD_ACK_AUTH_NOKEY;
}
const char *gd_ack_status_str(int st);

struct gd_frame {
	uint8_t type;
	uint8_t flags;
	uint32_t len;		/* body length */
	const uint8_t *body;
};

struct gd_block {
	uint64_t id;
	uint64_t seq;
	uint64_t time_ns;
	uint8_t flags;
	uint32_t len;
	const uint8_t *data;
};

/* HELLO body (versions 3 and 4): u16 version, u8 gd, u8 want data, u8 flags,
 * 3 zero bytes, the nonce (GD_AUTH_NONCE bytes), u64 run (the gdsub
 * process: a reconnect of the same run continues its subscription), u8
 * name length, the name, then the QoS as NAME=VALUE lines (the rest). */
#define GD_QOS_MAX 1024
struct gd_hello {
	unsigned version, gd, want_data, flags;
	uint8_t nonce[GD_AUTH_NONCE];
	uint64_t run;
	char name[256];
	char qos[GD_QOS_MAX];	/* NAME=VALUE lines, '\n'-separated */
};

#define GD_WF_STREAM 0x01	/* blocks go out as a framed stream (gdpub -o) */
#define GD_WF_TAGS 0x02		/* and every frame carries a tag (tag.h); a
				 * reader of version 3 without it ignores it */
#define GD_WF_CONSUMED 0x04	/* the publisher reads GD_F_CONSUMED: a
				 * subscriber reports what its first stage
				 * read, along with its acks (a publisher
				 * without it would take the frame for a
				 * malformed one; a subscriber that never
				 * sends it leaves the window to the ACKs) */

struct gd_welcome {
	unsigned version, ack_status, flags;
	uint32_t num_subs, max_block, timeout_ms;
	uint64_t epoch;
	char origin[300];
};

/* Little-endian on the wire: on a little-endian host one move each (gcc
 * did not merge the byte stores: 57 instructions an acknowledgement). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define GD_WIRE_HOST_LE 1
#else
#define GD_WIRE_HOST_LE 0
#endif
static inline void gd_put32(uint8_t *p, uint32_t v)
{
	if (GD_WIRE_HOST_LE) {
		memcpy(p, &v, 4);
		return;
	}
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void gd_put64(uint8_t *p, uint64_t v)
{
	if (GD_WIRE_HOST_LE) {
		memcpy(p, &v, 8);
		return;
	}
	gd_put32(p, (uint32_t)v);
	gd_put32(p + 4, (uint32_t)(v >> 32));
}
static inline uint32_t gd_get32(const uint8_t *p)
{
	uint32_t v;

	if (GD_WIRE_HOST_LE) {
		memcpy(&v, p, 4);
		return v;
	}
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}
static inline uint64_t gd_get64(const uint8_t *p)
{
	uint64_t v;

	if (GD_WIRE_HOST_LE) {
		memcpy(&v, p, 8);
		return v;
	}
	return (uint64_t)gd_get32(p) | (uint64_t)gd_get32(p + 4) << 32;
}

static inline void gd_wire_hdr(uint8_t *p, uint8_t type, uint8_t flags,
    uint32_t len)
{
	gd_put32(p, len);
	p[4] = type;
	p[5] = flags;
	p[6] = p[7] = 0;
}

/* The GD_BLOCK_HDR bytes of a block frame before its payload. */
static inline void gd_wire_block_hdr(uint8_t *dst, const struct gd_block *b)
{
	gd_wire_hdr(dst, GD_F_BLOCK, b->flags, 24 + b->len);
	gd_put64(dst + 8, b->id);
	gd_put64(dst + 16, b->seq);
	gd_put64(dst + 24, b->time_ns);
}

/* Encode a block frame at dst (GD_BLOCK_HDR + len bytes); returns size. */
static inline size_t gd_wire_block(uint8_t *dst, const struct gd_block *b)
{
	gd_wire_block_hdr(dst, b);
	if (b->len)
		memcpy(dst + GD_BLOCK_HDR, b->data, b->len);
	return GD_BLOCK_HDR + (size_t)b->len;
}

/* Next frame in buf[0..len). Returns 1 and fills *f and *used, 0 when more
 * bytes are needed, -1 when the frame is malformed (unknown type, reserved
 * bits set, a body over max_block+24 for blocks, over GD_CTRL_MAX*64 for
 * acks and pre-acks (up to GD_ACKS_PER_FRAME) or GD_CTRL_MAX for the
 * rest, or an ack (pre-ack) body that is not a multiple of GD_ACK_SIZE
 * (GD_PREACK_SIZE)). */
int gd_wire_next(const uint8_t *buf, size_t len, uint32_t max_block,
    struct gd_frame *f, size_t *used);

/* Write one acknowledgement (GD_ACK_SIZE bytes) of an ack frame body. */
static inline void gd_wire_ack_put(uint8_t *p, uint64_t id, uint64_t seq)
{
	gd_put64(p, id);
	gd_put64(p + 8, seq);
}
/* The i-th acknowledgement of an ack frame body. */
static inline void gd_wire_ack_at(const uint8_t *body, uint32_t i,
    uint64_t *id, uint64_t *seq)
{
	*id = gd_get64(body + (size_t)GD_ACK_SIZE * i);
	*seq = gd_get64(body + (size_t)GD_ACK_SIZE * i + 8);
}

int gd_wire_get_block(const struct gd_frame *f, struct gd_block *b);
/* 0, or -1 when malformed; a hello of another version fills only
 * h->version and returns 0, so that the caller can refuse it by name. */
int gd_wire_get_hello(const struct gd_frame *f, struct gd_hello *h);
int gd_wire_get_welcome(const struct gd_frame *f, struct gd_welcome *w);

/* Encoders for control frames; dst must hold GD_WIRE_HDR + GD_CTRL_MAX. */
size_t gd_wire_hello(uint8_t *dst, const struct gd_hello *h);
size_t gd_wire_welcome(uint8_t *dst, const struct gd_welcome *w);
size_t gd_wire_u64(uint8_t *dst, uint8_t type, uint64_t v);
size_t gd_wire_empty(uint8_t *dst, uint8_t type);
/* CHALLENGE (nonce, proof) and PROOF (proof) */
size_t gd_wire_challenge(uint8_t *dst, const uint8_t ns[GD_AUTH_NONCE],
    const uint8_t proof[GD_AUTH_MAC]);
size_t gd_wire_proof(uint8_t *dst, const uint8_t proof[GD_AUTH_MAC]);
/* A frame whose body is text (REFUSE), cut at GD_CTRL_MAX bytes. */
size_t gd_wire_text(uint8_t *dst, uint8_t type, const char *text);
/* Its text, printable, NUL-terminated in dst[sz]. */
void gd_wire_get_text(const struct gd_frame *f, char *dst, size_t sz);

/* A receive buffer for one connection: frames are parsed in place and the
 * partial tail moved to the front. Its bytes are a gd_dbuf capped by the
 * owner at the largest frame it accepts plus what one read adds: after a
 * parse less than a frame is left, so only a read past that bound could
 * pass the cap, and that is an error the owner reports. */
struct gd_rbuf {
	struct gd_dbuf d;	/* the bytes received */
	size_t off;		/* parsed up to here */
};
/* first bytes allocated now (a connection's reads then allocate nothing
 * until a frame is larger), at most max ever. 0, or -1 out of memory. */
int gd_rbuf_init(struct gd_rbuf *r, size_t first, size_t max);
void gd_rbuf_free(struct gd_rbuf *r);
/* Room to read into, at least min bytes: the parsed bytes dropped first,
 * then grown. GD_DBUF_OK; or GD_DBUF_TOOBIG (the cap: the peer sent more
 * than the bound allows) or GD_DBUF_NOMEM, and then *p and *n are not
 * set. */
GD_DBUF_CHECK int gd_rbuf_space(struct gd_rbuf *r, size_t min, uint8_t **p,
    size_t *n);
/* n bytes were read into the room gd_rbuf_space gave. */
static inline void gd_rbuf_commit(struct gd_rbuf *r, size_t n)
{
	gd_dbuf_commit(&r->d, n);
}
/* The bytes received and not parsed yet: gd_rbuf_avail of them at
 * gd_rbuf_head. */
static inline const uint8_t *gd_rbuf_head(const struct gd_rbuf *r)
{
	return r->d.buf != NULL ? (const uint8_t *)r->d.buf + r->off : NULL;
}
static inline size_t gd_rbuf_avail(const struct gd_rbuf *r)
{
	return r->d.len - r->off;
}
/* Where the next read's bytes go (before their commit). */
static inline const uint8_t *gd_rbuf_end(const struct gd_rbuf *r)
{
	return (const uint8_t *)gd_dbuf_end(&r->d);
}
/* n bytes at the head were parsed. */
static inline void gd_rbuf_skip(struct gd_rbuf *r, size_t n)
{
	r->off += n;
}
/* Nothing held (a new connection's first read). */
static inline void gd_rbuf_clear(struct gd_rbuf *r)
{
	gd_dbuf_reset(&r->d);
	r->off = 0;
}
/* Drop parsed bytes at the front, keep the rest. */
void gd_rbuf_compact(struct gd_rbuf *r);
/* A frame of total bytes starts at the head: room for all of it now, in
 * one allocation of that size (not doubled up to it). GD_DBUF_* codes. */
GD_DBUF_CHECK int gd_rbuf_expect(struct gd_rbuf *r, size_t total);
/* Hand the buffer's memory to the caller (who frees it: the bytes parsed
 * stay valid in it); the bytes not parsed yet move to a new one of first
 * bytes. NULL when out of memory (the buffer is then as it was). */
uint8_t *gd_rbuf_take(struct gd_rbuf *r, size_t first);

#endif
