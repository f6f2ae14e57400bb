/* How far the first stage of gdsub's pipeline has read its standard
 * output. Each block written leaves a mark: the byte of the stream where
 * it ends, its publisher and its sequence index. Told how many bytes of
 * the stream are read (the bytes written less those still in gdsub's
 * buffer, libuv's queue and the pipe: FIONREAD), the marks passed give,
 * per publisher, the last block the stage read whole, which gdsub reports
 * to that publisher (deliver.h). A mark within GD_DRAIN_QUANTUM bytes of
 * the one before, of the same publisher, replaces it, and a full ring
 * takes no new mark of another publisher, so memory is bounded
 * (GD_DRAIN_MARKS) whatever the backlog: a mark read tells of every block
 * before it. Pure: the caller reads the pipe. */
#ifndef GD_DRAIN_H
#define GD_DRAIN_H

#include <stdint.h>

#define GD_DRAIN_MARKS 1024
#define GD_DRAIN_QUANTUM 4096

struct gd_drain_mark {
	uint64_t end;		/* the block's last byte + 1, in the stream */
	uint64_t seq;
	uint32_t who;		/* its publisher (the caller's index) */
};

struct gd_drain {
	struct gd_drain_mark *m;	/* GD_DRAIN_MARKS, from the first */
	uint32_t head, n;
	uint32_t tail;		/* the newest mark, when n > 0 */
	uint64_t from;		/* where the newest mark's bytes start */
	uint64_t read;		/* bytes of the stream read so far */
};

void gd_drain_init(struct gd_drain *d);
void gd_drain_free(struct gd_drain *d);
/* A new mark (gd_drain_mark's slow path). */
int gd_drain_add(struct gd_drain *d, uint64_t end, uint32_t who,
    uint64_t seq);
/* A block of publisher who with sequence index seq ends at byte end of
 * the stream (ends only grow). 0, or -1 out of memory (no mark: the
 * next one tells of this block too). Once a block: the newest mark of
 * the same publisher within the quantum grows, inline. */
static inline int gd_drain_mark(struct gd_drain *d, uint64_t end,
    uint32_t who, uint64_t seq)
{
	struct gd_drain_mark *l;

	if (d->n == 0)
		return gd_drain_add(d, end, who, seq);
	l = &d->m[d->tail];
	if (l->who != who || (end - d->from > GD_DRAIN_QUANTUM &&
	    d->n < GD_DRAIN_MARKS))
		return gd_drain_add(d, end, who, seq);
	l->end = end;
	if (seq > l->seq)
		l->seq = seq;
	return 0;
}
/* The stage has read the stream up to byte read: cb(ctx, mark) for each
 * mark passed, oldest first. Returns the marks passed. */
typedef void (*gd_drain_cb)(void *ctx, const struct gd_drain_mark *m);
unsigned gd_drain_read(struct gd_drain *d, uint64_t read, gd_drain_cb cb,
    void *ctx);
/* Marks not read yet: the caller keeps looking while there are. */
static inline uint32_t gd_drain_waiting(const struct gd_drain *d)
{
	return d->n;
}

#endif
