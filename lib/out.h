/* An output stream on a libuv loop: stdout of gdsub (blocks) and of gdpub
 * (status lines). Bytes are appended to a buffer and written in one
 * uv_write per flush; pipes, ttys and sockets never block the loop, other
 * files (regular files, /dev/null) are written synchronously. */
#ifndef GD_OUT_H
#define GD_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "dbuf.h"

struct gd_out;
typedef void (*gd_out_cb)(struct gd_out *o, int err);

struct gd_out {
	uv_loop_t *loop;
	int fd;
	int async;		/* 1: libuv stream, 0: blocking write() */
	union {
		uv_pipe_t pipe;
		uv_tty_t tty;
		uv_tcp_t tcp;
	} h;
	struct gd_dbuf buf;	/* bytes appended since the last flush */
	size_t queued;		/* bytes handed to libuv, not yet written */
	uint64_t total;		/* bytes appended since it was opened */
	int fifo;		/* fd is a pipe: gd_out_unread can tell */
	int err;		/* first write error (libuv code), sticky */
	int closing, closed, close_started;
	gd_out_cb on_error;	/* first write error */
	gd_out_cb on_drain;	/* queue went below the low mark */
	gd_out_cb on_idle;	/* every byte appended so far is written */
	/* called before bytes are handed to the writer; nonzero drops them
	 * (gdpub: the journal records of these blocks could not be written) */
	int (*before_write)(struct gd_out *o);
	uv_close_cb close_cb;	/* h is NULL for a blocking fd */
	void *data;
};

/* fd 2 is written with blocking writes and left open at close. */
/* Ask for a 1 MiB pipe buffer if fd is a pipe (best effort). */
void gd_pipe_grow(int fd);
int gd_out_open(struct gd_out *o, uv_loop_t *loop, int fd);
/* Room for n more bytes; returns a pointer to write them, then commit. */
uint8_t *gd_out_reserve(struct gd_out *o, size_t n);
static inline void gd_out_commit(struct gd_out *o, size_t n)
{
	gd_dbuf_commit(&o->buf, n);
	o->total += n;
}
int gd_out_write(struct gd_out *o, const void *p, size_t n);
/* Write n bytes at p, which lie in mem (malloc'd, now the stream's: freed
 * once written, or at once when they cannot be), after what was appended:
 * a large record goes out without a copy. */
void gd_out_give(struct gd_out *o, void *mem, const void *p, size_t n);
void gd_out_flush(struct gd_out *o);
/* Flush, then close the fd once every byte is written (readers see EOF);
 * cb runs when it is closed. */
void gd_out_close(struct gd_out *o, uv_close_cb cb);
/* Close now: what is not written yet is dropped (a second signal). May
 * follow gd_out_close; cb is the first one given. */
void gd_out_abort(struct gd_out *o, uv_close_cb cb);
static inline size_t gd_out_backlog(const struct gd_out *o)
{
	return o->queued + gd_dbuf_len(&o->buf);
}
/* Of the gd_out total bytes appended, how many the reader has not read
 * yet: still buffered here, queued in libuv, or in the pipe (FIONREAD,
 * which Linux answers on a pipe's write end too). 0, or -1 when fd is
 * not a pipe or the pipe does not say. */
int gd_out_unread(const struct gd_out *o, uint64_t *n);

#endif
