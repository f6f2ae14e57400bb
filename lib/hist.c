/* Log-linear histogram: values below 16 exactly, then 16 sub-buckets per
 * power of two. */
#include "hist.h"

#include <inttypes.h>
#include <stdio.h>

static unsigned bucket(uint64_t v)
{
	unsigned e;
	if (v < 16)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);	/* v >= 16: e >= 4 */
	return 16 + (e - 4) * 16 + (unsigned)((v >> (e - 4)) & 15);
}

static uint64_t bucket_top(unsigned i)
{
	unsigned e;
	if (i < 16)
		return i;
	e = (i - 16) / 16 + 4;
	return ((uint64_t)(16 + (i - 16) % 16) << (e - 4)) +
	    (((uint64_t)1 << (e - 4)) - 1);
}

void gd_hist_add(struct gd_hist *h, uint64_t v)
{
	unsigned i = bucket(v);
	if (i >= GD_HIST_BUCKETS)
		i = GD_HIST_BUCKETS - 1;
	h->b[i]++;
	h->n++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

uint64_t gd_hist_pct(const struct gd_hist *h, double p)
{
	uint64_t want, seen = 0;
	unsigned i;

	if (h->n == 0)
		return 0;
	want = (uint64_t)((double)h->n * p / 100.0 + 0.5);
	if (want == 0)
		want = 1;
	for (i = 0; i < GD_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want) {
			uint64_t t = bucket_top(i);
			return t < h->max ? t : h->max;
		}
	}
	return h->max;
}

uint64_t gd_hist_upto(const struct gd_hist *h, uint64_t v, uint64_t *top)
{
	unsigned i, last = bucket(v);
	uint64_t n = 0;

	if (last >= GD_HIST_BUCKETS)
		last = GD_HIST_BUCKETS - 1;
	for (i = 0; i <= last; i++)
		n += h->b[i];
	*top = bucket_top(last);
	return n;
}

void gd_hist_cell(const struct gd_hist *h, double p, char *buf, size_t sz)
{
	if (h->n == 0)
		snprintf(buf, sz, "-");
	else
		snprintf(buf, sz, "%" PRIu64, p >= 100 ? h->max : gd_hist_pct(h, p));
}
