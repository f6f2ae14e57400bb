/* Unit tests of lib/prom.c: the exposition from a gdpub's and a gdsub's
 * control replies, asked for in-process (gd_ctl_call) from a fake
 * engine: series labelled by the name that outlasts a reconnection (a
 * subscriber's, not its address), rows of one name summed, rows without
 * a name left out, totals beside their series from the same replies,
 * counters past 2^53 exact; a reply not as expected is no exposition. */
#include "prom.h"
#include "unit.h"

#include <stdio.h>
#include <string.h>

/* The fake engine: each request's reply as text. */
struct fake {
	const char *stats, *subs, *latency;
	int calls;
};

static int fake_line(void *user, struct gd_ctl_client *cl, char *line,
    size_t len)
{
	struct fake *f = user;
	const char *r = strcmp(line, "stats") == 0 ? f->stats :
	    strcmp(line, "subs") == 0 ? f->subs :
	    strcmp(line, "latency") == 0 ? f->latency : NULL;

	(void)len;
	f->calls++;
	if (r == NULL)
		gd_ctl_printf(cl, "error unknown request '%s'\n", line);
	else
		gd_ctl_reply(cl, r, strlen(r));
	return 0;
}

static int has(const struct gd_dbuf *b, const char *line)
{
	char want[512];
	const char *p = gd_dbuf_ptr(b);

	snprintf(want, sizeof(want), "\n%s\n", line);
	return p != NULL && strstr(p, want) != NULL;
}

static int count(const struct gd_dbuf *b, const char *prefix)
{
	const char *p = gd_dbuf_ptr(b);
	int n = 0;

	for (; p != NULL && (p = strstr(p, prefix)) != NULL; p++)
		n++;
	return n;
}

TEST(gdpub_by_name)
{
	struct fake f = {
		"stats 1\npublished:n\tack:n\tpending:n\trate:n\n"
		"18446744073709551615\t7\t-\t1.5\n",
		"subs 4\nname:s\taddress:s\tqueue:n\tin_flight:n\tacks:n\tdiscarded:n\n"
		"a\t127.0.0.1:40001\t1\t2\t10\t0\n"
		"-\t127.0.0.1:40002\t0\t-\t0\t0\n"
		"a\t127.0.0.1:40003\t2\t-\t5\t0\n"
		"b\t-\t0\t-\t0\t9\n",
		"latency 2\nle_us:s\tcount:n\tsum_us:n\n50\t3\t100\n+Inf\t7\t900\n",
		0
	};
	struct gd_dbuf b;

	gd_dbuf_init(&b, 1 << 20);
	ASSERT_EQ(gd_prom_render(fake_line, &f, &b), 0);
	ASSERT_EQ(f.calls, 3);
	ASSERT(has(&b, "gdkit_pub_published_total 18446744073709551615"));
	ASSERT(has(&b, "gdkit_pub_acked_total 7"));
	ASSERT(has(&b, "gdkit_pub_rate_blocks_per_second 1.5"));
	ASSERT_EQ(count(&b, "gdkit_pub_pending"), 0);	/* "-": no value */
	/* a's two connections summed, b's offline subscription there,
	 * the connection without a name not */
	ASSERT(has(&b, "gdkit_pub_subscriber_queue{name=\"a\"} 3"));
	ASSERT(has(&b, "gdkit_pub_subscriber_in_flight{name=\"a\"} 2"));
	ASSERT(has(&b, "gdkit_pub_subscriber_acks_total{name=\"a\"} 15"));
	ASSERT(has(&b, "gdkit_pub_subscriber_discarded_total{name=\"b\"} 9"));
	ASSERT_EQ(count(&b, "gdkit_pub_subscriber_in_flight{name=\"b\"}"), 0);
	ASSERT_EQ(count(&b, "{name=\"-\"}"), 0);
	ASSERT_EQ(count(&b, "address"), 0);
	ASSERT_EQ(count(&b, "gdkit_pub_subscriber_acks_total{"), 2);
	ASSERT(has(&b, "# TYPE gdkit_pub_subscriber_acks_total counter"));
	ASSERT(has(&b, "gdkit_pub_ack_latency_seconds_bucket{le=\"0.000050\"} 3"));
	ASSERT(has(&b, "gdkit_pub_ack_latency_seconds_bucket{le=\"+Inf\"} 7"));
	ASSERT(has(&b, "gdkit_pub_ack_latency_seconds_count 7"));
	gd_dbuf_free(&b);
}

TEST(gdsub_totals_and_series)
{
	struct fake f = {
		"stats 1\npublishers:n\treceived:n\tacked:n\n2\t4409\t4400\n",
		"subs 2\npublisher:s\torigin:s\treceived:n\tacked:n\n"
		"h1:7001\th1:7001\t4000\t4000\n"
		"[::1]:7002\t-\t409\t400\n",
		NULL, 0
	};
	struct gd_dbuf b;

	gd_dbuf_init(&b, 1 << 20);
	ASSERT_EQ(gd_prom_render(fake_line, &f, &b), 0);
	ASSERT_EQ(f.calls, 2);	/* no latency at a gdsub */
	ASSERT(has(&b, "gdkit_sub_received_total 4409"));
	ASSERT(has(&b, "gdkit_sub_publisher_received_total{publisher=\"h1:7001\"} 4000"));
	ASSERT(has(&b, "gdkit_sub_publisher_received_total{publisher=\"[::1]:7002\"} 409"));
	ASSERT(has(&b, "gdkit_sub_publisher_acked_total{publisher=\"[::1]:7002\"} 400"));
	ASSERT_EQ(count(&b, "origin"), 0);
	gd_dbuf_free(&b);
}

TEST(label_escapes_and_bad_replies)
{
	struct fake f = {
		"stats 1\npublished:n\n1\n",
		"subs 1\nname:s\tacks:n\nq\"\\x\t3\n",
		"latency 0\nle_us:s\tcount:n\tsum_us:n\n", 0
	};
	struct fake bad = { "stats 1\nfoo:n\n1\n", "subs 0\nname:s\n", NULL, 0 };
	struct fake ragged = { "stats 1\npublished:n\tack:n\n1\n", "", "", 0 };
	struct fake err = { NULL, NULL, NULL, 0 };
	struct gd_dbuf b;

	gd_dbuf_init(&b, 1 << 20);
	ASSERT_EQ(gd_prom_render(fake_line, &f, &b), 0);
	ASSERT(has(&b, "gdkit_pub_subscriber_acks_total{name=\"q\\\"\\\\x\"} 3"));
	gd_dbuf_reset(&b);
	ASSERT_EQ(gd_prom_render(fake_line, &bad, &b), -1);	/* neither's */
	ASSERT_EQ(gd_prom_render(fake_line, &ragged, &b), -1);
	ASSERT_EQ(gd_prom_render(fake_line, &err, &b), -1);
	gd_dbuf_free(&b);
	/* at its cap: -1, not half an exposition taken for whole */
	gd_dbuf_init(&b, 64);
	ASSERT_EQ(gd_prom_render(fake_line, &f, &b), -1);
	gd_dbuf_free(&b);
}

int main(void)
{
	RUN(gdpub_by_name);
	RUN(gdsub_totals_and_series);
	RUN(label_escapes_and_bad_replies);
	return UNIT_DONE();
}
