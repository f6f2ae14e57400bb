/* Output stream (see out.h). */
#define _GNU_SOURCE	/* F_SETPIPE_SZ */
#include "out.h"
#include "armor.h"
#include "ctl.h"
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUT_CHUNK (256 * 1024)
#define OUT_LOW (1024 * 1024)
/* What is appended between flushes: a full buffer (4 chunks) is handed
 * to the writer before it grows, so at most that and one record, the
 * largest a frame can be, armored (gdpub -o --armor). */
#define OUT_MAX (4 * OUT_CHUNK + gd_armor_size( \
	gd_sframe_tsize(GD_STREAM_ORIGIN_MAX, GD_STREAM_MAX_PAYLOAD, \
	GD_SFRAME_TAG)))

void gd_out_flush(struct gd_out *o);

struct wreq {
	uv_write_t req;
	struct gd_out *o;
	size_t len;
	uint8_t *buf;
};

void gd_pipe_grow(int fd)
{
	/* a larger pipe lets the next stage take bigger batches; the kernel
	 * caps this at /proc/sys/fs/pipe-max-size and failure is harmless */
	(void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
}

int gd_out_open(struct gd_out *o, uv_loop_t *loop, int fd)
{
	struct stat st;
	int rc = 0;

	memset(o, 0, sizeof(*o));
	o->fifo = fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
	gd_dbuf_init_sized(&o->buf, OUT_CHUNK, OUT_MAX);
	o->loop = loop;
	o->fd = fd;
	/* standard error is shared with diagnostics and often with the other
	 * programs of a pipeline: never make it non-blocking, never close it */
	if (fd == 2)
		return 0;
	switch (uv_guess_handle(fd)) {
	case UV_TTY:
		rc = uv_tty_init(loop, &o->h.tty, fd, 0);
		o->async = 1;
		break;
	case UV_NAMED_PIPE:
		gd_pipe_grow(fd);
		if ((rc = uv_pipe_init(loop, &o->h.pipe, 0)) == 0)
			rc = uv_pipe_open(&o->h.pipe, fd);
		o->async = 1;
		break;
	case UV_TCP:
		if ((rc = uv_tcp_init(loop, &o->h.tcp)) == 0)
			rc = uv_tcp_open(&o->h.tcp, fd);
		o->async = 1;
		break;
	default:
		o->async = 0;
		break;
	}
	if (o->async)
		o->h.pipe.data = o;
	return rc;
}

uint8_t *gd_out_reserve(struct gd_out *o, size_t n)
{
	/* hand a full buffer to the writer rather than grow (and copy) it */
	if (gd_dbuf_room(&o->buf) < n &&
	    gd_dbuf_len(&o->buf) >= OUT_CHUNK * 4 && !o->closing)
		gd_out_flush(o);
	if (gd_dbuf_reserve(&o->buf, n) != GD_DBUF_OK)
		return NULL;
	return (uint8_t *)gd_dbuf_end(&o->buf);
}

int gd_out_write(struct gd_out *o, const void *p, size_t n)
{
	uint8_t *d = gd_out_reserve(o, n);
	if (d == NULL)
		return -1;
	memcpy(d, p, n);
	gd_out_commit(o, n);
	return 0;
}

static void fail(struct gd_out *o, int err)
{
	if (o->err)
		return;
	o->err = err;
	if (o->on_error)
		o->on_error(o, err);
}

/* Close fd for good. libuv leaves fds 0-2 open when it closes a handle,
 * but the reader must see EOF: put /dev/null in its place instead. */
static void release_fd(int fd)
{
	int nul;

	if (fd == 2)
		return;
	if (fd > 2) {
		close(fd);
		return;
	}
	nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (nul < 0 || dup2(nul, fd) < 0)
		close(fd);
	if (nul >= 0 && nul != fd)
		close(nul);
}

static void closed_cb(uv_handle_t *h)
{
	struct gd_out *o = h->data;
	if (o->fd <= 2)
		release_fd(o->fd);
	o->closed = 1;
	if (o->close_cb)
		o->close_cb(h);
}

static void do_close(struct gd_out *o)
{
	if (o->close_started)
		return;	/* an error callback closed it meanwhile */
	o->close_started = 1;
	if (o->async)
		uv_close((uv_handle_t *)&o->h, closed_cb);
	else {
		release_fd(o->fd);
		o->closed = 1;
		if (o->close_cb)
			o->close_cb(NULL);
	}
}

static void on_written(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct gd_out *o = w->o;
	size_t before = o->queued;

	o->queued -= w->len;
	free(w->buf);
	free(w);
	if (status < 0 && status != UV_ECANCELED)
		fail(o, status);
	if (o->closing && o->queued == 0) {
		do_close(o);
		return;
	}
	if (before >= OUT_LOW && o->queued < OUT_LOW && o->on_drain)
		o->on_drain(o, 0);
	if (o->queued == 0 && gd_dbuf_len(&o->buf) == 0 && o->on_idle)
		o->on_idle(o, 0);
}

void gd_out_flush(struct gd_out *o)
{
	struct wreq *w;
	uv_buf_t b;

	if (gd_dbuf_len(&o->buf) == 0 || o->closed)
		return;
	if (o->err) {
		/* the reader is gone; the error was reported */
		gd_dbuf_reset(&o->buf);
		return;
	}
	if (o->before_write != NULL && o->before_write(o) != 0) {
		/* its owner said these bytes must not go out */
		gd_dbuf_reset(&o->buf);
		return;
	}
	if (!o->async) {
		if (gd_write_all(o->fd, gd_dbuf_ptr(&o->buf),
		    gd_dbuf_len(&o->buf)) != 0)
			fail(o, uv_translate_sys_error(errno));
		gd_dbuf_reset(&o->buf);
		return;
	}
	w = malloc(sizeof(*w));
	if (w == NULL) {
		fail(o, UV_ENOMEM);
		return;
	}
	w->o = o;
	/* the request owns the buffer until on_written */
	w->buf = (uint8_t *)gd_dbuf_take(&o->buf, &w->len);
	b = uv_buf_init((char *)w->buf, (unsigned)w->len);
	o->queued += w->len;
	if (uv_write(&w->req, (uv_stream_t *)&o->h, &b, 1, on_written) != 0) {
		o->queued -= w->len;
		free(w->buf);
		free(w);
		fail(o, UV_EPIPE);
	}
}

void gd_out_give(struct gd_out *o, void *mem, const void *p, size_t n)
{
	struct wreq *w;
	uv_buf_t b;

	gd_out_flush(o);	/* what was appended before goes first */
	o->total += n;
	if (o->closed || o->closing || o->err || (o->before_write != NULL &&
	    o->before_write(o) != 0)) {
		free(mem);
		return;
	}
	if (!o->async) {
		if (gd_write_all(o->fd, p, n) != 0)
			fail(o, uv_translate_sys_error(errno));
		free(mem);
		return;
	}
	if ((w = malloc(sizeof(*w))) == NULL) {
		free(mem);
		fail(o, UV_ENOMEM);
		return;
	}
	w->o = o;
	w->buf = mem;		/* freed by on_written */
	w->len = n;
	b = uv_buf_init((char *)(uintptr_t)p, (unsigned)n);
	o->queued += n;
	if (uv_write(&w->req, (uv_stream_t *)&o->h, &b, 1, on_written) != 0) {
		o->queued -= n;
		free(mem);
		free(w);
		fail(o, UV_EPIPE);
	}
}

void gd_out_close(struct gd_out *o, uv_close_cb cb)
{
	if (o->closing)
		return;
	gd_out_flush(o);
	o->closing = 1;
	o->close_cb = cb;
	gd_dbuf_free(&o->buf);
	if (o->queued == 0)
		do_close(o);	/* else on_written closes after the last write */
}

void gd_out_abort(struct gd_out *o, uv_close_cb cb)
{
	if (!o->closing)
		o->close_cb = cb;
	o->closing = 1;
	gd_dbuf_free(&o->buf);
	do_close(o);	/* pending writes end with UV_ECANCELED */
}

int gd_out_unread(const struct gd_out *o, uint64_t *n)
{
	int inpipe = 0;

	if (!o->fifo || o->closed || o->err || ioctl(o->fd, FIONREAD,
	    &inpipe) != 0 || inpipe < 0)
		return -1;
	*n = (uint64_t)inpipe + gd_dbuf_len(&o->buf) + (o->async ?
	    uv_stream_get_write_queue_size((const uv_stream_t *)&o->h) : 0);
	return 0;
}
