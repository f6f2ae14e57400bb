/* The publisher: stdin records become blocks, stamped with id and sequence
 * index, encoded once into a shared batch buffer and written to every
 * subscriber; GD acknowledgements are counted per block in the pending
 * table, and every outcome passes through resolve(), the one place a
 * journal will hook in. All writes of an iteration leave in the prepare
 * phase: blocks, the floor, status lines and control replies. */
#include "pub.h"
#include "ctl.h"
#include "hist.h"
#include "input.h"
#include "log.h"
#include "out.h"
#include "parse.h"
#include "pending.h"
#include "rank.h"
#include "stream.h"
#include "window.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BCAST_SIZE (256 * 1024)
#define PARSE_BUDGET 16384		/* records per loop turn */
#define BACKLOG_HIGH (64u << 20)	/* pause input above this per subscriber */
#define BACKLOG_LOW (16u << 20)
#define TICK_MS 250			/* --progress redraws at most 4 times a second */
#define RATE_SAMPLES 5			/* ticks: the rate is over the last second */

struct pub;

struct sconn {
	uv_tcp_t h;
	struct pub *p;
	struct sconn *next, **pprev;
	struct gd_rbuf rb;
	char name[256];
	char addr[80];
	int hello, want_data, slot, ack_status, closing;
	uint64_t acks, blocks;
	uint64_t hello_ns;		/* blocks sent since then reached it */
	uv_shutdown_t sreq;
};

struct bcast {
	uint32_t refs;
	size_t len, cap;
	uint8_t data[];
};

struct bwrite {
	uv_write_t req;
	struct bcast *b;
	struct sconn *c;
};

struct snap {
	uint64_t id, seq, time_ns;
	const uint8_t *data;
	uint32_t len;
	struct gd_chunk *c;
};

struct pub {
	const struct gd_conf *conf;
	struct gd_pub_opts opt;
	uv_loop_t loop;
	uv_tcp_t srv;
	uv_timer_t timer, ready_timer, force_exit;
	uv_idle_t idle;
	uv_prepare_t prep;
	uv_signal_t sigint, sigterm;
	struct gd_ctl_srv ctl;
	struct gd_input in;
	struct gd_out status;
	struct gd_out sout;		/* -o: the framed stream */
	int stream_out;
	struct gd_sreader sr;		/* -f frame: the input stream */
	size_t origin_len;
	struct gd_pending pend;
	struct gd_window win;		/* how many GD blocks may be pending */
	int gd;				/* numSubs > 0 */
	unsigned needed;
	struct sconn *conns;
	unsigned ndata, ngd;
	struct sconn *slot_conn[GD_MAX_SUBS];
	char slot_name[GD_MAX_SUBS][256];
	struct bcast *cur;
	struct gd_region *rq, *rq_tail;
	size_t rpos;
	uint64_t next_id, next_seq, line_no, floor_sent;
	int eof, ready, finished, sigs, stop_code, paused_backlog;
	int warned_few;			/* published with < numSubs connected */
	char origin[300];
	uint64_t epoch;
	uint64_t now;			/* monotonic ns, per callback */
	uint64_t t_start;
	struct snap *snap;
	uint32_t snap_n, snap_head;
	struct gd_hist lat;
	uint64_t n_pub, n_ack, n_nack, n_reject, n_resent, n_bytes, n_nosub,
	    n_late_acks;
	/* observability: a 4 Hz tick samples n_pub for the rate over the
	 * last second and draws the --progress line */
	uv_timer_t tick;
	struct { uint64_t t, n; } rate_s[RATE_SAMPLES];
	unsigned rate_head, rate_n;
};

static void kick(struct pub *p);
static void check_done(struct pub *p);
static void send_end(struct sconn *c);
static void on_timer(uv_timer_t *t);

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- status lines ---- */

static void on_status_error(struct gd_out *o, int err)
{
	(void)o;
	gd_err("cannot write status lines on standard output: %s; "
	    "publishing goes on, outcomes are no longer reported",
	    uv_strerror(err));
}

/* "ACK ID"; with -f frame input also the block's key as it came in,
 * "ACK ID ORIGIN/ID", so the upstream stage can be acknowledged. */
static void status_line(struct pub *p, const char *what, uint64_t id,
    const char *up, size_t uplen, int up_snapshot)
{
	size_t wl = strlen(what), n;
	uint8_t *d = gd_out_reserve(&p->status, wl + 44 + uplen);
	if (d == NULL)
		return;
	memcpy(d, what, wl);
	d[wl] = ' ';
	n = wl + 1 + gd_u64toa((char *)d + wl + 1, id);
	if (up != NULL) {
		d[n++] = ' ';
		memcpy(d + n, up, uplen);
		n += uplen;
		d[n++] = '/';
		n += gd_u64toa((char *)d + n, id);
		if (up_snapshot) {	/* never acknowledged upstream */
			memcpy(d + n, "/s", 2);
			n += 2;
		}
	}
	d[n++] = '\n';
	gd_out_commit(&p->status, n);
}

static void reject(struct pub *p, const char *idtxt, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reject(struct pub *p, const char *idtxt, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	gd_out_write(&p->status, "REJECT ", 7);
	gd_out_write(&p->status, idtxt, strlen(idtxt));
	gd_out_write(&p->status, " ", 1);
	gd_out_write(&p->status, why, strlen(why));
	gd_out_write(&p->status, "\n", 1);
	gd_err("REJECT %s: %s", idtxt, why);
	p->n_reject++;
}

/* ---- broadcast ---- */

static void bcast_free(struct bcast *b)
{
	free(b);
}

static void on_bwritten(uv_write_t *req, int status)
{
	struct bwrite *w = (struct bwrite *)req;
	struct pub *p = w->c->p;

	(void)status;
	if (--w->b->refs == 0)
		bcast_free(w->b);
	free(w);
	if (p->paused_backlog) {
		struct sconn *c;
		for (c = p->conns; c; c = c->next)
			if (uv_stream_get_write_queue_size((uv_stream_t *)&c->h) >
			    BACKLOG_LOW)
				return;
		p->paused_backlog = 0;
		kick(p);
	}
}

static void conn_write(struct sconn *c, struct bcast *b)
{
	struct bwrite *w = malloc(sizeof(*w));
	uv_buf_t buf;

	if (w == NULL)
		return;
	w->b = b;
	w->c = c;
	b->refs++;
	buf = uv_buf_init((char *)b->data, (unsigned)b->len);
	if (uv_write(&w->req, (uv_stream_t *)&c->h, &buf, 1, on_bwritten) != 0) {
		b->refs--;
		free(w);
	}
}

static void flush_bcast(struct pub *p)
{
	struct bcast *b = p->cur;
	struct sconn *c;

	if (b == NULL)
		return;
	p->cur = NULL;
	b->refs++;		/* hold while handing out */
	if (b->len > 0)
		for (c = p->conns; c; c = c->next)
			if (c->hello && c->want_data && !c->closing)
				conn_write(c, b);
	if (--b->refs == 0)
		bcast_free(b);
}

static uint8_t *bcast_room(struct pub *p, size_t need)
{
	if (p->cur == NULL || p->cur->cap - p->cur->len < need) {
		size_t cap = need > BCAST_SIZE ? need : BCAST_SIZE;
		flush_bcast(p);
		p->cur = malloc(sizeof(*p->cur) + cap);
		if (p->cur == NULL)
			return NULL;
		p->cur->refs = 0;
		p->cur->len = 0;
		p->cur->cap = cap;
	}
	return p->cur->data + p->cur->len;
}

/* -o: a frame on the output stream instead of a broadcast */
static void sout_frame(struct pub *p, uint8_t type, const struct gd_block *b)
{
	struct gd_sframe f;
	uint8_t *d;

	memset(&f, 0, sizeof(f));
	f.type = type;
	f.origin = p->origin;
	f.origin_len = p->origin_len;
	f.epoch = p->epoch;
	if (b != NULL) {
		f.flags = b->flags;
		f.id = b->id;
		f.seq = b->seq;
		f.time_ns = b->time_ns;
		f.data = b->data;
		f.len = b->len;
	}
	if ((d = gd_out_reserve(&p->sout, gd_sframe_size(f.origin_len,
	    f.len))) != NULL)
		gd_out_commit(&p->sout, gd_sframe_put(d, &f));
}

static void bcast_block(struct pub *p, const struct gd_block *b)
{
	uint8_t *d;

	if (p->stream_out) {
		sout_frame(p, GD_SF_BLOCK, b);
		return;
	}
	d = bcast_room(p, GD_BLOCK_HDR + (size_t)b->len);
	if (d != NULL)
		p->cur->len += gd_wire_block(d, b);
}

static void bcast_ctrl(struct pub *p, uint8_t type, uint64_t v, int with_v)
{
	uint8_t *d;

	if (p->stream_out) {
		struct gd_block b = { 0, v, 0, 0, 0, NULL };
		sout_frame(p, type == GD_F_FLOOR ? GD_SF_FLOOR : GD_SF_END, &b);
		return;
	}
	d = bcast_room(p, GD_WIRE_HDR + 8);
	if (d != NULL)
		p->cur->len += with_v ? gd_wire_u64(d, type, v) :
		    gd_wire_empty(d, type);
}

/* ---- resolution: the one place every pending block's life ends ---- */

static void resolve(struct pub *p, uint32_t slot, int acked)
{
	struct gd_pend *e = gd_pending_at(&p->pend, slot);
	struct gd_chunk *c = gd_input_chunk(&p->in, gd_pend_owner(e));
	const char *up = NULL;
	size_t uplen = 0;
	int snap = 0;

	if (p->opt.frame)	/* the key it came in with, for gdack -f status */
		up = gd_sframe_origin_of(c->data + e->off, e->len, &uplen,
		    &snap);
	if (acked) {
		status_line(p, "ACK", e->id, up, uplen, snap);
		gd_hist_add(&p->lat, (p->now - e->sent_ns) / 1000);
		p->n_ack++;
	} else {
		status_line(p, "NACK", e->id, up, uplen, snap);
		p->n_nack++;
	}
	gd_chunk_unref(&p->in, c);
	gd_pending_remove(&p->pend, slot);
}

static void arm_timer(struct pub *p)
{
	uint64_t d = gd_pending_deadline(&p->pend), ms;

	if (d == 0 || uv_is_active((uv_handle_t *)&p->timer))
		return;
	ms = d > p->now ? (d - p->now + 999999) / 1000000 : 0;
	uv_timer_start(&p->timer, on_timer, ms, 0);
}

static void on_timer(uv_timer_t *t)
{
	struct pub *p = t->data;
	uint32_t s;

	p->now = uv_hrtime();
	while ((s = gd_pending_expired(&p->pend, p->now)) != GD_NONE) {
		struct gd_pend *e = gd_pending_at(&p->pend, s);
		if (gd_pend_resends(e) < p->conf->resend) {
			struct gd_block b = { e->id, 0, real_ns(), GD_FL_RESENT,
				e->len, gd_input_chunk(&p->in,
				gd_pend_owner(e))->data + e->off };
			/* the sequence index is kept so --dedup index works */
			b.seq = gd_pending_seq(&p->pend, e);
			gd_pend_resent(e);
			p->n_resent++;
			gd_trace(2, "block %" PRIu64 " timed out: resend %u of %" PRId64,
			    e->id, gd_pend_resends(e), p->conf->resend);
			bcast_block(p, &b);
			gd_pending_touch(&p->pend, s, p->now);
		} else {
			resolve(p, s, 0);
		}
		gd_window_expired(&p->win, p->now);
	}
	arm_timer(p);
	kick(p);
	check_done(p);
}

/* ---- input ---- */

static void snap_push(struct pub *p, const struct gd_block *b,
    struct gd_chunk *c)
{
	struct snap *s;
	uint32_t cap = (uint32_t)p->conf->snapshot;

	if (cap == 0)
		return;
	if (p->snap_n == cap) {
		s = &p->snap[p->snap_head];
		gd_chunk_unref(&p->in, s->c);
		p->snap_head = (p->snap_head + 1) % cap;
		p->snap_n--;
	}
	s = &p->snap[(p->snap_head + p->snap_n) % cap];
	s->id = b->id;
	s->seq = b->seq;
	s->time_ns = b->time_ns;
	s->data = b->data;
	s->len = b->len;
	s->c = c;
	gd_chunk_ref(c);
	p->snap_n++;
}

static void publish(struct pub *p, struct gd_chunk *c, uint64_t id,
    const uint8_t *pl, size_t plen, int oversize, uint64_t tnow);

static void record(struct pub *p, struct gd_chunk *c, const uint8_t *rec,
    size_t len, int oversize, uint64_t tnow)
{
	uint64_t id;
	const uint8_t *pl = rec;
	size_t plen = len;
	int e = -1;

	p->line_no++;
	if (p->opt.ids) {
		const uint8_t *tab = memchr(rec, '\t', len < 22 ? len : 22);
		if (tab == NULL || (e = gd_parse_id((const char *)rec,
		    (size_t)(tab - rec), &id)) != 0) {
			reject(p, "-", "malformed line %" PRIu64
			    ": expected ID<TAB>payload with a decimal ID%s",
			    p->line_no, e == -2 ? " without leading zeros" : "");
			return;
		}
		pl = tab + 1;
		plen = len - (size_t)(tab + 1 - rec);
	} else {
		id = p->next_id++;
	}
	publish(p, c, id, pl, plen, oversize, tnow);
}

/* A block gets its sequence index, goes out and, with GD, waits in the
 * pending table; its payload stays in chunk c until it is resolved. */
static void publish(struct pub *p, struct gd_chunk *c, uint64_t id,
    const uint8_t *pl, size_t plen, int oversize, uint64_t tnow)
{
	struct gd_block b;
	char idtxt[24];

	b.id = id;
	if (oversize || plen > (size_t)p->conf->max_block) {
		snprintf(idtxt, sizeof(idtxt), "%" PRIu64, b.id);
		reject(p, idtxt, "block larger than GDpub_maxBlockSize (%" PRId64
		    " bytes)", p->conf->max_block);
		return;
	}
	/* ids gdpub assigns are above every pending one: no lookup needed */
	if (p->gd && (p->opt.ids || p->opt.frame) &&
	    gd_pending_find(&p->pend, b.id) != GD_NONE) {
		snprintf(idtxt, sizeof(idtxt), "%" PRIu64, b.id);
		reject(p, idtxt, "invalid event block ID: %s is already pending",
		    idtxt);
		return;
	}
	b.seq = p->next_seq++;
	b.time_ns = tnow;
	b.flags = 0;
	b.len = (uint32_t)plen;
	b.data = pl;
	bcast_block(p, &b);
	if (p->gd) {
		uint32_t s = c->idx > GD_PEND_MAX_OWNER ? GD_NONE :
		    gd_pending_add(&p->pend, b.id, b.seq,
		    (uint32_t)(pl - c->data), (uint32_t)plen, c->idx, p->now);
		if (s == GD_NONE) {
			gd_err("out of memory for the pending table; stopping input");
			p->eof = 1;
			return;
		}
		gd_chunk_ref(c);
	}
	if (p->ndata == 0 && !p->stream_out)
		p->n_nosub++;
	/* (a stream written with -o is often read later: no warning) */
	if (p->gd && p->ngd < p->needed && !p->warned_few && !p->stream_out) {
		p->warned_few = 1;
		gd_warn("block %" PRIu64 " published while %u of %u GD subscribers "
		    "are connected: it is NACKed unless %s within %g seconds "
		    "(--wait-ready holds input until READY)", b.id, p->ngd,
		    p->needed, p->needed - p->ngd == 1 ? "one connects" :
		    "they connect", p->conf->timeout);
	}
	snap_push(p, &b, c);
	p->n_pub++;
	p->n_bytes += plen;
}

static int parse_paused(struct pub *p)
{
	if (p->sigs || p->finished)
		return 1;
	if (p->opt.wait_ready && !p->ready)
		return 1;
	if (p->gd && p->pend.count >= gd_window_size(&p->win))
		return 1;
	if (p->stream_out && gd_out_backlog(&p->sout) > BACKLOG_HIGH)
		return 1;
	return p->paused_backlog;
}

static void check_backlog(struct pub *p)
{
	struct sconn *c;
	for (c = p->conns; c; c = c->next)
		if (uv_stream_get_write_queue_size((uv_stream_t *)&c->h) >
		    BACKLOG_HIGH)
			p->paused_backlog = 1;
}

/* Records (-f frame: bytes) read from standard input and not published
 * yet: what a stop leaves without a status line. */
static uint64_t unread_input(struct pub *p, uint64_t *bytes)
{
	struct gd_region *r, *more = gd_input_take(&p->in);
	uint64_t n = 0;
	size_t pos = p->rpos;

	if (more != NULL) {	/* the reader's latest regions, not yet parsed */
		if (p->rq_tail)
			p->rq_tail->next = more;
		else
			p->rq = more;
		for (p->rq_tail = more; p->rq_tail->next; )
			p->rq_tail = p->rq_tail->next;
	}
	*bytes = 0;
	for (r = p->rq; r; r = r->next, pos = 0) {
		const uint8_t *d, *e;
		if (r->c == NULL || (r->flags & GD_RG_CHUNK_DONE) || r->len <= pos)
			continue;
		*bytes += r->len - pos;
		if (r->flags & GD_RG_OVERSIZE) {
			n++;
			continue;
		}
		d = r->c->data + r->off + pos;
		e = r->c->data + r->off + r->len;
		while (d < e && (d = memchr(d, p->opt.delim, (size_t)(e - d))) != NULL) {
			n++;
			d++;
		}
		if (r->flags & GD_RG_LAST)
			n++;	/* a final record without its delimiter */
	}
	return n;
}

static void drop_input(struct pub *p)
{
	struct gd_region *r;

	while ((r = p->rq) != NULL) {
		p->rq = r->next;
		gd_input_done(&p->in, r);
	}
	p->rq_tail = NULL;
	p->rpos = 0;
	p->eof = 1;
	uv_idle_stop(&p->idle);
}

/* -f frame: blocks before the bad frame stay published; nothing at or
 * after it is read. */
static void stream_corrupt(struct pub *p)
{
	gd_err("standard input: %s; no more input is read", p->sr.err);
	p->stop_code = GD_EX_DATAERR;
	drop_input(p);
	arm_timer(p);
	check_done(p);
}

static void parse_some(struct pub *p)
{
	unsigned budget = PARSE_BUDGET;
	uint64_t tnow = real_ns();

	p->now = uv_hrtime();
	while (p->rq && budget > 0 && !parse_paused(p)) {
		struct gd_region *r = p->rq;
		const uint8_t *base = r->c ? r->c->data + r->off : NULL;

		if (r->flags & GD_RG_ERROR) {
			gd_err("cannot read standard input: %s", strerror(r->err));
			p->eof = 1;
			p->stop_code = GD_EX_IOERR;
		} else if (r->flags & GD_RG_EOF) {
			p->eof = 1;
		} else if (r->flags & GD_RG_OVERSIZE) {
			record(p, r->c, base, r->len, 1, tnow);
			budget--;
		} else if (!(r->flags & GD_RG_CHUNK_DONE) && p->opt.frame) {
			while (p->rpos < r->len && budget > 0 && !parse_paused(p)) {
				struct gd_sframe f;
				size_t used;
				if (gd_sreader_next(&p->sr, base + p->rpos,
				    r->len - p->rpos, 1, &f, &used) != 1) {
					stream_corrupt(p);
					return;
				}
				p->rpos += used;
				if (f.type != GD_SF_BLOCK)
					continue;	/* the upstream's floor, end */
				publish(p, r->c, f.id, f.data, f.len, 0, tnow);
				budget--;
			}
			if (p->rpos < r->len)
				break;
		} else if (!(r->flags & GD_RG_CHUNK_DONE)) {
			while (p->rpos < r->len && budget > 0 && !parse_paused(p)) {
				const uint8_t *s = base + p->rpos;
				const uint8_t *e = memchr(s, p->opt.delim,
				    r->len - p->rpos);
				size_t n = e ? (size_t)(e - s) : r->len - p->rpos;
				record(p, r->c, s, n, 0, tnow);
				p->rpos += n + (e ? 1 : 0);
				budget--;
			}
			if (p->rpos < r->len)
				break;
		}
		p->rq = r->next;
		if (p->rq == NULL)
			p->rq_tail = NULL;
		p->rpos = 0;
		gd_input_done(&p->in, r);
	}
	check_backlog(p);
	arm_timer(p);
	if (p->rq == NULL || parse_paused(p))
		uv_idle_stop(&p->idle);
	check_done(p);
}

static void on_idle(uv_idle_t *h)
{
	parse_some(h->data);
}

static void kick(struct pub *p)
{
	if (p->rq && !parse_paused(p))
		uv_idle_start(&p->idle, on_idle);
}

static void on_input(struct gd_input *in)
{
	struct pub *p = in->data;
	struct gd_region *r = gd_input_take(in);

	if (r == NULL)
		return;
	if (p->sigs || p->finished) {	/* stopping: drop unread input */
		while (r) {
			struct gd_region *n = r->next;
			gd_input_done(in, r);
			r = n;
		}
		return;
	}
	if (p->rq_tail)
		p->rq_tail->next = r;
	else
		p->rq = r;
	while (r->next)
		r = r->next;
	p->rq_tail = r;
	kick(p);
}

/* ---- subscriber connections ---- */

static void conn_closed(uv_handle_t *h)
{
	struct sconn *c = h->data;
	gd_rbuf_free(&c->rb);
	free(c);
}

static void conn_close(struct sconn *c, const char *why)
{
	struct pub *p = c->p;

	if (c->closing)
		return;
	c->closing = 1;
	if (c->hello && c->want_data)
		p->ndata--;
	if (c->slot >= 0) {
		p->slot_conn[c->slot] = NULL;
		p->ngd--;
	}
	/* a GD subscriber leaving mid-stream is why blocks will be NACKed */
	if (why && c->slot >= 0 && !p->finished)
		gd_warn("GD subscriber %s (%s) disconnected: %s; %u of %u "
		    "connected, %u blocks pending", c->name, c->addr, why,
		    p->ngd, p->needed, p->pend.count);
	else if (why)
		gd_trace(1, "subscriber %s (%s) disconnected: %s",
		    c->name[0] ? c->name : "?", c->addr, why);
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	uv_close((uv_handle_t *)&c->h, conn_closed);
}

static int take_slot(struct pub *p, const char *name)
{
	unsigned i, n = p->needed;
	int any = -1, fresh = -1;

	for (i = 0; i < n; i++) {
		if (p->slot_conn[i] != NULL)
			continue;
		if (strcmp(p->slot_name[i], name) == 0)
			return (int)i;
		if (fresh < 0 && p->slot_name[i][0] == '\0')
			fresh = (int)i;
		if (any < 0)
			any = (int)i;
	}
	if (fresh >= 0)
		return fresh;
	/* a new subscriber takes over a departed one's slot: its acks so far
	 * were the old subscriber's, so they no longer count */
	if (any >= 0)
		gd_pending_clear_bit(&p->pend, (unsigned)any);
	return any;
}

static void send_welcome(struct pub *p, struct sconn *c)
{
	struct gd_welcome w;
	struct bcast *b;
	size_t need = GD_WIRE_HDR + GD_CTRL_MAX;
	uint32_t i;

	for (i = 0; i < p->snap_n; i++)
		need += GD_BLOCK_HDR + p->snap[(p->snap_head + i) %
		    p->conf->snapshot].len;
	b = malloc(sizeof(*b) + need);
	if (b == NULL)
		return;
	b->refs = 0;
	b->cap = need;
	memset(&w, 0, sizeof(w));
	w.version = GD_WIRE_VERSION;
	w.ack_status = (unsigned)c->ack_status;
	w.num_subs = p->needed;
	w.max_block = (uint32_t)p->conf->max_block;
	w.timeout_ms = (uint32_t)(p->conf->timeout * 1000);
	w.epoch = p->epoch;
	w.flags = p->stream_out ? GD_WF_STREAM : 0;
	snprintf(w.origin, sizeof(w.origin), "%s", p->origin);
	b->len = gd_wire_welcome(b->data, &w);
	if (c->want_data)
		for (i = 0; i < p->snap_n; i++) {
			struct snap *s = &p->snap[(p->snap_head + i) %
			    p->conf->snapshot];
			struct gd_block blk = { s->id, s->seq, s->time_ns,
				GD_FL_SNAPSHOT, s->len, s->data };
			b->len += gd_wire_block(b->data + b->len, &blk);
		}
	b->refs++;
	conn_write(c, b);
	if (--b->refs == 0)
		bcast_free(b);
}

static void on_hello(struct pub *p, struct sconn *c, const struct gd_hello *h)
{
	struct sconn *o;
	int st = GD_ACK_NONE;

	snprintf(c->name, sizeof(c->name), "%s", h->name);
	if (h->want_data && p->stream_out) {
		/* it would wait for blocks that never come: no GD slot, no READY */
		gd_err("subscriber %s (%s) asked for blocks over TCP, but this "
		    "gdpub writes them as a framed stream (-o); read the stream "
		    "with gdsub -i", c->name, c->addr);
	} else if (h->gd) {
		st = GD_ACK_OK;
		for (o = p->conns; o; o = o->next)
			if (o != c && o->slot >= 0 && strcmp(o->name, c->name) == 0)
				st = GD_ACK_NAME;
		if (p->needed == 0)
			st = GD_ACK_OFF;
		else if (st == GD_ACK_OK && p->ngd >= p->needed)
			st = GD_ACK_FULL;
	}
	c->ack_status = st;
	if (st == GD_ACK_OK) {
		c->slot = take_slot(p, c->name);
		p->slot_conn[c->slot] = c;
		snprintf(p->slot_name[c->slot], sizeof(p->slot_name[0]), "%s",
		    c->name);
		p->ngd++;
		gd_trace(1, "subscriber %s (%s) connected: GD slot %d, %u of %u",
		    c->name, c->addr, c->slot, p->ngd, p->needed);
	} else if (st == GD_ACK_FULL || st == GD_ACK_NAME) {
		gd_err("refused acknowledgement connection from %s (%s): %s",
		    c->name, c->addr, st == GD_ACK_FULL ?
		    "numSubs GD subscribers are already connected" :
		    "a GD subscriber with this name is already connected");
	} else {
		gd_trace(1, "subscriber %s (%s) connected: %s", c->name,
		    c->addr, st == GD_ACK_OFF ? "GD off at this publisher" :
		    "receive only");
	}
	/* blocks batched so far go to the others; this one starts after */
	flush_bcast(p);
	c->want_data = h->want_data != 0 && !p->stream_out;
	send_welcome(p, c);
	c->hello = 1;
	if (c->want_data)
		p->ndata++;
	if (!p->ready && p->gd && p->ngd == p->needed) {
		p->ready = 1;
		gd_out_write(&p->status, "READY\n", 6);
		uv_timer_stop(&p->ready_timer);
		kick(p);
	}
	if (p->finished)	/* late subscriber: tell it at once */
		send_end(c);
}

static void on_acks(struct pub *p, struct sconn *c, const struct gd_frame *f)
{
	uint32_t i, n = f->len / GD_ACK_SIZE, before = p->pend.count;

	if (c->slot < 0)
		return;		/* not a GD subscriber: its acks do not count */
	for (i = 0; i < n; i++) {
		uint64_t id, seq;
		uint32_t s;
		gd_wire_ack_at(f->body, i, &id, &seq);
		s = gd_pending_find(&p->pend, id);
		c->acks++;
		/* an ack of an earlier block with this id (resolved before the
		 * id was published again) does not count for this one */
		if (s == GD_NONE || gd_pending_seq(&p->pend,
		    gd_pending_at(&p->pend, s)) != seq) {
			p->n_late_acks++;
			continue;
		}
		if (gd_pending_ack(&p->pend, s, (unsigned)c->slot) >= p->needed)
			resolve(p, s, 1);
	}
	if (p->pend.count < before) {
		gd_window_acked(&p->win, p->now, before - p->pend.count, before);
		kick(p);
	}
}

static void conn_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct sconn *c = h->data;
	uint8_t *ptr;
	size_t n;

	(void)hint;
	if (gd_rbuf_space(&c->rb, 16384, &ptr, &n) != 0) {
		b->base = NULL;
		b->len = 0;
		return;
	}
	b->base = (char *)ptr;
	b->len = n;
}

static void conn_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct sconn *c = st->data;
	struct pub *p = c->p;
	struct gd_frame f;
	size_t used;
	int rc;

	(void)buf;
	if (nread < 0) {
		conn_close(c, nread == UV_EOF ? "connection closed" :
		    uv_strerror((int)nread));
		check_done(p);
		return;
	}
	c->rb.len += (size_t)nread;
	p->now = uv_hrtime();
	while ((rc = gd_wire_next(c->rb.buf + c->rb.off, c->rb.len - c->rb.off,
	    0, &f, &used)) == 1) {
		c->rb.off += used;
		if (f.type == GD_F_HELLO && !c->hello) {
			struct gd_hello h;
			if (gd_wire_get_hello(&f, &h) != 0 ||
			    h.version != GD_WIRE_VERSION) {
				gd_err("subscriber %s: unsupported protocol version",
				    c->addr);
				conn_close(c, NULL);
				return;
			}
			on_hello(p, c, &h);
			c->hello_ns = p->now;
		} else if (f.type == GD_F_ACK && c->hello) {
			on_acks(p, c, &f);
		} else if (f.type == GD_F_BYE) {
			conn_close(c, "unsubscribed");
			check_done(p);
			return;
		} else {
			rc = -1;
			break;
		}
	}
	if (rc < 0) {
		gd_err("subscriber %s (%s) sent a malformed frame; closing its connection",
		    c->name[0] ? c->name : "?", c->addr);
		conn_close(c, NULL);
		check_done(p);
		return;
	}
	gd_rbuf_compact(&c->rb);
	arm_timer(p);
	check_done(p);
}

static void on_accept(uv_stream_t *server, int status)
{
	struct pub *p = server->data;
	struct sconn *c;
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	char host[64] = "?";

	if (status < 0) {
		gd_err("cannot accept a connection: %s", uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL || gd_rbuf_init(&c->rb, 65536) != 0) {
		free(c);
		return;
	}
	c->p = p;
	c->slot = -1;
	uv_tcp_init(&p->loop, &c->h);
	c->h.data = c;
	if (uv_accept(server, (uv_stream_t *)&c->h) != 0) {
		uv_close((uv_handle_t *)&c->h, conn_closed);
		return;
	}
	uv_tcp_nodelay(&c->h, 1);
	if (uv_tcp_getpeername(&c->h, (struct sockaddr *)&ss, &len) == 0) {
		int port = 0;
		if (ss.ss_family == AF_INET) {
			uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof(host));
			port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		} else {
			uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof(host));
			port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		}
		gd_fmt_hostport(c->addr, sizeof(c->addr), host, port);
	}
	c->next = p->conns;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &p->conns;
	p->conns = c;
	uv_read_start((uv_stream_t *)&c->h, conn_alloc, conn_read);
}

/* ---- control socket ---- */

/* The names of the GD subscribers whose slot bits are set, comma-separated */
static void reply_acked_by(struct pub *p, struct gd_ctl_client *cl,
    uint32_t mask)
{
	char cell[sizeof(p->slot_name[0])];
	unsigned i;
	int first = 1;

	if (mask == 0) {
		gd_ctl_reply(cl, "-", 1);
		return;
	}
	for (i = 0; i < GD_MAX_SUBS; i++) {
		if (!(mask & ((uint32_t)1 << i)))
			continue;
		gd_ctl_cell(cell, sizeof(cell), p->slot_name[i]);
		if (!first)
			gd_ctl_reply(cl, ",", 1);
		gd_ctl_reply(cl, cell, strlen(cell));
		first = 0;
	}
}

static void reply_pending_row(struct pub *p, struct gd_ctl_client *cl,
    uint32_t s, uint64_t now)
{
	struct gd_pend *e = gd_pending_at(&p->pend, s);
	double age = (double)(now - e->sent_ns) / 1e9;
	double left = (double)(int64_t)(e->sent_ns + p->pend.timeout_ns - now) / 1e9;

	gd_ctl_printf(cl, "%" PRIu64 "\t%s/%" PRIu64 "\t%u\t%u\t%.3f\t%.3f\t%u\t%u\t",
	    e->id, p->origin, e->id, gd_pend_nacks(e), p->needed,
	    age, left < 0 ? 0 : left, gd_pend_resends(e), e->len);
	reply_acked_by(p, cl, e->acked);
	gd_ctl_reply(cl, "\n", 1);
}

/* pending [sort=age|expires|id|acks] [limit=N]. The deadline list is
 * already in age (and expiry) order, so those stop after N rows; id and
 * acks keep the first N in a bounded heap: O(pending log N) per request,
 * nothing per block. */
static void ctl_pending(struct pub *p, struct gd_ctl_client *cl,
    const char *args, uint64_t now)
{
	struct gd_ctl_pending_req q;
	struct gd_rank rk;
	char why[128];
	uint64_t rows;
	uint32_t s, ord = 0;
	size_t i;

	if (gd_ctl_pending_args(args, &q, why, sizeof(why)) != 0) {
		gd_ctl_printf(cl, "error %s\n", why);
		return;
	}
	rows = p->pend.count;
	if (q.limit > 0 && q.limit < rows)
		rows = q.limit;
	gd_ctl_printf(cl, "pending %" PRIu64 "\n", rows);
	gd_ctl_printf(cl, "id:n\tkey:s\tacks:n\tneeded:n\tage:n\texpires_in:n\t"
	    "resends:n\tsize:n\tacked_by:s\n");
	if (q.sort == GD_SORT_AGE || q.sort == GD_SORT_EXPIRES) {
		for (s = p->pend.head; s != GD_NONE && ord < rows;
		    s = p->pend.e[s].next, ord++)
			reply_pending_row(p, cl, s, now);
		return;
	}
	gd_rank_init(&rk, (size_t)rows);
	for (s = p->pend.head; s != GD_NONE; s = p->pend.e[s].next, ord++) {
		struct gd_pend *e = &p->pend.e[s];
		/* acks: fewest first, the blocks furthest from an ACK */
		if (gd_rank_add(&rk, q.sort == GD_SORT_ID ? e->id :
		    gd_pend_nacks(e), ord, s) != 0)
			break;
	}
	gd_rank_sort(&rk);
	/* out of memory: fewer rows than announced would break the reply, so
	 * pad with deadline order */
	for (i = 0; i < rk.n; i++)
		reply_pending_row(p, cl, rk.v[i].val, now);
	for (s = p->pend.head; i < rows && s != GD_NONE; s = p->pend.e[s].next, i++)
		reply_pending_row(p, cl, s, now);
	gd_rank_free(&rk);
}

static const char *conn_state(const struct sconn *c)
{
	if (!c->hello)
		return "connecting";
	switch (c->ack_status) {
	case GD_ACK_OK: return "active";
	case GD_ACK_NONE: return "receive-only";
	case GD_ACK_OFF: return "active, GD off";
	case GD_ACK_FULL: return "refused: numSubs reached";
	case GD_ACK_NAME: return "refused: name in use";
	default: return "refused";
	}
}

/* in_flight per GD slot: pending blocks sent (or resent) to it since it
 * connected that it has not acked. One walk of the pending table. */
static void ctl_subs(struct pub *p, struct gd_ctl_client *cl)
{
	uint64_t infl[GD_MAX_SUBS] = { 0 };
	unsigned slots[GD_MAX_SUBS], nslots = 0, i, n = 0;
	struct sconn *c;
	uint32_t s;
	char name[sizeof(c->name)];

	for (i = 0; i < p->needed && i < GD_MAX_SUBS; i++)
		if (p->slot_conn[i] != NULL)
			slots[nslots++] = i;
	for (s = p->pend.head; nslots > 0 && s != GD_NONE; s = p->pend.e[s].next) {
		const struct gd_pend *e = &p->pend.e[s];
		for (i = 0; i < nslots; i++)
			if (!(e->acked & ((uint32_t)1 << slots[i])) &&
			    e->sent_ns >= p->slot_conn[slots[i]]->hello_ns)
				infl[slots[i]]++;
	}
	for (c = p->conns; c; c = c->next)
		n++;
	gd_ctl_printf(cl, "subs %u\n", n);
	/* qos and failures: per-subscription QoS is not supported yet, so
	 * every subscriber has the default and no failure count */
	gd_ctl_printf(cl, "name:s\taddress:s\tgd:s\tstate:s\tqos:s\tqueue:n\t"
	    "in_flight:n\tfailures:n\tacks:n\n");
	for (c = p->conns; c; c = c->next) {
		gd_ctl_cell(name, sizeof(name), c->name);
		gd_ctl_printf(cl, "%s\t%s\t%s\t%s\t-\t%zu\t", name, c->addr,
		    c->slot >= 0 ? "yes" : "no", conn_state(c),
		    uv_stream_get_write_queue_size((uv_stream_t *)&c->h));
		if (c->slot >= 0)
			gd_ctl_printf(cl, "%" PRIu64, infl[c->slot]);
		else
			gd_ctl_reply(cl, "-", 1);
		gd_ctl_printf(cl, "\t0\t%" PRIu64 "\n", c->acks);
	}
}

/* blocks published per second over the last second or so */
static double rate_now(struct pub *p, uint64_t now)
{
	uint64_t t0 = p->t_start, n0 = 0;

	if (p->rate_n > 0) {
		unsigned old = (p->rate_head + RATE_SAMPLES - p->rate_n) %
		    RATE_SAMPLES;
		t0 = p->rate_s[old].t;
		n0 = p->rate_s[old].n;
	}
	if (now <= t0)
		return 0;
	return (double)(p->n_pub - n0) * 1e9 / (double)(now - t0);
}

static void ctl_stats(struct pub *p, struct gd_ctl_client *cl, uint64_t now)
{
	double up = (double)(now - p->t_start) / 1e9;
	char l50[24], l90[24], l99[24], lmax[24];	/* "-" before an ACK */

	gd_hist_cell(&p->lat, 50, l50, sizeof(l50));
	gd_hist_cell(&p->lat, 90, l90, sizeof(l90));
	gd_hist_cell(&p->lat, 99, l99, sizeof(l99));
	gd_hist_cell(&p->lat, 100, lmax, sizeof(lmax));
	gd_ctl_printf(cl, "stats 1\n");
	gd_ctl_printf(cl, "published:n\tack:n\tnack:n\treject:n\tresent:n\t"
	    "pending:n\tbytes:n\tuptime:n\trate:n\trate_avg:n\tlat_p50_us:n\t"
	    "lat_p90_us:n\tlat_p99_us:n\tlat_max_us:n\tlate_acks:n\twindow:n\n");
	gd_ctl_printf(cl, "%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
	    "\t%" PRIu64 "\t%u\t%" PRIu64 "\t%.3f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%"
	    PRIu64 "\t", p->n_pub,
	    p->n_ack, p->n_nack, p->n_reject, p->n_resent, p->pend.count,
	    p->n_bytes, up, rate_now(p, now),
	    up > 0 ? (double)p->n_pub / up : 0.0, l50, l90, l99, lmax,
	    p->n_late_acks);
	if (p->gd)
		gd_ctl_printf(cl, "%u\n", gd_window_size(&p->win));
	else
		gd_ctl_reply(cl, "-\n", 2);
}

static int ctl_line(void *user, struct gd_ctl_client *cl, char *line,
    size_t len)
{
	struct pub *p = user;
	uint64_t now = uv_hrtime();

	(void)len;
	gd_trace(2, "control request '%.64s'", line);
	if (strcmp(line, "hello") == 0)
		gd_ctl_printf(cl, "hello gdpub %d\n", GD_CTL_PROTO);
	else if (strcmp(line, "pending") == 0 || strncmp(line, "pending ", 8) == 0)
		ctl_pending(p, cl, line + 7, now);
	else if (strcmp(line, "stats") == 0)
		ctl_stats(p, cl, now);
	else if (strcmp(line, "subs") == 0)
		ctl_subs(p, cl);
	else
		gd_ctl_printf(cl, "error unknown request '%.64s'\n", line);
	return 0;
}

/* ---- rate and --progress ---- */

static void on_tick(uv_timer_t *t)
{
	struct pub *p = t->data;
	uint64_t now = uv_hrtime();

	if (p->gd) {
		gd_window_check(&p->win, now, p->pend.head == GD_NONE ? 0 :
		    gd_pending_at(&p->pend, p->pend.head)->sent_ns,
		    p->pend.count);
		kick(p);
	}
	p->rate_s[p->rate_head].t = now;
	p->rate_s[p->rate_head].n = p->n_pub;
	p->rate_head = (p->rate_head + 1) % RATE_SAMPLES;
	if (p->rate_n < RATE_SAMPLES)
		p->rate_n++;
	if (p->opt.progress && !p->finished)
		gd_status("%" PRIu64 " read, %" PRIu64 " ACK, %" PRIu64 " NACK, %u "
		    "pending, %.0f blocks/s", p->n_pub + p->n_reject, p->n_ack,
		    p->n_nack, p->pend.count, rate_now(p, now));
}

/* ---- lifecycle ---- */

static void on_prepare(uv_prepare_t *h)
{
	struct pub *p = h->data;

	if ((p->ndata > 0 || p->stream_out) && !p->finished) {
		uint64_t f = p->gd ? gd_pending_floor(&p->pend, p->next_seq) :
		    p->next_seq;
		if (f != p->floor_sent) {
			bcast_ctrl(p, GD_F_FLOOR, f, 1);
			p->floor_sent = f;
		}
	}
	flush_bcast(p);
	if (p->stream_out)
		gd_out_flush(&p->sout);
	gd_out_flush(&p->status);
	gd_ctl_flush(&p->ctl);
}

static void conn_shut(uv_shutdown_t *req, int status)
{
	struct sconn *c = req->data;
	(void)status;
	conn_close(c, NULL);
}

static void close_all(struct pub *p)
{
	struct sconn *c, *n;

	on_prepare(&p->prep);	/* last status lines and replies */
	uv_close((uv_handle_t *)&p->prep, NULL);
	gd_out_close(&p->status, NULL);
	if (p->stream_out)
		gd_out_close(&p->sout, NULL);
	uv_close((uv_handle_t *)&p->srv, NULL);
	uv_close((uv_handle_t *)&p->timer, NULL);
	uv_close((uv_handle_t *)&p->ready_timer, NULL);
	uv_close((uv_handle_t *)&p->idle, NULL);
	uv_close((uv_handle_t *)&p->sigint, NULL);
	uv_close((uv_handle_t *)&p->sigterm, NULL);
	gd_ctl_close(&p->ctl);
	gd_input_stop(&p->in);
	for (c = p->conns; c; c = n) {
		n = c->next;
		c->sreq.data = c;
		if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->h, conn_shut) != 0)
			conn_close(c, NULL);
	}
}

static void send_end(struct sconn *c)
{
	struct bcast *b = malloc(sizeof(*b) + GD_WIRE_HDR);

	if (b == NULL)
		return;
	b->refs = 1;
	b->len = gd_wire_empty(b->data, GD_F_END);
	conn_write(c, b);
	if (--b->refs == 0)
		bcast_free(b);
}

/* Connections that carry only acknowledgements (gdsub -i) learn of the
 * end too, so they do not try to reconnect to a publisher that is gone. */
static void end_ackonly(struct pub *p)
{
	struct sconn *c;

	for (c = p->conns; c; c = c->next)
		if (c->hello && !c->want_data && !c->closing)
			send_end(c);
}

static void check_done(struct pub *p)
{
	if (p->finished || !p->eof || p->rq != NULL || p->pend.count > 0)
		return;
	p->finished = 1;
	if (p->ndata > 0 || p->stream_out) {
		uint64_t f = p->next_seq;
		if (f != p->floor_sent)
			bcast_ctrl(p, GD_F_FLOOR, f, 1);
		p->floor_sent = f;
	}
	bcast_ctrl(p, GD_F_END, 0, 0);
	flush_bcast(p);
	end_ackonly(p);
	close_all(p);
}

static void on_ready_timeout(uv_timer_t *t)
{
	struct pub *p = t->data;

	gd_err("no READY within %g seconds: %u of %u GD subscribers connected",
	    p->opt.wait_ready_s, p->ngd, p->needed);
	p->stop_code = GD_EX_UNAVAILABLE;
	p->eof = 1;
	p->finished = 1;
	close_all(p);
}

static void on_force_exit(uv_timer_t *t)
{
	struct pub *p = t->data;
	gd_err("standard output did not take the last status lines within a "
	    "second; exiting");
	exit(p->stop_code);
}

/* Second signal: every pending block is reported NACK (it may still be
 * in a pipeline, but this gdpub will never know), the subscribers are
 * told the stream ended, and gdpub exits as soon as the status lines are
 * written (at most a second later). */
static void stop_now(struct pub *p, const char *signame, int code)
{
	uint32_t n = p->pend.count;

	gd_err("second %s: reporting the %u pending blocks as NACK and exiting",
	    signame, n);
	p->stop_code = code;
	p->now = uv_hrtime();
	while (p->pend.head != GD_NONE)
		resolve(p, p->pend.head, 0);
	uv_timer_start(&p->force_exit, on_force_exit, 1000, 0);
	uv_unref((uv_handle_t *)&p->force_exit);
	check_done(p);
}

static void on_signal(uv_signal_t *h, int sig)
{
	struct pub *p = h->data;
	const char *name = sig == SIGINT ? "SIGINT" : "SIGTERM";
	uint64_t recs, bytes;

	if (++p->sigs >= 2) {
		stop_now(p, name, sig == SIGINT ? GD_EX_SIGINT : GD_EX_SIGTERM);
		return;
	}
	recs = p->eof ? 0 : unread_input(p, &bytes);
	if (recs > 0 || (p->opt.frame && !p->eof && bytes > 0)) {
		if (p->opt.frame)
			gd_warn("%s: %" PRIu64 " bytes of framed input already read "
			    "were not published", name, bytes);
		else
			gd_warn("%s: %" PRIu64 " record%s already read from standard "
			    "input %s not published (no status line); the last "
			    "published was record %" PRIu64, name, recs,
			    recs == 1 ? "" : "s", recs == 1 ? "was" : "were",
			    p->line_no);
	}
	gd_info("%s: no more input; waiting for %u pending blocks", name,
	    p->pend.count);
	drop_input(p);
	check_done(p);
}

static int listen_on(struct pub *p)
{
	struct addrinfo hints, *res = NULL;
	char port[16], host[GD_HOST_MAX];
	const char *bind = p->conf->bind ? p->conf->bind : "127.0.0.1";
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%d", (int)p->conf->port);
	if ((rc = getaddrinfo(bind, port, &hints, &res)) != 0) {
		gd_err("cannot listen on %s port %s: %s", bind, port,
		    gai_strerror(rc));
		return GD_EX_UNAVAILABLE;
	}
	uv_tcp_init(&p->loop, &p->srv);
	p->srv.data = p;
	rc = uv_tcp_bind(&p->srv, res->ai_addr, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&p->srv, 128, on_accept);
	freeaddrinfo(res);
	if (rc != 0) {
		gd_err("cannot listen on %s port %s: %s", bind, port,
		    uv_strerror(rc));
		return GD_EX_UNAVAILABLE;
	}
	/* the host written into keys */
	if (p->conf->host)
		snprintf(host, sizeof(host), "%s", p->conf->host);
	else if (strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0) {
		if (gethostname(host, sizeof(host)) != 0)
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
	} else
		snprintf(host, sizeof(host), "%s", bind);
	if (!gd_valid_host(host)) {
		gd_err("cannot use %s '%s' in block keys: expected %s; "
		    "set --host or GDpub_host", strcmp(bind, host) ?
		    "host name" : "bind address", host, GD_VALID_HOST_WHAT);
		return GD_EX_CONFIG;
	}
	gd_fmt_hostport(p->origin, sizeof(p->origin), host, (int)p->conf->port);
	p->origin_len = strlen(p->origin);
	return 0;
}

static void on_sout_error(struct gd_out *o, int err)
{
	struct pub *p = o->data;

	gd_err("cannot write the block stream on %s: %s; no more input is read",
	    p->opt.out, uv_strerror(err));
	if (p->stop_code == 0)
		p->stop_code = GD_EX_FAIL;
	drop_input(p);
	check_done(p);
}

static void on_sout_drain(struct gd_out *o, int err)
{
	(void)err;
	kick(o->data);
}

static int open_file(const char *path, const char *what)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);

	if (fd < 0)
		gd_err("cannot open %s '%s': %s", what, path, strerror(errno));
	return fd;
}

/* Status lines go to stdout, or with -o - to stderr, or to --status FILE;
 * the block stream (-o) to stdout or a file, starting with its header. */
static int open_outputs(struct pub *p)
{
	int sfd = 1, ofd = -1;
	const char *st = p->opt.status;

	if (p->stream_out) {
		if (strcmp(p->opt.out, "-") == 0)
			ofd = 1;
		else if ((ofd = open_file(p->opt.out, "the stream file")) < 0)
			return GD_EX_IOERR;
		if (st == NULL && ofd == 1)
			sfd = 2;
	}
	if (st != NULL && strcmp(st, "-") != 0 &&
	    (sfd = open_file(st, "the status file")) < 0) {
		if (ofd > 2)
			close(ofd);
		return GD_EX_IOERR;
	}
	gd_out_open(&p->status, &p->loop, sfd);
	p->status.on_error = on_status_error;
	if (p->stream_out) {
		uint8_t *d;
		gd_out_open(&p->sout, &p->loop, ofd);
		p->sout.data = p;
		p->sout.on_error = on_sout_error;
		p->sout.on_drain = on_sout_drain;
		if ((d = gd_out_reserve(&p->sout, GD_STREAM_HDR)) != NULL)
			gd_out_commit(&p->sout, gd_stream_header(d));
	}
	return 0;
}

static void walk_close(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

int gd_pub_run(const struct gd_conf *conf, const struct gd_pub_opts *opt)
{
	struct pub *p = calloc(1, sizeof(*p));
	char path[108];
	size_t chunk;
	int rc;

	if (p == NULL) {
		gd_err("out of memory");
		return GD_EX_FAIL;
	}
	p->conf = conf;
	p->opt = *opt;
	p->gd = conf->num_subs > 0;
	p->needed = (unsigned)conf->num_subs;
	p->next_id = 1;
	p->next_seq = 1;
	p->floor_sent = 1;
	p->epoch = real_ns();
	p->stream_out = opt->out != NULL;
	gd_sreader_init(&p->sr, GD_STREAM_MAX_PAYLOAD);
	uv_loop_init(&p->loop);
	p->t_start = p->now = uv_hrtime();
	if ((rc = gd_ctl_path_pub(conf, path, sizeof(path))) != 0)
		goto out;
	if ((rc = listen_on(p)) != 0)
		goto out;
	if ((rc = gd_ctl_listen(&p->ctl, &p->loop, path, ctl_line, p)) != 0) {
		uv_close((uv_handle_t *)&p->srv, NULL);
		goto out;
	}
	gd_window_init(&p->win, (uint64_t)(conf->timeout * 1e9),
	    (uint32_t)conf->max_pending, p->now);
	if (gd_pending_init(&p->pend, (uint64_t)(conf->timeout * 1e9),
	    (uint32_t)(conf->max_pending < 65536 ? conf->max_pending : 65536)) != 0 ||
	    (conf->snapshot > 0 && (p->snap = calloc((size_t)conf->snapshot,
	    sizeof(*p->snap))) == NULL)) {
		gd_err("out of memory");
		rc = GD_EX_FAIL;
		gd_ctl_close(&p->ctl);
		uv_close((uv_handle_t *)&p->srv, NULL);
		goto out;
	}
	if ((rc = open_outputs(p)) != 0) {
		gd_ctl_close(&p->ctl);
		uv_close((uv_handle_t *)&p->srv, NULL);
		goto out;
	}
	uv_timer_init(&p->loop, &p->timer);
	uv_timer_init(&p->loop, &p->ready_timer);
	uv_timer_init(&p->loop, &p->force_exit);
	p->force_exit.data = p;
	uv_idle_init(&p->loop, &p->idle);
	uv_prepare_init(&p->loop, &p->prep);
	uv_signal_init(&p->loop, &p->sigint);
	uv_signal_init(&p->loop, &p->sigterm);
	uv_timer_init(&p->loop, &p->tick);
	p->tick.data = p;
	uv_timer_start(&p->tick, on_tick, TICK_MS, TICK_MS);
	uv_unref((uv_handle_t *)&p->tick);	/* it never keeps gdpub running */
	p->timer.data = p->ready_timer.data = p->idle.data = p->prep.data = p;
	p->sigint.data = p->sigterm.data = p;
	uv_prepare_start(&p->prep, on_prepare);
	uv_signal_start(&p->sigint, on_signal, SIGINT);
	uv_signal_start(&p->sigterm, on_signal, SIGTERM);
	if (opt->wait_ready == 2)
		uv_timer_start(&p->ready_timer, on_ready_timeout,
		    (uint64_t)(opt->wait_ready_s * 1000), 0);
	if (!p->gd && opt->wait_ready)
		p->ready = 1;	/* nothing to wait for with numSubs=0 */
	p->in.data = p;
	chunk = (size_t)conf->max_block + 64;
	if (chunk < (1u << 20))
		chunk = 1u << 20;
	if (opt->frame)
		p->in.max_payload = GD_STREAM_MAX_PAYLOAD;
	if ((rc = gd_input_start(&p->in, &p->loop, 0, opt->delim, chunk,
	    on_input)) != 0) {
		gd_err("cannot start reading standard input: %s", uv_strerror(rc));
		rc = GD_EX_FAIL;
		p->finished = 1;
		close_all(p);
	}
	gd_trace(1, "listening on %s, numSubs=%u, timeout=%gs", p->origin,
	    p->needed, conf->timeout);
	uv_run(&p->loop, UV_RUN_DEFAULT);
	gd_status_clear();
	if (rc == 0)
		rc = p->stop_code ? p->stop_code :
		    (p->n_nack || p->n_reject) ? GD_EX_FAIL : GD_EX_OK;
	if (p->n_nosub > 0 && !p->gd)
		gd_warn("%" PRIu64 " of %" PRIu64 " blocks were published while no subscriber was connected",
		    p->n_nosub, p->n_pub);
	gd_trace(1, "published %" PRIu64 ", ACK %" PRIu64 ", NACK %" PRIu64
	    ", REJECT %" PRIu64 ", resent %" PRIu64, p->n_pub, p->n_ack,
	    p->n_nack, p->n_reject, p->n_resent);
	while (p->snap_n > 0) {
		gd_chunk_unref(&p->in, p->snap[p->snap_head].c);
		p->snap_head = (p->snap_head + 1) % (uint32_t)conf->snapshot;
		p->snap_n--;
	}
	free(p->snap);
	gd_pending_free(&p->pend);
out:
	uv_walk(&p->loop, walk_close, NULL);
	uv_run(&p->loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&p->loop) != 0)
		gd_trace(1, "event loop closed with open handles");
	while (p->rq) {
		struct gd_region *r = p->rq;
		p->rq = r->next;
		free(r);
	}
	free(p->cur);
	gd_input_free(&p->in);
	free(p);
	return rc;
}
