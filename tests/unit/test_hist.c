/* Unit tests of lib/hist.c: percentiles of known distributions come out
 * within the histogram's ~6% bucket resolution (checked at 7%), values
 * below 16 are exact, the maximum is exact, an empty histogram answers 0.
 * Random data uses a fixed seed; the reference is the sorted sample. */
#include "hist.h"
#include "unit.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 7;

static double urand(void)	/* (0, 1], splitmix64 */
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return ((double)(z >> 11) + 1.0) / 9007199254740992.0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* the p-th percentile of sorted v[0..n) with gd_hist_pct's rank rule */
static uint64_t exact_pct(const uint64_t *v, uint64_t n, double p)
{
	uint64_t want = (uint64_t)((double)n * p / 100.0 + 0.5);
	if (want == 0)
		want = 1;
	return v[want - 1];
}

static int close_enough(uint64_t got, uint64_t want, double tol)
{
	double d = fabs((double)got - (double)want);
	return d <= tol * (double)want;
}

static const double pcts[] = { 0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 100 };

/* fill a histogram from v[0..n), check every percentile of pcts */
static int check_sample(uint64_t *v, uint64_t n, const char *name)
{
	struct gd_hist *h = calloc(1, sizeof(*h));
	uint64_t i, sum = 0, max = 0;
	int ok = 1, shown = 0;
	size_t k;

	for (i = 0; i < n; i++) {
		gd_hist_add(h, v[i]);
		sum += v[i];
		if (v[i] > max)
			max = v[i];
	}
	if (h->n != n || h->sum != sum || h->max != max) {
		printf("  %s: n/sum/max %" PRIu64 "/%" PRIu64 "/%" PRIu64
		    " want %" PRIu64 "/%" PRIu64 "/%" PRIu64 "\n", name,
		    h->n, h->sum, h->max, n, sum, max);
		ok = 0;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	for (k = 0; k < sizeof(pcts) / sizeof(pcts[0]); k++) {
		uint64_t got = gd_hist_pct(h, pcts[k]);
		uint64_t want = exact_pct(v, n, pcts[k]);
		if (!close_enough(got, want, 0.07) || got > max) {
			if (shown++ < 3)
				printf("  %s: p%g = %" PRIu64 ", exact %" PRIu64 "\n",
				    name, pcts[k], got, want);
			ok = 0;
		}
	}
	if (gd_hist_pct(h, 100) != max) {
		printf("  %s: p100 %" PRIu64 " != max %" PRIu64 "\n", name,
		    gd_hist_pct(h, 100), max);
		ok = 0;
	}
	free(h);
	return ok;
}

TEST(empty)
{
	struct gd_hist h;
	memset(&h, 0, sizeof(h));
	ASSERT_U64(gd_hist_pct(&h, 0), 0);
	ASSERT_U64(gd_hist_pct(&h, 50), 0);
	ASSERT_U64(gd_hist_pct(&h, 100), 0);
	ASSERT_U64(h.n, 0);
	ASSERT_U64(h.max, 0);
}

TEST(small_values_exact)
{
	struct gd_hist h;
	uint64_t v;

	memset(&h, 0, sizeof(h));
	for (v = 0; v < 16; v++) {
		gd_hist_add(&h, v);
		gd_hist_add(&h, v);
	}
	/* 32 samples, two of each 0..15: rank 2k+2 is value k */
	for (v = 0; v < 16; v++)
		ASSERT_U64(gd_hist_pct(&h, (double)(2 * v + 2) * 100.0 / 32.0), v);
	ASSERT_U64(gd_hist_pct(&h, 0), 0);
	ASSERT_U64(gd_hist_pct(&h, 100), 15);
	ASSERT_U64(h.max, 15);
	ASSERT_U64(h.sum, 240);
	/* a single zero */
	memset(&h, 0, sizeof(h));
	gd_hist_add(&h, 0);
	ASSERT_U64(gd_hist_pct(&h, 50), 0);
	ASSERT_U64(gd_hist_pct(&h, 100), 0);
	ASSERT_U64(h.n, 1);
}

TEST(constant)
{
	struct gd_hist h;
	unsigned i;

	memset(&h, 0, sizeof(h));
	for (i = 0; i < 1000; i++)
		gd_hist_add(&h, 1000);
	ASSERT_U64(gd_hist_pct(&h, 0), 1000);	/* capped at the max */
	ASSERT_U64(gd_hist_pct(&h, 50), 1000);
	ASSERT_U64(gd_hist_pct(&h, 99), 1000);
	ASSERT_U64(gd_hist_pct(&h, 100), 1000);
	ASSERT_U64(h.max, 1000);
	ASSERT_U64(h.sum, 1000000);
}

TEST(max_exact)
{
	struct gd_hist h;
	unsigned i;

	memset(&h, 0, sizeof(h));
	for (i = 0; i < 999; i++)
		gd_hist_add(&h, 10 + i % 5);
	gd_hist_add(&h, 123457);	/* one outlier, mid-bucket */
	ASSERT_U64(h.max, 123457);
	ASSERT_U64(gd_hist_pct(&h, 100), 123457);
	ASSERT(gd_hist_pct(&h, 99.9) <= 14);	/* rank 999 */
	ASSERT(gd_hist_pct(&h, 99.96) == 123457);	/* rank 1000 */
	ASSERT(gd_hist_pct(&h, 50) >= 10 && gd_hist_pct(&h, 50) <= 14);
}

TEST(uniform)
{
	enum { N = 100000 };
	uint64_t *v = malloc(N * sizeof(*v));
	uint64_t i;
	for (i = 0; i < N; i++)
		v[i] = i + 1;
	ASSERT(check_sample(v, N, "uniform 1..100000"));
	/* the same, microseconds over a wider range, shuffled order */
	for (i = 0; i < N; i++)
		v[i] = 1 + (uint64_t)(urand() * 5e6);
	ASSERT(check_sample(v, N, "uniform random to 5e6"));
	free(v);
}

TEST(exponential)
{
	enum { N = 200000 };
	uint64_t *v = malloc(N * sizeof(*v));
	uint64_t i;
	for (i = 0; i < N; i++)
		v[i] = (uint64_t)(-log(urand()) * 2000.0);
	ASSERT(check_sample(v, N, "exponential mean 2000"));
	free(v);
}

TEST(lognormal_wide)
{
	enum { N = 200000 };
	uint64_t *v = malloc(N * sizeof(*v));
	uint64_t i;
	for (i = 0; i < N; i++) {
		/* Box-Muller: spans many powers of two */
		double z = sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand());
		v[i] = (uint64_t)exp(8.0 + 2.5 * z);
	}
	ASSERT(check_sample(v, N, "lognormal"));
	free(v);
}

TEST(bimodal)
{
	enum { N = 100000 };
	uint64_t *v = malloc(N * sizeof(*v));
	uint64_t i;
	struct gd_hist h;

	memset(&h, 0, sizeof(h));
	for (i = 0; i < N; i++) {
		v[i] = i % 10 == 9 ? 1000000 : 100;
		gd_hist_add(&h, v[i]);
	}
	ASSERT(close_enough(gd_hist_pct(&h, 50), 100, 0.07));
	ASSERT(close_enough(gd_hist_pct(&h, 90), 100, 0.07));
	ASSERT(close_enough(gd_hist_pct(&h, 91), 1000000, 0.07));
	ASSERT_U64(gd_hist_pct(&h, 100), 1000000);
	ASSERT(check_sample(v, N, "bimodal"));
	free(v);
}

/* Every power of two and its neighbours land within the resolution. */
TEST(single_values_all_magnitudes)
{
	unsigned e;
	int bad = 0;

	for (e = 4; e < 44; e++) {
		uint64_t base = (uint64_t)1 << e, d;
		for (d = 0; d < 3; d++) {
			uint64_t vs[2] = { base - 1 + d, base + base / 2 + d };
			unsigned j;
			for (j = 0; j < 2; j++) {
				struct gd_hist h;
				memset(&h, 0, sizeof(h));
				gd_hist_add(&h, vs[j]);
				gd_hist_add(&h, vs[j] * 2);	/* the max */
				if (!close_enough(gd_hist_pct(&h, 50), vs[j], 0.07)) {
					if (bad++ < 5)
						FAILF("p50 of {%" PRIu64 ", 2x}: %" PRIu64,
						    vs[j], gd_hist_pct(&h, 50));
				}
			}
		}
	}
	ASSERT_EQ(bad, 0);
}

/* Values at and above 2^44 (the last bucket): the answer must not drop
 * below the data, and p100 is still the maximum. */
TEST(huge_values)
{
	enum { N = 1000 };
	uint64_t v[N];
	unsigned i;
	for (i = 0; i < N; i++)
		v[i] = ((uint64_t)1 << 50) + (uint64_t)i * 1000000007ull;
	ASSERT(check_sample(v, N, "values around 2^50"));
	for (i = 0; i < N; i++)
		v[i] = UINT64_MAX / 2 + i;
	ASSERT(check_sample(v, N, "values around 2^63"));
}

/* The control-protocol cell: "-" (JSON null) before any value, never a
 * made-up 0; then the percentile, and p100 the maximum. */
TEST(cell)
{
	static struct gd_hist h;
	char b[24];

	memset(&h, 0, sizeof(h));
	gd_hist_cell(&h, 50, b, sizeof(b));
	ASSERT_STR(b, "-");
	gd_hist_cell(&h, 100, b, sizeof(b));
	ASSERT_STR(b, "-");
	gd_hist_add(&h, 0);
	gd_hist_cell(&h, 50, b, sizeof(b));
	ASSERT_STR(b, "0");
	gd_hist_add(&h, 12345);
	gd_hist_cell(&h, 100, b, sizeof(b));
	ASSERT_STR(b, "12345");
}

int main(void)
{
	RUN(empty);
	RUN(small_values_exact);
	RUN(constant);
	RUN(max_exact);
	RUN(uniform);
	RUN(exponential);
	RUN(lognormal_wide);
	RUN(bimodal);
	RUN(single_values_all_magnitudes);
	RUN(huge_values);
	RUN(cell);
	return UNIT_DONE();
}
