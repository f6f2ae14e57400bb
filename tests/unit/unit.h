/* A tiny unit-test harness: typed asserts that name the expression and
 * its values, and a closing "N passed, N failed" line. Each TEST is a
 * function; RUN(t) runs it and counts it as passed if no assert failed. */
#ifndef GD_UNIT_H
#define GD_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int unit_passed, unit_failed, unit_cur_failed;

#define TEST(name) static void name(void)
#define RUN(name) do { \
	unit_cur_failed = 0; \
	name(); \
	if (unit_cur_failed) { unit_failed++; printf("FAIL %s\n", #name); } \
	else { unit_passed++; printf("ok   %s\n", #name); } \
} while (0)
#define UNIT_DONE() (printf("%d passed, %d failed\n", unit_passed, \
	unit_failed), unit_failed ? 1 : 0)

#define FAILF(...) do { \
	printf("  %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); \
	printf("\n"); unit_cur_failed = 1; \
} while (0)

#define ASSERT(c) do { if (!(c)) FAILF("assert %s", #c); } while (0)
#define ASSERT_EQ(a, b) do { \
	long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) FAILF("%s == %s: %lld != %lld", #a, #b, _a, _b); \
} while (0)
#define ASSERT_U64(a, b) do { \
	uint64_t _a = (uint64_t)(a), _b = (uint64_t)(b); \
	if (_a != _b) FAILF("%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, _a, _b); \
} while (0)
#define ASSERT_STR(a, b) do { \
	const char *_a = (a), *_b = (b); \
	if (_a == NULL || _b == NULL || strcmp(_a, _b) != 0) \
		FAILF("%s == %s: '%s' != '%s'", #a, #b, _a ? _a : "(null)", \
		    _b ? _b : "(null)"); \
} while (0)

#endif
