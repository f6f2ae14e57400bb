/* Unit tests of lib/ackbin.c: the binary batches gdack sends gdsub
 * (control protocol 3). The writer's runs byte for byte; the parser
 * gives the same keys however the batch is cut into pieces, and refuses
 * what is malformed, naming it. */
#include "ackbin.h"
#include "unit.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct got {
	struct gd_dbuf keys;	/* "RUN origin\n" and "origin/id\n" lines */
	int stop_after;		/* stop the parse after this many IDs (0: never) */
	int ids;
};

static int on_run(void *user, const char *origin, size_t olen)
{
	struct got *g = user;
	return gd_dbuf_addf(&g->keys, "RUN %.*s\n", (int)olen, origin);
}

static int on_ids(void *user, const char *origin, size_t olen,
    const char *ids, size_t k)
{
	struct got *g = user;
	size_t i;

	for (i = 0; i < k; i++) {
		if (g->stop_after && ++g->ids > g->stop_after)
			return 1;
		if (gd_dbuf_addf(&g->keys, "%.*s/%" PRIu64 "\n", (int)olen,
		    origin, gd_ackbin_id(ids + 8 * i)) != GD_DBUF_OK)
			return 1;
	}
	return 0;
}

static const struct gd_ackbin_ops ops = { on_run, on_ids };

/* The batch b fed in pieces of at most step bytes, each piece starting
 * with what the last call left: the keys as lines, or NULL (why set). */
static char *feed(const char *b, size_t len, size_t step, const char **why)
{
	static char out[4096];
	struct gd_ackbin p;
	struct got g;
	size_t off = 0, have = 0;

	memset(&g, 0, sizeof(g));
	gd_dbuf_init(&g.keys, 1 << 20);
	gd_ackbin_start(&p, len);
	*why = NULL;
	while (off < len) {
		int64_t took;
		have = have + step > len - off ? len - off : have + step;
		took = gd_ackbin_feed(&p, b + off, have, &ops, &g, why);
		if (took < 0) {
			gd_dbuf_free(&g.keys);
			return NULL;
		}
		off += (size_t)took;
		have -= (size_t)took;
		if (have == len - off && took == 0 && have > 0) {
			*why = "stuck";
			gd_dbuf_free(&g.keys);
			return NULL;
		}
	}
	snprintf(out, sizeof(out), "%.*s", (int)g.keys.len,
	    g.keys.buf ? g.keys.buf : "");
	gd_dbuf_free(&g.keys);
	return out;
}

TEST(writer_runs)
{
	struct gd_dbuf b;
	struct gd_ackbin_w w = { 0 };
	static const char want[] =
	    "\x03\x00" "a:1" "\x02\x00\x00\x00"
	    "\x05\x00\x00\x00\x00\x00\x00\x00"
	    "\x06\x01\x00\x00\x00\x00\x00\x00"
	    "\x02\x00" "@c" "\x01\x00\x00\x00"
	    "\xff\xff\xff\xff\xff\xff\xff\xff"
	    "\x03\x00" "a:1" "\x01\x00\x00\x00"
	    "\x07\x00\x00\x00\x00\x00\x00\x00";

	gd_dbuf_init(&b, 1 << 20);
	ASSERT_EQ(gd_ackbin_add(&b, &w, "a:1", 3, 5), GD_DBUF_OK);
	ASSERT_EQ(gd_ackbin_add(&b, &w, "a:1", 3, 262), GD_DBUF_OK);
	ASSERT_EQ(gd_ackbin_add(&b, &w, "@c", 2, UINT64_MAX), GD_DBUF_OK);
	ASSERT_EQ(gd_ackbin_add(&b, &w, "a:1", 3, 7), GD_DBUF_OK);
	ASSERT_EQ(b.len, sizeof(want) - 1);
	ASSERT(memcmp(b.buf, want, sizeof(want) - 1) == 0);
	/* an origin no key may have */
	ASSERT(gd_ackbin_add(&b, &w, "x", 0, 1) != GD_DBUF_OK);
	ASSERT_EQ(b.len, sizeof(want) - 1);
	gd_dbuf_free(&b);
}

TEST(parse_any_pieces)
{
	struct gd_dbuf b;
	struct gd_ackbin_w w = { 0 };
	const char *why, *got;
	static const char want[] = "RUN a:1\na:1/5\na:1/262\n"
	    "RUN @c\n@c/18446744073709551615\nRUN a:1\na:1/7\n";
	size_t step;

	gd_dbuf_init(&b, 1 << 20);
	(void)gd_ackbin_add(&b, &w, "a:1", 3, 5);
	(void)gd_ackbin_add(&b, &w, "a:1", 3, 262);
	(void)gd_ackbin_add(&b, &w, "@c", 2, UINT64_MAX);
	(void)gd_ackbin_add(&b, &w, "a:1", 3, 7);
	for (step = 1; step <= b.len; step++) {
		got = feed(b.buf, b.len, step, &why);
		ASSERT_STR(got, want);
		ASSERT(why == NULL);
	}
	/* an empty batch: nothing */
	ASSERT_STR(feed("", 0, 1, &why), "");
	gd_dbuf_free(&b);
}

TEST(parse_malformed)
{
	const char *why;
	struct gd_ackbin p;
	struct got g;
	char big[2 + GD_KEY_MAX + 1 + 4 + 8];

	ASSERT(feed("\x00\x00" "\x01\x00\x00\x00" "12345678", 14, 14, &why)
	    == NULL);
	ASSERT_STR(why, "an empty origin");
	memset(big, 'a', sizeof(big));
	big[0] = (char)((GD_KEY_MAX + 1) & 0xff);
	big[1] = (char)((GD_KEY_MAX + 1) >> 8);
	ASSERT(feed(big, sizeof(big), sizeof(big), &why) == NULL);
	ASSERT_STR(why, "an origin longer than a key");
	ASSERT(feed("\x01\x00" "a" "\x00\x00\x00\x00", 7, 7, &why) == NULL);
	ASSERT_STR(why, "a run of no IDs");
	/* more keys than a batch holds (GD_CTL_MAX_KEYS + 1) */
	ASSERT(feed("\x01\x00" "a" "\x01\x00\x10\x00", 7, 7, &why) == NULL);
	ASSERT_STR(why, "more keys than a batch may hold");
	/* cut: in a run's head, in an ID, fewer IDs than counted */
	ASSERT(feed("\x01\x00" "a" "\x01\x00", 5, 5, &why) == NULL);
	ASSERT_STR(why, "a run cut short at the batch's end");
	ASSERT(feed("\x01\x00" "a" "\x01\x00\x00\x00" "1234", 11, 3, &why)
	    == NULL);
	ASSERT_STR(why, "a run cut short at the batch's end");
	ASSERT(feed("\x01\x00" "a" "\x02\x00\x00\x00" "12345678", 15, 15,
	    &why) == NULL);
	ASSERT_STR(why, "fewer IDs than the run's count");
	/* more bytes than announced */
	memset(&g, 0, sizeof(g));
	gd_dbuf_init(&g.keys, 4096);
	gd_ackbin_start(&p, 3);
	ASSERT_EQ(gd_ackbin_feed(&p, "abcd", 4, &ops, &g, &why), -1);
	ASSERT_STR(why, "more bytes than the batch holds");
	/* an op stops it: -1 without a reason */
	gd_ackbin_start(&p, 23);
	g.stop_after = 1;
	ASSERT_EQ(gd_ackbin_feed(&p, "\x01\x00" "a" "\x02\x00\x00\x00"
	    "1234567812345678", 23, &ops, &g, &why), -1);
	ASSERT(why == NULL);
	gd_dbuf_free(&g.keys);
}

int main(void)
{
	RUN(writer_runs);
	RUN(parse_any_pieces);
	RUN(parse_malformed);
	return UNIT_DONE();
}
