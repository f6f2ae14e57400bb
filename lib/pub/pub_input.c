/* gdpub's input: records (lines, ID<TAB>payload, NUL-terminated, or frames
 * of -f frame) read from stdin in chunks become blocks, stamped and handed
 * to the delivery rules and the sink, or REJECTed. A block's payload stays
 * in its input chunk while it is pending or in the snapshot. Parsing runs
 * in the idle phase, a budget per loop turn, and pauses while the window
 * is full, READY is awaited or the sink has too much queued. */
#include "pub_int.h"
#include "clock.h"
#include "log.h"
#include "parse.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define PARSE_BUDGET 16384		/* records per loop turn */

void pub_sink_block(struct pub *p, const struct gd_block *b,
    struct gd_chunk *c)
{
	p->blk_chunk = c;
	p->sink->block(p, b);
	p->blk_chunk = NULL;
}

const uint8_t *pub_payload(struct pub *p, const struct gd_pend *e)
{
	return gd_input_chunk(&p->in, gd_pend_owner(e))->data + e->off;
}

void pub_release(struct pub *p, uint32_t owner)
{
	gd_chunk_unref(&p->in, gd_input_chunk(&p->in, owner));
}

static void snap_push(struct pub *p, const struct gd_block *b,
    struct gd_chunk *c)
{
	struct gd_snap_ent e = { b->id, b->seq, b->time_ns, b->data, b->len, c };
	struct gd_chunk *old;

	if (p->snap.cap == 0)
		return;
	gd_chunk_ref(c);
	if ((old = gd_snapshot_push(&p->snap, &e)) != NULL)
		gd_chunk_unref(&p->in, old);
}

/* A block gets its sequence index, goes out and, with GD, waits in the
 * pending table; its payload stays in chunk c until it is resolved. */
void pub_input_send(struct pub *p, struct gd_chunk *c, uint64_t id,
    const uint8_t *pl, size_t plen, uint64_t tnow)
{
	struct gd_block b;
	char idtxt[24];
	int rc;

	/* ids gdpub assigns are above every pending one: no lookup needed */
	rc = gd_deliver_publish(&p->dv, id, !(p->opt.ids || p->opt.frame),
	    c->idx, (uint32_t)(pl - c->data), (uint32_t)plen, p->now, &b.seq);
	if (rc == GD_DV_PENDING) {
		snprintf(idtxt, sizeof(idtxt), "%" PRIu64, id);
		pub_reject(p, idtxt, "invalid event block ID: %s is already "
		    "pending", idtxt);
		return;
	}
	if (rc == GD_DV_NOMEM) {
		gd_err("out of memory for the pending table; stopping input");
		pub_drop_input(p);
		return;
	}
	if (p->journal && gd_journal_block(&p->jn, id, b.seq, tnow, pl,
	    (uint32_t)plen) != 0) {
		pub_journal_failed(p);
		return;
	}
	if (pub_gd(p))
		gd_chunk_ref(c);
	b.id = id;
	b.time_ns = tnow;
	b.flags = 0;
	b.len = (uint32_t)plen;
	b.data = pl;
	pub_sink_block(p, &b, c);
	if (!p->sink->readers(p))
		p->n_nosub++;
	/* (a stream written with -o is often read later: no warning) */
	if (pub_gd(p) && p->ngd < p->needed && !p->warned_few &&
	    p->sink == &pub_tcp_sink) {
		p->warned_few = 1;
		/* a subscriber that connects later is not sent it: only a
		 * resend can reach one */
		char fate[200];
		double t = p->conf->timeout;
		if (p->conf->resend > 0)
			snprintf(fate, sizeof(fate), "sent again after %g seconds "
			    "to those connected then, and NACKed if still short "
			    "when its resends run out (--wait-ready holds input "
			    "until READY)", t);
		else
			snprintf(fate, sizeof(fate), "NACKed after %g seconds, "
			    "since a subscriber that connects later is not sent "
			    "it (--wait-ready holds input until READY; --resend "
			    "sends it again)", t);
		gd_warn("block %" PRIu64 " published while %u of %u GD "
		    "subscribers are connected: it is %s", b.id, p->ngd,
		    p->needed, fate);
	}
	snap_push(p, &b, c);
	p->n_bytes += plen;
}

/* A block read: too large, held or dropped by the cluster, or sent. */
static void publish(struct pub *p, struct gd_chunk *c, uint64_t id,
    const uint8_t *pl, size_t plen, int oversize, uint64_t tnow)
{
	char idtxt[24];

	if (oversize || plen > (size_t)p->conf->max_block) {
		snprintf(idtxt, sizeof(idtxt), "%" PRIu64, id);
		pub_reject(p, idtxt, "block larger than GDpub_maxBlockSize (%"
		    PRId64 " bytes)", p->conf->max_block);
		return;
	}
	if (p->cluster && pub_cluster_block(p, c, id, pl, plen) != 0)
		return;
	pub_input_send(p, c, id, pl, plen, tnow);
}

static void record(struct pub *p, struct gd_chunk *c, const uint8_t *rec,
    size_t len, int oversize, uint64_t tnow)
{
	uint64_t id;
	const uint8_t *pl = rec;
	size_t plen = len;
	int e = -1;

	p->line_no++;
	if (p->opt.ids) {
		size_t off;
		if ((e = gd_parse_id_record((const char *)rec, len, &id,
		    &off)) != 0) {
			pub_reject(p, "-", "malformed line %" PRIu64
			    ": expected ID<TAB>payload with a decimal ID%s%s",
			    p->line_no, e == -2 ? " without leading zeros" : "",
			    p->cluster ? " (in a cluster every block needs "
			    "the ID its producer gave it)" : "");
			return;
		}
		pl = rec + off;
		plen = len - off;
	} else {
		id = p->next_id++;
	}
	publish(p, c, id, pl, plen, oversize, tnow);
}

static int paused(struct pub *p)
{
	if ((p->sigs && !p->input_finishing) || p->finished)
		return 1;
	/* (what a stop leaves of a FIFO goes out, READY or not) */
	if (p->opt.wait_ready && !p->ready && !p->input_finishing)
		return 1;
	return gd_deliver_full(&p->dv) || p->sink->full(p) ||
	    (p->cluster && gd_cluster_full(&p->cl));
}

void pub_drop_input(struct pub *p)
{
	struct gd_region *r;

	while ((r = p->rq) != NULL) {
		p->rq = r->next;
		gd_input_done(&p->in, r);
	}
	p->rq_tail = NULL;
	p->rpos = 0;
	p->eof = 1;
	p->input_finishing = 0;
	uv_idle_stop(&p->idle);
}

/* -f frame: blocks before the bad frame stay published; nothing at or
 * after it is read. */
static void stream_corrupt(struct pub *p)
{
	gd_err("standard input: %s; no more input is read", p->sr.err);
	p->stop_code = GD_EX_DATAERR;
	pub_drop_input(p);
	pub_arm_timer(p);
	pub_maybe_done(p);
}

/* The records of region r from offset pos; 0 when it was cut short
 * (budget, pause), -1 when the stream is corrupt. */
static int parse_region(struct pub *p, struct gd_region *r, unsigned *budget,
    uint64_t tnow)
{
	const uint8_t *base = r->c->data + r->off;

	while (p->rpos < r->len && *budget > 0 && !paused(p)) {
		if (p->opt.frame) {
			struct gd_sframe f;
			size_t used;
			if (gd_sreader_next(&p->sr, base + p->rpos,
			    r->len - p->rpos, 1, &f, &used) != 1)
				return -1;
			p->rpos += used;
			if (f.type != GD_SF_BLOCK)
				continue;	/* the upstream's floor, end */
			publish(p, r->c, f.id, f.data, f.len, 0, tnow);
		} else {
			const uint8_t *s = base + p->rpos;
			const uint8_t *e = memchr(s, p->opt.delim,
			    r->len - p->rpos);
			size_t n = e ? (size_t)(e - s) : r->len - p->rpos;
			record(p, r->c, s, n, 0, tnow);
			p->rpos += n + (e ? 1 : 0);
		}
		(*budget)--;
	}
	return p->rpos >= r->len;
}

/* The journal's pending blocks go out again first, with their own id and
 * sequence index, flagged resent. */
static void replay_some(struct pub *p, unsigned *budget, uint64_t tnow)
{
	while (p->replay.next < p->replay.n && *budget > 0 && !paused(p)) {
		struct gd_jblock *j = &p->replay.b[p->replay.next++];
		uint32_t off = (uint32_t)(j->data - p->replay.c->data);
		struct gd_block b = { j->id, j->seq, tnow, GD_FL_RESENT, j->len,
			j->data };
		if (gd_deliver_restore(&p->dv, j->id, j->seq, p->replay.c->idx,
		    off, j->len, p->now) != 0) {
			gd_err("out of memory for the pending table; stopping input");
			pub_drop_input(p);
			break;
		}
		gd_chunk_ref(p->replay.c);
		pub_sink_block(p, &b, p->replay.c);
		p->n_bytes += j->len;
		(*budget)--;
	}
	if (p->replay.next >= p->replay.n && p->replay.c != NULL) {
		gd_chunk_unref(&p->in, p->replay.c);
		p->replay.c = NULL;
		free(p->replay.b);
		p->replay.b = NULL;
		p->replay.n = p->replay.next = 0;
	}
}

/* (after a stop, the journal keeps what was not replayed) */
int pub_input_left(const struct pub *p)
{
	return p->rq != NULL || (!p->eof && p->replay.next < p->replay.n);
}

/* Take the journal's pending blocks for replay: their payloads into one
 * chunk of their own. 0, or -1 when out of memory. */
int pub_replay_start(struct pub *p)
{
	const struct gd_jblock *jb;
	size_t i, n, total = 0, off = 0;

	jb = gd_journal_pending(&p->jn, &n);
	if (n == 0)
		return 0;
	for (i = 0; i < n; i++)
		total += jb[i].len;
	if ((p->replay.c = gd_input_chunk_new(&p->in, total ? total : 1)) == NULL)
		return -1;
	p->replay.b = gd_journal_take_pending(&p->jn, &p->replay.n);
	for (i = 0; i < p->replay.n; i++) {
		struct gd_jblock *b = &p->replay.b[i];
		memcpy(p->replay.c->data + off, b->data, b->len);
		b->data = p->replay.c->data + off;
		off += b->len;
	}
	return 0;
}

static void parse_some(struct pub *p)
{
	unsigned budget = PARSE_BUDGET;
	uint64_t tnow = gd_clock_real_ns();

	p->now = gd_clock_mono_ns();
	if (p->replay.n > 0 && !p->eof)
		replay_some(p, &budget, tnow);
	while (p->rq && p->replay.n == 0 && budget > 0 && !paused(p)) {
		struct gd_region *r = p->rq;

		if (r->flags & GD_RG_ERROR) {
			gd_err("cannot read standard input: %s", strerror(r->err));
			p->eof = 1;
			p->stop_code = GD_EX_IOERR;
		} else if (r->flags & GD_RG_EOF) {
			p->eof = 1;
			if (p->input_finishing && p->in.cut > 0)
				gd_warn("the last %zu bytes read from the FIFO "
				    "were part of a record its writer did not "
				    "finish within %d ms of the stop: not "
				    "published", p->in.cut, PUB_FINISH_MS);
		} else if (r->flags & GD_RG_OVERSIZE) {
			record(p, r->c, r->c->data + r->off, r->len, 1, tnow);
			budget--;
		} else if (!(r->flags & GD_RG_CHUNK_DONE)) {
			int k = parse_region(p, r, &budget, tnow);
			if (k < 0) {
				stream_corrupt(p);
				return;
			}
			if (k == 0)
				break;
		}
		p->rq = r->next;
		if (p->rq == NULL)
			p->rq_tail = NULL;
		p->rpos = 0;
		gd_input_done(&p->in, r);
	}
	pub_arm_timer(p);
	if (!pub_input_left(p) || paused(p))
		uv_idle_stop(&p->idle);
	pub_maybe_done(p);
}

static void on_idle(uv_idle_t *h)
{
	parse_some(h->data);
}

void pub_kick(struct pub *p)
{
	if (pub_input_left(p) && !paused(p))
		uv_idle_start(&p->idle, on_idle);
}

/* Take the reader's latest regions into the queue. */
static void take_regions(struct pub *p)
{
	struct gd_region *r = gd_input_take(&p->in);

	if (r == NULL)
		return;
	if (p->rq_tail)
		p->rq_tail->next = r;
	else
		p->rq = r;
	while (r->next)
		r = r->next;
	p->rq_tail = r;
}

static void on_input(struct gd_input *in)
{
	struct pub *p = in->data;

	take_regions(p);
	if ((p->sigs && !p->input_finishing) || p->finished)
		/* stopping: drop unread input */
		pub_drop_input(p);
	else
		pub_kick(p);
}

/* Records (-f frame: bytes) read from standard input and not published
 * yet: what a stop leaves without a status line. */
static uint64_t unread_input(struct pub *p, uint64_t *bytes)
{
	struct gd_region *r;
	uint64_t n = 0;
	size_t pos = p->rpos;

	take_regions(p);
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

/* The first SIGINT/SIGTERM: say what was read and will not be published,
 * then read no more. */
void pub_stop_input(struct pub *p, const char *name)
{
	uint64_t bytes = 0, recs;

	/* a FIFO the service manager holds open: its writers' records are
	 * in it, and what gdpub took out of it has no other way on than
	 * this gdpub; the rest waits in the FIFO for the next start */
	if (p->opt.input_fd > 0 && !p->eof) {
		gd_info("%s: reading no more from the FIFO once the records "
		    "already read are published; then waiting for the pending "
		    "blocks", name);
		p->input_finishing = 1;
		if (gd_input_finish(&p->in, PUB_FINISH_MS) == 0) {
			pub_kick(p);
			return;
		}
		p->input_finishing = 0;	/* not a pipe after all */
	}
	recs = p->eof ? 0 : unread_input(p, &bytes);

	if (p->opt.frame && bytes > 0)
		gd_warn("%s: %" PRIu64 " bytes of framed input already read "
		    "were not published", name, bytes);
	else if (!p->opt.frame && recs > 0)
		gd_warn("%s: %" PRIu64 " record%s already read from standard "
		    "input %s not published (no status line); the last "
		    "published was record %" PRIu64, name, recs,
		    recs == 1 ? "" : "s", recs == 1 ? "was" : "were",
		    p->line_no);
	gd_info("%s: no more input; waiting for %u pending blocks", name,
	    gd_deliver_pending_count(&p->dv));
	pub_drop_input(p);
}

int pub_input_start(struct pub *p)
{
	size_t chunk = (size_t)p->conf->max_block + 64;
	int rc;

	if (chunk < (1u << 20))
		chunk = 1u << 20;
	gd_sreader_init(&p->sr, GD_STREAM_MAX_PAYLOAD);
	if (p->opt.frame)
		p->in.max_payload = GD_STREAM_MAX_PAYLOAD;
	p->in.data = p;
	if ((rc = uv_idle_init(&p->loop, &p->idle)) != 0)
		return rc;
	p->idle.data = p;
	return gd_input_start(&p->in, &p->loop, p->opt.input_fd, p->opt.delim,
	    chunk, on_input);
}
