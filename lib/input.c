/* Chunked record input (see input.h): chunks, the splitters that cut what
 * was read into regions of whole records or frames, and the loop's side
 * (take, free a region). Only the loop thread touches refs and idx; the
 * reader and the loop share the region queue and the free list under one
 * mutex (uncontended in loop mode, where the loop is the reader). The
 * readers themselves are input_read.c's, which calls down into this file
 * and never the other way. */
#define _GNU_SOURCE	/* memrchr */
#include "input.h"
#include "input_int.h"
#include "armor.h"
#include "stream.h"
#include "grow.h"
#include "pending.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static void chunk_release(struct gd_input *in, struct gd_chunk *c);

/* A chunk of the usual size (from the free list), or a larger one of its
 * own for a frame that does not fit (freed, not kept, once done). */
static struct gd_chunk *chunk_get(struct gd_input *in, size_t cap)
{
	struct gd_chunk *c = NULL;

	if (cap < in->chunk_size)
		cap = in->chunk_size;
	pthread_mutex_lock(&in->mu);
	if (cap == in->chunk_size && (c = in->free_chunks) != NULL) {
		in->free_chunks = c->next;
		in->nfree--;
	}
	pthread_mutex_unlock(&in->mu);
	if (c == NULL) {
		if ((c = malloc(sizeof(*c) + cap)) == NULL)
			return NULL;
		pthread_mutex_lock(&in->mu);
		c->all_next = in->all;
		if (c->all_next)
			c->all_next->all_pprev = &c->all_next;
		c->all_pprev = &in->all;
		in->all = c;
		pthread_mutex_unlock(&in->mu);
	}
	c->next = NULL;
	c->refs = 0;
	c->idx = IDX_NONE;
	c->reading = 1;
	c->cap = cap;
	return c;
}

/* Hand a region to the loop. The thread waits while too much is queued;
 * the loop only notes that it should stop polling. Returns -1 when the
 * loop asked the reader to stop. */
static int hand(struct gd_input *in, struct gd_chunk *c, size_t off,
    size_t len, int flags, int err)
{
	struct gd_region *r = malloc(sizeof(*r));
	int stop;

	if (r == NULL)
		return -1;
	r->next = NULL;
	r->c = c;
	r->off = off;
	r->len = len;
	r->flags = flags | (in->lines ? GD_RG_LINES : 0);
	r->err = err;
	pthread_mutex_lock(&in->mu);
	if (in->stop) {
		pthread_mutex_unlock(&in->mu);
		free(r);
		return -1;
	}
	if (in->qtail)
		in->qtail->next = r;
	else
		in->qhead = r;
	in->qtail = r;
	in->qbytes += len;
	if (in->mode == GD_INPUT_LOOP) {
		in->notify = 1;
		pthread_mutex_unlock(&in->mu);
		return 0;
	}
	uv_async_send(&in->async);
	while (in->qbytes > in->qlimit && !in->stop)
		pthread_cond_wait(&in->cv, &in->mu);
	stop = in->stop;
	pthread_mutex_unlock(&in->mu);
	return stop ? -1 : 0;
}

/* The end of the input: what is left of the current chunk, then EOF (or
 * only the chunk, then ERROR, when err is set). */
int gd_input_hand_end(struct gd_input *in, size_t rest_off, size_t rest,
    int err)
{
	struct gd_input_rd *rd = &in->rd;

	rd->done = 1;
	if (rest > 0 && hand(in, rd->c, rest_off, rest, GD_RG_LAST, 0) != 0)
		return -1;
	if (rd->c != NULL && hand(in, rd->c, 0, 0, GD_RG_CHUNK_DONE, 0) != 0)
		return -1;
	return hand(in, NULL, 0, 0, err ? GD_RG_ERROR : GD_RG_EOF, err);
}

static int out_of_memory(struct gd_input *in)
{
	in->rd.done = 1;
	hand(in, NULL, 0, 0, GD_RG_ERROR, ENOMEM);
	return -1;
}

/* ---- records: regions end at a delimiter ---- */

/* Room to read into: when the chunk is full, hand what it holds and go on
 * in a fresh one (carrying over the start of a record). */
static int records_room(struct gd_input *in)
{
	struct gd_input_rd *rd = &in->rd;
	struct gd_chunk *c = rd->c, *n;

	if (c == NULL) {
		if ((rd->c = chunk_get(in, 0)) == NULL)
			return out_of_memory(in);
		return 0;
	}
	if (rd->len < c->cap)
		return 0;
	if ((n = chunk_get(in, 0)) == NULL)
		return out_of_memory(in);
	if (rd->start == 0 && !rd->discarding && c->cap >= in->chunk_size) {
		/* one record fills the chunk: hand its start, drop the rest */
		if (hand(in, c, 0, rd->len, GD_RG_OVERSIZE, 0) != 0) {
			chunk_release(in, n);
			return -1;
		}
		rd->discarding = 1;
		rd->len = 0;
	} else if (rd->discarding) {
		rd->len = 0;
	} else {
		memcpy(n->data, c->data + rd->start, rd->len - rd->start);
		rd->len -= rd->start;
	}
	rd->start = 0;
	rd->c = n;
	return hand(in, c, 0, 0, GD_RG_CHUNK_DONE, 0);
}

/* r bytes came after rd->len (0: end of input). 0 to go on, -1 once the
 * end is handed or the loop asked the reader to stop. */
static int records_got(struct gd_input *in, size_t r)
{
	struct gd_input_rd *rd = &in->rd;
	struct gd_chunk *c = rd->c;
	uint8_t *d;

	if (r == 0) {
		gd_input_hand_end(in, rd->start, rd->discarding ? 0 : rd->len - rd->start,
		    0);
		return -1;
	}
	d = memrchr(c->data + rd->len, in->delim, r);
	rd->len += r;
	if (d == NULL)
		return 0;
	if (rd->discarding) {
		/* the oversized record ends here; keep what follows */
		uint8_t *first = memchr(c->data + rd->len - r, in->delim, r);
		size_t keep = (size_t)(c->data + rd->len - (first + 1));
		memmove(c->data, first + 1, keep);
		rd->len = keep;
		rd->start = 0;
		rd->discarding = 0;
		if ((d = memrchr(c->data, in->delim, rd->len)) == NULL)
			return 0;
	}
	if (hand(in, c, rd->start, (size_t)(d + 1 - (c->data + rd->start)),
	    0, 0) != 0)
		return -1;
	rd->start = (size_t)(d + 1 - c->data);
	return 0;
}

/* ---- frames: regions hold whole frames ---- */

/* How large a chunk to move have bytes of a frame of need bytes into
 * (need 0: its length is not known yet). A frame larger than a chunk
 * gets a chunk of its own, at most twice the bytes that actually came, so
 * a length field alone never makes the reader allocate: a 60-byte stream
 * that declares a 1 GiB payload costs one chunk. */
static size_t frame_cap(const struct gd_input *in, size_t have, size_t need)
{
	size_t cap = 2 * have;

	if (need <= in->chunk_size || cap <= in->chunk_size)
		return in->chunk_size;
	return cap < need ? cap : need;
}

/* Room to read into: a full chunk holds the start of one frame
 * ([start, len), of need bytes); move it to a chunk that can grow. */
static int frames_room(struct gd_input *in)
{
	struct gd_input_rd *rd = &in->rd;
	struct gd_chunk *c = rd->c, *n;

	if (c == NULL) {
		if ((rd->c = chunk_get(in, 0)) == NULL)
			return out_of_memory(in);
		return 0;
	}
	if (rd->len < c->cap)
		return 0;
	if ((n = chunk_get(in, frame_cap(in, rd->len - rd->start,
	    rd->need))) == NULL)
		return out_of_memory(in);
	memcpy(n->data, c->data + rd->start, rd->len - rd->start);
	rd->len -= rd->start;
	rd->scan -= rd->start;
	rd->start = 0;
	rd->c = n;
	if (!rd->handed) {
		chunk_release(in, c);	/* the loop never saw it */
	} else if (hand(in, c, 0, 0, GD_RG_CHUNK_DONE, 0) != 0) {
		return -1;
	}
	rd->handed = 0;
	return 0;
}

/* The input starts with the armor prefix: from now on it is lines, in
 * chunks that hold the longest one (the first chunk, smaller, is left
 * for a larger one by records_room when a line fills it). */
static int lines_begin(struct gd_input *in, size_t r)
{
	pthread_mutex_lock(&in->mu);
	in->lines = 1;
	if (in->chunk_size < in->line_max) {
		in->chunk_size = in->line_max;
		in->qlimit = 4 * in->chunk_size;
	}
	pthread_mutex_unlock(&in->mu);
	return records_got(in, r);
}

/* Bytes that cannot start a frame end the input there, handed as they
 * are, so the loop reports the corruption at its exact offset. */
static int frames_got(struct gd_input *in, size_t r)
{
	struct gd_input_rd *rd = &in->rd;
	struct gd_chunk *c = rd->c;

	if (in->line_max && !rd->decided) {
		/* armored or binary: the first bytes tell */
		int k = r > 0 ? gd_armor_starts(c->data, rd->len + r) : 0;
		if (k < 0) {
			rd->len += r;	/* a prefix so far: wait for more */
			return 0;
		}
		rd->decided = 1;
		if (k > 0)
			return lines_begin(in, r);
	}
	if (r > 0) {
		rd->len += r;
		for (;;) {
			size_t total;
			int k = gd_stream_peek(c->data + rd->scan,
			    rd->len - rd->scan, in->max_payload, &total);
			rd->need = 0;
			if (k < 0) {
				r = 0;	/* corrupt: hand the rest and end */
			} else if (k > 0 && rd->len - rd->scan >= total) {
				rd->scan += total;
				continue;
			} else if (k > 0) {
				rd->need = total;
			}
			break;
		}
	}
	if (r == 0) {
		gd_input_hand_end(in, rd->start, rd->len - rd->start, 0);
		return -1;
	}
	if (rd->scan > rd->start) {
		if (hand(in, c, rd->start, rd->scan - rd->start, 0, 0) != 0)
			return -1;
		rd->start = rd->scan;
		rd->handed = 1;
	}
	return 0;
}

static int assign_idx(struct gd_input *in, struct gd_chunk *c)
{
	if (c->idx != IDX_NONE)
		return 0;
	if (in->free_idx != IDX_NONE) {
		c->idx = in->free_idx;
		in->free_idx = (uint32_t)(uintptr_t)in->tab[c->idx];
	} else {
		/* a pending block names its chunk in GD_PEND_MAX_OWNER's bits */
		if (GD_GROW(in->tab, in->captab, (size_t)in->ntab + 1,
		    (size_t)GD_PEND_MAX_OWNER + 1) != 0)
			return -1;
		c->idx = in->ntab++;
	}
	in->tab[c->idx] = c;
	return 0;
}

struct gd_chunk *gd_input_chunk_new(struct gd_input *in, size_t cap)
{
	struct gd_chunk *c = chunk_get(in, cap);

	if (c == NULL)
		return NULL;
	c->reading = 0;
	c->refs = 1;
	if (assign_idx(in, c) != 0) {
		c->refs = 0;
		chunk_release(in, c);
		return NULL;
	}
	return c;
}

struct gd_region *gd_input_take(struct gd_input *in)
{
	struct gd_region *r, *p;

	pthread_mutex_lock(&in->mu);
	r = in->qhead;
	in->qhead = in->qtail = NULL;
	pthread_mutex_unlock(&in->mu);
	for (p = r; p; p = p->next) {
		if (p->c == NULL)
			continue;
		if (assign_idx(in, p->c) != 0) {
			p->flags = GD_RG_ERROR;	/* out of memory: stop input */
			p->err = ENOMEM;
			p->len = 0;
		}
		if (p->flags & GD_RG_CHUNK_DONE)
			continue;
		gd_chunk_ref(p->c);	/* held while the region is parsed */
	}
	return r;
}

static void chunk_release(struct gd_input *in, struct gd_chunk *c)
{
	if (c->idx != IDX_NONE) {
		in->tab[c->idx] = (struct gd_chunk *)(uintptr_t)in->free_idx;
		in->free_idx = c->idx;
		c->idx = IDX_NONE;
	}
	pthread_mutex_lock(&in->mu);
	if (in->nfree < 4 && !in->stop && c->cap == in->chunk_size) {
		c->next = in->free_chunks;
		in->free_chunks = c;
		in->nfree++;
	} else {
		*c->all_pprev = c->all_next;
		if (c->all_next)
			c->all_next->all_pprev = c->all_pprev;
		free(c);
	}
	pthread_mutex_unlock(&in->mu);
}

void gd_chunk_unref(struct gd_input *in, struct gd_chunk *c)
{
	if (--c->refs == 0 && !c->reading)
		chunk_release(in, c);
}

void gd_input_region_free(struct gd_input *in, struct gd_region *r)
{
	struct gd_chunk *c = r->c;

	pthread_mutex_lock(&in->mu);
	in->qbytes -= r->len;
	pthread_cond_signal(&in->cv);
	pthread_mutex_unlock(&in->mu);
	if (c != NULL) {
		if (r->flags & GD_RG_CHUNK_DONE) {
			c->reading = 0;
			if (c->refs == 0)
				chunk_release(in, c);
		} else {
			gd_chunk_unref(in, c);
		}
	}
	free(r);
}

/* ---- one read into the current chunk (input_read.c's readers) ---- */

static int reader_room(struct gd_input *in)
{
	return in->max_payload && !in->lines ? frames_room(in) :
	    records_room(in);
}

/* One read() of what the fd has; 0 to go on, -1 when the reader is done
 * (end of input, an error or a stop handed), 1 when nothing was there (a
 * non-blocking fd). */
int gd_input_read_step(struct gd_input *in)
{
	struct gd_input_rd *rd = &in->rd;
	ssize_t r;

	size_t want;

	if (reader_room(in) != 0)
		return -1;
	want = rd->c->cap - rd->len;
	/* finishing (gd_input_finish): no byte past the record begun, so
	 * what follows stays in the pipe for the next reader; a frame's
	 * rest is known once its header is, a line's end is not */
	if (in->finishing && (rd->len > rd->start || rd->discarding))
		want = in->max_payload && !in->lines && rd->need > rd->len -
		    rd->scan ? rd->need - (rd->len - rd->scan) : 1;
	while ((r = read(in->fd, rd->c->data + rd->len, want)) < 0 &&
	    errno == EINTR)
		;
	if (r < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 1;
		gd_input_hand_end(in, 0, 0, errno);
		return -1;
	}
	return in->max_payload && !in->lines ? frames_got(in, (size_t)r) :
	    records_got(in, (size_t)r);
}
