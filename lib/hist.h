/* A log-linear latency histogram (about 6% resolution) with O(1) record
 * and a percentile query; used for publish -> ACK times. */
#ifndef GD_HIST_H
#define GD_HIST_H

#include <stddef.h>
#include <stdint.h>

#define GD_HIST_BUCKETS (16 + 16 * 60)	/* up to 2^64 - 1 */

struct gd_hist {
	uint64_t n, max, sum;
	uint32_t b[GD_HIST_BUCKETS];
};

void gd_hist_add(struct gd_hist *h, uint64_t v);
/* value at percentile p (0..100); 0 when empty */
uint64_t gd_hist_pct(const struct gd_hist *h, double p);
/* How many values are at most *top, where *top is the top of the bucket
 * that holds v (at most about 6% above it): exact, for a histogram's
 * cumulative bucket "le *top". */
uint64_t gd_hist_upto(const struct gd_hist *h, uint64_t v, uint64_t *top);
/* The same as a table cell of the control protocol: the value in
 * decimal, or "-" (JSON null) while there is none. p = 100: the highest. */
void gd_hist_cell(const struct gd_hist *h, double p, char *buf, size_t sz);

#endif
