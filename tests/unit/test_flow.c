/* Unit tests of the publisher's flow control as a whole, lib/deliver.c
 * over lib/window.c, against simulated pipelines: a first stage that
 * reads ahead into a buffer of a given size (cat, or a program reading
 * 8 KiB at a time), then a FIFO stage of a given speed, that may drop
 * blocks (a filter); ACKs come back for the blocks it keeps, and gdsub's
 * reports of what the first stage read every 10 ms. A stage that drops
 * or holds blocks must not crawl, and a slow healthy pipeline behind an
 * eager first stage must still see every block ACKed. */
#include "deliver.h"
#include "unit.h"

#include <stdlib.h>

#define US 1000ull
#define MS 1000000ull
#define S 1000000000ull
#define NEVER UINT64_MAX

struct model {
	uint64_t n, timeout_ns;
	uint32_t max_pending;
	uint64_t base_ns;	/* each way, publisher <-> pipeline */
	uint64_t buf;		/* blocks the first stage reads ahead of the
				 * second (0: the second reads them itself) */
	uint64_t startup_ns;	/* the second stage serves from then on */
	uint64_t (*service_ns)(uint64_t i);
	int (*keep)(uint64_t i);	/* acknowledged, or dropped */
	int reports;		/* gdsub says what the first stage read */
};

struct result {
	uint64_t end;		/* the last block resolved then */
	uint64_t ack, nack, passed, held, late, absent;
	uint64_t t_acks;	/* when the last ACK came */
	uint64_t worst;		/* longest send -> ACK */
	uint32_t max_window;
};

static void no_op_resend(void *ctx, const struct gd_pend *e, uint64_t seq)
{
	(void)ctx;
	(void)e;
	(void)seq;
}

static void no_op_resolved(void *ctx, const struct gd_pend *e, int acked,
    uint64_t now)
{
	(void)ctx;
	(void)e;
	(void)acked;
	(void)now;
}

static const struct gd_deliver_ops ops = { no_op_resend, no_op_resolved };

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

static void simulate(struct result *r, const struct model *m, uint64_t cap)
{
	uint64_t *sent = malloc(m->n * sizeof(*sent));
	uint64_t *rd = malloc(m->n * sizeof(*rd));	/* first stage read */
	uint64_t *start = malloc(m->n * sizeof(*start));
	uint64_t *ack = malloc(m->n * sizeof(*ack));
	uint64_t *rep = malloc(m->n * sizeof(*rep));
	uint64_t t = 0, tick = 250 * MS, done = m->startup_ns;
	uint64_t ns = 0, na = 0, nr = 0;
	struct gd_deliver d;

	memset(r, 0, sizeof(*r));
	ASSERT(sent && rd && start && ack && rep);
	ASSERT_EQ(gd_deliver_init(&d, 1, m->timeout_ns, 0, m->max_pending, 0,
	    0, &ops, NULL), 0);
	gd_deliver_slot_up(&d, 0, 0);
	while (d.n_ack + d.n_nack < m->n && t < cap) {
		uint64_t next = tick, dl;
		unsigned moved = 0;
		while (ns < m->n && !gd_deliver_full(&d)) {
			uint64_t seq, i = ns;
			ASSERT_EQ(gd_deliver_publish(&d, i + 1, 1, 0, 0, 1, t,
			    &seq), GD_DV_OK);
			sent[i] = t;
			/* the first stage reads when the block is there and
			 * its buffer has room (block i - buf was taken on) */
			rd[i] = max64(t + m->base_ns, i ? rd[i - 1] : 0);
			if (m->buf == 0)
				rd[i] = max64(rd[i], max64(done, m->startup_ns));
			else if (i >= m->buf)
				rd[i] = max64(rd[i], start[i - m->buf]);
			start[i] = max64(rd[i], done);
			done = start[i] + m->service_ns(i);
			ack[i] = m->keep(i) ? (done + m->base_ns + MS - 1) / MS *
			    MS : NEVER;
			rep[i] = (rd[i] + m->base_ns + 10 * MS - 1) /
			    (10 * MS) * (10 * MS);
			ns++;
		}
		if (gd_deliver_window(&d) > r->max_window)
			r->max_window = gd_deliver_window(&d);
		while (na < ns && ack[na] == NEVER)
			na++;
		if (na < ns)
			next = min64(next, ack[na]);
		if (m->reports && nr < ns)
			next = min64(next, rep[nr]);
		if ((dl = gd_deliver_deadline(&d)) != 0)
			next = min64(next, dl);
		t = max64(t, next);
		while (na < ns && (ack[na] == NEVER || ack[na] <= t)) {
			if (ack[na] != NEVER && gd_deliver_ack(&d, 0, na + 1,
			    na + 1, t) == 1) {
				r->worst = max64(r->worst, t - sent[na]);
				r->t_acks = t;
			}
			na++;
		}
		gd_deliver_acks_done(&d, t);
		while (m->reports && nr < ns && rep[nr] <= t) {
			nr++;
			moved = 1;
		}
		if (moved)
			gd_deliver_consumed(&d, 0, nr, t);
		gd_deliver_expire(&d, t);
		if (t >= tick) {
			gd_deliver_tick(&d, t);
			tick = t + 250 * MS;
		}
	}
	r->end = t;
	r->ack = d.n_ack;
	r->nack = d.n_nack;
	r->passed = d.n_nack_passed;
	r->held = d.n_nack_held;
	r->late = d.n_nack_slow;
	r->absent = d.n_nack_absent;
	gd_deliver_free(&d);
	free(sent);
	free(rd);
	free(start);
	free(ack);
	free(rep);
}

static void say(const char *name, const struct result *r)
{
	printf("     %s: %.2f s, %" PRIu64 " ACK (last %.2f s), %" PRIu64
	    " NACK (%" PRIu64 " passed, %" PRIu64 " held, %" PRIu64 " late), "
	    "worst %.2f s, window up to %u\n", name, (double)r->end / S,
	    r->ack, (double)r->t_acks / S, r->nack, r->passed, r->held,
	    r->late, (double)r->worst / S, r->max_window);
}

static uint64_t us5(uint64_t i) { (void)i; return 5 * US; }
static uint64_t us1(uint64_t i) { (void)i; return 1 * US; }
static uint64_t ms1(uint64_t i) { (void)i; return 1 * MS; }
static uint64_t ms5(uint64_t i) { (void)i; return 5 * MS; }
static uint64_t ms10(uint64_t i) { (void)i; return 10 * MS; }
/* 100/s with a 2 s stall at block 2,000 (a busy machine) */
static uint64_t ms10_stall(uint64_t i) { return i == 2000 ? 2 * S : 10 * MS; }
static int all(uint64_t i) { (void)i; return 1; }
static int none(uint64_t i) { (void)i; return 0; }
static int one_in_1000(uint64_t i) { return i % 1000 == 999; }
static int one_in_100k(uint64_t i) { return i % 100000 == 99999; }
static int after_1000(uint64_t i) { return i >= 1000; }

/* grep --line-buffered matching 1 line in 1,000 of 5,000, -t 2: every
 * block resolved within 20 s (before: one block a second) */
TEST(filter_1_in_1000)
{
	struct model m = { 5000, 2 * S, 65536, 100 * US, 4096, 0, us5,
		one_in_1000, 1 };
	struct result r;

	simulate(&r, &m, 3600 * S);
	say("filter 1 in 1,000", &r);
	ASSERT_U64(r.ack, 5);
	ASSERT_U64(r.nack, 4995);
	/* the first ones may expire before the ACK that passes them */
	ASSERT_U64(r.passed + r.held, 4995);
	ASSERT(r.passed > 4900);
	ASSERT(r.end < 20 * S);
}

/* a stage that drops everything, 2,000 blocks, -t 2 */
TEST(drop_all)
{
	struct model m = { 2000, 2 * S, 65536, 100 * US, 4096, 0, us5,
		none, 1 };
	struct result r;

	simulate(&r, &m, 3600 * S);
	say("drop all", &r);
	ASSERT_U64(r.nack, 2000);
	ASSERT_U64(r.held, 2000);
	ASSERT(r.end < 20 * S);
}

/* 1,000 dropped blocks ahead of 20,000 passed ones, -t 600: the 20,000
 * ACKed within 60 s */
TEST(dropped_ahead_of_passed)
{
	struct model m = { 21000, 600 * S, 65536, 100 * US, 4096, 0, us5,
		after_1000, 1 };
	struct result r;

	simulate(&r, &m, 3600 * S);
	say("1,000 dropped ahead", &r);
	ASSERT_U64(r.ack, 20000);
	ASSERT(r.t_acks < 60 * S);
}

/* 1 in 100,000 of 1,000,000 at 1,000,000 lines/s, the default timeout
 * and room for them all pending: within 2 timeouts and the transfer */
TEST(filter_1_in_100000)
{
	struct model m = { 1000000, 10 * S, 1 << 20, 100 * US, 32768, 0, us1,
		one_in_100k, 1 };
	struct result r;

	simulate(&r, &m, 3600 * S);
	say("filter 1 in 100,000", &r);
	ASSERT_U64(r.ack, 10);
	ASSERT(r.end < 21 * S);
}

/* Without reports (an older gdsub, stdout not a pipe) nothing is
 * inferred: the stage that drops everything crawls as before (the
 * window halved by each wave of expiries), its NACKs counted late */
TEST(no_reports_no_inference)
{
	struct model m = { 2000, 2 * S, 65536, 100 * US, 4096, 0, us5,
		none, 0 };
	struct result r;

	simulate(&r, &m, 600 * S);
	say("drop all, no reports, 600 s", &r);
	ASSERT(r.nack < 1000);
	ASSERT_U64(r.held, 0);
	ASSERT_U64(r.late, r.nack);
}

/* cat before a stage of 100 lines/s (cat's pipe holds ~2,000 lines),
 * 5,000 blocks, the default timeout: every block ACKed, whether the slow
 * stage starts at once, after 1.5 s, or stalls 2 s on the way */
TEST(eager_stage_before_a_slow_one)
{
	struct model m = { 5000, 10 * S, 65536, 100 * US, 2000, 300 * MS,
		ms10, all, 1 };
	struct result r;

	simulate(&r, &m, 3600 * S);
	say("cat | 100/s", &r);
	ASSERT_U64(r.ack, 5000);
	ASSERT(r.worst < 5 * S);
	m.startup_ns = 1500 * MS;
	simulate(&r, &m, 3600 * S);
	say("cat | 100/s starting after 1.5 s", &r);
	ASSERT_U64(r.ack, 5000);
	m.startup_ns = 300 * MS;
	m.service_ns = ms10_stall;
	simulate(&r, &m, 3600 * S);
	say("cat | 100/s stalling 2 s", &r);
	ASSERT_U64(r.ack, 5000);
}

/* a stage that reads 8 KiB (~256 lines) at a time and handles 200/s;
 * one that sleeps 1 ms a line; one of 200/s reading its lines itself */
TEST(chunked_and_sleeping_stages)
{
	struct model m = { 5000, 10 * S, 65536, 100 * US, 256, 100 * MS,
		ms5, all, 1 };
	struct result r;

	simulate(&r, &m, 3600 * S);
	say("8 KiB chunks, 200/s", &r);
	ASSERT_U64(r.ack, 5000);
	ASSERT(r.worst < 5 * S);
	m.service_ns = ms1;
	simulate(&r, &m, 3600 * S);
	say("1 ms a line", &r);
	ASSERT_U64(r.ack, 5000);
	m.buf = 0;
	m.service_ns = ms5;
	m.timeout_ns = 2 * S;
	simulate(&r, &m, 3600 * S);
	say("200/s, -t 2, no read-ahead", &r);
	ASSERT_U64(r.ack, 5000);
}

int main(void)
{
	RUN(filter_1_in_1000);
	RUN(drop_all);
	RUN(dropped_ahead_of_passed);
	RUN(filter_1_in_100000);
	RUN(no_reports_no_inference);
	RUN(eager_stage_before_a_slow_one);
	RUN(chunked_and_sleeping_stages);
	return UNIT_DONE();
}
