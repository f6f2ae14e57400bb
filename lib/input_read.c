/* The readers of chunked input (see input.h): a thread for regular files,
 * blocking in poll() with a wake-up pipe, joined at free; the loop itself
 * (uv_poll) for pipes, sockets and ttys, paused while the loop has more
 * than qlimit bytes of regions to take. Both read through
 * gd_input_read_step (input.c), which splits what came into regions; the
 * loop gives a region back through gd_input_done here, which frees it in
 * input.c and resumes the poll. */
#define _GNU_SOURCE	/* pipe2, F_SETPIPE_SZ */
#include "input.h"
#include "input_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the thread ---- */

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

	while (wait_input(in) && gd_input_read_step(in) >= 0)
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

/* The reader holds the start of a record (or frame) not handed yet. */
static int holds_part(const struct gd_input *in)
{
	return in->rd.c != NULL && (in->rd.len > in->rd.start ||
	    in->rd.discarding);
}

/* gd_input_finish's end: what the reader holds is dropped. */
static void finish_now(struct gd_input *in)
{
	if (in->rd.done)
		return;
	in->cut = in->rd.discarding ? 1 : in->rd.len - in->rd.start;
	gd_input_hand_end(in, 0, 0, 0);
	uv_timer_stop(&in->finish_timer);
}

static void on_finish_timeout(uv_timer_t *t)
{
	struct gd_input *in = t->data;

	finish_now(in);
	uv_poll_stop(&in->poll);
	in->paused = 0;
	if (in->notify) {
		in->notify = 0;
		if (in->on_ready)
			in->on_ready(in);
	}
}

static void on_readable(uv_poll_t *h, int status, int events)
{
	struct gd_input *in = h->data;

	(void)events;
	if (status < 0)
		gd_input_hand_end(in, 0, 0, -status);	/* as a read error */
	else if (gd_input_read_step(in) < 0)
		in->rd.done = 1;	/* as the thread returns: read no more */
	else if (in->finishing && !holds_part(in))
		finish_now(in);	/* a record's edge: end here */
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

void gd_input_done(struct gd_input *in, struct gd_region *r)
{
	gd_input_region_free(in, r);
	if (in->mode == GD_INPUT_LOOP)
		loop_resume(in);
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

int gd_input_finish(struct gd_input *in, unsigned ms)
{
	if (!in->started || in->mode != GD_INPUT_LOOP)
		return -1;
	if (in->finishing || in->rd.done)
		return 0;
	in->finishing = 1;
	if (!holds_part(in)) {
		finish_now(in);
		uv_poll_stop(&in->poll);
		in->paused = 0;
	} else if (uv_timer_init(in->poll.loop, &in->finish_timer) == 0) {
		in->timer_on = 1;
		in->finish_timer.data = in;
		uv_timer_start(&in->finish_timer, on_finish_timeout, ms, 0);
	}
	if (in->notify) {
		in->notify = 0;
		if (in->on_ready)
			in->on_ready(in);
	}
	return 0;
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
		if (in->timer_on)
			uv_close((uv_handle_t *)&in->finish_timer, NULL);
		in->timer_on = 0;
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
