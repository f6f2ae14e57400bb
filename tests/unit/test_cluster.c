/* Unit tests of lib/cluster.c with an injected clock: a secondary holds a
 * block until a pre-ack drops it or its tentative timeout passes; a
 * pre-ack that comes first is kept for the confirmed timeout and drops the
 * block on arrival; numSubs pre-acks from distinct slots are needed; the
 * bounds (held count, remembered pre-acks evicted oldest first); growth
 * and reuse of entries under a random workload checked against counts. */
#include "cluster.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

#define S 1000000000ull		/* one second in ns */

static struct gd_cluster c;
static struct gd_cheld h;

static void setup(unsigned needed, uint32_t max_held, uint32_t max_pre)
{
	ASSERT_EQ(gd_cluster_init(&c, needed, 2 * S, 10 * S, max_held,
	    max_pre), 0);
}

TEST(primary_sends)
{
	setup(1, 100, 100);
	ASSERT_EQ(gd_cluster_block(&c, 7, 0, 1, 0, 5, S), GD_CL_SEND);
	ASSERT_EQ(gd_cluster_held(&c), 0);
	gd_cluster_free(&c);
}

TEST(held_then_preacked)
{
	setup(1, 100, 100);
	ASSERT_EQ(gd_cluster_block(&c, 7, 1, 3, 40, 5, S), GD_CL_HOLD);
	ASSERT_EQ(gd_cluster_block(&c, 8, 1, 3, 45, 6, S), GD_CL_HOLD);
	ASSERT_EQ(gd_cluster_held(&c), 2);
	ASSERT_U64(gd_cluster_next_due(&c), 3 * S);
	ASSERT_EQ(gd_cluster_preack(&c, 0, 8, S + 1, &h), GD_PA_DROP);
	ASSERT_U64(h.id, 8);
	ASSERT_EQ(h.owner, 3);
	ASSERT_EQ(h.off, 45);
	ASSERT_EQ(h.len, 6);
	ASSERT_EQ(gd_cluster_held(&c), 1);
	ASSERT_U64(c.n_dropped, 1);
	/* the same id twice in the input while held */
	ASSERT_EQ(gd_cluster_block(&c, 7, 1, 3, 50, 5, S), GD_CL_DUP);
	gd_cluster_free(&c);
}

TEST(tentative_timeout_forwards_in_order)
{
	setup(1, 100, 100);
	ASSERT_EQ(gd_cluster_block(&c, 1, 1, 0, 0, 1, S), GD_CL_HOLD);
	ASSERT_EQ(gd_cluster_block(&c, 2, 1, 0, 1, 1, S + S / 2), GD_CL_HOLD);
	ASSERT_EQ(gd_cluster_due(&c, 3 * S - 1, &h), 0);
	ASSERT_EQ(gd_cluster_due(&c, 3 * S, &h), 1);
	ASSERT_U64(h.id, 1);
	ASSERT_EQ(gd_cluster_due(&c, 3 * S, &h), 0);
	ASSERT_EQ(gd_cluster_due(&c, 4 * S, &h), 1);
	ASSERT_U64(h.id, 2);
	ASSERT_U64(c.n_forwarded, 2);
	ASSERT_EQ(gd_cluster_held(&c), 0);
	ASSERT_U64(gd_cluster_next_due(&c), 0);
	/* a pre-ack after the forward is remembered, not an error */
	ASSERT_EQ(gd_cluster_preack(&c, 0, 2, 4 * S, &h), GD_PA_KEPT);
	gd_cluster_free(&c);
}

TEST(confirmed_preack_drops_late_block)
{
	setup(1, 100, 100);
	ASSERT_EQ(gd_cluster_preack(&c, 0, 9, S, &h), GD_PA_KEPT);
	ASSERT_EQ(c.pre.n, 1);
	/* a secondary and a primary both drop it */
	ASSERT_EQ(gd_cluster_block(&c, 9, 1, 0, 0, 1, 5 * S), GD_CL_DROP);
	ASSERT_EQ(c.pre.n, 0);
	ASSERT_EQ(gd_cluster_held(&c), 0);
	ASSERT_EQ(gd_cluster_preack(&c, 0, 10, S, &h), GD_PA_KEPT);
	ASSERT_EQ(gd_cluster_block(&c, 10, 0, 0, 0, 1, 5 * S), GD_CL_DROP);
	ASSERT_U64(c.n_early, 2);
	gd_cluster_free(&c);
}

TEST(confirmed_timeout_forgets)
{
	setup(1, 100, 100);
	ASSERT_EQ(gd_cluster_preack(&c, 0, 9, S, &h), GD_PA_KEPT);
	ASSERT_EQ(gd_cluster_preack(&c, 0, 10, 2 * S, &h), GD_PA_KEPT);
	ASSERT_EQ(gd_cluster_expire(&c, 11 * S - 1), 0);
	ASSERT_EQ(gd_cluster_expire(&c, 11 * S), 1);
	ASSERT_EQ(c.pre.n, 1);
	/* 9 is forgotten: held again */
	ASSERT_EQ(gd_cluster_block(&c, 9, 1, 0, 0, 1, 11 * S), GD_CL_HOLD);
	ASSERT_EQ(gd_cluster_expire(&c, 12 * S), 1);
	ASSERT_EQ(c.pre.n, 0);
	ASSERT_EQ(gd_cluster_held(&c), 1);	/* expiry leaves held blocks */
	ASSERT_U64(c.n_expired, 2);
	gd_cluster_free(&c);
}

TEST(needed_distinct_slots)
{
	setup(2, 100, 100);
	ASSERT_EQ(gd_cluster_block(&c, 5, 1, 0, 0, 1, S), GD_CL_HOLD);
	ASSERT_EQ(gd_cluster_preack(&c, 3, 5, S, &h), GD_PA_COUNTED);
	ASSERT_EQ(gd_cluster_preack(&c, 3, 5, S, &h), GD_PA_COUNTED);
	ASSERT_EQ(gd_cluster_preack(&c, 4, 5, S, &h), GD_PA_DROP);
	ASSERT_EQ(h.bits, (1u << 3) | (1u << 4));
	/* one early pre-ack is not enough: held with it counted */
	ASSERT_EQ(gd_cluster_preack(&c, 1, 6, S, &h), GD_PA_KEPT);
	ASSERT_EQ(gd_cluster_block(&c, 6, 1, 0, 0, 1, 2 * S), GD_CL_HOLD);
	ASSERT_EQ(c.pre.n, 0);
	ASSERT_U64(gd_cluster_next_due(&c), 4 * S);
	ASSERT_EQ(gd_cluster_preack(&c, 2, 6, 2 * S, &h), GD_PA_DROP);
	/* a primary forgets a partial pre-ack and sends */
	ASSERT_EQ(gd_cluster_preack(&c, 1, 7, S, &h), GD_PA_KEPT);
	ASSERT_EQ(gd_cluster_block(&c, 7, 0, 0, 0, 1, 2 * S), GD_CL_SEND);
	ASSERT_EQ(c.pre.n, 0);
	gd_cluster_free(&c);
}

TEST(preacks_bounded_oldest_evicted)
{
	uint64_t i;

	setup(1, 100, 4);
	for (i = 1; i <= 6; i++)
		ASSERT_EQ(gd_cluster_preack(&c, 0, i, i * S, &h), GD_PA_KEPT);
	ASSERT_EQ(c.pre.n, 4);
	ASSERT_U64(c.n_evicted, 2);
	ASSERT_EQ(gd_cluster_block(&c, 1, 1, 0, 0, 1, 7 * S), GD_CL_HOLD);
	ASSERT_EQ(gd_cluster_block(&c, 3, 1, 0, 0, 1, 7 * S), GD_CL_DROP);
	gd_cluster_free(&c);
	setup(1, 100, 0);	/* nothing remembered at all */
	ASSERT_EQ(gd_cluster_preack(&c, 0, 1, S, &h), GD_PA_KEPT);
	ASSERT_EQ(c.pre.n, 0);
	gd_cluster_free(&c);
}

TEST(held_bound_and_pop)
{
	uint64_t i;

	setup(1, 3, 10);
	for (i = 1; i <= 3; i++)
		ASSERT_EQ(gd_cluster_block(&c, i, 1, 0, 0, 1, S), GD_CL_HOLD);
	ASSERT(gd_cluster_full(&c));
	ASSERT_EQ(gd_cluster_pop(&c, &h), 1);
	ASSERT_U64(h.id, 1);
	ASSERT(!gd_cluster_full(&c));
	ASSERT_EQ(gd_cluster_pop(&c, &h), 1);
	ASSERT_EQ(gd_cluster_pop(&c, &h), 1);
	ASSERT_EQ(gd_cluster_pop(&c, &h), 0);
	gd_cluster_free(&c);
}

/* many entries: growth, reuse, the lists stay consistent with the counts */
TEST(random_workload)
{
	uint64_t now = S, id, held = 0, dropped = 0, fwd = 0;
	uint32_t i, s, n;
	int rc;

	srand(7);
	setup(1, 1u << 20, 5000);
	for (i = 0; i < 200000; i++) {
		now += S / 1000;
		id = (uint64_t)(rand() % 50000);
		if (rand() % 2) {
			rc = gd_cluster_block(&c, id, 1, 0, 0, 1, now);
			ASSERT(rc != GD_CL_NOMEM);
			held += rc == GD_CL_HOLD;
		} else {
			rc = gd_cluster_preack(&c, 0, id, now, &h);
			ASSERT(rc != GD_PA_NOMEM);
			dropped += rc == GD_PA_DROP;
		}
		while (gd_cluster_due(&c, now, &h))
			fwd++;
		gd_cluster_expire(&c, now);
	}
	ASSERT_U64(held, c.n_held);
	ASSERT_U64(fwd, c.n_forwarded);
	ASSERT_EQ(held - dropped - fwd, c.held.n);
	for (n = 0, s = c.held.head; s != GD_NONE; s = c.e[s].next, n++)
		ASSERT_EQ(c.e[s].kind, GD_CE_HELD);
	ASSERT_EQ(n, c.held.n);
	for (n = 0, s = c.pre.head; s != GD_NONE; s = c.e[s].next, n++)
		ASSERT_EQ(c.e[s].kind, GD_CE_PREACK);
	ASSERT_EQ(n, c.pre.n);
	ASSERT(c.pre.n <= 5000);
	gd_cluster_free(&c);
}

int main(void)
{
	RUN(primary_sends);
	RUN(held_then_preacked);
	RUN(tentative_timeout_forwards_in_order);
	RUN(confirmed_preack_drops_late_block);
	RUN(confirmed_timeout_forgets);
	RUN(needed_distinct_slots);
	RUN(preacks_bounded_oldest_evicted);
	RUN(held_bound_and_pop);
	RUN(random_workload);
	return UNIT_DONE();
}
