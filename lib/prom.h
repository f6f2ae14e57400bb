/* gdinspect's Prometheus text exposition (format 0.0.4) of a running
 * gdpub's or gdsub's counters: the rows of its stats, subs and, at a
 * gdpub, latency replies turned into metrics named gdkit_pub_* or
 * gdkit_sub_*, with HELP and TYPE lines; counters end in _total, the
 * publish -> ACK latency is a histogram in seconds, one series per
 * subscriber (gdpub) or publisher (gdsub) carries their names as labels.
 * A cell of "-" (no value yet) is left out. */
#ifndef GD_PROM_H
#define GD_PROM_H

#include <stddef.h>
#include <stdio.h>

/* A reply as a table: cell[r * ncols + c], row 0 the column names. */
struct gd_prom_tab {
	size_t nrows, ncols;
	const char *const *cell;
};

/* stats, subs and lat (NULL at a gdsub, or when absent) to f; -1 when
 * stats is neither a gdpub's nor a gdsub's. */
int gd_prom_write(FILE *f, const struct gd_prom_tab *stats,
    const struct gd_prom_tab *subs, const struct gd_prom_tab *lat);

#endif
