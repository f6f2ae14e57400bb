/* Chunked record input (see input.h). Only the loop thread touches refs,
 * idx and reading; the reader and the loop share the region queue and the
 * free list under one mutex (uncontended in loop mode, where the loop is
 * the reader). The reader thread is joined, never detached: it blocks
 * only in poll() (with the wake-up pipe) or on the queue's condition
 * variable, and gd_input_stop ends both waits. */
#define _GNU_SOURCE	/* memrchr, pipe2, F_SETPIPE_SZ */
#include "input.h"
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
static int hand_end(struct gd_input *in, size_t rest_off, size_t rest,
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
	if (rd->start == 0 && !rd->discarding) {
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
		hand_end(in, rd->start, rd->discarding ? 0 : rd->len - rd->start,
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

/* Bytes that cannot start a frame end the input there, handed as they
 * are, so the loop reports the corruption at its exact offset. */
static int frames_got(struct gd_input *in, size_t r)
{
	struct gd_input_rd *rd = &in->rd;
	struct gd_chunk *c = rd->c;

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
		hand_end(in, rd->start, rd->len - rd->start, 0);
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

/* ---- the reader: one read into the current chunk ---- */

static int reader_room(struct gd_input *in)
{
	return in->max_payload ? frames_room(in) : records_room(in);
}

/* One read() of what the fd has; 0 to go on, -1 when the reader is done
 * (end of input, an error or a stop handed), 1 when nothing was there (a
 * non-blocking fd). */
static int reader_step(struct gd_input *in)
{
	struct gd_input_rd *rd = &in->rd;
	ssize_t r;

	if (reader_room(in) != 0)
		return -1;
	while ((r = read(in->fd, rd->c->data + rd->len, rd->c->cap - rd->len)) < 0 &&
	    errno == EINTR)
		;
	if (r < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 1;
		hand_end(in, 0, 0, errno);
		return -1;
	}
	return in->max_payload ? frames_got(in, (size_t)r) :
	    records_got(in, (size_t)r);
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

static void *reader(void *arg)
{
	struct gd_input *in = arg;

	while (wait_input(in) && reader_step(in) >= 0)
		;
	return NULL;
}

static void on_async(uv_async_t *a)
{
	struct gd_input *in = a->data;
	if (in->on_ready)
		in->on_ready(in);
}

/* ---- loop mode ---- */

static void on_readable(uv_poll_t *h, int status, int events);

/* Poll again once the loop has taken enough of what was handed. */
static void loop_resume(struct gd_input *in)
{
	if (in->paused && in->started && !in->stop && !in->rd.done &&
	    in->qbytes <= in->qlimit) {
		in->paused = 0;
		uv_poll_start(&in->poll, UV_READABLE, on_readable);
	}
}

static void on_readable(uv_poll_t *h, int status, int events)
{
	struct gd_input *in = h->data;

	(void)events;
	if (status < 0)
		hand_end(in, 0, 0, -status);	/* as a read error */
	else if (reader_step(in) < 0)
		in->rd.done = 1;	/* as the thread returns: read no more */
	if (in->rd.done || in->qbytes > in->qlimit) {
		uv_poll_stop(&in->poll);
		in->paused = !in->rd.done;
	}
	if (in->notify) {
		in->notify = 0;
		if (in->on_ready)
			in->on_ready(in);
	}
}

/* Pipes, sockets and ttys can be polled; regular files cannot (epoll
 * refuses them) and are always "readable" anyway. */
static int pollable(int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return 0;
	return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
	    (S_ISCHR(st.st_mode) && isatty(fd));
}

/* uv_poll_init makes the fd non-blocking, which would reach every
 * process sharing its file description (a terminal's is often also our
 * stderr, and the shell's): put the flags back. A read after readiness
 * does not block, and reading one chunk per readiness keeps the loop's
 * iterations short. */
static int start_loop_mode(struct gd_input *in, uv_loop_t *loop)
{
	int flags = fcntl(in->fd, F_GETFL), rc;

	if ((rc = uv_poll_init(loop, &in->poll, in->fd)) != 0)
		return rc;
	if (flags >= 0)
		(void)fcntl(in->fd, F_SETFL, flags);
	/* the loop drains a pipe once per iteration, not as soon as the
	 * writer fills it: a larger pipe keeps the writer from waiting on
	 * that (best effort, capped by /proc/sys/fs/pipe-max-size) */
	(void)fcntl(in->fd, F_SETPIPE_SZ, 1 << 20);
	in->poll.data = in;
	if ((rc = uv_poll_start(&in->poll, UV_READABLE, on_readable)) != 0) {
		uv_close((uv_handle_t *)&in->poll, NULL);
		return rc;
	}
	return 0;
}

static int start_thread_mode(struct gd_input *in, uv_loop_t *loop)
{
	sigset_t all, old;
	int rc;

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
	return 0;
fail:
	close(in->wake[0]);
	close(in->wake[1]);
	in->wake[0] = in->wake[1] = -1;
	return rc;
}

int gd_input_start(struct gd_input *in, uv_loop_t *loop, int fd, char delim,
    size_t chunk_size, void (*on_ready)(struct gd_input *))
{
	int rc;

	in->fd = fd;
	in->delim = delim;
	in->chunk_size = chunk_size;
	in->qlimit = chunk_size * 4;
	in->on_ready = on_ready;
	in->free_idx = IDX_NONE;
	in->wake[0] = in->wake[1] = -1;
	memset(&in->rd, 0, sizeof(in->rd));
	pthread_mutex_init(&in->mu, NULL);
	pthread_cond_init(&in->cv, NULL);
	if (in->mode == GD_INPUT_AUTO)
		in->mode = pollable(fd) ? GD_INPUT_LOOP : GD_INPUT_THREAD;
	if (in->mode == GD_INPUT_LOOP && (rc = start_loop_mode(in, loop)) != 0) {
		/* a kind of fd epoll will not take after all: a thread reads it */
		in->mode = GD_INPUT_THREAD;
	}
	if (in->mode == GD_INPUT_THREAD &&
	    (rc = start_thread_mode(in, loop)) != 0)
		return rc;
	in->started = 1;
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
	if (in->mode == GD_INPUT_LOOP)
		loop_resume(in);
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
	if (in->mode == GD_INPUT_LOOP) {
		pthread_mutex_lock(&in->mu);
		in->stop = 1;
		pthread_mutex_unlock(&in->mu);
		uv_close((uv_handle_t *)&in->poll, NULL);
	} else {
		wake_reader(in);
		uv_close((uv_handle_t *)&in->async, NULL);
	}
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
