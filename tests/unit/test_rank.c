/* Unit tests of lib/rank.c (top-N selection) and of the control
 * protocol's pure helpers in lib/ctl.c: pending arguments, sort names and
 * table cells. The top-N result is checked against a full sort. */
#include "ctl.h"
#include "rank.h"
#include "unit.h"

#include <stdlib.h>

static uint64_t rng = 11;

static uint64_t next(void)	/* splitmix64 */
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* keep max of n random items (keys from a small range, so ties happen)
 * and compare with the first max of everything sorted */
static int top_matches(size_t n, size_t max, uint64_t range)
{
	struct gd_rank all, top;
	size_t i, want;
	int ok = 1;

	gd_rank_init(&all, 0);
	gd_rank_init(&top, max);
	for (i = 0; i < n; i++) {
		uint64_t k = next() % range;
		if (gd_rank_add(&all, k, (uint32_t)i, (uint32_t)(i * 3)) != 0 ||
		    gd_rank_add(&top, k, (uint32_t)i, (uint32_t)(i * 3)) != 0)
			return 0;
	}
	gd_rank_sort(&all);
	gd_rank_sort(&top);
	want = max == 0 || max > n ? n : max;
	if (top.n != want || all.n != n)
		ok = 0;
	for (i = 0; ok && i < want; i++)
		if (top.v[i].key != all.v[i].key || top.v[i].ord != all.v[i].ord ||
		    top.v[i].val != all.v[i].val)
			ok = 0;
	for (i = 1; ok && i < n; i++)
		if (all.v[i - 1].key > all.v[i].key ||
		    (all.v[i - 1].key == all.v[i].key &&
		    all.v[i - 1].ord >= all.v[i].ord))
			ok = 0;
	gd_rank_free(&all);
	gd_rank_free(&top);
	return ok;
}

TEST(rank_top_n_equals_sorted_prefix)
{
	ASSERT(top_matches(1000, 10, 1u << 30));
	ASSERT(top_matches(1000, 10, 4));	/* ties: ord decides */
	ASSERT(top_matches(100000, 1, 1000));
	ASSERT(top_matches(5, 10, 100));	/* fewer items than the bound */
	ASSERT(top_matches(0, 3, 100));
	ASSERT(top_matches(3000, 0, 50));	/* unbounded */
	ASSERT(top_matches(64, 64, 7));
}

TEST(rank_bounded_memory)
{
	struct gd_rank r;
	uint32_t i;

	gd_rank_init(&r, 5);
	for (i = 0; i < 100000; i++)
		ASSERT_EQ(gd_rank_add(&r, 100000 - i, i, i), 0);
	ASSERT(r.buf.alloc <= 5 * sizeof(struct gd_rank_item) + 1);
	gd_rank_sort(&r);
	ASSERT_EQ(r.n, 5);
	for (i = 0; i < 5; i++)
		ASSERT_U64(r.v[i].key, i + 1);
	gd_rank_free(&r);
}

TEST(pending_args)
{
	struct gd_ctl_pending_req q;
	char why[128];

	ASSERT_EQ(gd_ctl_pending_args("", &q, why, sizeof(why)), 0);
	ASSERT_EQ(q.sort, GD_SORT_AGE);
	ASSERT_U64(q.limit, 0);
	ASSERT_EQ(gd_ctl_pending_args("sort=id limit=10", &q, why, sizeof(why)), 0);
	ASSERT_EQ(q.sort, GD_SORT_ID);
	ASSERT_U64(q.limit, 10);
	ASSERT_EQ(gd_ctl_pending_args("  limit=18446744073709551615  sort=acks ",
	    &q, why, sizeof(why)), 0);
	ASSERT_EQ(q.sort, GD_SORT_ACKS);
	ASSERT_U64(q.limit, UINT64_MAX);
	ASSERT_EQ(gd_ctl_pending_args("sort=expires", &q, why, sizeof(why)), 0);
	ASSERT_EQ(q.sort, GD_SORT_EXPIRES);
	ASSERT_EQ(gd_ctl_pending_args("sort=size", &q, why, sizeof(why)), -1);
	ASSERT_STR(why, "unknown sort 'size' (age, expires, id or acks)");
	ASSERT_EQ(gd_ctl_pending_args("limit=-1", &q, why, sizeof(why)), -1);
	ASSERT_STR(why, "bad limit '-1' (a row count, 0 for all)");
	ASSERT_EQ(gd_ctl_pending_args("limit=18446744073709551616", &q, why,
	    sizeof(why)), -1);
	ASSERT_EQ(gd_ctl_pending_args("limit=", &q, why, sizeof(why)), -1);
	ASSERT_EQ(gd_ctl_pending_args("please", &q, why, sizeof(why)), -1);
	ASSERT_STR(why, "unknown argument 'please' (sort=KEY or limit=N)");
}

TEST(sort_names)
{
	int i;
	for (i = GD_SORT_AGE; i <= GD_SORT_ACKS; i++)
		ASSERT_EQ(gd_ctl_sort_parse(gd_ctl_sort_name(i)), i);
	ASSERT_EQ(gd_ctl_sort_parse("ID"), -1);
	ASSERT_EQ(gd_ctl_sort_parse(""), -1);
	ASSERT_STR(gd_ctl_sort_name(99), "?");
}

TEST(cells)
{
	char c[8];

	gd_ctl_cell(c, sizeof(c), "a\tb\nc");
	ASSERT_STR(c, "a?b?c");
	gd_ctl_cell(c, sizeof(c), "");
	ASSERT_STR(c, "-");
	gd_ctl_cell(c, sizeof(c), NULL);
	ASSERT_STR(c, "-");
	gd_ctl_cell(c, sizeof(c), "0123456789");
	ASSERT_STR(c, "0123456");
	gd_ctl_cell(c, sizeof(c), "42");
	ASSERT_STR(c, "42");
}

int main(void)
{
	RUN(rank_top_n_equals_sorted_prefix);
	RUN(rank_bounded_memory);
	RUN(pending_args);
	RUN(sort_names);
	RUN(cells);
	return UNIT_DONE();
}
