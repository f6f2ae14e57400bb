/* gdsub's standard output: blocks in the chosen format (line, payload,
 * frame; -0 ends records with NUL), and the backpressure that stops the
 * sources while stdout is behind. */
#include "sub_int.h"
#include "clock.h"
#include "log.h"
#include "parse.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int gd_sub_template_check(const char *t, int gd, char delim, char *why,
    size_t whysz)
{
	const char *p;

	if (*t == '\0') {
		snprintf(why, whysz, "empty");
		return -1;
	}
	for (p = t; *p; p++) {
		char c;
		if (*p == '%') {
			if (p[1] == '\0' || strchr("kiosrt%", p[1]) == NULL) {
				snprintf(why, whysz, "unknown %%%.1s (expected %%k key, "
				    "%%i ID, %%o origin, %%s payload, %%r resent, %%t "
				    "arrival time or %%%%)", p + 1);
				return -1;
			}
			p++;
			continue;
		}
		c = *p;
		if (*p == '\\') {
			if (p[1] == '\0' || strchr("tn0\\", p[1]) == NULL) {
				snprintf(why, whysz, "unknown \\%.1s (expected \\t, "
				    "\\n, \\0 or \\\\)", p + 1);
				return -1;
			}
			p++;
			c = *p == 't' ? '\t' : *p == 'n' ? '\n' : *p == '0' ?
			    '\0' : '\\';
		}
		if (gd && c == delim) {
			snprintf(why, whysz, "it would end the record inside it "
			    "(records end with %s), and gdack reads one record per "
			    "key%s", delim ? "a newline" : "NUL",
			    delim ? "; use -0, or --no-gd" : "; or give --no-gd");
			return -1;
		}
	}
	if (gd && !(strncmp(t, "%k", 2) == 0 && (t[2] == '\0' || t[2] == '\t' ||
	    strncmp(t + 2, "\\t", 2) == 0))) {
		snprintf(why, whysz, "gdack reads the key from the start of each "
		    "record up to a TAB: start it with %%k\\t (or %%k alone), or "
		    "give --no-gd when nothing acknowledges");
		return -1;
	}
	return 0;
}

/* The bytes a template can take for this block, at most. */
static size_t template_need(const char *t, const struct sub_origin *o,
    const struct gd_block *b)
{
	size_t n = 1;

	for (; *t; t++)
		n += t[0] == '%' && t[1] == 's' ? b->len : o->len + 48;
	return n;
}

/* One record by the template (checked by gd_sub_template_check); %k is
 * the key as -f line writes it, flags included, so gdack and --sink read
 * it alike. */
static size_t template_put(uint8_t *d, const char *t,
    const struct sub_origin *o, const struct gd_block *b, const char *flags)
{
	size_t n = 0;
	const char *f;

	for (; *t; t++) {
		if (*t == '\\') {
			t++;
			d[n++] = *t == 't' ? '\t' : *t == 'n' ? '\n' : *t == '0' ?
			    '\0' : '\\';
			continue;
		}
		if (*t != '%') {
			d[n++] = (uint8_t)*t;
			continue;
		}
		switch (*++t) {
		case 'k':
			memcpy(d + n, o->s, o->len);
			n += o->len;
			d[n++] = '/';
			n += gd_u64toa((char *)d + n, b->id);
			if (flags[0]) {
				d[n++] = '/';
				for (f = flags; *f; f++)
					d[n++] = (uint8_t)*f;
			}
			break;
		case 'i':
			n += gd_u64toa((char *)d + n, b->id);
			break;
		case 'o':
			memcpy(d + n, o->s, o->len);
			n += o->len;
			break;
		case 's':
			if (b->len)
				memcpy(d + n, b->data, b->len);
			n += b->len;
			break;
		case 'r':
			d[n++] = strchr(flags, 'r') ? '1' : '0';
			break;
		case 't': {
			uint64_t real = gd_clock_real_ns();
			n += (size_t)snprintf((char *)d + n, 40, "%llu.%06lu",
			    (unsigned long long)(real / 1000000000u),
			    (unsigned long)(real % 1000000000u / 1000));
			break;
		}
		default:	/* %% */
			d[n++] = '%';
			break;
		}
	}
	return n;
}

/* A large payload still in the receive buffer of its frame: the key
 * (n bytes reserved) committed, the payload written from that buffer's
 * memory, taken (a new buffer holds what follows the frame), then the
 * delimiter: 1. 0 when it is to be copied. */
static int givable(const struct sub *s, const struct gd_block *b)
{
	const struct gd_rbuf *rb = s->cur_rb;

	return rb != NULL && b->len >= SUB_GIVE_MIN &&
	    (s->opt.format == GD_OUT_LINE || s->opt.format == GD_OUT_PAYLOAD) &&
	    b->data >= (const uint8_t *)gd_dbuf_ptr(&rb->d) &&
	    b->data + b->len <= gd_rbuf_head(rb);
}

static int give(struct sub *s, const struct gd_block *b, size_t n)
{
	uint8_t *mem;

	if (!givable(s, b))
		return 0;
	if ((mem = gd_rbuf_take(s->cur_rb, 256 * 1024)) == NULL) {
		gd_err("out of memory writing block %" PRIu64, b->id);
		sub_finish(s, GD_EX_FAIL);
		return 1;
	}
	gd_out_commit(&s->out, n);
	gd_out_give(&s->out, mem, b->data, b->len);
	if (gd_out_write(&s->out, &s->opt.delim, 1) != 0) {
		gd_err("out of memory writing a block");
		sub_finish(s, GD_EX_FAIL);
	}
	return 1;
}

void sub_out_block(struct sub *s, const struct sub_origin *o,
    const struct gd_block *b, const char *flags)
{
	size_t need = s->opt.format == GD_OUT_TEMPLATE ?
	    template_need(s->opt.tmpl, o, b) : givable(s, b) ? o->len + 32 :
	    o->len + 32 + b->len + GD_SFRAME_HDR + GD_SFRAME_TRAILER;
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
			b->time_ns, o->epoch, o->s, o->len, b->data, b->len,
			NULL, 0 };
		gd_out_commit(&s->out, gd_sframe_put(d, &f));
		return;
	}
	if (s->opt.format == GD_OUT_TEMPLATE) {
		n = template_put(d, s->opt.tmpl, o, b, flags);
		d[n++] = (uint8_t)s->opt.delim;
		gd_out_commit(&s->out, n);
		return;
	}
	if (s->opt.format == GD_OUT_LINE) {
		memcpy(d, o->s, o->len);
		n = o->len;
		d[n++] = '/';
		n += gd_u64toa_next(&s->idtxt, (char *)d + n, b->id);
		if (flags[0]) {
			d[n++] = '/';
			while (*flags)
				d[n++] = (uint8_t)*flags++;
		}
		d[n++] = '\t';
	}
	if (give(s, b, n))
		return;
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
	    s->opt.format == GD_OUT_LINE ? "line" :
	    s->opt.format == GD_OUT_TEMPLATE ? "template" : "payload",
	    s->opt.delim ? "a newline (use -0)" : "a NUL byte");
	s->n_unwritable++;
}

/* ---- what the first stage read ---- */

static void on_mark_read(void *ctx, const struct gd_drain_mark *m)
{
	struct sub *s = ctx;
	struct sub_pub *pc;

	if (m->who >= s->npc)
		return;
	pc = &s->pc[m->who];
	/* a mark of the publisher's earlier run names its sequence indexes */
	if (m->end <= pc->run_from || m->seq <= pc->cons_seq)
		return;
	pc->cons_seq = m->seq;
	pc->cons_due = 1;	/* sent with the next acks (sub_acks.c) */
}

static void drain_off(struct sub *s)
{
	s->drain_on = s->drain_armed = 0;
	uv_timer_stop(&s->drain_timer);
	gd_drain_free(&s->drain);
}

/* Every SUB_DRAIN_MS while marks wait: how much of stdout is read. */
static void on_drain_tick(uv_timer_t *t)
{
	struct sub *s = t->data;
	uint64_t unread;

	if (s->out.closed) {
		drain_off(s);
		return;
	}
	if (gd_out_unread(&s->out, &unread) != 0) {
		gd_trace(1, "standard output: cannot tell what its reader read "
		    "any more; no more reports to the publishers");
		drain_off(s);
		return;
	}
	/* another writer of the pipe (a shell block around gdsub) would
	 * only make it look less read */
	gd_drain_read(&s->drain, unread < s->out.total ? s->out.total - unread :
	    0, on_mark_read, s);
	if (gd_drain_waiting(&s->drain) == 0) {
		s->drain_armed = 0;
		uv_timer_stop(t);
	}
}

/* Once a loop turn (the prepare phase): the last block written of each
 * publisher since, marked at the end of what was written (a block is
 * taken as read when the turn's output is: late by at most one turn). */
void sub_out_marks(struct sub *s)
{
	size_t i;
	int any = 0;

	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		if (pc->mark_seq == 0)
			continue;
		if (s->drain_on && gd_drain_mark(&s->drain, s->out.total,
		    pc->idx, pc->mark_seq) != 0) {
			gd_warn("out of memory: what the first stage of the "
			    "pipeline read is no more reported to the "
			    "publishers");
			drain_off(s);
		}
		pc->mark_seq = 0;
		any = 1;
	}
	if (any && s->drain_on && !s->drain_armed) {
		s->drain_armed = 1;
		(void)uv_timer_start(&s->drain_timer, on_drain_tick,
		    SUB_DRAIN_MS, SUB_DRAIN_MS);
	}
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
	sub_end_out_broken(s);
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
	/* a pipe tells how much of it its reader has read; a file, a
	 * terminal or a socket does not, and the publishers' windows then
	 * follow the acknowledgements alone */
	gd_drain_init(&s->drain);
	if ((rc = uv_timer_init(&s->loop, &s->drain_timer)) != 0) {
		gd_err("cannot set up the event loop: %s", uv_strerror(rc));
		return GD_EX_FAIL;
	}
	s->drain_timer.data = s;
	s->drain_on = s->conf->gd && s->out.fifo;
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

/* The end: no more looks at the pipe. */
static void drain_close(struct sub *s)
{
	s->drain_on = s->drain_armed = 0;
	if (!uv_is_closing((uv_handle_t *)&s->drain_timer))
		uv_close((uv_handle_t *)&s->drain_timer, NULL);
}

/* Readers see EOF once every byte written so far has gone out. */
void sub_out_close(struct sub *s)
{
	if (s->done)
		drain_close(s);
	gd_out_close(&s->out, out_closed);
}

/* At once: a file takes what is buffered now; what a pipe has not taken
 * yet is dropped (those blocks are not acknowledged, so resent or NACKed). */
void sub_out_abort(struct sub *s)
{
	drain_close(s);
	if (!s->out.async)
		gd_out_flush(&s->out);
	gd_out_abort(&s->out, out_closed);
}
