/* Unit tests of lib/key.c: gd_key_parse splits the keys gdsub writes and
 * gdack reads back — HOST:PORT/ID, [V6]:PORT/ID, @CLUSTER/ID, each with
 * optional /FLAGS — and refuses anything else. The key is length-bounded
 * (no NUL needed), so each case is parsed from an exact-size heap copy
 * for the sanitizer build to catch over-reads. */
#include "key.h"
#include "wire.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t olen;
static uint64_t kid;
static int kflags;

/* parse the first len bytes of s from an exact-size copy */
static int parse_n(const char *s, size_t len)
{
	char *c = malloc(len ? len : 1);
	int rc;
	memcpy(c, s, len);
	olen = 9999;
	kid = 0xdead;
	kflags = -1;
	rc = gd_key_parse(c, len, &olen, &kid, &kflags);
	free(c);
	return rc;
}

static int parse(const char *s)
{
	return parse_n(s, strlen(s));
}

TEST(ipv4_key)
{
	ASSERT_EQ(parse("127.0.0.1:7001/42"), 0);
	ASSERT_EQ(olen, strlen("127.0.0.1:7001"));
	ASSERT_U64(kid, 42);
	ASSERT_EQ(kflags, 0);
	ASSERT_EQ(parse("pub.example:1/0"), 0);
	ASSERT_EQ(olen, 13);
	ASSERT_U64(kid, 0);
}

TEST(ipv6_key)
{
	ASSERT_EQ(parse("[::1]:7001/42"), 0);
	ASSERT_EQ(olen, strlen("[::1]:7001"));
	ASSERT_U64(kid, 42);
	ASSERT_EQ(kflags, 0);
	ASSERT_EQ(parse("[fe80::1:2]:65535/18446744073709551615/rs"), 0);
	ASSERT_EQ(olen, strlen("[fe80::1:2]:65535"));
	ASSERT_U64(kid, UINT64_MAX);
	ASSERT_EQ(kflags, GD_FL_RESENT | GD_FL_SNAPSHOT);
}

TEST(cluster_key)
{
	ASSERT_EQ(parse("@cluster/7"), 0);
	ASSERT_EQ(olen, strlen("@cluster"));
	ASSERT_U64(kid, 7);
	ASSERT_EQ(kflags, 0);
	ASSERT_EQ(parse("@c/7/s"), 0);
	ASSERT_EQ(olen, 2);
	ASSERT_U64(kid, 7);
	ASSERT_EQ(kflags, GD_FL_SNAPSHOT);
}

TEST(flags)
{
	ASSERT_EQ(parse("127.0.0.1:7001/42/r"), 0);
	ASSERT_EQ(kflags, GD_FL_RESENT);
	ASSERT_U64(kid, 42);
	ASSERT_EQ(olen, strlen("127.0.0.1:7001"));
	ASSERT_EQ(parse("127.0.0.1:7001/42/s"), 0);
	ASSERT_EQ(kflags, GD_FL_SNAPSHOT);
	ASSERT_U64(kid, 42);
	ASSERT_EQ(parse("127.0.0.1:7001/42/rs"), 0);
	ASSERT_EQ(kflags, GD_FL_RESENT | GD_FL_SNAPSHOT);
	ASSERT_U64(kid, 42);
	ASSERT_EQ(olen, strlen("127.0.0.1:7001"));
	ASSERT_EQ(parse("[::1]:7001/5/r"), 0);
	ASSERT_EQ(kflags, GD_FL_RESENT);
	ASSERT_EQ(olen, strlen("[::1]:7001"));
}

TEST(bad_flags)
{
	static const char *const bad[] = {
		"127.0.0.1:7001/42/x", "127.0.0.1:7001/42/R", "127.0.0.1:7001/42/rx",
		"127.0.0.1:7001/42/rsr", "127.0.0.1:7001/42/ ", "127.0.0.1:7001/42/",
		"127.0.0.1:7001/42//", "127.0.0.1:7001/42/r/s", "127.0.0.1:7001/42/r ",
	};
	size_t i;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i]) != -1)
			FAILF("'%s' accepted (id %" PRIu64 ", flags %d)", bad[i],
			    kid, kflags);
}

TEST(missing_or_bad_id)
{
	static const char *const bad[] = {
		"127.0.0.1:7001", "127.0.0.1:7001/", "127.0.0.1:7001/r",
		"127.0.0.1:7001/rs", "127.0.0.1:7001//r", "127.0.0.1:7001/abc",
		"127.0.0.1:7001/4x2", "127.0.0.1:7001/-1", "127.0.0.1:7001/+1",
		"127.0.0.1:7001/ 42", "127.0.0.1:7001/42 ", "127.0.0.1:7001/0x10",
		"@cluster/", "@cluster", "/42", "/42/r", "/", "//", "42",
	};
	size_t i;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i]) != -1)
			FAILF("'%s' accepted (origin %zu, id %" PRIu64 ", flags %d)",
			    bad[i], olen, kid, kflags);
}

TEST(id_overflow)
{
	ASSERT_EQ(parse("h:1/18446744073709551615"), 0);
	ASSERT_U64(kid, UINT64_MAX);
	ASSERT_EQ(parse("h:1/18446744073709551616"), -1);
	ASSERT_EQ(parse("h:1/99999999999999999999"), -1);
	ASSERT_EQ(parse("h:1/100000000000000000000"), -1);
	ASSERT_EQ(parse("h:1/000000000000000000042"), -1);	/* 21 digits */
	ASSERT_EQ(parse("h:1/00000000000000000042"), 0);	/* 20 digits */
	ASSERT_U64(kid, 42);
}

TEST(empty_and_length)
{
	char k[GD_KEY_MAX + 16];
	size_t n;

	ASSERT_EQ(parse_n("", 0), -1);
	ASSERT_EQ(parse_n("h:1/42", 0), -1);
	/* exactly GD_KEY_MAX bytes: accepted; one more: refused */
	memset(k, 'h', sizeof(k));
	n = GD_KEY_MAX - strlen(":7001/42");
	memcpy(k + n, ":7001/42", 8);
	ASSERT_EQ(parse_n(k, GD_KEY_MAX), 0);
	ASSERT_EQ(olen, GD_KEY_MAX - 3);
	ASSERT_U64(kid, 42);
	memset(k, 'h', sizeof(k));
	n = GD_KEY_MAX + 1 - strlen(":7001/42");
	memcpy(k + n, ":7001/42", 8);
	ASSERT_EQ(parse_n(k, GD_KEY_MAX + 1), -1);
	memcpy(k + GD_KEY_MAX + 1 - 10, ":7001/42/r", 10);
	ASSERT_EQ(parse_n(k, GD_KEY_MAX + 1), -1);
}

TEST(length_bounded)
{
	/* only len bytes count: what follows is not part of the key */
	const char *s = "127.0.0.1:7001/42/r trailing";
	ASSERT_EQ(gd_key_parse(s, 17, &olen, &kid, &kflags), 0);
	ASSERT_U64(kid, 42);
	ASSERT_EQ(kflags, 0);
	ASSERT_EQ(olen, 14);
	ASSERT_EQ(gd_key_parse(s, 19, &olen, &kid, &kflags), 0);
	ASSERT_EQ(kflags, GD_FL_RESENT);
	ASSERT_EQ(gd_key_parse(s, 16, &olen, &kid, &kflags), 0);
	ASSERT_U64(kid, 4);
	ASSERT_EQ(parse_n(s, 15), -1);	/* "…:7001/" */
	ASSERT_EQ(parse_n(s, 20), -1);	/* "…/r " */
	/* a key with an embedded NUL is just a bad id */
	ASSERT_EQ(parse_n("h:1/4\0002", 7), -1);
}

TEST(origin_with_slash)
{
	/* the id is after the last slash (before optional flags) */
	ASSERT_EQ(parse("a/b:1/42"), 0);
	ASSERT_EQ(olen, 5);
	ASSERT_U64(kid, 42);
	ASSERT_EQ(parse("a/b:1/42/s"), 0);
	ASSERT_EQ(olen, 5);
	ASSERT_EQ(kflags, GD_FL_SNAPSHOT);
	/* an id-looking origin part does not confuse it */
	ASSERT_EQ(parse("@r/s"), -1);
	ASSERT_EQ(parse("@r/1/s"), 0);
	ASSERT_EQ(olen, 2);
	ASSERT_U64(kid, 1);
}

/* gd_key_parse_at, given every origin length, answers as gd_key_parse
 * does when it succeeds, and only at the origin length gd_key_parse finds */
TEST(parse_at_agrees)
{
	static const char *const keys[] = {
		"h:1/5", "h:1/5/r", "h:1/5/rs", "h:1/5/s", "[::1]:9/18446744073709551615",
		"a/b/12", "a/12/34", "a/12/r", "h:1/", "h:1/x", "h:1/5/", "h:1/5/q",
		"h:1/5/rrr", "h:1/005", "/5", "h:1/18446744073709551616",
		"h:1/123456789012345678901", "h:1//5", "@c/7/r", "h:1/5/r/s",
	};
	size_t k, n;

	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		size_t len = strlen(keys[k]), want_o = 0;
		uint64_t want_id = 0, id;
		int want_fl = 0, fl, ok = parse_n(keys[k], len) == 0;
		char *c = malloc(len ? len : 1);
		ASSERT(c != NULL);
		memcpy(c, keys[k], len);
		if (ok) {
			want_o = olen;
			want_id = kid;
			want_fl = kflags;
		}
		for (n = 0; n <= len; n++) {
			int rc = gd_key_parse_at(c, len, n, &id, &fl);
			if (rc != 0)
				continue;
			ASSERT(ok);
			ASSERT_EQ(n, want_o);
			ASSERT_U64(id, want_id);
			ASSERT_EQ(fl, want_fl);
		}
		if (ok)	/* and it finds it there */
			ASSERT_EQ(gd_key_parse_at(c, len, want_o, &id, &fl), 0);
		free(c);
	}
}

int main(void)
{
	RUN(ipv4_key);
	RUN(ipv6_key);
	RUN(cluster_key);
	RUN(flags);
	RUN(bad_flags);
	RUN(missing_or_bad_id);
	RUN(id_overflow);
	RUN(empty_and_length);
	RUN(length_bounded);
	RUN(origin_with_slash);
	RUN(parse_at_agrees);
	return UNIT_DONE();
}
