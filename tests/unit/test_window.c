/* Unit tests of lib/window.c, the publisher's adaptive in-flight window:
 * its rules directly, then a simulated publisher (infinite input, sends
 * while fewer than the window are pending) feeding a FIFO pipeline of a
 * given speed, with acknowledgements batched by the millisecond as gdsub
 * and gdack batch them. A pipeline that keeps up with its own steady
 * speed must see every block acknowledged within the timeout, and a fast
 * one must reach the full GDpub_maxPending window at once. */
#include "window.h"
#include "unit.h"

#include <stdlib.h>

#define MS 1000000ull
#define S 1000000000ull

/* n first copies acknowledged at now, inflight in flight before them */
static void acked(struct gd_window *w, uint64_t now, uint32_t n,
    uint32_t inflight, uint64_t delay_ns)
{
	struct gd_window_acks a = { n, 0, inflight, n, delay_ns };
	gd_window_acked(w, now, &a);
}

TEST(starts_small_and_capped)
{
	struct gd_window w;

	gd_window_init(&w, 10 * S, 65536, 0, 0);
	ASSERT_EQ(gd_window_size(&w), GD_WINDOW_INIT);
	gd_window_init(&w, 10 * S, 8, 0, 0);
	ASSERT_EQ(gd_window_size(&w), 8);
	gd_window_init(&w, 10 * S, 0, 0, 0);
	ASSERT_EQ(gd_window_size(&w), 1);
}

TEST(round_rules)
{
	struct gd_window w;

	gd_window_init(&w, 8 * S, 1000000, 0, 0);	/* target 1 s */
	/* fewer than 32 ACKs and under a quarter timeout: round goes on */
	acked(&w, 20 * MS, 10, 64, 0);
	ASSERT_EQ(gd_window_size(&w), 64);
	/* 64 ACKs in 20 ms = 3200/s; x 1 s = 3200, but at most doubled */
	acked(&w, 20 * MS, 54, 64, 0);
	ASSERT_EQ(gd_window_size(&w), 128);
	/* 40 ACKs in 100 ms = 400/s: 400 wanted, window 128 -> 256 */
	acked(&w, 120 * MS, 40, 128, 0);
	ASSERT_EQ(gd_window_size(&w), 256);
	/* 40 ACKs in 1 s: 40/s, 40 wanted: at most halved, 128 */
	acked(&w, 1120 * MS, 40, 256, 0);
	ASSERT_EQ(gd_window_size(&w), 128);
	acked(&w, 2120 * MS, 40, 256, 0);
	ASSERT_EQ(gd_window_size(&w), 64);
	acked(&w, 3120 * MS, 40, 40, 0);
	ASSERT_EQ(gd_window_size(&w), 40);
	/* the window was not the limit (at most 10 in flight): no growth */
	acked(&w, 3220 * MS, 400, 10, 0);
	ASSERT_EQ(gd_window_size(&w), 40);
	/* but a slow round still shrinks it */
	acked(&w, 4220 * MS, 10, 10, 0);
	ASSERT_EQ(gd_window_size(&w), 20);
}

/* ACKs that stop before a round is over (the window filled with blocks
 * the pipeline will not acknowledge soon): the periodic check ends it. */
TEST(round_ended_by_check)
{
	struct gd_window w;

	gd_window_init(&w, 600 * S, 65536, 0, 0);
	acked(&w, 1 * MS, 20, 64, 0);
	ASSERT_EQ(gd_window_size(&w), 64);
	gd_window_check(&w, 5 * MS, 0, 64, 0);	/* under 10 ms: not yet */
	ASSERT_EQ(gd_window_size(&w), 64);
	gd_window_check(&w, 250 * MS, 0, 64, 0);
	ASSERT_EQ(gd_window_size(&w), 128);
	/* no ACK since: nothing to measure */
	gd_window_check(&w, 500 * MS, 0, 128, 0);
	ASSERT_EQ(gd_window_size(&w), 128);
}

TEST(expiry_and_stall_halve)
{
	struct gd_window w;

	gd_window_init(&w, 10 * S, 1024, 0, 0);
	w.w = 1024;
	gd_window_expired(&w, 100 * S);
	ASSERT_EQ(gd_window_size(&w), 512);
	gd_window_expired(&w, 100 * S + 1 * MS);	/* the same wave */
	ASSERT_EQ(gd_window_size(&w), 512);
	gd_window_expired(&w, 100 * S + 20 * MS);
	ASSERT_EQ(gd_window_size(&w), 256);
	/* nothing pending, or the oldest younger than a quarter timeout */
	gd_window_check(&w, 200 * S, 0, 0, 0);
	gd_window_check(&w, 200 * S, 198 * S, 10, 0);
	ASSERT_EQ(gd_window_size(&w), 256);
	/* older: halved, then not again within an eighth of the timeout */
	gd_window_check(&w, 200 * S, 197 * S, 10, 0);
	ASSERT_EQ(gd_window_size(&w), 128);
	gd_window_check(&w, 201 * S, 197 * S, 10, 0);
	ASSERT_EQ(gd_window_size(&w), 128);
	gd_window_check(&w, 201 * S + 300 * MS, 197 * S, 10, 0);
	ASSERT_EQ(gd_window_size(&w), 64);
	for (int i = 0; i < 20; i++)
		gd_window_check(&w, (202 + 2 * (uint64_t)i) * S, 197 * S, 10, 0);
	ASSERT_EQ(gd_window_size(&w), 1);
}

/* The stages read everything sent and nothing is acknowledged: the full
 * window doubles every probe interval of that silence (a quarter of the
 * timeout, at most 2 s), never when it is not full, and the first ACK
 * ends it. */
TEST(probes_while_stages_drain_in_silence)
{
	struct gd_window w;

	gd_window_init(&w, 2 * S, 65536, 0, 100 * S);	/* interval 0.5 s */
	/* the oldest block in flight was sent at 100 s */
	ASSERT_EQ(gd_window_probe(&w, 100 * S + 400 * MS, 100 * S, 64), 0);
	ASSERT_EQ(gd_window_probe(&w, 100 * S + 500 * MS, 100 * S, 63), 0);
	ASSERT_EQ(gd_window_size(&w), 64);		/* not full */
	ASSERT_EQ(gd_window_probe(&w, 100 * S + 500 * MS, 100 * S, 64), 1);
	ASSERT_EQ(gd_window_size(&w), 128);
	/* the next one a whole interval later */
	ASSERT_EQ(gd_window_probe(&w, 100 * S + 900 * MS, 100 * S, 128), 0);
	ASSERT_EQ(gd_window_probe(&w, 101 * S, 100 * S, 128), 1);
	ASSERT_EQ(gd_window_size(&w), 256);
	/* an ACK: the silence starts again from it */
	acked(&w, 101 * S + 100 * MS, 1, 256, 1 * MS);
	ASSERT_EQ(gd_window_probe(&w, 101 * S + 500 * MS, 100 * S, 256), 0);
	ASSERT_EQ(gd_window_probe(&w, 101 * S + 600 * MS, 100 * S, 256), 1);
	/* the interval is at most 2 s, whatever the timeout */
	gd_window_init(&w, 600 * S, 65536, 0, 0);
	ASSERT_EQ(gd_window_probe(&w, 11 * S + 900 * MS, 10 * S, 64), 0);
	ASSERT_EQ(gd_window_probe(&w, 12 * S, 10 * S, 64), 1);
	/* up to max; a fixed window never moves */
	gd_window_init(&w, 2 * S, 100, 0, 0);
	ASSERT_EQ(gd_window_probe(&w, 10 * S, 1 * S, 64), 1);
	ASSERT_EQ(gd_window_size(&w), 100);
	ASSERT_EQ(gd_window_probe(&w, 20 * S, 1 * S, 100), 0);
	gd_window_init(&w, 2 * S, 65536, 7, 0);
	ASSERT_EQ(gd_window_probe(&w, 10 * S, 1 * S, 7), 0);
	ASSERT_EQ(gd_window_size(&w), 7);
}

/* Once a block the stages read expired with no ACK (held), the window
 * doubles every round the stages read all of it, until an ACK. */
TEST(held_probes_every_round)
{
	struct gd_window w;

	gd_window_init(&w, 10 * S, 1 << 20, 0, 0);
	gd_window_held(&w, 10 * S);
	ASSERT_EQ(gd_window_probe(&w, 10 * S, 1 * S, 64), 1);
	ASSERT_EQ(gd_window_probe(&w, 10 * S + 5 * MS, 1 * S, 128), 0);
	ASSERT_EQ(gd_window_probe(&w, 10 * S + 10 * MS, 1 * S, 128), 1);
	ASSERT_EQ(gd_window_size(&w), 256);
	acked(&w, 10 * S + 20 * MS, 1, 256, 1 * MS);
	ASSERT_EQ(w.held, 0);
	ASSERT_EQ(gd_window_probe(&w, 10 * S + 40 * MS, 1 * S, 256), 0);
	/* an expiry that is held does not cut */
	ASSERT_EQ(gd_window_size(&w), 256);
}

/* An ACK after probing that shows delay cuts the window to what the
 * measured rate allows, at once. */
TEST(late_ack_after_probing_cuts_at_once)
{
	struct gd_window w;

	gd_window_init(&w, 10 * S, 65536, 0, 0);
	w.w = 4096;
	w.r_start = 5 * S;
	/* 40 blocks in 1 s, the first waited 4 s: 40/s x 1.25 s = 50 */
	acked(&w, 6 * S, 40, 4096, 4 * S);
	ASSERT_EQ(gd_window_size(&w), 50);
}

/* An ACK batch that passed over N blocks keeps the window at 2N, unless
 * its blocks were late; the blocks passed count in the rate. */
TEST(passed_over_run_keeps_the_window)
{
	struct gd_window w;
	struct gd_window_acks a = { 1000, 999, 1024, 1, 2 * MS };

	gd_window_init(&w, 2 * S, 65536, 0, 0);
	w.w = 1024;
	/* one ACK passing 999 in a round of 1 s: rate 1000/s x 0.25 s =
	 * 250, at most halved (512), but 2 x 999 kept */
	gd_window_acked(&w, 1 * S, &a);
	ASSERT_EQ(gd_window_size(&w), 1998);
	/* late: the rate decides, 1000/s x 0.25 */
	w.w = 1024;
	a.delay_ns = 1 * S;
	gd_window_acked(&w, 2 * S, &a);
	ASSERT_EQ(gd_window_size(&w), 250);
}

/* The stall check leaves alone an oldest block the stages read while
 * nothing at all is acknowledged; with ACKs coming it halves as before. */
TEST(stall_check_spares_read_blocks_in_silence)
{
	struct gd_window w;

	gd_window_init(&w, 10 * S, 1024, 0, 0);
	w.w = 1024;
	gd_window_check(&w, 200 * S, 197 * S, 10, 1);
	ASSERT_EQ(gd_window_size(&w), 1024);
	acked(&w, 199 * S + 500 * MS, 1, 10, 1 * MS);
	w.w = 1024;
	gd_window_check(&w, 200 * S, 197 * S, 10, 1);
	ASSERT_EQ(gd_window_size(&w), 512);
}

/* ---- simulation ---- */

struct sim {
	uint64_t n, sent, acked, late, max_window, t_full;
	uint64_t end;		/* when the last ACK came */
	uint64_t worst;		/* longest publish -> ACK */
};

/* The pipeline serves blocks one at a time, FIFO, in service_ns(i) each,
 * after base_ns of transport; its ACK comes base_ns after service, in the
 * next whole millisecond (batching). */
static void simulate(struct sim *r, uint64_t n, uint64_t timeout_ns,
    uint32_t max, uint64_t base_ns, uint64_t (*service_ns)(uint64_t))
{
	uint64_t *sent_t = malloc(n * sizeof(*sent_t));
	uint64_t *ack_t = malloc(n * sizeof(*ack_t));
	uint64_t t = 0, free_at = 0, tick = 250 * MS;
	struct gd_window w;

	memset(r, 0, sizeof(*r));
	r->n = n;
	gd_window_init(&w, timeout_ns, max, 0, 0);
	while (r->acked < n) {
		uint32_t k = 0, before;
		uint64_t delay = 0;
		while (r->sent < n && r->sent - r->acked < gd_window_size(&w)) {
			uint64_t start = t + base_ns > free_at ? t + base_ns : free_at;
			free_at = start + service_ns(r->sent);
			sent_t[r->sent] = t;
			ack_t[r->sent] = (free_at + base_ns + MS - 1) / MS * MS;
			r->sent++;
		}
		if (gd_window_size(&w) > r->max_window)
			r->max_window = gd_window_size(&w);
		if (r->t_full == 0 && gd_window_size(&w) >= max)
			r->t_full = t;
		t = ack_t[r->acked];
		before = (uint32_t)(r->sent - r->acked);
		while (r->acked < r->sent && ack_t[r->acked] <= t) {
			uint64_t lat = ack_t[r->acked] - sent_t[r->acked];
			if (lat > delay)
				delay = lat;
			if (lat > r->worst)
				r->worst = lat;
			if (lat > timeout_ns)
				r->late++;
			r->acked++;
			k++;
		}
		acked(&w, t, k, before, delay);
		if (t >= tick) {	/* gdpub checks 4 times a second */
			gd_window_check(&w, t, r->acked < r->sent ?
			    sent_t[r->acked] : 0, (uint32_t)(r->sent - r->acked), 0);
			tick = t + 250 * MS;
		}
	}
	r->end = t;
	free(sent_t);
	free(ack_t);
}

static uint64_t at_2000(uint64_t i) { (void)i; return S / 2000; }
static uint64_t at_200(uint64_t i) { (void)i; return S / 200; }
static uint64_t at_7500(uint64_t i) { (void)i; return S / 7500; }
static uint64_t at_1m4(uint64_t i) { (void)i; return S / 1400000; }
static uint64_t slowing(uint64_t i) { return i < 20000 ? S / 2000 : S / 1000; }
static uint64_t speeding(uint64_t i) { return i < 5000 ? S / 500 : S / 20000; }
/* 10 s at 8,000/s, then 4x slower for 20 s (a busy machine), then back */
static uint64_t dip(uint64_t i)
{
	return i >= 80000 && i < 120000 ? S / 2000 : S / 8000;
}

TEST(pipeline_2000_per_s)
{
	struct sim r;
	simulate(&r, 20000, 10 * S, 65536, 100000, at_2000);
	ASSERT_U64(r.late, 0);
	ASSERT(r.worst < 6 * S);	/* near a quarter of the timeout */
	ASSERT(r.end < 11 * S);		/* the pipeline's own speed: 10 s */
}

TEST(pipeline_200_per_s_timeout_2)
{
	struct sim r;
	simulate(&r, 20000, 2 * S, 65536, 100000, at_200);
	ASSERT_U64(r.late, 0);
	ASSERT(r.end < 101 * S);
}

TEST(pipeline_7500_per_s)
{
	struct sim r;
	simulate(&r, 100000, 10 * S, 65536, 100000, at_7500);
	ASSERT_U64(r.late, 0);
	ASSERT(r.end < 14 * S);
}

TEST(fast_pipeline_gets_the_full_window)
{
	struct sim r;
	simulate(&r, 2000000, 10 * S, 65536, 50000, at_1m4);
	ASSERT_U64(r.late, 0);
	ASSERT_EQ(r.max_window, 65536);
	ASSERT(r.t_full > 0 && r.t_full < 200 * MS);
	/* 2M at 1.4M/s is 1.43 s; the start costs little */
	ASSERT(r.end < (uint64_t)(1.6 * S));
}

TEST(pipeline_that_slows_down)
{
	struct sim r;
	simulate(&r, 40000, 10 * S, 65536, 100000, slowing);
	ASSERT_U64(r.late, 0);
}

TEST(pipeline_that_speeds_up)
{
	struct sim r;
	simulate(&r, 200000, 10 * S, 65536, 100000, speeding);
	ASSERT_U64(r.late, 0);
	/* 5000 at 500/s, then 195000 at 20000/s: about 20 s */
	ASSERT(r.end < 22 * S);
}

/* The speed falls 4x at once: what is already in flight must still be
 * acknowledged within the timeout, so the window may hold no more than a
 * quarter of a timeout's worth at the old speed, with room to spare. */
TEST(pipeline_4x_slower_for_20_s)
{
	struct sim r;
	simulate(&r, 200000, 10 * S, 65536, 100000, dip);
	ASSERT_U64(r.late, 0);
	ASSERT(r.worst < 6 * S);
	/* 10 s + 20 s + 10 s at the pipeline's own speeds */
	ASSERT(r.end < 42 * S);
}

int main(void)
{
	RUN(starts_small_and_capped);
	RUN(round_rules);
	RUN(round_ended_by_check);
	RUN(expiry_and_stall_halve);
	RUN(probes_while_stages_drain_in_silence);
	RUN(held_probes_every_round);
	RUN(late_ack_after_probing_cuts_at_once);
	RUN(passed_over_run_keeps_the_window);
	RUN(stall_check_spares_read_blocks_in_silence);
	RUN(pipeline_2000_per_s);
	RUN(pipeline_200_per_s_timeout_2);
	RUN(pipeline_7500_per_s);
	RUN(fast_pipeline_gets_the_full_window);
	RUN(pipeline_that_slows_down);
	RUN(pipeline_that_speeds_up);
	RUN(pipeline_4x_slower_for_20_s);
	return UNIT_DONE();
}
