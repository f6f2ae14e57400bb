/* What happens to each block a source hands gdsub (sub_net.c, or
 * sub_input.c with -i): receive.c's rules decide (write it, ack it again,
 * drop a duplicate, hold it back past a gap for --consecutive, give up on
 * a gap), and this file does what they say; the publisher's floor and
 * restart too. */
#include "sub_int.h"
#include "log.h"
#include "parse.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --consecutive: the gap before block b will not be filled in time */
static void gave_up(struct sub *s, struct sub_pub *pc, const struct gd_block *b)
{
	const struct gd_order *ord = &pc->rv.ord;

	gd_err("publisher %s: sequence index %" PRIu64 " is missing; %" PRIu32
	    " block%s (%" PRIu64 " bytes) held back behind it and block %" PRIu64
	    " (index %" PRIu64 ") would pass the --consecutive limit of %u "
	    "indexes or %u MiB; giving up", pc->addr, ord->next, ord->held,
	    gd_plural(ord->held), ord->bytes, b->id, b->seq, GD_ORDER_MAX,
	    GD_ORDER_MAX_BYTES >> 20);
	s->n_gave_up++;
	sub_begin_close(s, "--consecutive gave up on a gap");
}

/* Hold block b back past a gap; 0, or -1 when gdsub stops. */
static int hold(struct sub *s, struct sub_pub *pc, const struct gd_block *b,
    const struct sub_origin *o)
{
	int rc = gd_order_hold(&pc->rv.ord, b->id, b->seq, b->time_ns, b->flags,
	    b->data, b->len, o->s, o->len);

	if (rc > 0)
		gave_up(s, pc, b);
	else if (rc < 0) {
		gd_err("out of memory holding back block %.*s/%" PRIu64
		    " (--consecutive)", (int)o->len, o->s, b->id);
		sub_finish(s, GD_EX_FAIL);
	}
	return rc == 0 ? 0 : -1;
}

/* One block through receive.c's rules, and what they say is done. */
static void one_block(struct sub *s, struct sub_pub *pc,
    const struct gd_block *b, const struct sub_origin *o, int released)
{
	int gd = s->conf->gd && pc->ack_status == GD_ACK_OK;
	int how = (gd ? GD_RB_GD : 0) | (s->closing ? GD_RB_CLOSED : 0) |
	    (released ? GD_RB_RELEASED : 0);
	const char *flags = b->flags & GD_FL_RESENT ? "r" : "";
	uint64_t mismatch = pc->rv.n_mismatch;
	int rv;

	if (sub_out_cannot_carry(s, b))
		how |= GD_RB_UNWRITABLE;
	rv = gd_recv_block(&pc->rv, b->id, b->seq, how);
	if (pc->rv.n_mismatch != mismatch)
		gd_warn("block %.*s/%" PRIu64 " has sequence index %" PRIu64
		    ", acknowledged before with another id (state file); "
		    "taken as a new block", (int)o->len, o->s, b->id, b->seq);
	switch (rv) {
	case GD_RV_REACK:
		/* its ack was lost: ack again (a failure is reported there) */
		(void)sub_ack_queue(pc, b->id, b->seq);
		return;
	case GD_RV_COPY:
		sub_out_block(s, o, b, flags);
		sub_out_mark(pc, b->seq);
		return;
	case GD_RV_DUP:
	case GD_RV_CLOSED:	/* stdout is closed: the block stays unacked */
		return;
	case GD_RV_UNWRITABLE:
		sub_out_unwritable(s, o, b);
		return;
	case GD_RV_HOLD:
		(void)hold(s, pc, b, o);
		return;
	case GD_RV_GAP:
		gave_up(s, pc, b);
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
		sub_finish(s, GD_EX_FAIL);
		return;
	}
	if (gd_recv_refused(pc->ack_status) && s->conf->gd)
		gd_err("block %.*s/%" PRIu64 " received but cannot be acknowledged: "
		    "publisher %s %s", (int)o->len, o->s, b->id, pc->addr,
		    gd_ack_status_str(pc->ack_status));
	sub_out_block(s, o, b, flags);
	sub_out_mark(pc, b->seq);
	s->emitted++;
	if (s->opt.count && s->emitted >= s->opt.count)
		sub_begin_close(s, NULL);
}

/* --consecutive: write the held blocks now due, and say which indexes
 * the floor skipped. */
static void release(struct sub *s, struct sub_pub *pc)
{
	struct gd_order *ord = &pc->rv.ord;
	struct gd_skipped *k = &ord->skipped;
	struct gd_held *h;

	while (!s->done && (h = gd_recv_take(&pc->rv)) != NULL) {
		struct gd_block b = { h->id, h->seq, h->time_ns, h->flags,
			h->len, h->data };
		struct sub_origin o = { ord->origin, ord->olen, pc->rv.run ?
			pc->rv.run->epoch : pc->epoch };
		one_block(s, pc, &b, &o, 1);
		free(h);
	}
	if (k->total > 0) {
		char list[GD_ORDER_REPORT * 44 + 1];
		uint64_t named = 0;
		size_t n = 0;
		unsigned i;
		for (i = 0; i < k->n; i++) {
			n += (size_t)snprintf(list + n, sizeof(list) - n,
			    k->hi[i] - k->lo[i] > 1 ? "%s%" PRIu64 "-%" PRIu64 :
			    "%s%" PRIu64, i ? ", " : "", k->lo[i], k->hi[i] - 1);
			named += k->hi[i] - k->lo[i];
		}
		gd_warn("publisher %s: sequence index%s %s%s never arrived and "
		    "%s resolved without this subscriber (NACKed); skipped "
		    "(--consecutive)", pc->addr, k->total == 1 ? "" : "es",
		    list, k->total > named ? ", ..." : "",
		    k->total == 1 ? "was" : "were");
		memset(k, 0, sizeof(*k));
	}
}

void sub_on_block(struct sub *s, struct sub_pub *pc, const struct gd_block *b,
    const struct sub_origin *o)
{
	if (b->flags & GD_FL_SNAPSHOT) {
		/* snapshot blocks are history: shown, never deduped or acked */
		pc->n_snap++;
		if (!s->closing)
			sub_out_block(s, o, b, b->flags & GD_FL_RESENT ? "rs" : "s");
		return;
	}
	if (pc->cl >= 0 && sub_cluster_block(s, pc, b) != 0)
		return;		/* another member's copy was written */
	if (sub_state_attach(s, pc, o) != 0)
		return;
	one_block(s, pc, b, o, 0);
	if (pc->rv.consecutive)
		release(s, pc);
}

void sub_on_floor(struct sub *s, struct sub_pub *pc, uint64_t floor,
    const struct sub_origin *o)
{
	if (sub_state_attach(s, pc, o) != 0)
		return;
	gd_recv_floor(&pc->rv, floor);
	if (pc->rv.consecutive)
		release(s, pc);
}

/* The publisher restarted: its ids start over, so forget its blocks. */
void sub_forget(struct sub *s, struct sub_pub *pc)
{
	uint32_t held = pc->rv.ord.held;
	int64_t lost = gd_recv_reset(&pc->rv);

	if (lost < 0) {
		gd_err("out of memory");
		sub_finish(s, GD_EX_FAIL);
		return;
	}
	gd_warn("publisher %s restarted; forgetting its earlier blocks "
	    "(%" PRId64 " written on stdout were not acknowledged)",
	    pc->addr, lost);
	if (held > 0)
		gd_warn("publisher %s restarted; %" PRIu32 " block%s held back "
		    "for --consecutive behind a gap of its earlier run %s "
		    "dropped", pc->addr, held, gd_plural(held),
		    held == 1 ? "was" : "were");
	pc->nqueued = 0;
}
