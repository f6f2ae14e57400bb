/* The bytes between gdsub and a publisher: every write (sub_tls_write:
 * through TLS when GDsub_tlsCA is set, else a plain uv_write followed by
 * its seal, seal.h), and with TLS
 * what a read brought, decrypted into the connection's read buffer. What a
 * TLS failure means for the connection is sub_net.c's: these functions
 * say what went wrong and touch nothing else. */
#include "sub_int.h"

#include <stdlib.h>

/* A ciphertext write, carrying the caller's request (NULL for the
 * handshake's own bytes) to call back once it is written. */
struct tls_write {
	uv_write_t req;
	uv_write_t *orig;
	uv_write_cb cb;
	uint8_t *d;
};

static void tls_written(uv_write_t *req, int status)
{
	struct tls_write *w = (struct tls_write *)req;
	uv_write_t *orig = w->orig;
	uv_write_cb cb = w->cb;

	free(w->d);
	free(w);
	if (cb != NULL)
		cb(orig, status);
}

int sub_tls_out(struct sub_pub *pc, uv_write_t *orig, uv_write_cb cb)
{
	struct tls_write *w;
	uv_buf_t b;
	size_t n;
	int rc;

	if (gd_tls_pending(pc->tls) == 0)
		return 0;
	if ((w = malloc(sizeof(*w))) == NULL)
		return UV_ENOMEM;
	if ((w->d = gd_tls_take(pc->tls, &n)) == NULL) {
		free(w);
		return UV_ENOMEM;
	}
	w->orig = orig;
	w->cb = cb;
	b = uv_buf_init((char *)w->d, (unsigned)n);
	if ((rc = uv_write(&w->req, (uv_stream_t *)&pc->h, &b, 1,
	    tls_written)) != 0) {
		free(w->d);
		free(w);
	}
	return rc;
}

/* A plain write and its seals: the caller's request called back once
 * they are written. A write of ours is one ack frame and a report at
 * most, so SEALED_MAX pieces are plenty (seal.h). */
#define SEALED_MAX 4
struct sealed_write {
	uv_write_t req;
	uv_write_t *orig;
	uv_write_cb cb;
	uint8_t seal[SEALED_MAX][GD_SEAL_FRAME_MAX];
};

static void sealed_written(uv_write_t *req, int status)
{
	struct sealed_write *w = (struct sealed_write *)req;
	uv_write_t *orig = w->orig;
	uv_write_cb cb = w->cb;

	free(w);
	cb(orig, status);
}

static int sealed_write(struct sub_pub *pc, uv_write_t *req,
    const uv_buf_t *b, uv_write_cb cb)
{
	const uint8_t *d = (const uint8_t *)b->base;
	uv_buf_t bufs[2 * SEALED_MAX];
	struct sealed_write *w;
	size_t pos, cut, sl;
	unsigned k;
	int rc;

	if ((w = malloc(sizeof(*w))) == NULL)
		return UV_ENOMEM;
	for (pos = 0, k = 0; pos < b->len; pos += cut, k++) {
		cut = gd_seal_cut(d + pos, b->len - pos);
		if (k == SEALED_MAX || (sl = gd_seal_make(&pc->tx, d + pos, cut,
		    w->seal[k])) == 0) {
			free(w);
			return UV_EPROTO;
		}
		bufs[2 * k] = uv_buf_init(b->base + pos, (unsigned)cut);
		bufs[2 * k + 1] = uv_buf_init((char *)w->seal[k], (unsigned)sl);
	}
	w->orig = req;
	w->cb = cb;
	if ((rc = uv_write(&w->req, (uv_stream_t *)&pc->h, bufs, 2 * k,
	    sealed_written)) != 0)
		free(w);
	return rc;
}

int sub_tls_write(struct sub_pub *pc, uv_write_t *req, const uv_buf_t *b,
    uv_write_cb cb)
{
	if (pc->tls == NULL && gd_seal_on(&pc->tx))
		return sealed_write(pc, req, b, cb);
	if (pc->tls == NULL)
		return uv_write(req, (uv_stream_t *)&pc->h, b, 1, cb);
	if (!gd_tls_done(pc->tls))
		return UV_ENOTCONN;
	if (gd_tls_write(pc->tls, (const uint8_t *)b->base, b->len) != 0)
		return UV_EPROTO;
	return sub_tls_out(pc, req, cb);
}

int sub_tls_in(struct sub_pub *pc, size_t nread, const char **why)
{
	uint8_t *p;
	size_t room;
	long got;
	int rc;

	if (gd_tls_feed(pc->tls, pc->cin, nread) != 0) {
		*why = gd_tls_error(pc->tls);
		return SUB_TLS_FAILED;
	}
	for (;;) {
		if ((rc = gd_rbuf_space(&pc->rb, SUB_READ_MIN, &p,
		    &room)) != 0) {
			*why = rc == GD_DBUF_TOOBIG ? "receive buffer over its "
			    "size limit" : "out of memory";
			return SUB_TLS_LOST;
		}
		if ((got = gd_tls_read(pc->tls, p, room)) <= 0)
			break;
		gd_rbuf_commit(&pc->rb, (size_t)got);
	}
	/* an alert of ours tells the publisher why, before the close */
	if ((rc = sub_tls_out(pc, NULL, NULL)) != 0 && got != GD_TLS_FAIL) {
		*why = uv_strerror(rc);
		return SUB_TLS_LOST;
	}
	if (got == GD_TLS_FAIL) {
		*why = gd_tls_error(pc->tls);
		return SUB_TLS_FAILED;
	}
	if (got == GD_TLS_EOF)	/* an END may be in what came before it */
		pc->tls_eof = 1;
	return SUB_TLS_OK;
}
