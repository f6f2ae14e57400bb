/* The subscriber: one connection per publisher carries blocks in and acks
 * out. Each block passes the dedup set once: new ones are written on
 * stdout and wait for gdack; duplicates of acknowledged ones are acked
 * again, so resends always resolve. gdack's requests arrive on the control
 * socket; acks, stdout and replies leave together in the prepare phase. */
#include "sub.h"
#include "ctl.h"
#include "input.h"
#include "key.h"
#include "log.h"
#include "out.h"
#include "parse.h"
#include "receive.h"
#include "stream.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUT_HIGH (8u << 20)	/* stop reading publishers above this backlog */

enum pstate { PS_IDLE, PS_RESOLVING, PS_CONNECTING, PS_WELCOME, PS_ACTIVE,
	PS_ENDED };

struct sub;

struct pconn {
	struct sub *s;
	uv_tcp_t h;
	int h_open, reading;
	uv_connect_t creq;
	uv_getaddrinfo_t gai;
	uv_timer_t retry;
	uv_shutdown_t sreq;
	struct gd_hostport hp;
	char addr[300];		/* HOST:PORT as configured */
	size_t addr_len;
	char origin[300];	/* as the publisher stamps its keys */
	size_t origin_len;
	int state, attempts, ack_status;
	uint64_t epoch;
	uint64_t sepoch;	/* -i: the epoch of its frames in the stream */
	uint32_t max_block;
	struct gd_rbuf rb;
	struct gd_recv rv;	/* dedup and acknowledgement rules */
	struct ack { uint64_t id, seq; } *ackq;	/* acknowledgements to send */
	size_t nqueued, capqueued;
	uint64_t n_snap;
};

struct sub {
	const struct gd_conf *conf;
	struct gd_sub_opts opt;
	uv_loop_t loop;
	uv_prepare_t prep;
	uv_timer_t linger;
	uv_signal_t sigint, sigterm;
	struct gd_ctl_srv ctl;
	struct gd_out out;
	struct pconn *pc;
	size_t npc, nended;
	uint64_t emitted;
	uint64_t n_unwritable;	/* blocks the output format could not carry */
	int closing, done, sigs, code, out_paused;
	char name[256];
	/* -i: the framed stream read instead of TCP */
	int stream_in, in_reading;
	int in_code;		/* -i ended on a corrupt stream (65) or read error (74) */
	const char *in_name;
	struct gd_input in;
	struct gd_sreader sr;
	struct gd_region *rq, *rq_tail;
	size_t rpos;
	uv_idle_t idle;
	uint64_t n_foreign;	/* -i: blocks from publishers not listed */
	uint64_t n_stale;	/* -i: blocks of a publisher's earlier run */
};

static void finish(struct sub *s, int code);
static void maybe_done(struct sub *s);
static void begin_close(struct sub *s, const char *why);
static void start_connect(struct pconn *pc);
static void in_kick(struct sub *s);

/* ---- publisher connections ---- */

static void free_write(uv_write_t *w, int status)
{
	(void)status;
	free(w);	/* the frame follows the request in the same block */
}

static void pc_retry_cb(uv_timer_t *t)
{
	start_connect(t->data);
}

static void schedule_retry(struct pconn *pc)
{
	pc->state = PS_IDLE;
	uv_timer_start(&pc->retry, pc_retry_cb,
	    (uint64_t)(pc->s->conf->retry_int * 1000), 0);
}

static void attempt_failed(struct pconn *pc, const char *why)
{
	struct sub *s = pc->s;
	int64_t max = s->conf->max_retries;

	pc->attempts++;
	if (max < 0) {
		gd_err("cannot connect to %s: %s (attempt %d)", pc->addr, why,
		    pc->attempts);
	} else {
		if (max == 0)
			max = 1;
		gd_err("cannot connect to %s: %s (attempt %d of %" PRId64 ")",
		    pc->addr, why, pc->attempts, max);
		if (pc->attempts >= max) {
			gd_err("giving up on publisher %s after %d attempt%s",
			    pc->addr, pc->attempts, gd_plural(pc->attempts));
			finish(s, GD_EX_UNAVAILABLE);
			return;
		}
	}
	schedule_retry(pc);
}

static void pc_closed(uv_handle_t *h)
{
	struct pconn *pc = h->data;
	pc->h_open = 0;
	if (pc->s->done)
		return;
	if (pc->state == PS_CONNECTING)
		return;		/* attempt_failed already ran */
	if (pc->state != PS_ENDED)
		schedule_retry(pc);
}

static void pc_close(struct pconn *pc)
{
	if (!pc->h_open || uv_is_closing((uv_handle_t *)&pc->h))
		return;
	pc->reading = 0;
	uv_close((uv_handle_t *)&pc->h, pc_closed);
}

static void pc_lost(struct pconn *pc, const char *why)
{
	if (pc->state == PS_ACTIVE || pc->state == PS_WELCOME) {
		gd_err("lost connection to publisher %s: %s; reconnecting",
		    pc->addr, why);
		pc->attempts = 0;
	}
	if (pc->state != PS_ENDED)
		pc->state = PS_IDLE;
	pc_close(pc);
}

/* The origin a block's key carries: the publisher's stamp, or with -i
 * the one in its frame (which matched this publisher). */
struct korigin {
	const char *s;
	size_t len;
	uint64_t epoch;
};

static void emit(struct sub *s, const struct korigin *o,
    const struct gd_block *b, const char *flags)
{
	size_t need = o->len + 32 + b->len + GD_SFRAME_HDR + GD_SFRAME_TRAILER;
	uint8_t *d = gd_out_reserve(&s->out, need);
	size_t n = 0;

	if (d == NULL) {
		gd_err("out of memory writing block %.*s/%" PRIu64, (int)o->len,
		    o->s, b->id);
		finish(s, GD_EX_FAIL);
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

static void queue_ack(struct pconn *pc, uint64_t id, uint64_t seq)
{
	if (pc->nqueued == pc->capqueued) {
		size_t ncap = pc->capqueued ? pc->capqueued * 2 : 1024;
		struct ack *n = realloc(pc->ackq, ncap * sizeof(*n));
		if (n == NULL)
			return;	/* the block will be resent and acked again */
		pc->ackq = n;
		pc->capqueued = ncap;
	}
	pc->ackq[pc->nqueued].id = id;
	pc->ackq[pc->nqueued++].seq = seq;
}

static int acks_refused(const struct pconn *pc)
{
	return pc->ack_status == GD_ACK_FULL || pc->ack_status == GD_ACK_NAME;
}

/* blocks written on stdout and not yet acknowledged, all publishers */
static uint64_t unacked(const struct sub *s)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < s->npc; i++)
		n += s->pc[i].rv.unacked;
	return n;
}

static void on_block(struct sub *s, struct pconn *pc, const struct gd_block *b,
    const struct korigin *o)
{
	int gd = s->conf->gd && pc->ack_status == GD_ACK_OK;
	int how = (gd ? GD_RB_GD : 0) | (s->closing ? GD_RB_CLOSED : 0);
	const char *flags = b->flags & GD_FL_RESENT ? "r" : "";

	if (b->flags & GD_FL_SNAPSHOT) {
		/* snapshot blocks are history: shown, never deduped or acked */
		pc->n_snap++;
		if (!s->closing)
			emit(s, o, b, b->flags & GD_FL_RESENT ? "rs" : "s");
		return;
	}
	if (s->opt.format != GD_OUT_FRAME &&
	    memchr(b->data, s->opt.delim, b->len) != NULL)
		how |= GD_RB_UNWRITABLE;
	switch (gd_recv_block(&pc->rv, b->id, b->seq, how)) {
	case GD_RV_REACK:
		queue_ack(pc, b->id, b->seq);	/* its ack was lost: ack again */
		return;
	case GD_RV_COPY:
		emit(s, o, b, flags);
		return;
	case GD_RV_DUP:
	case GD_RV_CLOSED:	/* stdout is closed: the block stays unacked */
		return;
	case GD_RV_UNWRITABLE:
		gd_err("block %.*s/%" PRIu64 " cannot be written in %s format: its "
		    "payload contains %s; not acknowledged", (int)o->len, o->s,
		    b->id,
		    s->opt.format == GD_OUT_LINE ? "line" : "payload",
		    s->opt.delim ? "a newline (use -0)" : "a NUL byte");
		s->n_unwritable++;
		return;
	case GD_RV_TOO_MANY:
		gd_err("block %.*s/%" PRIu64 " reuses an id whose %u earlier "
		    "blocks are still in the pipeline unacknowledged; not "
		    "written, not acknowledged", (int)o->len, o->s, b->id,
		    GD_DEDUP_MAX_OLDER);
		s->n_unwritable++;
		return;
	case GD_RV_NOMEM:
		gd_err("out of memory for the duplicate filter");
		finish(s, GD_EX_FAIL);
		return;
	}
	if (acks_refused(pc) && s->conf->gd)
		gd_err("block %.*s/%" PRIu64 " received but cannot be acknowledged: "
		    "publisher %s %s", (int)o->len, o->s, b->id, pc->addr,
		    gd_ack_status_str(pc->ack_status));
	emit(s, o, b, flags);
	s->emitted++;
	if (s->opt.count && s->emitted >= s->opt.count)
		begin_close(s, NULL);
}

static void forget(struct sub *s, struct pconn *pc)
{
	int64_t lost = gd_recv_reset(&pc->rv);

	if (lost < 0) {
		gd_err("out of memory");
		finish(s, GD_EX_FAIL);
		return;
	}
	gd_warn("publisher %s restarted; forgetting its earlier blocks "
	    "(%" PRId64 " written on stdout were not acknowledged)",
	    pc->addr, lost);
	pc->nqueued = 0;
}

static void on_welcome(struct sub *s, struct pconn *pc,
    const struct gd_welcome *w)
{
	int first = pc->origin_len == 0;

	if (w->flags & GD_WF_STREAM && !s->stream_in) {
		gd_err("publisher %s writes its blocks as a framed stream "
		    "(gdpub -o), not over TCP; read that stream with gdsub -i",
		    pc->addr);
		finish(s, GD_EX_UNAVAILABLE);
		return;
	}
	/* the publisher restarted: its ids start over, so what we remember
	 * of the old run would swallow new blocks (with -i, the frames'
	 * epoch decides that instead) */
	if (!first && w->epoch != pc->epoch && !s->stream_in)
		forget(s, pc);
	if (!first && w->epoch != pc->epoch && s->stream_in && pc->nqueued > 0) {
		/* acks kept while disconnected are for the old run's blocks */
		gd_warn("publisher %s restarted; %zu acknowledgements for its "
		    "earlier run are dropped", pc->addr, pc->nqueued);
		pc->nqueued = 0;
	}
	if (!first && strcmp(pc->origin, w->origin) != 0)
		gd_warn("publisher %s now stamps its keys %s (was %s)",
		    pc->addr, w->origin, pc->origin);
	snprintf(pc->origin, sizeof(pc->origin), "%s", w->origin);
	pc->origin_len = strlen(pc->origin);
	pc->max_block = w->max_block;
	pc->epoch = w->epoch;
	pc->ack_status = (int)w->ack_status;
	pc->state = PS_ACTIVE;
	pc->attempts = 0;
	if (acks_refused(pc) && s->conf->gd)
		gd_err("publisher %s refused the acknowledgement connection: %s",
		    pc->addr, gd_ack_status_str(pc->ack_status) + 9);
	else if (pc->ack_status == GD_ACK_OFF && s->conf->gd && first)
		gd_warn("publisher %s runs with numSubs=0: its blocks need no "
		    "acknowledgement", pc->addr);
	gd_trace(1, "connected to publisher %s (%s), acknowledgements %s",
	    pc->addr, pc->origin, gd_ack_status_str(pc->ack_status));
	in_kick(s);
}

static void pc_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct pconn *pc = h->data;
	uint8_t *p;
	size_t n;

	(void)hint;
	if (gd_rbuf_space(&pc->rb, 65536, &p, &n) != 0) {
		b->base = NULL;
		b->len = 0;
		return;
	}
	b->base = (char *)p;
	b->len = n;
}

static void pc_pause_all(struct sub *s, int pause)
{
	size_t i;
	for (i = 0; i < s->npc; i++) {
		struct pconn *pc = &s->pc[i];
		if (!pc->reading)
			continue;
		if (pause)
			uv_read_stop((uv_stream_t *)&pc->h);
	}
	s->out_paused = pause;
}

static void pc_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);

static void on_out_drain(struct gd_out *o, int err)
{
	struct sub *s = o->data;
	size_t i;

	(void)err;
	if (!s->out_paused)
		return;
	s->out_paused = 0;
	for (i = 0; i < s->npc; i++)
		if (s->pc[i].reading)
			uv_read_start((uv_stream_t *)&s->pc[i].h, pc_alloc, pc_read);
	in_kick(s);
}

static void pc_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct pconn *pc = st->data;
	struct sub *s = pc->s;
	struct gd_frame f;
	size_t used;
	int rc;

	(void)buf;
	if (nread < 0) {
		pc_lost(pc, nread == UV_EOF ? "connection closed by the publisher" :
		    uv_strerror((int)nread));
		return;
	}
	pc->rb.len += (size_t)nread;
	while ((rc = gd_wire_next(pc->rb.buf + pc->rb.off,
	    pc->rb.len - pc->rb.off, pc->max_block ? pc->max_block : (1u << 30),
	    &f, &used)) == 1) {
		pc->rb.off += used;
		if (f.type == GD_F_BLOCK && pc->state == PS_ACTIVE) {
			struct gd_block b;
			struct korigin o = { pc->origin, pc->origin_len,
				pc->epoch };
			gd_wire_get_block(&f, &b);
			on_block(s, pc, &b, &o);
			if (s->done)
				return;
		} else if (f.type == GD_F_WELCOME && pc->state == PS_WELCOME) {
			struct gd_welcome w;
			if (gd_wire_get_welcome(&f, &w) != 0 ||
			    w.version != GD_WIRE_VERSION) {
				gd_err("publisher %s speaks an unsupported protocol version",
				    pc->addr);
				finish(s, GD_EX_UNAVAILABLE);
				return;
			}
			on_welcome(s, pc, &w);
		} else if (f.type == GD_F_FLOOR && f.len == 8) {
			gd_recv_floor(&pc->rv, gd_get64(f.body));
		} else if (f.type == GD_F_END) {
			gd_trace(1, "publisher %s ended its stream", pc->addr);
			pc->state = PS_ENDED;
			s->nended++;
			pc_close(pc);
			if (s->nended == s->npc && !s->stream_in)
				begin_close(s, NULL);
			in_kick(s);
			return;
		} else {
			rc = -1;
			break;
		}
	}
	if (rc < 0) {
		gd_err("publisher %s sent a malformed frame; reconnecting", pc->addr);
		pc->state = PS_IDLE;
		pc_close(pc);
		return;
	}
	gd_rbuf_compact(&pc->rb);
	if (gd_out_backlog(&s->out) > OUT_HIGH && !s->out_paused)
		pc_pause_all(s, 1);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct pconn *pc = req->data;
	struct sub *s = pc->s;
	struct gd_hello h;
	uv_buf_t b;
	uv_write_t *w;

	if (s->done)
		return;
	if (status < 0) {
		pc_close(pc);
		attempt_failed(pc, uv_strerror(status));
		return;
	}
	pc->state = PS_WELCOME;
	uv_tcp_nodelay(&pc->h, 1);
	memset(&h, 0, sizeof(h));
	h.version = GD_WIRE_VERSION;
	h.gd = s->conf->gd ? 1 : 0;
	h.want_data = !s->stream_in;
	snprintf(h.name, sizeof(h.name), "%s", s->name);
	w = malloc(sizeof(*w) + GD_WIRE_HDR + GD_CTRL_MAX);
	if (w == NULL) {
		finish(s, GD_EX_FAIL);
		return;
	}
	b = uv_buf_init((char *)(w + 1), (unsigned)gd_wire_hello((uint8_t *)(w + 1), &h));
	if (uv_write(w, (uv_stream_t *)&pc->h, &b, 1,
	    free_write) != 0)
		free(w);
	pc->rb.len = pc->rb.off = 0;
	pc->reading = 1;
	if (!s->out_paused)
		uv_read_start((uv_stream_t *)&pc->h, pc_alloc, pc_read);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct pconn *pc = req->data;
	struct sub *s = pc->s;
	int rc;

	if (s->done) {
		uv_freeaddrinfo(res);
		return;
	}
	if (status < 0) {
		attempt_failed(pc, uv_strerror(status));
		return;
	}
	uv_tcp_init(&s->loop, &pc->h);
	pc->h.data = pc;
	pc->h_open = 1;
	pc->state = PS_CONNECTING;
	pc->creq.data = pc;
	rc = uv_tcp_connect(&pc->creq, &pc->h, res->ai_addr, on_connect);
	uv_freeaddrinfo(res);
	if (rc != 0) {
		pc_close(pc);
		attempt_failed(pc, uv_strerror(rc));
	}
}

static void start_connect(struct pconn *pc)
{
	struct addrinfo hints;
	char port[16];
	int rc;

	if (pc->s->done)
		return;
	if (pc->h_open) {	/* the last attempt's handle is still closing */
		schedule_retry(pc);
		return;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%d", pc->hp.port);
	gd_trace(1, "connecting to publisher %s (attempt %d)", pc->addr,
	    pc->attempts + 1);
	pc->state = PS_RESOLVING;
	pc->gai.data = pc;
	rc = uv_getaddrinfo(&pc->s->loop, &pc->gai, on_resolved, pc->hp.host,
	    port, &hints);
	if (rc != 0)
		attempt_failed(pc, uv_strerror(rc));
}

static struct pconn *find_origin(struct sub *s, const char *o, size_t n)
{
	size_t i;
	for (i = 0; i < s->npc; i++) {
		struct pconn *pc = &s->pc[i];
		if ((pc->origin_len == n && memcmp(pc->origin, o, n) == 0) ||
		    (pc->addr_len == n && memcmp(pc->addr, o, n) == 0))
			return pc;
	}
	return NULL;
}

/* ---- -i: blocks from a framed stream, acks over TCP ---- */

/* Frames are read once every publisher has answered (so its origin is
 * known and acks can flow), while stdout keeps up. */
static int in_ready(struct sub *s)
{
	size_t i;

	if (!s->in_reading || s->closing || s->done || s->out_paused)
		return 0;
	for (i = 0; s->conf->gd && i < s->npc; i++)
		if (s->pc[i].origin_len == 0 && s->pc[i].state != PS_ENDED)
			return 0;
	return 1;
}

static void in_stop(struct sub *s)
{
	struct gd_region *r;

	while ((r = s->rq) != NULL) {
		s->rq = r->next;
		gd_input_done(&s->in, r);
	}
	s->rq_tail = NULL;
	s->rpos = 0;
	if (s->in_reading) {
		s->in_reading = 0;
		uv_idle_stop(&s->idle);
		gd_input_stop(&s->in);
	}
}

/* End of the stream (code 0), a corrupt one (65) or a read error (74):
 * what was written stays and is acknowledged; nothing more is read. */
static void in_end(struct sub *s, int code)
{
	s->in_code = code;
	in_stop(s);
	begin_close(s, code ? "the input stream cannot be read further" :
	    "end of the input stream");
}

/* -i: the stream's blocks of this publisher are from another run than
 * the one we hold an acknowledgement connection to. */
static int stale(const struct sub *s, const struct pconn *pc)
{
	return s->conf->gd && pc->origin_len && pc->epoch != pc->sepoch &&
	    pc->state != PS_ENDED;
}

static void on_sframe(struct sub *s, const struct gd_sframe *f)
{
	struct pconn *pc = find_origin(s, f->origin, f->origin_len);
	struct korigin o = { f->origin, f->origin_len, f->epoch };
	struct gd_block b;

	if (pc == NULL) {
		if (f->type == GD_SF_BLOCK) {
			gd_err("block %.*s/%" PRIu64 " comes from a publisher that "
			    "is not in GDsub_pub; not written, not acknowledged",
			    (int)f->origin_len, f->origin, f->id);
			s->n_foreign++;
		}
		return;
	}
	if (f->epoch != pc->sepoch) {
		if (pc->sepoch != 0)
			forget(s, pc);
		pc->sepoch = f->epoch;
		if (stale(s, pc))
			gd_err("the stream holds blocks of another run of publisher "
			    "%s than the one running now; they cannot be "
			    "acknowledged and are not written", pc->addr);
	}
	if (f->type == GD_SF_FLOOR) {
		gd_recv_floor(&pc->rv, f->seq);
		return;
	}
	if (f->type == GD_SF_END) {
		gd_trace(1, "the stream of publisher %s ended", pc->addr);
		return;
	}
	if (stale(s, pc)) {
		s->n_stale++;
		return;
	}
	b.id = f->id;
	b.seq = f->seq;
	b.time_ns = f->time_ns;
	b.flags = f->flags;
	b.len = f->len;
	b.data = f->data;
	on_block(s, pc, &b, &o);
}

static void in_parse(struct sub *s)
{
	unsigned budget = 16384;

	while (s->rq && budget > 0 && in_ready(s)) {
		struct gd_region *r = s->rq;
		const uint8_t *base = r->c ? r->c->data + r->off : NULL;

		if (r->flags & GD_RG_ERROR) {
			gd_err("cannot read %s: %s", s->in_name, strerror(r->err));
			in_end(s, GD_EX_IOERR);
			return;
		}
		if (r->flags & GD_RG_EOF) {
			in_end(s, 0);
			return;
		}
		if (!(r->flags & GD_RG_CHUNK_DONE)) {
			while (s->rpos < r->len && budget > 0 && in_ready(s)) {
				struct gd_sframe f;
				size_t used;
				if (gd_sreader_next(&s->sr, base + s->rpos,
				    r->len - s->rpos, 1, &f, &used) != 1) {
					gd_err("%s: %s", s->in_name, s->sr.err);
					in_end(s, GD_EX_DATAERR);
					return;
				}
				s->rpos += used;
				budget--;
				if (f.type != GD_SF_HEADER)
					on_sframe(s, &f);
				if (s->closing || s->done)
					return;	/* in_stop released the regions */
			}
			if (s->rpos < r->len)
				break;
		}
		s->rq = r->next;
		if (s->rq == NULL)
			s->rq_tail = NULL;
		s->rpos = 0;
		gd_input_done(&s->in, r);
	}
	if (s->rq == NULL || !in_ready(s))
		uv_idle_stop(&s->idle);
	if (gd_out_backlog(&s->out) > OUT_HIGH && !s->out_paused)
		pc_pause_all(s, 1);
}

static void on_in_idle(uv_idle_t *h)
{
	in_parse(h->data);
}

static void in_kick(struct sub *s)
{
	if (s->rq && in_ready(s))
		uv_idle_start(&s->idle, on_in_idle);
}

static void on_input(struct gd_input *in)
{
	struct sub *s = in->data;
	struct gd_region *r = gd_input_take(in);

	if (r == NULL)
		return;
	if (s->rq_tail)
		s->rq_tail->next = r;
	else
		s->rq = r;
	while (r->next)
		r = r->next;
	s->rq_tail = r;
	if (!s->in_reading)
		in_stop(s);	/* stopped meanwhile: release them */
	else
		in_kick(s);
}

static int in_open(struct sub *s, const char *path)
{
	int fd = 0, rc;

	s->in_name = "standard input";
	if (strcmp(path, "-") != 0) {
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
			gd_err("cannot open the stream file '%s': %s", path,
			    strerror(errno));
			return GD_EX_IOERR;
		}
		s->in_name = path;
	}
	gd_sreader_init(&s->sr, GD_STREAM_MAX_PAYLOAD);
	uv_idle_init(&s->loop, &s->idle);
	s->idle.data = s;
	s->in.data = s;
	s->in.max_payload = GD_STREAM_MAX_PAYLOAD;
	if ((rc = gd_input_start(&s->in, &s->loop, fd, '\n', 1u << 20,
	    on_input)) != 0) {
		gd_err("cannot start reading %s: %s", s->in_name, uv_strerror(rc));
		return GD_EX_FAIL;
	}
	s->in_reading = 1;
	return 0;
}

/* ---- acknowledgements from gdack ---- */

/* NULL when acknowledged, else why not */
static const char *ack_key(struct sub *s, const char *key, size_t len)
{
	struct pconn *pc;
	size_t olen;
	uint64_t id, seq;
	int flags;

	if (gd_key_parse(key, len, &olen, &id, &flags) != 0)
		return "malformed key (expected HOST:PORT/ID)";
	if (flags & GD_FL_SNAPSHOT)
		return NULL;	/* snapshot blocks need no acknowledgement */
	if ((pc = find_origin(s, key, olen)) == NULL)
		return "not a publisher of this gdsub";
	if (!s->conf->gd)
		return "gdsub runs with --no-gd";
	if (s->stream_in && pc->origin_len && pc->sepoch != pc->epoch)
		return "the stream holds blocks of an earlier run of this "
		    "publisher, not of the one running now";
	if (pc->ack_status == GD_ACK_OFF)
		return NULL;	/* numSubs=0: nothing to acknowledge */
	if (acks_refused(pc))
		return "the publisher refused this gdsub's acknowledgement connection";
	switch (gd_recv_ack(&pc->rv, id, pc->state == PS_ENDED, &seq)) {
	case GD_RA_SEND:
		queue_ack(pc, id, seq);
		return NULL;
	case GD_RA_OK:
		return NULL;
	case GD_RA_UNKNOWN:
		return "unknown key: no such block is waiting for acknowledgement";
	case GD_RA_NOT_WRITTEN:
		return "the block was not written on stdout";
	default:
		return "the publisher ended its stream before this acknowledgement";
	}
}

static void ctl_subs(struct sub *s, struct gd_ctl_client *cl)
{
	static const char *const st[] = { "waiting", "resolving",
		"connecting", "handshake", "connected", "ended" };
	size_t i;

	gd_ctl_printf(cl, "subs %zu\n", s->npc);
	gd_ctl_printf(cl, "publisher:s\torigin:s\tstate:s\tattempts:n\t"
	    "ack_conn:s\treceived:n\tunique:n\tduplicates:n\tacked:n\t"
	    "snapshot:n\tsent:n\n");
	for (i = 0; i < s->npc; i++) {
		struct pconn *pc = &s->pc[i];
		gd_ctl_printf(cl, "%s\t%s\t%s\t%d\t%s\t%" PRIu64 "\t%" PRIu64
		    "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
		    pc->addr, pc->origin_len ? pc->origin : "-", st[pc->state],
		    pc->attempts, pc->origin_len == 0 ? "-" :
		    gd_ack_status_str(pc->ack_status),
		    pc->rv.n_recv, pc->rv.n_unique, pc->rv.n_dup,
		    pc->rv.n_acked, pc->n_snap, gd_recv_sent(&pc->rv));
	}
}

/* one row of totals; R = Ru/S and UR = Ru/R as gdinspect measure has them */
static void ctl_stats(struct sub *s, struct gd_ctl_client *cl)
{
	uint64_t recv = 0, uniq = 0, dup = 0, acked = 0, snap = 0, sent = 0;
	size_t i, ended = 0;

	for (i = 0; i < s->npc; i++) {
		struct pconn *pc = &s->pc[i];
		recv += pc->rv.n_recv;
		uniq += pc->rv.n_unique;
		dup += pc->rv.n_dup;
		acked += pc->rv.n_acked;
		snap += pc->n_snap;
		sent += gd_recv_sent(&pc->rv);
		ended += pc->state == PS_ENDED;
	}
	gd_ctl_printf(cl, "stats 1\n");
	gd_ctl_printf(cl, "publishers:n\tended:n\treceived:n\tunique:n\t"
	    "duplicates:n\tsnapshot:n\tacked:n\tunacked:n\tsent:n\t"
	    "reliability:n\tuniqueness:n\n");
	gd_ctl_printf(cl, "%zu\t%zu\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%"
	    PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t", s->npc, ended,
	    recv, uniq, dup, snap, acked, unacked(s), sent);
	if (sent > 0)
		gd_ctl_printf(cl, "%.4f\t", (double)uniq / (double)sent);
	else
		gd_ctl_reply(cl, "-\t", 2);
	if (recv > 0)
		gd_ctl_printf(cl, "%.4f\n", (double)uniq / (double)recv);
	else
		gd_ctl_reply(cl, "-\n", 2);
}

static int ctl_line(void *user, struct gd_ctl_client *cl, char *line,
    size_t len)
{
	struct sub *s = user;

	if (cl->left > 0) {
		const char *why = ack_key(s, line, len);
		if (why == NULL) {
			cl->ok++;
		} else {
			char buf[GD_CTL_LINE + 128];
			int n = snprintf(buf, sizeof(buf), "%s\t%s\n", line, why);
			cl->failed++;
			if (cl->faillen + (size_t)n > cl->failcap) {
				size_t ncap = cl->failcap ? cl->failcap * 2 : 4096;
				char *nb;
				while (ncap < cl->faillen + (size_t)n)
					ncap *= 2;
				if ((nb = realloc(cl->fail, ncap)) == NULL)
					return -1;
				cl->fail = nb;
				cl->failcap = ncap;
			}
			memcpy(cl->fail + cl->faillen, buf, (size_t)n);
			cl->faillen += (size_t)n;
		}
		if (--cl->left == 0) {
			gd_ctl_printf(cl, "ack %" PRIu64 " %" PRIu64 "\n", cl->ok,
			    cl->failed);
			gd_ctl_reply(cl, cl->fail, cl->faillen);
			cl->faillen = 0;
			maybe_done(s);
		}
		return 0;
	}
	if (strncmp(line, "ack ", 4) == 0) {
		int64_t n;
		if (gd_parse_i64(line + 4, 0, GD_CTL_MAX_KEYS, &n) != 0) {
			gd_ctl_printf(cl, "error bad key count in '%.64s'\n", line);
			return -1;
		}
		cl->ok = cl->failed = 0;
		cl->left = (uint64_t)n;
		if (n == 0)
			gd_ctl_printf(cl, "ack 0 0\n");
	} else if (strcmp(line, "hello") == 0) {
		gd_ctl_printf(cl, "hello gdsub %d\n", GD_CTL_PROTO);
	} else if (strcmp(line, "subs") == 0) {
		ctl_subs(s, cl);
	} else if (strcmp(line, "stats") == 0) {
		ctl_stats(s, cl);
	} else {
		gd_ctl_printf(cl, "error unknown request '%.64s'\n", line);
	}
	return 0;
}

/* ---- lifecycle ---- */

static void flush_acks(struct sub *s)
{
	size_t i;

	for (i = 0; i < s->npc; i++) {
		struct pconn *pc = &s->pc[i];
		size_t off = 0;
		if (pc->nqueued == 0 || pc->state != PS_ACTIVE)
			continue;
		while (off < pc->nqueued) {
			size_t n = pc->nqueued - off, k;
			uv_write_t *w;
			uint8_t *d;
			uv_buf_t b;
			if (n > GD_ACKS_PER_FRAME)
				n = GD_ACKS_PER_FRAME;
			w = malloc(sizeof(*w) + GD_WIRE_HDR + GD_ACK_SIZE * n);
			if (w == NULL)
				break;
			d = (uint8_t *)(w + 1);
			gd_wire_hdr(d, GD_F_ACK, 0, (uint32_t)(GD_ACK_SIZE * n));
			for (k = 0; k < n; k++)
				gd_wire_ack_put(d + GD_WIRE_HDR + GD_ACK_SIZE * k,
				    pc->ackq[off + k].id, pc->ackq[off + k].seq);
			b = uv_buf_init((char *)d,
			    (unsigned)(GD_WIRE_HDR + GD_ACK_SIZE * n));
			if (uv_write(w, (uv_stream_t *)&pc->h, &b, 1,
			    free_write) != 0)
				free(w);
			off += n;
		}
		gd_trace(2, "sent %zu acknowledgements to %s", pc->nqueued, pc->addr);
		pc->nqueued = 0;
	}
}

static void on_prepare(uv_prepare_t *h)
{
	struct sub *s = h->data;

	flush_acks(s);
	gd_out_flush(&s->out);
	gd_ctl_flush(&s->ctl);
}

static void on_linger(uv_timer_t *t)
{
	struct sub *s = t->data;
	uint64_t n = unacked(s);

	if (n == 0 || !s->conf->gd)
		gd_warn("gdack is still connected with its input open %g seconds "
		    "(--linger) after standard output closed; exiting",
		    s->opt.linger);
	else
		gd_warn("%" PRIu64 " block%s written on stdout %s not "
		    "acknowledged within --linger %g seconds", n, n == 1 ? "" : "s",
		    n == 1 ? "was" : "were", s->opt.linger);
	finish(s, GD_EX_OK);
}

static void out_closed(uv_handle_t *h)
{
	(void)h;
}

/* Once stdout is closed, exit when every block written is acknowledged
 * and the gdack that reads our pipeline has gone (it may still be sending
 * keys that need no acknowledgement, as with numSubs=0). */
static void maybe_done(struct sub *s)
{
	if (s->closing && !s->done && (!s->conf->gd || unacked(s) == 0) &&
	    s->ctl.clients == NULL)
		finish(s, GD_EX_OK);
}

static void on_ctl_gone(void *user)
{
	maybe_done(user);
}

static void begin_close(struct sub *s, const char *why)
{
	if (s->closing)
		return;
	s->closing = 1;
	if (why)
		gd_trace(1, "closing standard output: %s", why);
	if (s->stream_in)
		in_stop(s);
	gd_out_close(&s->out, out_closed);
	uv_timer_start(&s->linger, on_linger, (uint64_t)(s->opt.linger * 1000), 0);
	maybe_done(s);
}

static void pc_shut(uv_shutdown_t *req, int status)
{
	struct pconn *pc = req->data;
	(void)status;
	pc_close(pc);
}

static void finish(struct sub *s, int code)
{
	size_t i;

	if (s->done)
		return;
	s->done = 1;
	s->code = code;
	if (s->stream_in)
		in_stop(s);
	flush_acks(s);
	gd_ctl_flush(&s->ctl);
	for (i = 0; i < s->npc; i++) {
		struct pconn *pc = &s->pc[i];
		uv_timer_stop(&pc->retry);
		uv_close((uv_handle_t *)&pc->retry, NULL);
		if (pc->state == PS_RESOLVING)
			uv_cancel((uv_req_t *)&pc->gai);
		if (pc->h_open && !uv_is_closing((uv_handle_t *)&pc->h)) {
			pc->sreq.data = pc;
			if (pc->state != PS_ACTIVE || uv_shutdown(&pc->sreq,
			    (uv_stream_t *)&pc->h, pc_shut) != 0)
				pc_close(pc);
		}
	}
	uv_close((uv_handle_t *)&s->prep, NULL);
	uv_close((uv_handle_t *)&s->linger, NULL);
	uv_close((uv_handle_t *)&s->sigint, NULL);
	uv_close((uv_handle_t *)&s->sigterm, NULL);
	gd_ctl_close(&s->ctl);
	gd_out_close(&s->out, out_closed);
}

static void on_out_error(struct gd_out *o, int err)
{
	struct sub *s = o->data;
	gd_trace(1, "standard output: %s", uv_strerror(err));
	begin_close(s, "its reader is gone");
}

static void on_signal(uv_signal_t *h, int sig)
{
	struct sub *s = h->data;

	if (++s->sigs >= 2) {
		gd_err("second %s: exiting with %" PRIu64 " blocks unacknowledged",
		    sig == SIGINT ? "SIGINT" : "SIGTERM", unacked(s));
		exit(sig == SIGINT ? GD_EX_SIGINT : GD_EX_SIGTERM);
	}
	begin_close(s, sig == SIGINT ? "SIGINT" : "SIGTERM");
}

static void walk_close(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

int gd_sub_run(const struct gd_conf *conf, const struct gd_sub_opts *opt)
{
	struct sub *s = calloc(1, sizeof(*s));
	char path[108];
	size_t i;
	int rc;

	if (s == NULL) {
		gd_err("out of memory");
		return GD_EX_FAIL;
	}
	s->conf = conf;
	s->opt = *opt;
	s->stream_in = opt->in != NULL;
	gd_sub_identity(conf, s->name, sizeof(s->name));
	uv_loop_init(&s->loop);
	if ((rc = gd_ctl_path_sub(conf, path, sizeof(path))) != 0 ||
	    (rc = gd_ctl_listen(&s->ctl, &s->loop, path, ctl_line, s)) != 0)
		goto out;
	s->ctl.on_gone = on_ctl_gone;
	s->pc = calloc(conf->npubs, sizeof(*s->pc));
	if (s->pc == NULL) {
		rc = GD_EX_FAIL;
		gd_ctl_close(&s->ctl);
		goto out;
	}
	s->npc = conf->npubs;
	if (opt->format == GD_OUT_PAYLOAD && conf->gd)
		gd_warn("-f payload writes no keys, so gdack cannot acknowledge "
		    "these blocks and the publishers will NACK them; use --no-gd "
		    "if nothing acknowledges");
	gd_out_open(&s->out, &s->loop, 1);
	s->out.data = s;
	s->out.on_error = on_out_error;
	s->out.on_drain = on_out_drain;
	if (opt->format == GD_OUT_FRAME) {
		uint8_t *d = gd_out_reserve(&s->out, GD_STREAM_HDR);
		if (d != NULL)
			gd_out_commit(&s->out, gd_stream_header(d));
	}
	uv_prepare_init(&s->loop, &s->prep);
	uv_timer_init(&s->loop, &s->linger);
	uv_signal_init(&s->loop, &s->sigint);
	uv_signal_init(&s->loop, &s->sigterm);
	s->prep.data = s->linger.data = s->sigint.data = s->sigterm.data = s;
	uv_prepare_start(&s->prep, on_prepare);
	uv_signal_start(&s->sigint, on_signal, SIGINT);
	uv_signal_start(&s->sigterm, on_signal, SIGTERM);
	for (i = 0; i < s->npc; i++) {
		struct pconn *pc = &s->pc[i];
		pc->s = s;
		pc->hp = conf->pubs[i];
		pc->addr_len = (size_t)gd_fmt_hostport(pc->addr, sizeof(pc->addr),
		    pc->hp.host, pc->hp.port);
		pc->ack_status = conf->gd ? GD_ACK_OK : GD_ACK_NONE;
		uv_timer_init(&s->loop, &pc->retry);
		pc->retry.data = pc;
		if (gd_rbuf_init(&pc->rb, 256 * 1024) != 0 ||
		    gd_recv_init(&pc->rv, (int)conf->dedup) != 0) {
			gd_err("out of memory");
			finish(s, GD_EX_FAIL);
			break;
		}
		if (!s->stream_in || conf->gd)
			start_connect(pc);
	}
	if (s->stream_in && !s->done && (rc = in_open(s, opt->in)) != 0)
		finish(s, rc);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	rc = s->code;
	if (rc == GD_EX_OK && s->in_code)
		rc = s->in_code;
	if (rc == GD_EX_OK && s->n_unwritable > 0) {
		gd_err("%" PRIu64 " blocks could not be written in the output format "
		    "and were not acknowledged", s->n_unwritable);
		rc = GD_EX_FAIL;
	}
	if (rc == GD_EX_OK && s->n_foreign > 0) {
		gd_err("%" PRIu64 " blocks came from publishers not in GDsub_pub "
		    "and were not acknowledged", s->n_foreign);
		rc = GD_EX_FAIL;
	}
	if (rc == GD_EX_OK && s->n_stale > 0) {
		gd_err("%" PRIu64 " blocks came from an earlier run of their "
		    "publisher and were not acknowledged", s->n_stale);
		rc = GD_EX_FAIL;
	}
out:
	uv_walk(&s->loop, walk_close, NULL);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	uv_loop_close(&s->loop);
	for (i = 0; s->pc && i < s->npc; i++) {
		gd_rbuf_free(&s->pc[i].rb);
		gd_recv_free(&s->pc[i].rv);
		free(s->pc[i].ackq);
	}
	free(s->pc);
	while (s->rq) {
		struct gd_region *r = s->rq;
		s->rq = r->next;
		free(r);
	}
	if (s->stream_in)
		gd_input_free(&s->in);
	free(s);
	return rc;
}
