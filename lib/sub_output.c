/* gdsub's standard output: blocks in the chosen format (line, payload,
 * frame; -0 ends records with NUL), and the backpressure that stops the
 * sources while stdout is behind. */
#include "sub_int.h"
#include "log.h"
#include "parse.h"

#include <inttypes.h>
#include <string.h>

void sub_out_block(struct sub *s, const struct sub_origin *o,
    const struct gd_block *b, const char *flags)
{
	size_t need = o->len + 32 + b->len + GD_SFRAME_HDR + GD_SFRAME_TRAILER;
	uint8_t *d = gd_out_reserve(&s->out, need);
	size_t n = 0;

	if (d == NULL) {
		gd_err("out of memory writing block %.*s/%" PRIu64, (int)o->len,
		    o->s, b->id);
		sub_finish(s, GD_EX_FAIL);
		return;
	}
	if (s->opt.format == GD_OUT_FRAME) {
		struct gd_sframe f = { GD_SF_BLOCK, b->flags, b->id, b->seq,
			b->time_ns, o->epoch, o->s, o->len, b->data, b->len };
		gd_out_commit(&s->out, gd_sframe_put(d, &f));
		return;
	}
	if (s->opt.format == GD_OUT_LINE) {
		memcpy(d, o->s, o->len);
		n = o->len;
		d[n++] = '/';
		n += gd_u64toa((char *)d + n, b->id);
		if (flags[0]) {
			d[n++] = '/';
			while (*flags)
				d[n++] = (uint8_t)*flags++;
		}
		d[n++] = '\t';
	}
	if (b->len)
		memcpy(d + n, b->data, b->len);
	n += b->len;
	d[n++] = (uint8_t)s->opt.delim;
	gd_out_commit(&s->out, n);
}

/* A record delimiter in the payload would split the record. */
int sub_out_cannot_carry(const struct sub *s, const struct gd_block *b)
{
	return s->opt.format != GD_OUT_FRAME &&
	    memchr(b->data, s->opt.delim, b->len) != NULL;
}

void sub_out_unwritable(struct sub *s, const struct sub_origin *o,
    const struct gd_block *b)
{
	gd_err("block %.*s/%" PRIu64 " cannot be written in %s format: its "
	    "payload contains %s; not acknowledged", (int)o->len, o->s, b->id,
	    s->opt.format == GD_OUT_LINE ? "line" : "payload",
	    s->opt.delim ? "a newline (use -0)" : "a NUL byte");
	s->n_unwritable++;
}

/* After a batch of blocks: stop the sources while stdout is behind. */
void sub_out_check(struct sub *s)
{
	if (gd_out_backlog(&s->out) > SUB_OUT_HIGH && !s->out_paused)
		sub_net_pause(s);
}

static void on_out_drain(struct gd_out *o, int err)
{
	struct sub *s = o->data;

	(void)err;
	if (!s->out_paused)
		return;
	sub_net_resume(s);
	sub_in_kick(s);
}

static void on_out_idle(struct gd_out *o, int err)
{
	(void)err;
	sub_net_confirm(o->data);
}

static void on_out_error(struct gd_out *o, int err)
{
	struct sub *s = o->data;
	gd_trace(1, "standard output: %s", uv_strerror(err));
	sub_begin_close(s, "its reader is gone");
}

int sub_out_open(struct sub *s)
{
	int rc;

	if (s->opt.format == GD_OUT_PAYLOAD && s->conf->gd)
		gd_warn("-f payload writes no keys, so gdack cannot acknowledge "
		    "these blocks and the publishers will NACK them; use --no-gd "
		    "if nothing acknowledges");
	if ((rc = gd_out_open(&s->out, &s->loop, 1)) != 0) {
		gd_err("cannot write standard output: %s", uv_strerror(rc));
		return GD_EX_FAIL;
	}
	s->out.data = s;
	s->out.on_error = on_out_error;
	s->out.on_drain = on_out_drain;
	s->out.on_idle = on_out_idle;
	if (s->opt.format == GD_OUT_FRAME) {
		uint8_t *d = gd_out_reserve(&s->out, GD_STREAM_HDR);
		if (d == NULL) {
			gd_err("out of memory");
			return GD_EX_FAIL;
		}
		gd_out_commit(&s->out, gd_stream_header(d));
	}
	return 0;
}

static void out_closed(uv_handle_t *h)
{
	(void)h;
}

/* Readers see EOF once every byte written so far has gone out. */
void sub_out_close(struct sub *s)
{
	gd_out_close(&s->out, out_closed);
}

/* At once: a file takes what is buffered now; what a pipe has not taken
 * yet is dropped (those blocks are not acknowledged, so resent or NACKed). */
void sub_out_abort(struct sub *s)
{
	if (!s->out.async)
		gd_out_flush(&s->out);
	gd_out_abort(&s->out, out_closed);
}
