/* Unit tests of lib/deliver.c (publish -> ack -> expire -> resend or NACK
 * -> resolve, with an injected clock and a recording sink), lib/slots.c
 * (GD slot admission and takeover) and lib/snapshot.c (the last-N ring): the publisher's rules of SPEC §4
 * without a process or a socket. */
#include "deliver.h"
#include "slots.h"
#include "snapshot.h"
#include "unit.h"
#include "wire.h"

#define S 1000000000ull
#define MS 1000000ull

/* what the sink saw, one event a slot: 'A' ACK, 'N' NACK, 'R' resend */
static struct ev { char what; uint64_t id, seq; unsigned resends; } evs[64];
static unsigned nev;

static void on_resend(void *ctx, const struct gd_pend *e, uint64_t seq)
{
	(void)ctx;
	if (nev < 64)
		evs[nev++] = (struct ev){ 'R', e->id, seq, gd_pend_resends(e) };
}

static void on_resolved(void *ctx, const struct gd_pend *e, int acked,
    uint64_t now)
{
	struct gd_deliver *d = ctx;
	(void)now;
	if (nev < 64)
		evs[nev++] = (struct ev){ acked ? 'A' : 'N', e->id,
			gd_deliver_seq(d, e), gd_pend_resends(e) };
}

static const struct gd_deliver_ops ops = { on_resend, on_resolved };

static void fresh(struct gd_deliver *d, unsigned needed, unsigned resend)
{
	nev = 0;
	ASSERT_EQ(gd_deliver_init(d, needed, 10 * S, resend, 65536, 0, 0, &ops,
	    d), 0);
}

static uint64_t pub(struct gd_deliver *d, uint64_t id, uint64_t now)
{
	uint64_t seq = 0;
	ASSERT_EQ(gd_deliver_publish(d, id, 0, 0, 0, 1, now, &seq), GD_DV_OK);
	return seq;
}

TEST(publish_ack_resolve)
{
	struct gd_deliver d;

	fresh(&d, 1, 0);
	ASSERT_U64(pub(&d, 7, 0), 1);
	ASSERT_U64(pub(&d, 8, 0), 2);
	ASSERT_EQ(d.pend.count, 2);
	ASSERT_U64(gd_deliver_floor(&d), 1);
	ASSERT_EQ(gd_deliver_ack(&d, 0, 8, 2, 5 * MS), 1);
	ASSERT_EQ(nev, 1);
	ASSERT_EQ(evs[0].what, 'A');
	ASSERT_U64(evs[0].id, 8);
	ASSERT_U64(gd_deliver_floor(&d), 1);
	ASSERT_EQ(gd_deliver_ack(&d, 0, 7, 1, 6 * MS), 1);
	ASSERT_U64(gd_deliver_floor(&d), 3);
	ASSERT_U64(d.n_ack, 2);
	ASSERT_U64(d.lat.n, 2);
	ASSERT_U64(gd_hist_pct(&d.lat, 100) / 1000, 6);	/* µs -> ms */
	/* an ack for a resolved block, or for no block, is late */
	ASSERT_EQ(gd_deliver_ack(&d, 0, 7, 1, 7 * MS), -1);
	ASSERT_EQ(gd_deliver_ack(&d, 0, 99, 3, 7 * MS), -1);
	ASSERT_U64(d.n_late, 2);
	gd_deliver_free(&d);
}

TEST(needs_every_subscriber)
{
	struct gd_deliver d;

	fresh(&d, 3, 0);
	pub(&d, 1, 0);
	ASSERT_EQ(gd_deliver_ack(&d, 0, 1, 1, 1), 0);
	ASSERT_EQ(gd_deliver_ack(&d, 0, 1, 1, 1), 0);	/* same slot twice */
	ASSERT_EQ(gd_deliver_ack(&d, 2, 1, 1, 1), 0);
	ASSERT_EQ(nev, 0);
	/* a slot taken over by another subscriber: its acks no longer count */
	gd_deliver_slot_up(&d, 2, 1);
	ASSERT_EQ(gd_deliver_ack(&d, 1, 1, 1, 1), 0);
	ASSERT_EQ(gd_deliver_ack(&d, 2, 1, 1, 1), 1);
	ASSERT_EQ(evs[0].what, 'A');
	gd_deliver_free(&d);
}

TEST(id_reuse)
{
	struct gd_deliver d;
	uint64_t s1, s2;

	fresh(&d, 1, 0);
	s1 = pub(&d, 5, 0);
	/* pending: the id is refused */
	{
		uint64_t seq = 0;
		ASSERT_EQ(gd_deliver_publish(&d, 5, 0, 0, 0, 1, 0, &seq),
		    GD_DV_PENDING);
		ASSERT_U64(d.next_seq, 2);
	}
	gd_deliver_expire(&d, 10 * S);	/* NACK */
	ASSERT_EQ(evs[0].what, 'N');
	s2 = pub(&d, 5, 10 * S);
	ASSERT(s2 != s1);
	/* the first block's late ack does not count for the second */
	ASSERT_EQ(gd_deliver_ack(&d, 0, 5, s1, 11 * S), -1);
	ASSERT_EQ(d.pend.count, 1);
	ASSERT_EQ(gd_deliver_ack(&d, 0, 5, s2, 11 * S), 1);
	ASSERT_EQ(evs[1].what, 'A');
	ASSERT_U64(evs[1].seq, s2);
	gd_deliver_free(&d);
}

TEST(expire_resend_then_nack)
{
	struct gd_deliver d;

	fresh(&d, 1, 2);
	pub(&d, 1, 0);
	pub(&d, 2, 1 * S);
	ASSERT_U64(gd_deliver_deadline(&d), 10 * S);
	gd_deliver_expire(&d, 10 * S - 1);
	ASSERT_EQ(nev, 0);
	gd_deliver_expire(&d, 10 * S);
	ASSERT_EQ(nev, 1);
	ASSERT_EQ(evs[0].what, 'R');
	ASSERT_U64(evs[0].id, 1);
	ASSERT_U64(evs[0].seq, 1);	/* a resend keeps its index */
	ASSERT_EQ(evs[0].resends, 1);
	/* resent: a new deadline, behind block 2's */
	ASSERT_U64(gd_deliver_deadline(&d), 11 * S);
	gd_deliver_expire(&d, 20 * S);	/* 2 resent, 1 resent again */
	ASSERT_EQ(nev, 3);
	ASSERT_U64(evs[1].id, 2);
	ASSERT_U64(evs[2].id, 1);
	ASSERT_EQ(evs[2].resends, 2);
	/* the ack of a resend resolves it */
	ASSERT_EQ(gd_deliver_ack(&d, 0, 2, 2, 21 * S), 1);
	gd_deliver_expire(&d, 30 * S);	/* 1: no resend left */
	ASSERT_EQ(evs[nev - 1].what, 'N');
	ASSERT_U64(evs[nev - 1].id, 1);
	ASSERT_U64(d.n_resent, 3);
	ASSERT_U64(d.n_nack, 1);
	ASSERT_U64(gd_deliver_deadline(&d), 0);
	gd_deliver_free(&d);
}

TEST(gd_off_keeps_nothing)
{
	struct gd_deliver d;
	uint64_t seq = 0;

	fresh(&d, 0, 0);
	ASSERT_EQ(gd_deliver_publish(&d, 1, 0, 0, 0, 1, 0, &seq), GD_DV_OK);
	ASSERT_EQ(gd_deliver_publish(&d, 1, 0, 0, 0, 1, 0, &seq), GD_DV_OK);
	ASSERT_U64(seq, 2);
	ASSERT_EQ(d.pend.count, 0);
	ASSERT(!gd_deliver_full(&d));
	ASSERT_U64(gd_deliver_floor(&d), 3);
	gd_deliver_free(&d);
}

TEST(window_holds_input)
{
	struct gd_deliver d;
	uint64_t i, seq;

	fresh(&d, 1, 0);
	gd_deliver_slot_up(&d, 0, 0);
	for (i = 1; !gd_deliver_full(&d); i++)
		pub(&d, i, 0);
	ASSERT_EQ(d.pend.count, GD_WINDOW_INIT);
	/* ACKs arriving fast grow it */
	for (i = 1; i <= 64; i++)
		gd_deliver_ack(&d, 0, i, i, 20 * MS);
	gd_deliver_acks_done(&d, 20 * MS);
	ASSERT(!gd_deliver_full(&d));
	ASSERT_EQ(gd_window_size(&d.win), 2 * GD_WINDOW_INIT);
	ASSERT_EQ(gd_deliver_publish(&d, 1000, 1, 0, 0, 1, 0, &seq), GD_DV_OK);
	gd_deliver_free(&d);
}

/* A stage that drops blocks: a later block acknowledged passes the
 * earlier ones over; they leave the window, and their expiry is a NACK
 * for that reason, not congestion. */
TEST(passed_over_blocks_leave_the_window)
{
	struct gd_deliver d;
	uint64_t i;
	uint32_t w;

	fresh(&d, 1, 0);
	gd_deliver_slot_up(&d, 0, 0);
	for (i = 1; !gd_deliver_full(&d); i++)
		pub(&d, i, 0);
	ASSERT_EQ(d.pend.count, GD_WINDOW_INIT);
	/* the pipeline let through 10, 20, ..., 60 only */
	for (i = 10; i <= 60; i += 10)
		ASSERT_EQ(gd_deliver_ack(&d, 0, i, i, 1 * MS), 1);
	gd_deliver_acks_done(&d, 1 * MS);
	ASSERT_EQ(d.pend.npassed, 54);	/* 1..59 less the 5 ACKed */
	ASSERT_EQ(gd_deliver_inflight(&d), 4);	/* 61..64 */
	ASSERT(!gd_deliver_full(&d));
	w = gd_window_size(&d.win);
	/* the passed-over expire: NACKs that do not shrink the window */
	gd_deliver_expire(&d, 10 * S + 1);
	ASSERT_U64(d.n_nack_passed, 54);
	ASSERT_U64(d.n_nack_slow, 4);
	ASSERT_U64(d.n_nack_absent, 0);
	/* only the 4 owed blocks' wave cut it, once */
	ASSERT_EQ(gd_window_size(&d.win), w / 2);
	gd_deliver_free(&d);
}

/* With no GD subscriber connected nobody owes anything: input runs to
 * GDpub_maxPending, and the expiries neither shrink the window nor wait
 * for one another. A subscriber that connects owes what is sent next. */
TEST(absent_subscribers_do_not_hold_the_window)
{
	struct gd_deliver d;
	uint64_t i;

	nev = 0;
	ASSERT_EQ(gd_deliver_init(&d, 1, 10 * S, 0, 1000, 0, 0, &ops, &d), 0);
	for (i = 1; !gd_deliver_full(&d); i++)
		pub(&d, i, 0);
	ASSERT_EQ(d.pend.count, 1000);
	gd_deliver_expire(&d, 10 * S + 1);
	ASSERT_EQ(d.pend.count, 0);
	ASSERT_U64(d.n_nack_absent, 1000);
	ASSERT_EQ(gd_window_size(&d.win), GD_WINDOW_INIT);
	gd_deliver_slot_up(&d, 3, 0);
	for (i = 2000; !gd_deliver_full(&d); i++)
		pub(&d, i, 11 * S);
	ASSERT_EQ(d.pend.count, GD_WINDOW_INIT);
	/* it leaves: what it owed is owed by nobody */
	gd_deliver_slot_down(&d, 3);
	ASSERT(!gd_deliver_full(&d));
	gd_deliver_free(&d);
}

/* A block sent while fewer than numSubs were connected is NACKed for a
 * subscriber missing even when they are all there at its deadline (a
 * restarted gdpub whose pipeline was down), and its expiry does not
 * shrink the window; so is one sent before a reconnect. */
TEST(missing_when_sent_counts_as_missing)
{
	struct gd_deliver d;
	uint32_t w;

	fresh(&d, 2, 0);
	pub(&d, 1, 0);
	gd_deliver_slot_up(&d, 0, 0);
	pub(&d, 2, 0);
	gd_deliver_slot_up(&d, 1, 0);	/* all there from here on */
	pub(&d, 3, 0);
	w = gd_window_size(&d.win);
	gd_deliver_expire(&d, 10 * S);
	ASSERT_U64(d.n_nack_absent, 2);
	ASSERT_U64(d.n_nack_slow, 1);
	ASSERT_EQ(gd_window_size(&d.win), w / 2);
	/* slot 1 reconnects: what was sent before it is owed by a missing one */
	pub(&d, 4, 11 * S);
	gd_deliver_slot_down(&d, 1);
	gd_deliver_slot_up(&d, 1, 0);
	pub(&d, 5, 11 * S);
	gd_deliver_expire(&d, 21 * S);
	ASSERT_U64(d.n_nack_absent, 3);
	ASSERT_U64(d.n_nack_slow, 2);
	gd_deliver_free(&d);
}

/* A block the first stage read (gdsub's report) and nothing came back
 * for: "dropped or held by a stage", no cut; one it had not read, or
 * read while ACKs of earlier blocks kept coming, is late. */
TEST(read_by_the_stage_and_never_acked_is_held)
{
	struct gd_deliver d;
	uint32_t w;

	fresh(&d, 1, 0);
	gd_deliver_slot_up(&d, 0, 0);
	pub(&d, 1, 100 * S);
	pub(&d, 2, 100 * S);
	pub(&d, 3, 100 * S);
	gd_deliver_consumed(&d, 0, 2, 100 * S + 10 * MS);
	w = gd_window_size(&d.win);
	gd_deliver_expire(&d, 110 * S);
	ASSERT_U64(d.n_nack_held, 2);
	ASSERT_U64(d.n_nack_slow, 1);
	ASSERT_EQ(gd_window_size(&d.win), w / 2);	/* block 3's wave */
	ASSERT(d.win.held);
	/* ACKs keep coming while it waits: a slow pipeline, late */
	pub(&d, 4, 111 * S);
	pub(&d, 5, 111 * S);
	gd_deliver_consumed(&d, 0, 5, 111 * S + 10 * MS);
	ASSERT_EQ(gd_deliver_ack(&d, 0, 4, 4, 119 * S), 1);
	gd_deliver_acks_done(&d, 119 * S);
	ASSERT(!d.win.held);
	gd_deliver_expire(&d, 121 * S);
	ASSERT_U64(d.n_nack_held, 2);
	ASSERT_U64(d.n_nack_slow, 2);
	/* a report from a slot that is gone, or from a new connection of it
	 * before it says anything, counts for nothing */
	gd_deliver_slot_down(&d, 0);
	gd_deliver_consumed(&d, 0, 100, 122 * S);
	ASSERT_EQ(d.reports, 0);
	gd_deliver_slot_up(&d, 0, 0);
	ASSERT_EQ(d.reports, 0);
	ASSERT_U64(d.cons[0], 0);
	gd_deliver_free(&d);
}

/* Stages that read everything and acknowledge nothing: the window grows
 * by probing (a quarter of the timeout, at most every 2 s), with the
 * tick or a report. */
TEST(window_probes_while_stages_read_everything)
{
	struct gd_deliver d;
	uint64_t i, t = 100 * S;

	fresh(&d, 1, 0);
	gd_deliver_slot_up(&d, 0, 0);
	for (i = 1; !gd_deliver_full(&d); i++)
		pub(&d, i, t);
	gd_deliver_consumed(&d, 0, i - 1, t + 10 * MS);
	gd_deliver_tick(&d, t + 1900 * MS);
	ASSERT_EQ(gd_window_size(&d.win), GD_WINDOW_INIT);
	gd_deliver_tick(&d, t + 2 * S);
	ASSERT_EQ(gd_window_size(&d.win), 2 * GD_WINDOW_INIT);
	/* not read yet: no probe */
	for (; !gd_deliver_full(&d); i++)
		pub(&d, i, t + 2500 * MS);
	gd_deliver_tick(&d, t + 6 * S);
	ASSERT_EQ(gd_window_size(&d.win), 2 * GD_WINDOW_INIT);
	gd_deliver_consumed(&d, 0, i - 1, t + 6 * S);
	ASSERT_EQ(gd_window_size(&d.win), 4 * GD_WINDOW_INIT);
	gd_deliver_free(&d);
}

/* A fixed window (GDpub_window=N) never moves. */
TEST(fixed_window)
{
	struct gd_deliver d;
	uint64_t i;

	ASSERT_EQ(gd_deliver_init(&d, 1, 10 * S, 0, 65536, 500, 0, &ops, &d),
	    0);
	gd_deliver_slot_up(&d, 0, 0);
	for (i = 1; !gd_deliver_full(&d); i++)
		pub(&d, i, 0);
	ASSERT_EQ(d.pend.count, 500);
	for (i = 1; i <= 500; i++)
		gd_deliver_ack(&d, 0, i, i, 20 * MS);
	gd_deliver_acks_done(&d, 20 * MS);
	ASSERT_EQ(gd_window_size(&d.win), 500);
	for (i = 1000; !gd_deliver_full(&d); i++)
		pub(&d, i, 30 * MS);
	gd_deliver_expire(&d, 11 * S);
	ASSERT_EQ(gd_window_size(&d.win), 500);
	gd_deliver_free(&d);
}

TEST(nack_all)
{
	struct gd_deliver d;

	fresh(&d, 2, 5);
	pub(&d, 3, 0);
	pub(&d, 4, 0);
	gd_deliver_ack(&d, 0, 3, 1, 1);
	gd_deliver_nack_all(&d, 2);
	ASSERT_EQ(nev, 2);
	ASSERT_EQ(evs[0].what, 'N');
	ASSERT_U64(evs[0].id, 3);
	ASSERT_EQ(evs[1].what, 'N');
	ASSERT_U64(evs[1].id, 4);
	ASSERT_EQ(d.pend.count, 0);
	gd_deliver_free(&d);
}

TEST(slots_admission)
{
	struct gd_slots s;
	int slot = -1, take = -1;

	gd_slots_init(&s, 0);
	ASSERT_EQ(gd_slots_admit(&s, "a", &slot, &take), GD_ACK_OFF);
	gd_slots_init(&s, 2);
	ASSERT(!gd_slots_ready(&s));
	ASSERT_EQ(gd_slots_admit(&s, "a", &slot, &take), GD_ACK_OK);
	ASSERT_EQ(slot, 0);
	ASSERT_EQ(take, 0);
	/* a second connection under a connected name */
	ASSERT_EQ(gd_slots_admit(&s, "a", &slot, &take), GD_ACK_NAME);
	ASSERT_EQ(gd_slots_admit(&s, "b", &slot, &take), GD_ACK_OK);
	ASSERT_EQ(slot, 1);
	ASSERT(gd_slots_ready(&s));
	ASSERT_EQ(gd_slots_admit(&s, "c", &slot, &take), GD_ACK_FULL);
	/* a reconnects: its own slot, its acks kept */
	gd_slots_leave(&s, 0);
	ASSERT(!gd_slots_ready(&s));
	ASSERT_EQ(gd_slots_admit(&s, "a", &slot, &take), GD_ACK_OK);
	ASSERT_EQ(slot, 0);
	ASSERT_EQ(take, 0);
	/* c takes over b's slot: b's acks no longer count */
	gd_slots_leave(&s, 1);
	ASSERT_EQ(gd_slots_admit(&s, "c", &slot, &take), GD_ACK_OK);
	ASSERT_EQ(slot, 1);
	ASSERT_EQ(take, 1);
	ASSERT_STR(s.name[1], "c");
	gd_slots_leave(&s, 1);
	gd_slots_leave(&s, 1);	/* twice: harmless */
	ASSERT_EQ(s.used, 1);
}

TEST(slots_prefer_own_then_fresh)
{
	struct gd_slots s;
	int slot = -1, take = -1;

	gd_slots_init(&s, 3);
	gd_slots_admit(&s, "a", &slot, &take);
	gd_slots_admit(&s, "b", &slot, &take);
	gd_slots_leave(&s, 0);
	/* a new name takes the never-used slot 2, not a's */
	ASSERT_EQ(gd_slots_admit(&s, "x", &slot, &take), GD_ACK_OK);
	ASSERT_EQ(slot, 2);
	ASSERT_EQ(take, 0);
	ASSERT_EQ(gd_slots_admit(&s, "a", &slot, &take), GD_ACK_OK);
	ASSERT_EQ(slot, 0);
}

TEST(snapshot_ring)
{
	struct gd_snapshot s;
	struct gd_snap_ent e = { 0, 0, 0, NULL, 0, NULL };
	static int owners[5];
	uint64_t i;

	ASSERT_EQ(gd_snapshot_init(&s, 0), 0);
	ASSERT(gd_snapshot_push(&s, &e) == NULL);	/* no snapshot */
	ASSERT_EQ(s.n, 0);
	gd_snapshot_free(&s);
	ASSERT_EQ(gd_snapshot_init(&s, 3), 0);
	for (i = 0; i < 5; i++) {
		void *old;
		e.id = i;
		e.owner = &owners[i];
		old = gd_snapshot_push(&s, &e);
		/* the fourth and fifth evict the oldest */
		ASSERT(old == (i < 3 ? NULL : (void *)&owners[i - 3]));
	}
	ASSERT_EQ(s.n, 3);
	for (i = 0; i < 3; i++)
		ASSERT_U64(gd_snapshot_at(&s, (uint32_t)i)->id, i + 2);
	ASSERT(gd_snapshot_pop(&s) == &owners[2]);
	ASSERT(gd_snapshot_pop(&s) == &owners[3]);
	ASSERT(gd_snapshot_pop(&s) == &owners[4]);
	ASSERT(gd_snapshot_pop(&s) == NULL);
	gd_snapshot_free(&s);
}

/* The calls the engine reads deliver through, and a held block's NACK
 * (a cluster secondary's, never pending) counted with the others. */
TEST(calls_and_nack_held)
{
	struct gd_deliver d;
	struct gd_deliver_counts n;
	uint32_t s;

	fresh(&d, 1, 0);
	gd_deliver_set_next_seq(&d, 40);
	ASSERT_U64(gd_deliver_next_seq(&d), 40);
	ASSERT_U64(pub(&d, 7, 0), 40);
	ASSERT_U64(pub(&d, 8, 0), 41);
	ASSERT_EQ(gd_deliver_pending_count(&d), 2);
	ASSERT((s = gd_deliver_find(&d, 8)) != GD_NONE);
	ASSERT_U64(gd_deliver_at(&d, s)->id, 8);
	ASSERT_U64(gd_deliver_seq(&d, gd_deliver_at(&d, s)), 41);
	ASSERT_EQ(gd_deliver_find(&d, 9), GD_NONE);
	ASSERT_EQ(gd_deliver_pending(&d)->e[gd_deliver_pending(&d)->head].id, 7);
	ASSERT_EQ(gd_deliver_ack(&d, 0, 8, 41, 2 * MS), 1);
	gd_deliver_nack_held(&d);
	n = gd_deliver_counts(&d);
	ASSERT_U64(n.pub, 2);
	ASSERT_U64(n.ack, 1);
	ASSERT_U64(n.nack, 1);
	ASSERT_EQ(n.pending, 1);
	ASSERT_EQ(nev, 1);	/* no resolution: the held block was never here */
	ASSERT_U64(gd_deliver_latency(&d)->n, 1);
	gd_deliver_free(&d);
}

int main(void)
{
	RUN(publish_ack_resolve);
	RUN(needs_every_subscriber);
	RUN(id_reuse);
	RUN(expire_resend_then_nack);
	RUN(gd_off_keeps_nothing);
	RUN(window_holds_input);
	RUN(passed_over_blocks_leave_the_window);
	RUN(absent_subscribers_do_not_hold_the_window);
	RUN(missing_when_sent_counts_as_missing);
	RUN(read_by_the_stage_and_never_acked_is_held);
	RUN(window_probes_while_stages_read_everything);
	RUN(fixed_window);
	RUN(nack_all);
	RUN(slots_admission);
	RUN(slots_prefer_own_then_fresh);
	RUN(snapshot_ring);
	RUN(calls_and_nack_held);
	return UNIT_DONE();
}
