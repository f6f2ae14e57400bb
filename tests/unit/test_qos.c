/* Per-subscription QoS rules (lib/qos.c) with an injected clock. */
#include "qos.h"
#include "unit.h"

#define S_NS 1000000000ull

static int ntrans;
static int last_from, last_to;

static void on_trans(void *ctx, const struct gd_qsub *s, int from,
    uint64_t now)
{
	(void)ctx;
	(void)now;
	ntrans++;
	last_from = from;
	last_to = s->state;
}

static const struct gd_qos_ops ops = { on_trans };

static void setup(struct gd_qos *Q, int64_t qmax, int drop)
{
	struct gd_qos_conf c = { 2 * S_NS, 1 * S_NS, qmax, drop };
	gd_qos_init(Q, &c, &ops, NULL);
	ntrans = 0;
}

TEST(parse_and_format)
{
	struct gd_qos_params q = { 0, 0 };
	char why[256], buf[128];

	ASSERT_EQ(gd_qos_parse("reliability=ordered\nretryCount=2", &q, why,
	    sizeof(why)), 0);
	ASSERT_EQ(q.ordered, 1);
	ASSERT_EQ(q.retry_count, 2);
	ASSERT_EQ(gd_qos_parse("", &q, why, sizeof(why)), 0);
	ASSERT_EQ(q.ordered, 0);
	ASSERT_EQ(q.retry_count, 0);
	ASSERT_EQ(gd_qos_parse("connectionCached=0\nlocatorCacheTimeout=0.5\n"
	    "retryCount=-1\n", &q, why, sizeof(why)), 0);
	ASSERT_EQ(q.retry_count, -1);
	ASSERT_EQ(gd_qos_parse("reliability=sorted", &q, why, sizeof(why)), -1);
	ASSERT_STR(why, "'reliability=sorted': expected 'ordered' or nothing (an empty value, the default)");
	ASSERT_EQ(gd_qos_parse("colour=red", &q, why, sizeof(why)), -1);
	ASSERT_STR(why, "'colour=red': unknown QoS name");
	ASSERT_EQ(gd_qos_parse("retryCount=x", &q, why, sizeof(why)), -1);
	ASSERT(strstr(why, "'retryCount=x': expected an integer") == why);
	ASSERT_EQ(gd_qos_parse("retryCount", &q, why, sizeof(why)), -1);
	ASSERT_STR(why, "'retryCount': expected NAME=VALUE");

	q.ordered = 1;
	q.retry_count = 3;
	gd_qos_format(&q, buf, sizeof(buf));
	ASSERT_STR(buf, "reliability=ordered\nretryCount=3");
	ASSERT_EQ(gd_qos_parse(buf, &q, why, sizeof(why)), 0);
	ASSERT_EQ(q.ordered, 1);
	ASSERT_EQ(q.retry_count, 3);
	gd_qos_describe(&q, buf, sizeof(buf));
	ASSERT_STR(buf, "reliability=ordered,retryCount=3");
}

TEST(retry_count_zero_removes_at_first_failure)
{
	struct gd_qos Q;
	struct gd_qos_params q = { 0, 0 };
	struct gd_qsub *s;

	setup(&Q, -1, 0);
	s = gd_qos_subscribe(&Q, "a", 1, &q, 10);
	ASSERT(s != NULL);
	ASSERT_EQ(s->state, GD_QS_SUBSCRIBED);
	ASSERT_EQ(ntrans, 1);
	gd_qos_written(&Q, s, 5, 0, 20);
	ASSERT_EQ(s->state, GD_QS_ONLINE);
	ASSERT_EQ(gd_qos_failure(&Q, s, 30, "connection lost"), GD_QS_REMOVED);
	ASSERT(strstr(s->why, "1 consecutive delivery failure (retryCount 0)") != NULL);
	gd_qos_detach(&Q, s);
	/* the name subscribes again: a new subscription */
	ASSERT(gd_qos_subscribe(&Q, "a", 1, &q, 40) != s);
	gd_qos_free(&Q);
}

TEST(retry_count_two_offline_then_removed)
{
	struct gd_qos Q;
	struct gd_qos_params q = { 0, 2 };
	struct gd_qsub *s;
	uint64_t t = S_NS;

	setup(&Q, -1, 0);
	s = gd_qos_subscribe(&Q, "a", 7, &q, t);
	ASSERT_EQ(gd_qos_failure(&Q, s, t, "lost"), GD_QS_OFFLINE);
	ASSERT_U64(s->until, t + 2 * S_NS);
	ASSERT_EQ(s->failures, 1);
	/* offline: discarded, counted; a failure now does not count */
	ASSERT_EQ(gd_qos_accepts(&Q, s, 3, t + S_NS), 0);
	ASSERT_U64(s->discarded, 3);
	ASSERT_EQ(gd_qos_failure(&Q, s, t + S_NS, "lost"), GD_QS_OFFLINE);
	ASSERT_EQ(s->failures, 1);
	/* the same run reconnects: the same subscription, still offline */
	gd_qos_detach(&Q, s);
	ASSERT(gd_qos_subscribe(&Q, "a", 7, &q, t + S_NS) == s);
	ASSERT_EQ(s->state, GD_QS_OFFLINE);
	/* past the interval the next block puts it online */
	ASSERT_EQ(gd_qos_accepts(&Q, s, 1, t + 2 * S_NS), 1);
	ASSERT_EQ(s->state, GD_QS_ONLINE);
	ASSERT_EQ(last_from, GD_QS_OFFLINE);
	t += 3 * S_NS;
	ASSERT_EQ(gd_qos_failure(&Q, s, t, "lost"), GD_QS_OFFLINE);
	ASSERT_EQ(s->failures, 2);
	ASSERT_EQ(gd_qos_accepts(&Q, s, 1, t + 2 * S_NS), 1);
	ASSERT_EQ(gd_qos_failure(&Q, s, t + 3 * S_NS, "stalled"),
	    GD_QS_REMOVED);
	ASSERT(strstr(s->why, "3 consecutive delivery failures (retryCount 2), "
	    "the last: stalled") != NULL);
	ASSERT_EQ(gd_qos_accepts(&Q, s, 1, t + 9 * S_NS), 0);
	gd_qos_free(&Q);
}

TEST(success_resets_failures)
{
	struct gd_qos Q;
	struct gd_qos_params q = { 0, 1 };
	struct gd_qsub *s;

	setup(&Q, -1, 0);
	s = gd_qos_subscribe(&Q, "a", 1, &q, 1);
	ASSERT_EQ(gd_qos_failure(&Q, s, 1, "lost"), GD_QS_OFFLINE);
	ASSERT_EQ(gd_qos_accepts(&Q, s, 1, 3 * S_NS), 1);
	gd_qos_written(&Q, s, 0, 0, 3 * S_NS);	/* no block: no delivery */
	ASSERT_EQ(s->failures, 1);
	gd_qos_enqueue(&Q, s, 1, 3 * S_NS);
	gd_qos_written(&Q, s, 1, 0, 3 * S_NS);
	ASSERT_EQ(s->failures, 0);
	ASSERT_EQ(gd_qos_failure(&Q, s, 4 * S_NS, "lost"), GD_QS_OFFLINE);
	ASSERT_EQ(gd_qos_accepts(&Q, s, 1, 7 * S_NS), 1);
	ASSERT_EQ(gd_qos_failure(&Q, s, 8 * S_NS, "lost"), GD_QS_REMOVED);
	gd_qos_free(&Q);
}

TEST(retry_count_minus_one_never_removed)
{
	struct gd_qos Q;
	struct gd_qos_params q = { 0, -1 };
	struct gd_qsub *s;
	uint64_t t = 0;
	int i;

	setup(&Q, -1, 0);
	s = gd_qos_subscribe(&Q, "a", 1, &q, t);
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(gd_qos_failure(&Q, s, t, "lost"), GD_QS_OFFLINE);
		t += 2 * S_NS;
		ASSERT_EQ(gd_qos_accepts(&Q, s, 1, t), 1);
	}
	ASSERT_EQ(s->failures, 50);
	/* a hard failure still removes it */
	gd_qos_remove(&Q, s, t, "unsubscribed");
	ASSERT_EQ(s->state, GD_QS_REMOVED);
	ASSERT_STR(s->why, "unsubscribed");
	gd_qos_free(&Q);
}

TEST(new_run_removes_old_subscription)
{
	struct gd_qos Q;
	struct gd_qos_params q = { 0, 5 };
	struct gd_qsub *s, *s2;

	setup(&Q, -1, 0);
	s = gd_qos_subscribe(&Q, "a", 1, &q, 0);
	gd_qos_failure(&Q, s, 0, "lost");
	gd_qos_detach(&Q, s);
	s2 = gd_qos_subscribe(&Q, "a", 2, &q, 1);
	ASSERT(s2 != s);
	ASSERT_EQ(s->state, GD_QS_REMOVED);
	ASSERT(strstr(s->why, "unknown to its subscriber") == s->why);
	ASSERT_EQ(s2->state, GD_QS_SUBSCRIBED);
	/* an attached one is never taken over: a second one of that name */
	ASSERT(gd_qos_subscribe(&Q, "a", 3, &q, 2) != s2);
	ASSERT_EQ(s2->state, GD_QS_SUBSCRIBED);
	gd_qos_free(&Q);
}

TEST(queue_limit_policies)
{
	struct gd_qos Q;
	struct gd_qos_params q = { 0, -1 };
	struct gd_qsub *s;

	setup(&Q, 10, 0);
	s = gd_qos_subscribe(&Q, "a", 1, &q, 0);
	ASSERT_EQ(gd_qos_enqueue(&Q, s, 10, 0), 0);
	gd_qos_written(&Q, s, 4, 1, 1);
	ASSERT_U64(s->queued, 6);
	ASSERT_EQ(gd_qos_enqueue(&Q, s, 5, 2), -1);	/* hard, whatever retries */
	ASSERT_EQ(s->state, GD_QS_REMOVED);
	ASSERT(strstr(s->why, "send queue full") == s->why);
	gd_qos_free(&Q);

	setup(&Q, 10, 1);
	s = gd_qos_subscribe(&Q, "a", 1, &q, 0);
	ASSERT_EQ(gd_qos_enqueue(&Q, s, 8, 0), 0);
	ASSERT_EQ(gd_qos_enqueue(&Q, s, 5, 0), 3);
	gd_qos_dropped(s, 3);
	ASSERT_U64(s->queued, 10);
	ASSERT_U64(s->dropped, 3);
	ASSERT_EQ(s->state, GD_QS_SUBSCRIBED);
	gd_qos_free(&Q);
}

TEST(send_timeout)
{
	struct gd_qos Q;
	struct gd_qos_params q = { 0, 0 };
	struct gd_qsub *s;

	setup(&Q, -1, 0);
	s = gd_qos_subscribe(&Q, "a", 1, &q, 0);
	ASSERT_EQ(gd_qos_send_late(&Q, s, 5 * S_NS), 0);	/* idle */
	gd_qos_write_began(s, S_NS);
	ASSERT_EQ(gd_qos_send_late(&Q, s, 2 * S_NS), 0);
	gd_qos_written(&Q, s, 1, 1, 2 * S_NS);	/* progress, more to write */
	ASSERT_EQ(gd_qos_send_late(&Q, s, 2 * S_NS + S_NS / 2), 0);
	ASSERT_EQ(gd_qos_send_late(&Q, s, 3 * S_NS + 1), 1);
	gd_qos_written(&Q, s, 1, 0, 3 * S_NS);
	ASSERT_EQ(gd_qos_send_late(&Q, s, 9 * S_NS), 0);
	Q.c.send_timeout_ns = 0;	/* -1: off */
	gd_qos_write_began(s, S_NS);
	ASSERT_EQ(gd_qos_send_late(&Q, s, 99 * S_NS), 0);
	gd_qos_free(&Q);
}

TEST(ordered_one_in_flight)
{
	struct gd_qos Q;
	struct gd_qos_params q = { 1, 0 };
	struct gd_qsub *s;

	setup(&Q, -1, 0);
	s = gd_qos_subscribe(&Q, "a", 1, &q, 0);
	ASSERT(gd_qos_may_send(s));
	gd_qos_sent_block(s, 5, 1);
	ASSERT(!gd_qos_may_send(s));
	gd_qos_written(&Q, s, 1, 0, 2);	/* written, not yet confirmed */
	ASSERT(!gd_qos_may_send(s));
	ASSERT_EQ(gd_qos_send_late(&Q, s, 2 + S_NS + 1), 1);
	ASSERT_EQ(gd_qos_confirm(&Q, s, 4, 3), 0);	/* an earlier one */
	ASSERT_EQ(gd_qos_confirm(&Q, s, 5, 3), 1);
	ASSERT(gd_qos_may_send(s));
	ASSERT_EQ(gd_qos_send_late(&Q, s, 9 * S_NS), 0);
	/* pipelined: never waits */
	s->q.ordered = 0;
	gd_qos_sent_block(s, 6, 4);
	ASSERT(gd_qos_may_send(s));
	gd_qos_free(&Q);
}

TEST(removed_kept_bounded)
{
	struct gd_qos Q;
	struct gd_qos_params q = { 0, 0 };
	struct gd_qsub *s;
	char name[32];
	unsigned i, n = 0;

	setup(&Q, -1, 0);
	for (i = 0; i < GD_QOS_REMOVED_KEPT + 10; i++) {
		snprintf(name, sizeof(name), "s%u", i);
		s = gd_qos_subscribe(&Q, name, 1, &q, i);
		gd_qos_detach(&Q, s);
		gd_qos_remove(&Q, s, i, "unsubscribed");
	}
	for (s = Q.subs; s; s = s->next)
		n++;
	ASSERT_EQ(n, GD_QOS_REMOVED_KEPT);
	ASSERT_STR(Q.subs->name, "s73");
	gd_qos_free(&Q);
}

TEST(detached_fails_on_publish)
{
	struct gd_qos Q;
	struct gd_qos_params q = { 0, 2 };
	struct gd_qsub *s;
	uint64_t t = S_NS;

	setup(&Q, -1, 0);
	s = gd_qos_subscribe(&Q, "a", 1, &q, t);
	gd_qos_published(&Q, 1, t);	/* attached: nothing */
	ASSERT_EQ(s->failures, 0);
	gd_qos_failure(&Q, s, t, "connection lost");
	gd_qos_detach(&Q, s);
	ASSERT_EQ(Q.ndetached, 1);
	gd_qos_published(&Q, 1, t + S_NS);	/* offline: discarded, no failure */
	ASSERT_EQ(s->failures, 1);
	ASSERT_U64(s->discarded, 1);
	gd_qos_published(&Q, 1, t + 2 * S_NS);	/* online, no connection */
	ASSERT_EQ(s->failures, 2);
	ASSERT_EQ(s->state, GD_QS_OFFLINE);
	gd_qos_published(&Q, 1, t + 4 * S_NS);
	ASSERT_EQ(s->state, GD_QS_REMOVED);
	ASSERT_EQ(Q.ndetached, 0);
	gd_qos_published(&Q, 1, t + 9 * S_NS);
	ASSERT_EQ(s->failures, 3);
	gd_qos_free(&Q);
}

int main(void)
{
	RUN(parse_and_format);
	RUN(retry_count_zero_removes_at_first_failure);
	RUN(retry_count_two_offline_then_removed);
	RUN(success_resets_failures);
	RUN(retry_count_minus_one_never_removed);
	RUN(new_run_removes_old_subscription);
	RUN(queue_limit_policies);
	RUN(send_timeout);
	RUN(ordered_one_in_flight);
	RUN(removed_kept_bounded);
	RUN(detached_fails_on_publish);
	return UNIT_DONE();
}
