/* Unit tests of lib/receive.c, the subscriber's delivery rules, without
 * processes: duplicates, re-acknowledgement, --dedup none, re-published
 * ids (a new sequence index is a new block; acks are credited to copies in
 * the order they were written and name the copy's sequence index), the
 * floor, the end of a publisher's stream and its restart. */
#include "conf.h"
#include "receive.h"
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>

#define GD GD_RB_GD

static uint64_t ack(struct gd_recv *r, uint64_t id, int want)
{
	uint64_t seq = UINT64_MAX;
	int rc = gd_recv_ack(r, id, 0, &seq);
	if (rc != want)
		FAILF("ack %" PRIu64 ": verdict %d, expected %d", id, rc, want);
	return seq;
}

TEST(new_dup_ack_reack)
{
	struct gd_recv r;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	ASSERT_EQ(gd_recv_block(&r, 5, 1, GD), GD_RV_NEW);
	ASSERT_U64(r.unacked, 1);
	ASSERT_EQ(gd_recv_block(&r, 5, 1, GD), GD_RV_DUP);	/* resent */
	ASSERT_U64(ack(&r, 5, GD_RA_SEND), 1);
	ASSERT_U64(r.unacked, 0);
	/* resent again because the ack was lost: acknowledged again */
	ASSERT_EQ(gd_recv_block(&r, 5, 1, GD), GD_RV_REACK);
	/* receive-only: nothing to acknowledge */
	ASSERT_EQ(gd_recv_block(&r, 5, 1, 0), GD_RV_DUP);
	/* gdack repeats a key: acknowledged again, harmless */
	ASSERT_U64(ack(&r, 5, GD_RA_SEND), 1);
	ack(&r, 6, GD_RA_UNKNOWN);
	ASSERT_U64(r.n_recv, 4);
	ASSERT_U64(r.n_unique, 1);
	ASSERT_U64(r.n_dup, 3);
	ASSERT_U64(r.n_acked, 2);
	gd_recv_free(&r);
}

/* Issue 15: ID 1 acknowledged, then published again with new content:
 * it is a new block, written, and acknowledged on its own. */
TEST(reused_id_after_ack_is_new)
{
	struct gd_recv r;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	ASSERT_EQ(gd_recv_block(&r, 1, 1, GD), GD_RV_NEW);
	ASSERT_U64(ack(&r, 1, GD_RA_SEND), 1);
	/* no floor yet: the subscriber still remembers seq 1 */
	ASSERT_EQ(gd_recv_block(&r, 1, 2, GD), GD_RV_NEW);
	ASSERT_U64(r.unacked, 1);
	ASSERT_U64(ack(&r, 1, GD_RA_SEND), 2);
	ASSERT_U64(r.unacked, 0);
	/* a late copy of the first block is not the second: acknowledged
	 * again as the first (it was), never written */
	ASSERT_EQ(gd_recv_block(&r, 1, 1, GD), GD_RV_REACK);
	ASSERT_U64(r.unacked, 0);
	/* and a copy of the second is acknowledged again */
	ASSERT_EQ(gd_recv_block(&r, 1, 2, GD), GD_RV_REACK);
	ASSERT_U64(r.n_unique, 2);
	gd_recv_free(&r);
}

/* Issue 15: block 1 NACKed while still in the pipeline, ID 1 retried:
 * the first acknowledgement is the first copy's, and only the second
 * reaches the publisher, naming the retry's sequence index. */
TEST(reused_id_while_first_in_pipeline)
{
	struct gd_recv r;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	ASSERT_EQ(gd_recv_block(&r, 1, 1, GD), GD_RV_NEW);
	ASSERT_EQ(gd_recv_block(&r, 1, 7, GD), GD_RV_NEW);
	ASSERT_U64(r.unacked, 2);
	ack(&r, 1, GD_RA_OK);		/* the first copy: nothing sent */
	ASSERT_U64(r.unacked, 1);
	ASSERT_U64(ack(&r, 1, GD_RA_SEND), 7);
	ASSERT_U64(r.unacked, 0);
	ASSERT_U64(r.n_acked, 1);
	/* a third publication while both earlier copies are out */
	ASSERT_EQ(gd_recv_block(&r, 1, 9, GD), GD_RV_NEW);
	ASSERT_EQ(gd_recv_block(&r, 1, 12, GD), GD_RV_NEW);
	ASSERT_EQ(gd_recv_block(&r, 1, 15, GD), GD_RV_NEW);
	ASSERT_U64(r.unacked, 3);
	ack(&r, 1, GD_RA_OK);
	ack(&r, 1, GD_RA_OK);
	ASSERT_U64(ack(&r, 1, GD_RA_SEND), 15);
	gd_recv_free(&r);
}

TEST(reused_id_too_many_waiting)
{
	struct gd_recv r;
	uint64_t i;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	for (i = 1; i <= GD_DEDUP_MAX_OLDER + 1; i++)
		ASSERT_EQ(gd_recv_block(&r, 3, i, GD), GD_RV_NEW);
	/* 256 copies out, unacknowledged: the next one cannot be tracked */
	ASSERT_EQ(gd_recv_block(&r, 3, i, GD), GD_RV_TOO_MANY);
	ASSERT_U64(r.unacked, GD_DEDUP_MAX_OLDER + 1);
	ack(&r, 3, GD_RA_OK);
	ASSERT_EQ(gd_recv_block(&r, 3, i + 1, GD), GD_RV_NEW);
	gd_recv_free(&r);
}

TEST(dedup_none_copies)
{
	struct gd_recv r;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_NONE), 0);
	ASSERT_EQ(gd_recv_block(&r, 4, 1, GD), GD_RV_NEW);
	ASSERT_EQ(gd_recv_block(&r, 4, 1, GD), GD_RV_COPY);
	ASSERT_U64(r.unacked, 2);
	ASSERT_U64(ack(&r, 4, GD_RA_SEND), 1);
	ASSERT_U64(ack(&r, 4, GD_RA_SEND), 1);
	ASSERT_U64(r.unacked, 0);
	/* after the ack a copy is acknowledged again, not written */
	ASSERT_EQ(gd_recv_block(&r, 4, 1, GD), GD_RV_REACK);
	/* receive-only copies are written again, untracked */
	ASSERT_EQ(gd_recv_block(&r, 8, 2, 0), GD_RV_NEW);
	ASSERT_EQ(gd_recv_block(&r, 8, 2, 0), GD_RV_COPY);
	ASSERT_U64(r.unacked, 0);
	/* a copy, then the id published again: both copies come first */
	ASSERT_EQ(gd_recv_block(&r, 9, 3, GD), GD_RV_NEW);
	ASSERT_EQ(gd_recv_block(&r, 9, 3, GD), GD_RV_COPY);
	ASSERT_EQ(gd_recv_block(&r, 9, 4, GD), GD_RV_NEW);
	ASSERT_U64(r.unacked, 3);
	ack(&r, 9, GD_RA_OK);
	ack(&r, 9, GD_RA_OK);
	ASSERT_U64(ack(&r, 9, GD_RA_SEND), 4);
	/* stdout closed: copies are not written */
	ASSERT_EQ(gd_recv_block(&r, 9, 4, GD | GD_RB_CLOSED), GD_RV_REACK);
	ASSERT_EQ(gd_recv_block(&r, 8, 2, GD_RB_CLOSED), GD_RV_DUP);
	gd_recv_free(&r);
}

TEST(unwritable_and_closed)
{
	struct gd_recv r;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	ASSERT_EQ(gd_recv_block(&r, 2, 1, GD | GD_RB_UNWRITABLE),
	    GD_RV_UNWRITABLE);
	ASSERT_U64(r.unacked, 0);
	ASSERT_EQ(gd_recv_block(&r, 2, 1, GD | GD_RB_UNWRITABLE), GD_RV_DUP);
	ack(&r, 2, GD_RA_NOT_WRITTEN);
	/* the id published again with a payload that fits */
	ASSERT_EQ(gd_recv_block(&r, 2, 5, GD), GD_RV_NEW);
	ASSERT_U64(ack(&r, 2, GD_RA_SEND), 5);
	/* stdout closed: a new block is not written nor remembered */
	ASSERT_EQ(gd_recv_block(&r, 3, 6, GD | GD_RB_CLOSED), GD_RV_CLOSED);
	ack(&r, 3, GD_RA_UNKNOWN);
	ASSERT_EQ(gd_recv_block(&r, 2, 9, GD | GD_RB_CLOSED), GD_RV_CLOSED);
	gd_recv_free(&r);
}

TEST(ended_publisher)
{
	struct gd_recv r;
	uint64_t seq = 0;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	ASSERT_EQ(gd_recv_block(&r, 1, 1, GD), GD_RV_NEW);
	ASSERT_EQ(gd_recv_block(&r, 2, 2, GD), GD_RV_NEW);
	ASSERT_U64(ack(&r, 2, GD_RA_SEND), 2);
	/* the publisher ended: block 1 was NACKed, 2 needs nothing more */
	ASSERT_EQ(gd_recv_ack(&r, 1, GD_RK_ENDED, &seq), GD_RA_ENDED);
	ASSERT_U64(r.unacked, 0);
	ASSERT_EQ(gd_recv_ack(&r, 2, GD_RK_ENDED, &seq), GD_RA_OK);
	ASSERT_EQ(gd_recv_ack(&r, 1, GD_RK_ENDED, &seq), GD_RA_NOT_WRITTEN);
	gd_recv_free(&r);
}

TEST(floor_drops_late_copies_and_frees)
{
	struct gd_recv r;
	uint64_t i;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	for (i = 1; i <= 10; i++)
		ASSERT_EQ(gd_recv_block(&r, 100 + i, i, GD), GD_RV_NEW);
	for (i = 2; i <= 10; i++)
		ack(&r, 100 + i, GD_RA_SEND);
	gd_recv_floor(&r, 11);
	/* 2..10 are forgotten; 1 still waits for gdack, set aside */
	ASSERT_EQ(r.dd.count, 1);
	ASSERT_EQ(r.dd.off, 1);
	/* a copy of a resolved block below the floor is never written
	 * twice, though its entry is gone: acknowledged again (it was) */
	ASSERT_EQ(gd_recv_block(&r, 105, 5, GD), GD_RV_REACK);
	ASSERT_U64(ack(&r, 101, GD_RA_SEND), 1);
	ASSERT_EQ(r.dd.count, 0);
	ack(&r, 101, GD_RA_UNKNOWN);
	/* a floor never goes back */
	gd_recv_floor(&r, 3);
	ASSERT_U64(r.floor, 11);
	/* ids may come back above the floor */
	ASSERT_EQ(gd_recv_block(&r, 105, 11, GD), GD_RV_NEW);
	gd_recv_free(&r);
}

/* Issue 21: gdpub restarted from its journal (the same run) sends again
 * the blocks whose outcome it had not recorded, below the floor it
 * announced before the kill. One this subscriber acknowledged is
 * acknowledged again, not dropped (it was sent until --resend ran out,
 * then NACKed); one it never acknowledged is still a late copy. */
TEST(journal_resend_below_floor)
{
	struct gd_recv r;
	uint64_t i;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	for (i = 1; i <= 10; i++)
		ASSERT_EQ(gd_recv_block(&r, 100 + i, i, GD), GD_RV_NEW);
	for (i = 1; i <= 10; i++)
		if (i != 4)	/* 4: NACKed at the publisher, never acked */
			ack(&r, 100 + i, GD_RA_SEND);
	gd_recv_floor(&r, 11);
	ASSERT_EQ(gd_recv_block(&r, 104, 4, GD), GD_RV_DUP);	/* waiting */
	gd_recv_ack(&r, 104, GD_RK_ENDED, &i);
	/* the restarted gdpub's resends, its floor 1 ignored */
	gd_recv_floor(&r, 1);
	for (i = 1; i <= 10; i++)
		ASSERT_EQ(gd_recv_block(&r, 100 + i, i, GD),
		    i == 4 ? GD_RV_DUP : GD_RV_REACK);
	/* the same index with another id is not that block */
	ASSERT_EQ(gd_recv_block(&r, 999, 5, GD), GD_RV_DUP);
	/* receive-only: nothing to acknowledge */
	ASSERT_EQ(gd_recv_block(&r, 105, 5, 0), GD_RV_DUP);
	ASSERT_U64(r.n_unique, 10);
	ASSERT_U64(r.unacked, 0);
	/* a new run (another epoch) forgets the indexes */
	ASSERT_EQ(gd_recv_reset(&r), 0);
	gd_recv_floor(&r, 11);
	ASSERT_EQ(gd_recv_block(&r, 105, 5, GD), GD_RV_DUP);
	gd_recv_free(&r);
}

TEST(reset_on_restart)
{
	struct gd_recv r;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	ASSERT_EQ(gd_recv_block(&r, 1, 1, GD), GD_RV_NEW);
	ASSERT_EQ(gd_recv_block(&r, 2, 2, GD), GD_RV_NEW);
	ack(&r, 2, GD_RA_SEND);
	gd_recv_floor(&r, 2);
	ASSERT_U64(gd_recv_sent(&r), 2);
	ASSERT_EQ(gd_recv_reset(&r), 1);
	ASSERT_U64(r.unacked, 0);
	ASSERT_U64(r.floor, 0);
	/* the new run starts over at 1: not a duplicate */
	ASSERT_EQ(gd_recv_block(&r, 1, 1, GD), GD_RV_NEW);
	ASSERT_U64(gd_recv_sent(&r), 3);
	gd_recv_free(&r);
}

/* What the engine knows of a publisher decides before the dedup set,
 * in this order, and none of it credits the block. */
TEST(ack_blocked_by_engine_state)
{
	struct gd_recv r;
	uint64_t seq = 0;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	ASSERT_EQ(gd_recv_block(&r, 1, 1, GD), GD_RV_NEW);
	ASSERT_EQ(gd_recv_ack(&r, 1, GD_RK_NOGD | GD_RK_OTHER_RUN | GD_RK_OFF |
	    GD_RK_REFUSED, &seq), GD_RA_NOGD);
	ASSERT_EQ(gd_recv_ack(&r, 1, GD_RK_OTHER_RUN | GD_RK_OFF, &seq),
	    GD_RA_OTHER_RUN);
	/* numSubs=0: nothing to send, and an unknown key is fine too */
	ASSERT_EQ(gd_recv_ack(&r, 1, GD_RK_OFF | GD_RK_REFUSED, &seq), GD_RA_OK);
	ASSERT_EQ(gd_recv_ack(&r, 77, GD_RK_OFF, &seq), GD_RA_OK);
	ASSERT_EQ(gd_recv_ack(&r, 1, GD_RK_REFUSED | GD_RK_ENDED, &seq),
	    GD_RA_REFUSED);
	ASSERT_U64(r.unacked, 1);
	ASSERT_U64(r.n_acked, 0);
	ASSERT_U64(ack(&r, 1, GD_RA_SEND), 1);
	ASSERT(gd_recv_refused(GD_ACK_FULL));
	ASSERT(gd_recv_refused(GD_ACK_NAME));
	ASSERT(!gd_recv_refused(GD_ACK_OK));
	ASSERT(!gd_recv_refused(GD_ACK_OFF));
	ASSERT(!gd_recv_refused(GD_ACK_NONE));
	gd_recv_free(&r);
}

/* -i: frames carry the epoch of the run that wrote them; blocks of a run
 * other than the one answering on TCP cannot be acknowledged. */
TEST(stream_runs)
{
	struct gd_recv r;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	/* TCP mode: blocks come from the run that answers */
	ASSERT(!gd_recv_stale(&r, 500));
	r.stream = 1;
	ASSERT_EQ(gd_recv_stream_epoch(&r, 500), GD_RS_FIRST);
	ASSERT_EQ(gd_recv_stream_epoch(&r, 500), GD_RS_SAME);
	ASSERT(!gd_recv_stale(&r, 0));		/* no welcome yet */
	ASSERT(!gd_recv_stale(&r, 500));
	ASSERT(gd_recv_stale(&r, 600));		/* it restarted */
	ASSERT_EQ(gd_recv_block(&r, 1, 1, GD), GD_RV_NEW);
	/* the stream moves on to the new run: the old one is forgotten by
	 * the engine (gd_recv_reset), which keeps the stream's run */
	ASSERT_EQ(gd_recv_stream_epoch(&r, 600), GD_RS_NEW_RUN);
	ASSERT_EQ(gd_recv_reset(&r), 1);
	ASSERT_U64(r.stream_epoch, 600);
	ASSERT(r.stream);
	ASSERT(!gd_recv_stale(&r, 600));
	ASSERT_EQ(gd_recv_block(&r, 1, 1, GD), GD_RV_NEW);
	gd_recv_free(&r);
}

/* --dedup index: a block whose index is not above the last written is
 * dropped, even with an id never seen; acknowledged copies are
 * acknowledged again. */
TEST(dedup_index)
{
	struct gd_recv r;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_INDEX), 0);
	ASSERT_EQ(gd_recv_block(&r, 1, 1, GD), GD_RV_NEW);
	ASSERT_EQ(gd_recv_block(&r, 2, 2, GD), GD_RV_NEW);
	ASSERT_EQ(gd_recv_block(&r, 4, 4, GD), GD_RV_NEW);
	ASSERT_U64(r.last, 4);
	ASSERT_EQ(gd_recv_block(&r, 3, 3, GD), GD_RV_DUP);	/* late */
	ASSERT_U64(ack(&r, 2, GD_RA_SEND), 2);
	ASSERT_EQ(gd_recv_block(&r, 2, 2, GD), GD_RV_REACK);
	ASSERT_EQ(gd_recv_block(&r, 4, 4, GD), GD_RV_DUP);
	ASSERT_EQ(gd_recv_block(&r, 1, 5, GD), GD_RV_NEW);	/* id 1 again */
	ASSERT_U64(r.last, 5);
	ASSERT_U64(r.n_unique, 4);
	ASSERT_U64(r.n_dup, 3);
	/* receive-only: the same rule */
	ASSERT_EQ(gd_recv_block(&r, 9, 5, 0), GD_RV_DUP);
	gd_recv_free(&r);
}

/* Hold what gd_recv_block says to hold, as the engine does. */
static int arrive(struct gd_recv *r, uint64_t id, uint64_t seq, int how)
{
	int v = gd_recv_block(r, id, seq, how);
	if (v == GD_RV_HOLD)
		ASSERT_EQ(gd_order_hold(&r->ord, id, seq, 0, 0,
		    (const uint8_t *)"x", 1, "h:1", 3), 0);
	return v;
}

/* Release what is due, as the engine does; the written indexes go in
 * out[] (a 0 ends the list). */
static void release(struct gd_recv *r, uint64_t *out, size_t n)
{
	struct gd_held *h;
	size_t i = 0;

	while ((h = gd_recv_take(r)) != NULL) {
		int v = gd_recv_block(r, h->id, h->seq, GD | GD_RB_RELEASED);
		if (v != GD_RV_NEW)
			FAILF("released %" PRIu64 ": verdict %d", h->seq, v);
		if (i + 1 < n)
			out[i++] = h->seq;
		free(h);
	}
	out[i] = 0;
}

#define RELEASED(r, ...) do { \
	uint64_t _got[16], _want[] = { __VA_ARGS__, 0 }; \
	size_t _i; \
	release(r, _got, 16); \
	for (_i = 0; _want[_i] || _got[_i]; _i++) \
		if (_got[_i] != _want[_i]) { \
			FAILF("released[%zu] %" PRIu64 ", expected %" PRIu64, \
			    _i, _got[_i], _want[_i]); \
			break; \
		} \
} while (0)

/* --consecutive: a gap holds the blocks after it until it is filled;
 * a floor past a gap skips what never came and names it; blocks held
 * are written even if the floor passed them; far past a gap is the
 * limit. */
TEST(consecutive)
{
	struct gd_recv r;
	const struct gd_skipped *k = &r.ord.skipped;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	r.consecutive = 1;
	ASSERT_EQ(arrive(&r, 1, 1, GD), GD_RV_NEW);
	RELEASED(&r, 0);
	ASSERT_EQ(arrive(&r, 3, 3, GD), GD_RV_HOLD);
	ASSERT_EQ(arrive(&r, 3, 3, GD), GD_RV_DUP);	/* held already */
	ASSERT_EQ(arrive(&r, 4, 4, GD), GD_RV_HOLD);
	RELEASED(&r, 0);
	ASSERT_EQ(r.ord.held, 2);
	ASSERT_EQ(arrive(&r, 2, 2, GD), GD_RV_NEW);	/* the resend */
	RELEASED(&r, 3, 4);
	ASSERT_EQ(r.ord.held, 0);
	ASSERT_U64(r.ord.next, 5);
	ASSERT_U64(r.n_recv, 5);
	ASSERT_U64(r.n_unique, 4);
	ASSERT_EQ(gd_recv_block(&r, 3, 3, GD), GD_RV_DUP);
	/* 5 and 7 were NACKed: the floor says so */
	ASSERT_EQ(arrive(&r, 6, 6, GD), GD_RV_HOLD);
	ASSERT_EQ(arrive(&r, 8, 8, GD), GD_RV_HOLD);
	ASSERT_EQ(arrive(&r, 10, 10, GD), GD_RV_HOLD);
	gd_recv_floor(&r, 8);
	RELEASED(&r, 6, 8);
	ASSERT_EQ(k->n, 2);
	ASSERT_U64(k->lo[0], 5);
	ASSERT_U64(k->hi[0], 6);
	ASSERT_U64(k->lo[1], 7);
	ASSERT_U64(k->hi[1], 8);
	ASSERT_U64(k->total, 2);
	/* held blocks timed out too: written all the same */
	gd_recv_floor(&r, 12);
	RELEASED(&r, 10);
	ASSERT_U64(k->total, 4);
	ASSERT_U64(r.ord.next, 12);
	/* nothing held: a floor skips the whole gap at once */
	gd_recv_floor(&r, 1000000);
	RELEASED(&r, 0);
	ASSERT_U64(r.ord.next, 1000000);
	ASSERT_U64(k->total, 4 + 1000000 - 12);
	ASSERT_EQ(k->n, 4);	/* 5, 7, 9, 11-999999 */
	/* GD_ORDER_MAX past the gap is too far */
	ASSERT_EQ(arrive(&r, 1, 1000000 + GD_ORDER_MAX - 1, GD), GD_RV_HOLD);
	ASSERT_EQ(gd_recv_block(&r, 2, 1000000 + GD_ORDER_MAX, GD), GD_RV_GAP);
	/* a new run drops what is held and starts at 1 */
	ASSERT(gd_recv_reset(&r) >= 0);
	ASSERT_EQ(r.ord.held, 0);
	ASSERT_EQ(arrive(&r, 1, 1, GD), GD_RV_NEW);
	gd_recv_free(&r);
}

/* --consecutive with --dedup index and stdout closed. */
TEST(consecutive_index_closed)
{
	struct gd_recv r;

	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_INDEX), 0);
	r.consecutive = 1;
	ASSERT_EQ(arrive(&r, 1, 1, GD), GD_RV_NEW);
	ASSERT_EQ(arrive(&r, 3, 3, GD), GD_RV_HOLD);
	ASSERT_EQ(arrive(&r, 4, 4, GD | GD_RB_CLOSED), GD_RV_CLOSED);
	ASSERT_EQ(arrive(&r, 2, 2, GD), GD_RV_NEW);
	RELEASED(&r, 3);
	ASSERT_EQ(arrive(&r, 2, 2, GD), GD_RV_DUP);
	gd_recv_free(&r);
}

static char sdir[] = "/tmp/gdkit-receive-XXXXXX";

/* GDsub_state: what was acknowledged before a restart is acknowledged
 * again, not written; with another id it is a new block; every
 * acknowledgement sent is recorded; --consecutive resumes where the run
 * stood and does not wait for what was acknowledged. */
TEST(state_file)
{
	char path[64];
	struct gd_state st;
	struct gd_srun *run;
	struct gd_recv r;
	uint64_t s;

	snprintf(path, sizeof(path), "%s/s.state", sdir);
	if (gd_state_open(&st, path, 0) != 0) {
		FAILF("open: %s", st.err);
		return;
	}
	run = gd_state_run(&st, "h:1", 3, 77);
	for (s = 1; s <= 5; s++)
		ASSERT_EQ(gd_state_ack(&st, run, s, 100 + s), 0);
	ASSERT_EQ(gd_state_ack(&st, run, 7, 107), 0);
	gd_state_floor(run, 3);
	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	r.consecutive = 1;
	gd_recv_attach(&r, &st, run);
	ASSERT_U64(r.ord.next, 6);
	ASSERT_EQ(arrive(&r, 104, 4, GD), GD_RV_REACK);
	ASSERT_EQ(arrive(&r, 104, 4, 0), GD_RV_DUP);
	ASSERT_EQ(arrive(&r, 999, 5, GD), GD_RV_NEW);	/* not that block */
	ASSERT_U64(r.n_mismatch, 1);
	ASSERT_EQ(arrive(&r, 108, 8, GD), GD_RV_HOLD);
	ASSERT_EQ(arrive(&r, 106, 6, GD), GD_RV_NEW);
	RELEASED(&r, 8);	/* 7 was acknowledged: not awaited */
	ASSERT_U64(r.ord.skipped.total, 0);
	ASSERT_EQ(arrive(&r, 107, 7, GD), GD_RV_REACK);	/* its resend */
	ASSERT_EQ(arrive(&r, 110, 10, GD), GD_RV_HOLD);
	ASSERT_EQ(gd_state_acked(run, 6), 0);
	ASSERT_U64(ack(&r, 106, GD_RA_SEND), 6);
	ASSERT_EQ(gd_state_has(run, 6, 106), 1);
	ASSERT_EQ(r.state_nomem, 0);
	gd_recv_floor(&r, 9);
	ASSERT_U64(run->floor, 9);
	RELEASED(&r, 0);
	ASSERT_U64(r.ord.next, 9);
	ASSERT_U64(r.n_dup, 3);
	gd_recv_free(&r);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	unlink(path);
}

/* Issue 21 with GDsub_state (the recipe's exactly-once subscriber): the
 * state file says what was acknowledged below the floor, in this gdsub
 * and in the one before a restart. */
TEST(state_below_floor)
{
	char path[64];
	struct gd_state st;
	struct gd_srun *run;
	struct gd_recv r;
	uint64_t s;

	snprintf(path, sizeof(path), "%s/f.state", sdir);
	if (gd_state_open(&st, path, 0) != 0) {
		FAILF("open: %s", st.err);
		return;
	}
	run = gd_state_run(&st, "h:1", 3, 78);
	ASSERT_EQ(gd_state_ack(&st, run, 1, 101), 0);	/* a gdsub before */
	ASSERT_EQ(gd_recv_init(&r, GD_DEDUP_ID), 0);
	gd_recv_attach(&r, &st, run);
	for (s = 2; s <= 6; s++) {
		ASSERT_EQ(arrive(&r, 100 + s, s, GD), GD_RV_NEW);
		ASSERT_U64(ack(&r, 100 + s, GD_RA_SEND), s);
	}
	ASSERT_EQ(gd_state_has(run, 6, 106), 1);
	gd_recv_floor(&r, 7);
	for (s = 1; s <= 6; s++)
		ASSERT_EQ(arrive(&r, 100 + s, s, GD), GD_RV_REACK);
	ASSERT_EQ(arrive(&r, 107, 7, GD), GD_RV_NEW);
	gd_recv_free(&r);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	unlink(path);
}

int main(void)
{
	RUN(new_dup_ack_reack);
	RUN(reused_id_after_ack_is_new);
	RUN(reused_id_while_first_in_pipeline);
	RUN(reused_id_too_many_waiting);
	RUN(dedup_none_copies);
	RUN(unwritable_and_closed);
	RUN(ended_publisher);
	RUN(floor_drops_late_copies_and_frees);
	RUN(journal_resend_below_floor);
	RUN(reset_on_restart);
	RUN(ack_blocked_by_engine_state);
	RUN(stream_runs);
	RUN(dedup_index);
	RUN(consecutive);
	RUN(consecutive_index_closed);
	if (mkdtemp(sdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	RUN(state_file);
	RUN(state_below_floor);
	rmdir(sdir);
	return UNIT_DONE();
}
