/* The binary form of gdack's acknowledgements to gdsub (control protocol
 * 3, ctl.h): the request line "ackbin LEN", then LEN bytes of runs, each
 *
 *   u16 OLEN, the origin (OLEN bytes, 1 .. GD_KEY_MAX: HOST:PORT,
 *   [V6]:PORT or @CLUSTER, as the keys begin), u32 COUNT (>= 1), then
 *   COUNT u64 IDs
 *
 * integers little-endian: the keys ORIGIN/ID, without their flags. gdack
 * starts a run where the origin changes; gdsub looks the origin up once a
 * run, and parses no text. The answer is the text form's ("ack OK
 * FAILED" and a line KEY<TAB>REASON per failure). The parser takes the
 * body in pieces as they arrive and never holds more than one origin. */
#ifndef GD_ACKBIN_H
#define GD_ACKBIN_H

#include "ctlproto.h"
#include "dbuf.h"
#include "key.h"

#include <stddef.h>
#include <stdint.h>

/* The most bytes of a batch: GD_CTL_MAX_KEYS keys, each in a run of its
 * own with the longest origin. */
#define GD_ACKBIN_MAX ((uint64_t)GD_CTL_MAX_KEYS * (2 + GD_KEY_MAX + 4 + 8))

/* What the parser calls: at each run's start with its origin (run may be
 * NULL), then with each piece of its IDs: k of them at ids, each read by
 * gd_ackbin_id(ids + 8 * i). A nonzero return stops the parse
 * (gd_ackbin_feed returns -1 with *why NULL). */
struct gd_ackbin_ops {
	int (*run)(void *user, const char *origin, size_t olen);
	int (*ids)(void *user, const char *origin, size_t olen,
	    const char *ids, size_t k);
};
/* The u64 (little-endian) at p. */
uint64_t gd_ackbin_id(const char *p);

/* The parser's place in a batch between pieces. */
struct gd_ackbin {
	uint64_t left;		/* bytes of the batch still to come */
	uint64_t ids;		/* IDs of the current run still to come */
	uint64_t keys;		/* keys of the batch so far */
	size_t olen;
	char origin[GD_KEY_MAX];
};

/* A batch of len bytes starts (len <= GD_ACKBIN_MAX). */
void gd_ackbin_start(struct gd_ackbin *p, uint64_t len);
/* Take what whole items of buf[0, n) there are (n <= p->left), calling
 * ops; the rest (part of a run's head or of an ID) is for the next call,
 * with more bytes in front. Returns the bytes taken, or -1: *why says
 * what is malformed (or is NULL: an op stopped it). When n is all that is
 * left of the batch, all of it must be taken, and a run must not be cut. */
int64_t gd_ackbin_feed(struct gd_ackbin *p, const char *buf, size_t n,
    const struct gd_ackbin_ops *ops, void *user, const char **why);

/* The writer's side (gdack): keys queued as runs in b. Zeroed whenever
 * b is emptied or rewritten. */
struct gd_ackbin_w {
	size_t run;		/* the current run's offset in b */
	size_t olen;		/* its origin's length */
	uint32_t count;		/* its IDs */
	int open;		/* there is a current run */
};
/* Queue ORIGIN/ID: 0, or a GD_DBUF_* error (the queue is as it was). */
int gd_ackbin_add(struct gd_dbuf *b, struct gd_ackbin_w *w,
    const char *origin, size_t olen, uint64_t id);

#endif
