/* gdinspect: ask a running gdpub or gdsub what it holds and print it as
 * aligned text or JSON lines. */
#ifndef GD_INSPECT_H
#define GD_INSPECT_H

#include <stdint.h>

#include "conf.h"

struct gd_inspect_opts {
	const char *ctl;
	int json;
	double watch;		/* 0: once */
	const char *cmd;
	int sort;		/* pending: enum gd_ctl_sort, -1 the default */
	uint64_t limit;		/* pending: at most this many rows; 0 all */
	int prom;		/* stats in Prometheus text format */
	const char *output;	/* with prom: FILE, rewritten atomically */
	double timeout;		/* seconds each wait for the program may take */
};

int gd_inspect_run(const struct gd_conf *c, const struct gd_inspect_opts *o);
/* --sort KEY (age, expires, id or acks) as the sort field, or -1. */
int gd_inspect_sort(const char *name);

#endif
