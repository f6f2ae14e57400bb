/* gdpub's side of the journal (lib/journal.c): opened before the loop
 * starts, the run it continues; a record for each block before any frame
 * carries it (commit), for each resolution; rewritten to what is pending
 * when it has grown; an I/O error stops gdpub, keeping what was recorded.
 * The replay of the journal's pending blocks is pub_input.c's. */
#include "pub_int.h"
#include "clock.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The journal: locked and read, the run it continues; nothing in it
 * changes before the port is bound (pub_journal_begin). */
int pub_journal_open(struct pub *p)
{
	const struct gd_conf *c = p->conf;

	if (c->journal == NULL)
		return 0;
	if (!pub_gd(p)) {
		gd_usage_err("GDpub_journal needs GDpub_numSubs above 0: with GD "
		    "off nothing is pending to journal");
		return GD_EX_USAGE;
	}
	gd_dbuf_init(&p->jres, PUB_JRES_MAX);
	if (gd_journal_lock(&p->jn, c->journal, (int)c->fsync, p->epoch,
	    (uint32_t)c->max_block) != 0) {
		gd_err("%s", gd_journal_err(&p->jn));
		return GD_EX_IOERR;
	}
	p->journal = 1;
	p->epoch = gd_journal_epoch(&p->jn);
	p->next_id = gd_journal_max_id(&p->jn) + 1;	/* this run's ids go on */
	return 0;
}

/* The port is bound: the torn tail is cut, what is pending said. */
int pub_journal_begin(struct pub *p)
{
	const struct gd_conf *c = p->conf;
	uint64_t torn_at, torn_bytes;
	size_t npending;

	if (!p->journal)
		return 0;
	if (gd_journal_begin(&p->jn) != 0) {
		gd_err("%s", gd_journal_err(&p->jn));
		return GD_EX_IOERR;
	}
	if ((torn_at = gd_journal_torn(&p->jn, &torn_bytes)) != 0)
		gd_warn("journal '%s': a torn record at byte offset %" PRIu64
		    " (%" PRIu64 " bytes, a crash mid-write) was cut off",
		    c->journal, torn_at, torn_bytes);
	(void)gd_journal_pending(&p->jn, &npending);
	if (npending > 0)
		gd_info("journal '%s': %zu blocks pending from before; sending "
		    "them again first", c->journal, npending);
	return 0;
}

/* A resolution waits for its status line: recorded first, a kill between
 * the two would lose the ACK or NACK for good (the restarted gdpub knows
 * the block resolved and says nothing); recorded after, the block is sent
 * again and resolved again, its status line written then. */
void pub_journal_resolved(struct pub *p, const struct gd_pend *e, int acked)
{
	struct pub_jres r;
	int rc;

	/* with the status output lost, no outcome is said: none recorded */
	if (!p->journal || p->journal_failed || p->status_lost)
		return;
	memset(&r, 0, sizeof(r));
	r.id = e->id;
	r.seq = gd_deliver_seq(&p->dv, e);
	r.len = e->len;
	r.acked = acked;
	if ((rc = gd_dbuf_add(&p->jres, &r, sizeof(r))) != GD_DBUF_OK) {
		gd_journal_set_err(&p->jn, "journal '%s': %s",
		    p->conf->journal, rc == GD_DBUF_NOMEM ? "out of memory "
		    "for the outcomes waiting for their status lines" :
		    "too many outcomes waiting for their status lines "
		    "(standard output is not read)");
		pub_journal_failed(p);
	}
}

void pub_journal_settle(struct pub *p, int force)
{
	const struct pub_jres *r = (const struct pub_jres *)p->jres.buf;
	size_t i, n = p->jres.len / sizeof(*r);

	if (n == 0 || p->journal_failed || p->status_lost ||
	    gd_out_backlog(&p->status) > 0)
		return;
	/* a status file: its lines on disk first, or a power cut could
	 * leave an outcome recorded as said and said nowhere */
	if (pub_status_synced(p, force) <= 0)
		return;
	for (i = 0; i < n; i++)
		if (gd_journal_resolved(&p->jn, r[i].id, r[i].seq, r[i].len,
		    r[i].acked) != 0) {
			pub_journal_failed(p);
			return;
		}
	gd_dbuf_reset(&p->jres);
}

void pub_journal_failed(struct pub *p)
{
	if (p->journal_failed)
		return;
	p->journal_failed = 1;
	gd_err("%s; stopping: what was recorded stays in the journal and is "
	    "sent again when gdpub restarts", gd_journal_err(&p->jn));
	p->stop_code = GD_EX_IOERR;
	pub_drop_input(p);
	if (!p->finished) {
		p->finished = 1;	/* no end of stream: the run goes on later */
		pub_finish(p);
	}
}

int pub_journal_commit(struct pub *p)
{
	if (!p->journal)
		return 0;
	if (p->journal_failed)
		return -1;
	if (gd_journal_commit(&p->jn, gd_clock_mono_ns()) != 0) {
		pub_journal_failed(p);
		return -1;
	}
	return 0;
}

/* Compaction walks what is pending: the delivery table, then what the
 * replay has not reached yet. */
struct walk {
	struct pub *p;
	uint32_t s;
	size_t r;
};

static int next_pending(void *ctx, struct gd_jblock *b)
{
	struct walk *w = ctx;
	struct pub *p = w->p;

	if (w->s != GD_NONE) {
		const struct gd_pend *e = gd_deliver_at(&p->dv, w->s);
		b->id = e->id;
		b->seq = gd_deliver_seq(&p->dv, e);
		b->time_ns = 0;		/* not kept while pending */
		b->data = pub_payload(p, e);
		b->len = e->len;
		w->s = e->next;
		return 1;
	}
	if (w->r < p->replay.n) {
		*b = p->replay.b[w->r++];
		return 1;
	}
	return 0;
}

void pub_journal_compact(struct pub *p)
{
	struct walk w = { p, gd_deliver_pending(&p->dv)->head, p->replay.next };

	/* the rewrite keeps only what is pending: it would record the
	 * waiting resolutions before their status lines are out, or those
	 * that will never be out */
	if (p->jres.len > 0 || p->status_lost)
		return;
	if (gd_journal_compact(&p->jn, next_pending, &w) != 0)
		gd_warn("%s; the journal keeps growing", gd_journal_err(&p->jn));
	else
		gd_trace(1, "journal rewritten: %" PRIu64 " bytes",
		    gd_journal_size(&p->jn));
}

void pub_journal_end(struct pub *p)
{
	if (!p->journal || p->journal_failed)
		return;
	pub_journal_settle(p, 1);	/* the status output is closed, all written */
	if (p->jres.len > 0 || pub_journal_commit(p) != 0)
		return;
	if (gd_deliver_pending_count(&p->dv) == 0 &&
	    p->replay.next >= p->replay.n &&
	    p->eof && !pub_held(p))
		pub_journal_compact(p);
}

void pub_journal_free(struct pub *p)
{
	gd_dbuf_free(&p->jres);
	if (p->replay.c != NULL)
		gd_chunk_unref(&p->in, p->replay.c);
	free(p->replay.b);
	p->replay.b = NULL;
	if (p->journal)
		gd_journal_close(&p->jn);
}
