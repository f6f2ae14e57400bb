/* The subscriber's delivery rules (see receive.h). */
#include "receive.h"
#include "conf.h"

int gd_recv_init(struct gd_recv *r, int dedup)
{
	r->dedup = dedup;
	r->floor = 0;
	r->unacked = 0;
	r->seq_base = 0;
	r->stream = 0;
	r->stream_epoch = 0;
	r->n_recv = r->n_unique = r->n_dup = r->n_acked = 0;
	r->n_mismatch = 0;
	r->state_nomem = 0;
	r->consecutive = 0;
	r->last = 0;
	r->st = NULL;
	r->run = NULL;
	r->mem = NULL;
	gd_order_init(&r->ord);
	return gd_dedup_init(&r->dd);
}

void gd_recv_free(struct gd_recv *r)
{
	gd_dedup_free(&r->dd);
	gd_order_free(&r->ord);
	gd_srun_free(r->mem);
	r->mem = NULL;
}

void gd_recv_attach(struct gd_recv *r, struct gd_state *st,
    struct gd_srun *run)
{
	r->st = st;
	r->run = run;
	if (r->consecutive && r->dd.max_seq == 0)
		gd_order_start(&r->ord, gd_state_resume(run));
}

/* The indexes this subscriber acknowledged in the publisher's run: the
 * state file's, else those kept in memory; NULL when none. */
static const struct gd_srun *acked_run(const struct gd_recv *r)
{
	return r->run != NULL ? r->run : r->mem;
}

/* A copy of a block the dedup set no longer tells about (the floor passed
 * it, or its id was published again): acknowledged again if this
 * subscriber acknowledged it, else a duplicate. */
static int resolved_copy(struct gd_recv *r, uint64_t id, uint64_t seq,
    int how)
{
	const struct gd_srun *run = acked_run(r);

	r->n_dup++;
	if ((how & GD_RB_GD) && run != NULL && gd_state_has(run, seq, id) > 0)
		return GD_RV_REACK;
	return GD_RV_DUP;
}

/* Not a copy of a block in the set: was it acknowledged before a restart
 * (the state file), is it a late one (--dedup index), does it wait behind
 * a gap (--consecutive)? 0 to go on as a new block, else a verdict. */
static int new_block(struct gd_recv *r, uint64_t id, uint64_t seq, int how)
{
	const struct gd_srun *run = acked_run(r);
	int had = run ? gd_state_has(run, seq, id) : 0;

	if (had > 0) {
		r->n_dup++;
		if (r->consecutive && gd_order_done(&r->ord, seq) != 0)
			return GD_RV_NOMEM;
		return (how & GD_RB_GD) ? GD_RV_REACK : GD_RV_DUP;
	}
	if (had < 0)
		r->n_mismatch++;	/* not the block recorded: a new one */
	if (r->dedup == GD_DEDUP_INDEX && seq <= r->last) {
		r->n_dup++;
		return GD_RV_DUP;
	}
	if (!r->consecutive)
		return 0;
	switch (gd_order_place(&r->ord, seq)) {
	case GD_OP_NOW:
		gd_order_passed(&r->ord);
		return 0;
	case GD_OP_HOLD:
		return (how & GD_RB_CLOSED) ? GD_RV_CLOSED : GD_RV_HOLD;
	case GD_OP_HELD:
		r->n_dup++;
		return GD_RV_DUP;
	case GD_OP_FULL:
		return GD_RV_GAP;
	}
	return 0;	/* GD_OP_LATE: from before the run's start */
}

/* A copy of the block the entry holds. */
static int same_block(struct gd_recv *r, struct gd_dent *e, int how)
{
	int gd = (how & GD_RB_GD) != 0;

	r->n_dup++;
	if (e->state == GD_DS_ACKED && gd)
		return GD_RV_REACK;	/* its acknowledgement was lost */
	if (r->dedup != GD_DEDUP_NONE || (how & GD_RB_CLOSED))
		return GD_RV_DUP;
	/* at-least-once: the copy goes out too and needs its own ack */
	if ((e->state == GD_DS_EMITTED || e->state == GD_DS_ACKED) &&
	    e->extra < UINT16_MAX) {
		e->extra++;
		r->unacked++;
		return GD_RV_COPY;
	}
	/* receive-only copies go out; others never */
	if (e->state != GD_DS_DONE || gd || (how & GD_RB_UNWRITABLE))
		return GD_RV_DUP;
	return GD_RV_COPY;
}

int gd_recv_block(struct gd_recv *r, uint64_t id, uint64_t seq, int how)
{
	uint32_t slot, hint = 0, state = (how & GD_RB_GD) ? GD_DS_EMITTED :
	    GD_DS_DONE;
	struct gd_dent *e = NULL;
	int rv;

	if (!(how & GD_RB_RELEASED))	/* counted when it arrived */
		r->n_recv++;
	if (seq < r->floor && !(how & GD_RB_RELEASED))
		return resolved_copy(r, id, seq, how);	/* resolved at the
							 * publisher */
	slot = gd_dedup_find_hint(&r->dd, id, &hint);
	if (slot != GD_NONE) {
		e = gd_dedup_at(&r->dd, slot);
		if (seq == e->seq)
			return same_block(r, e, how);
		if (seq < e->seq)	/* an earlier block with this id, resolved
					 * before this one was published */
			return resolved_copy(r, id, seq, how);
	}
	if ((rv = new_block(r, id, seq, how)) != 0)
		return rv;
	if (how & GD_RB_CLOSED)
		return GD_RV_CLOSED;
	if (how & GD_RB_UNWRITABLE)
		state = GD_DS_DONE;
	if (e == NULL) {
		slot = gd_dedup_add_hint(&r->dd, id, seq, state, hint);
	} else {
		/* a re-published id: the copies of the earlier block still in
		 * the pipeline are credited first */
		unsigned carried = gd_dent_waiting(e);
		if (carried > GD_DEDUP_MAX_OLDER)
			return GD_RV_TOO_MANY;
		slot = gd_dedup_replace(&r->dd, slot, seq, state);
		if (slot != GD_NONE)
			gd_dedup_at(&r->dd, slot)->older = (uint8_t)carried;
	}
	if (slot == GD_NONE)
		return GD_RV_NOMEM;
	if (how & GD_RB_UNWRITABLE)
		return GD_RV_UNWRITABLE;
	if (seq > r->last)
		r->last = seq;
	r->n_unique++;
	if (state == GD_DS_EMITTED)
		r->unacked++;
	return GD_RV_NEW;
}

int gd_recv_ack(struct gd_recv *r, uint64_t id, int how, uint64_t *seq)
{
	int ended = (how & GD_RK_ENDED) != 0;
	uint32_t slot;
	struct gd_dent *e;
	int rc = GD_RA_SEND;

	if (how & GD_RK_NOGD)
		return GD_RA_NOGD;
	if (how & GD_RK_OTHER_RUN)
		return GD_RA_OTHER_RUN;
	if (how & GD_RK_OFF)
		return GD_RA_OK;	/* numSubs=0: nothing to acknowledge */
	if (how & GD_RK_REFUSED)
		return GD_RA_REFUSED;
	slot = gd_dedup_find(&r->dd, id);
	if (slot == GD_NONE)
		return GD_RA_UNKNOWN;
	e = gd_dedup_at(&r->dd, slot);
	if (e->older > 0) {
		/* an earlier block's copy: the publisher resolved that block
		 * before it published this one, so nothing is sent */
		e->older--;
		r->unacked--;
		gd_dedup_settled(&r->dd, slot);
		return GD_RA_OK;
	}
	if (e->state == GD_DS_DONE && e->extra == 0)
		return GD_RA_NOT_WRITTEN;
	if (e->state == GD_DS_EMITTED) {
		if (ended) {
			/* the publisher resolved it without us: NACKed */
			r->unacked -= 1u + e->extra;
			e->state = GD_DS_DONE;
			e->extra = 0;
			gd_dedup_settled(&r->dd, slot);
			return GD_RA_ENDED;
		}
		e->state = GD_DS_ACKED;
		r->unacked--;
	} else if (e->extra > 0) {
		e->extra--;	/* another copy done (--dedup none) */
		r->unacked--;
	}
	if (ended)
		rc = GD_RA_OK;	/* acknowledged before; nothing left to send */
	else
		r->n_acked++;
	if (r->run) {
		if (gd_state_ack(r->st, r->run, e->seq, id) != 0)
			r->state_nomem = 1;	/* the engine's commit says it */
	} else if (r->mem != NULL || (r->mem = gd_srun_new()) != NULL) {
		/* out of memory is as past the bound: a resend of it below
		 * the floor is dropped, then NACKed by its publisher */
		(void)gd_srun_ack(r->mem, e->seq, id);
	}
	*seq = e->seq;
	gd_dedup_settled(&r->dd, slot);
	return rc;
}

void gd_recv_floor(struct gd_recv *r, uint64_t floor)
{
	if (floor <= r->floor)
		return;
	r->floor = floor;
	gd_dedup_prune(&r->dd, floor);
	gd_order_floor(&r->ord, floor);
	if (r->run)
		gd_state_floor(r->run, floor);
}

struct gd_held *gd_recv_take(struct gd_recv *r)
{
	struct gd_order *o = &r->ord;
	struct gd_held *h;

	while ((h = gd_order_take(o)) == NULL) {
		int empty = o->held + o->marks == 0;
		uint64_t to;
		/* acknowledged before a restart: not resent once that
		 * acknowledgement reached the publisher, nothing to wait for */
		if (r->run && gd_state_acked(r->run, o->next)) {
			if (empty)
				gd_order_start(o, gd_state_acked_end(r->run, o->next));
			else
				gd_order_passed(o);
			continue;
		}
		if (o->next >= o->floor)
			return NULL;	/* awaited */
		/* missing, resolved at the publisher: skipped, at once up to
		 * the floor or the next acknowledged index when nothing is
		 * held in between */
		to = o->next + 1;
		if (empty) {
			to = o->floor;
			if (r->run && gd_state_next_acked(r->run, o->next) < to)
				to = gd_state_next_acked(r->run, o->next);
		}
		gd_order_skip(o, to);
	}
	return h;
}

int gd_recv_stream_epoch(struct gd_recv *r, uint64_t epoch)
{
	int first = r->stream_epoch == 0;

	if (epoch == r->stream_epoch)
		return GD_RS_SAME;
	r->stream_epoch = epoch;
	return first ? GD_RS_FIRST : GD_RS_NEW_RUN;
}

int64_t gd_recv_reset(struct gd_recv *r)
{
	int64_t lost = (int64_t)r->unacked;

	r->seq_base += r->dd.max_seq;
	gd_dedup_free(&r->dd);
	r->unacked = 0;
	r->floor = 0;
	r->last = 0;
	r->run = NULL;		/* the new run is attached at its first block */
	gd_srun_free(r->mem);	/* the new run's indexes start over */
	r->mem = NULL;
	(void)gd_order_reset(&r->ord);
	if (gd_dedup_init(&r->dd) != 0)
		return -1;
	return lost;
}
