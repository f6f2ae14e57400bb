/* The Prometheus text exposition (format 0.0.4) of a running gdpub's or
 * gdsub's counters, as /metrics (metrics.h) serves it and gdinspect
 * --format prometheus prints it: the rows of the engine's stats, subs
 * and, at a gdpub, latency replies turned into metrics named gdkit_pub_*
 * or gdkit_sub_*, with HELP and TYPE lines; counters end in _total, the
 * publish -> ACK latency is a histogram in seconds, one series per
 * subscriber (gdpub: label name) or publisher (gdsub: label publisher),
 * labels that last across reconnections. The three replies are asked
 * for within one turn of the loop, so a total and the series it sums
 * come from one moment. A cell of "-" (no value yet) is left out. */
#ifndef GD_PROM_H
#define GD_PROM_H

#include <stddef.h>

#include "ctl.h"
#include "dbuf.h"

/* The exposition of the engine whose control requests cb answers (its
 * own line callback, run in-process: gd_ctl_call), appended to out: 0,
 * or -1 (out at its cap, out of memory, a reply not as expected). */
int gd_prom_render(gd_ctl_line_cb cb, void *user, struct gd_dbuf *out);

/* The control request "metrics": "metrics N", then the N lines of the
 * exposition (gdinspect --format prometheus), or an error line. */
int gd_prom_ctl_reply(gd_ctl_line_cb cb, void *user,
    struct gd_ctl_client *cl);

#endif
