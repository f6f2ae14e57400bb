/* The bytes between gdsub and a publisher: every write (sub_tls_write:
 * through TLS when GDsub_tlsCA is set, else a plain uv_write), and with TLS
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

int sub_tls_write(struct sub_pub *pc, uv_write_t *req, const uv_buf_t *b,
    uv_write_cb cb)
{
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
