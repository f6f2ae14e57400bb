/* Chunked record input (see input.h). Only the loop thread touches refs,
 * idx and reading; the reader and the loop share the region queue and the
 * free list under one mutex. The reader thread is joined, never detached:
 * it blocks only in poll() (with the wake-up pipe) or on the queue's
 * condition variable, and gd_input_stop ends both waits. */
#define _GNU_SOURCE	/* memrchr, pipe2 */
#include "input.h"
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IDX_NONE UINT32_MAX

static void chunk_release(struct gd_input *in, struct gd_chunk *c);

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

/* Hand a region to the loop; waits while too much is queued. Returns -1
 * when the loop asked the reader to stop. */
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
	r->flags = flags;
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
	uv_async_send(&in->async);
	while (in->qbytes > in->qlimit && !in->stop)
		pthread_cond_wait(&in->cv, &in->mu);
	stop = in->stop;
	pthread_mutex_unlock(&in->mu);
	return stop ? -1 : 0;
}

/* 1 when the fd has input (or end of input, or an error read() will
 * report), 0 when the loop asked the reader to stop. One poll() per read:
 * reads are of up to a chunk, so this costs nothing on the hot path, and a
 * reader never sits in a read() that only more input could end. */
static int wait_input(struct gd_input *in)
{
	struct pollfd pf[2];

	pf[0].fd = in->fd;
	pf[0].events = POLLIN;
	pf[1].fd = in->wake[0];
	pf[1].events = POLLIN;
	for (;;) {
		pf[0].revents = pf[1].revents = 0;
		if (poll(pf, 2, -1) >= 0)
			break;
		if (errno != EINTR)
			return 1;	/* cannot wait: let read() block or fail */
	}
	return pf[1].revents == 0;
}

/* Read after len bytes of c; -1 once a read error has been handed on or
 * when the loop asked the reader to stop. */
static ssize_t read_chunk(struct gd_input *in, struct gd_chunk *c, size_t len)
{
	ssize_t r;

	if (!wait_input(in))
		return -1;
	while ((r = read(in->fd, c->data + len, c->cap - len)) < 0 &&
	    errno == EINTR)
		;
	if (r < 0) {
		int e = errno;
		hand(in, c, 0, 0, GD_RG_CHUNK_DONE, 0);
		hand(in, NULL, 0, 0, GD_RG_ERROR, e);
	}
	return r;
}

static void *read_records(struct gd_input *in)
{
	struct gd_chunk *c = chunk_get(in, 0), *n;
	size_t start = 0, len = 0;
	int discarding = 0;

	if (c == NULL) {
		hand(in, NULL, 0, 0, GD_RG_ERROR, ENOMEM);
		return NULL;
	}
	for (;;) {
		ssize_t r;
		uint8_t *d;

		if (len == c->cap) {
			if ((n = chunk_get(in, 0)) == NULL) {
				hand(in, NULL, 0, 0, GD_RG_ERROR, ENOMEM);
				return NULL;
			}
			if (start == 0 && !discarding) {
				/* one record fills the chunk: hand its start, drop the rest */
				if (hand(in, c, 0, len, GD_RG_OVERSIZE, 0) != 0)
					return NULL;
				discarding = 1;
				len = 0;
			} else if (discarding) {
				len = 0;
			} else {
				memcpy(n->data, c->data + start, len - start);
				len -= start;
			}
			start = 0;
			if (hand(in, c, 0, 0, GD_RG_CHUNK_DONE, 0) != 0)
				return NULL;
			c = n;
		}
		if ((r = read_chunk(in, c, len)) < 0)
			return NULL;
		if (r == 0) {
			if (len > start && !discarding &&
			    hand(in, c, start, len - start, GD_RG_LAST, 0) != 0)
				return NULL;
			if (hand(in, c, 0, 0, GD_RG_CHUNK_DONE, 0) == 0)
				hand(in, NULL, 0, 0, GD_RG_EOF, 0);
			return NULL;
		}
		d = memrchr(c->data + len, in->delim, (size_t)r);
		len += (size_t)r;
		if (d == NULL)
			continue;
		if (discarding) {
			/* the oversized record ends here; keep what follows */
			size_t keep;
			uint8_t *first = memchr(c->data + len - (size_t)r,
			    in->delim, (size_t)r);
			keep = (size_t)(c->data + len - (first + 1));
			memmove(c->data, first + 1, keep);
			len = keep;
			start = 0;
			discarding = 0;
			d = memrchr(c->data, in->delim, len);
			if (d == NULL)
				continue;
		}
		if (hand(in, c, start, (size_t)(d + 1 - (c->data + start)), 0, 0) != 0)
			return NULL;
		start = (size_t)(d + 1 - c->data);
	}
}

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

/* Framed input: regions hold whole frames (the loop validates them). A
 * frame larger than a chunk gets a chunk of its own, grown as its bytes
 * arrive; bytes that cannot start a frame end the input there, handed as
 * they are, so the loop reports the corruption at its exact offset. */
static void *read_frames(struct gd_input *in)
{
	struct gd_chunk *c = chunk_get(in, 0), *n;
	size_t start = 0, scan = 0, len = 0, need = 0;
	int handed = 0;		/* a region of c went to the loop */

	if (c == NULL) {
		hand(in, NULL, 0, 0, GD_RG_ERROR, ENOMEM);
		return NULL;
	}
	for (;;) {
		ssize_t r;
		int bad = 0;

		if (len == c->cap) {
			/* [start, len) is the start of one frame of need bytes */
			if ((n = chunk_get(in, frame_cap(in, len - start,
			    need))) == NULL) {
				hand(in, NULL, 0, 0, GD_RG_ERROR, ENOMEM);
				return NULL;
			}
			memcpy(n->data, c->data + start, len - start);
			len -= start;
			scan -= start;
			start = 0;
			if (!handed)
				chunk_release(in, c);	/* the loop never saw it */
			else if (hand(in, c, 0, 0, GD_RG_CHUNK_DONE, 0) != 0) {
				chunk_release(in, n);
				return NULL;
			}
			c = n;
			handed = 0;
		}
		if ((r = read_chunk(in, c, len)) < 0)
			return NULL;
		if (r == 0)
			break;
		len += (size_t)r;
		for (;;) {
			size_t total;
			int k = gd_stream_peek(c->data + scan, len - scan,
			    in->max_payload, &total);
			need = 0;
			if (k < 0)
				bad = 1;
			else if (k > 0 && len - scan >= total) {
				scan += total;
				continue;
			} else if (k > 0)
				need = total;
			break;
		}
		if (bad)
			break;
		if (scan > start) {
			if (hand(in, c, start, scan - start, 0, 0) != 0)
				return NULL;
			start = scan;
			handed = 1;
		}
	}
	/* end of input, or bytes that cannot start a frame: hand the rest */
	if (len > start && hand(in, c, start, len - start, GD_RG_LAST, 0) != 0)
		return NULL;
	if (hand(in, c, 0, 0, GD_RG_CHUNK_DONE, 0) == 0)
		hand(in, NULL, 0, 0, GD_RG_EOF, 0);
	return NULL;
}

static void *reader(void *arg)
{
	struct gd_input *in = arg;

	if (in->max_payload)
		read_frames(in);
	else
		read_records(in);
	return NULL;
}

static void on_async(uv_async_t *a)
{
	struct gd_input *in = a->data;
	if (in->on_ready)
		in->on_ready(in);
}

int gd_input_start(struct gd_input *in, uv_loop_t *loop, int fd, char delim,
    size_t chunk_size, void (*on_ready)(struct gd_input *))
{
	sigset_t all, old;
	int rc;

	in->fd = fd;
	in->delim = delim;
	in->chunk_size = chunk_size;
	in->qlimit = chunk_size * 4;
	in->on_ready = on_ready;
	in->free_idx = IDX_NONE;
	pthread_mutex_init(&in->mu, NULL);
	pthread_cond_init(&in->cv, NULL);
	if (pipe2(in->wake, O_CLOEXEC | O_NONBLOCK) != 0)
		return uv_translate_sys_error(errno);
	if ((rc = uv_async_init(loop, &in->async, on_async)) != 0)
		goto fail;
	in->async.data = in;
	/* signals belong to the loop thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&in->th, NULL, reader, in);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		uv_close((uv_handle_t *)&in->async, NULL);
		rc = uv_translate_sys_error(rc);
		goto fail;
	}
	in->joinable = 1;
	in->started = 1;
	return 0;
fail:
	close(in->wake[0]);
	close(in->wake[1]);
	in->wake[0] = in->wake[1] = -1;
	return rc;
}

static int assign_idx(struct gd_input *in, struct gd_chunk *c)
{
	if (c->idx != IDX_NONE)
		return 0;
	if (in->free_idx != IDX_NONE) {
		c->idx = in->free_idx;
		in->free_idx = (uint32_t)(uintptr_t)in->tab[c->idx];
	} else {
		if (in->ntab == in->captab) {
			uint32_t ncap = in->captab ? in->captab * 2 : 64;
			struct gd_chunk **t = realloc(in->tab, ncap * sizeof(*t));
			if (t == NULL)
				return -1;
			in->tab = t;
			in->captab = ncap;
		}
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

void gd_input_done(struct gd_input *in, struct gd_region *r)
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

/* The reader leaves its poll() (the pipe stays readable) and hand()
 * returns -1 from its wait or its next call. */
static void wake_reader(struct gd_input *in)
{
	static const char b = 1;

	pthread_mutex_lock(&in->mu);
	if (!in->stop) {
		in->stop = 1;
		while (write(in->wake[1], &b, 1) < 0 && errno == EINTR)
			;
	}
	pthread_cond_signal(&in->cv);
	pthread_mutex_unlock(&in->mu);
}

void gd_input_stop(struct gd_input *in)
{
	if (!in->started)
		return;
	wake_reader(in);
	uv_close((uv_handle_t *)&in->async, NULL);
	in->started = 0;
}

void gd_input_free(struct gd_input *in)
{
	struct gd_chunk *c;
	struct gd_region *r;

	if (in->joinable) {
		wake_reader(in);
		pthread_join(in->th, NULL);
		in->joinable = 0;
		close(in->wake[0]);
		close(in->wake[1]);
		in->wake[0] = in->wake[1] = -1;
	}
	pthread_mutex_lock(&in->mu);
	while ((r = in->qhead) != NULL) {
		in->qhead = r->next;
		free(r);
	}
	while ((c = in->all) != NULL) {
		in->all = c->all_next;
		free(c);
	}
	in->free_chunks = NULL;
	pthread_mutex_unlock(&in->mu);
	free(in->tab);
	in->tab = NULL;
}
