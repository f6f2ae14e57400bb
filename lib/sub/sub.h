/* The subscriber engine behind gdsub: connects to every publisher, drops
 * duplicates, writes blocks on stdout and acknowledges what gdack reports
 * as processed. */
#ifndef GD_SUB_H
#define GD_SUB_H

#include <stdint.h>

#include "../conf.h"	/* the engine's public header is read from src/ too */

enum gd_sub_format { GD_OUT_LINE, GD_OUT_PAYLOAD, GD_OUT_FRAME,
	GD_OUT_TEMPLATE };

struct gd_sub_opts {
	int format;
	char delim;		/* '\n', or '\0' with -0 */
	uint64_t count;		/* -C: exit after this many unique blocks; 0 none */
	double linger;		/* seconds to wait for acks once stdout closed */
	const char *in;		/* -i FILE|-: read a framed stream, not TCP */
	double idle_timeout;	/* > 0: end as at the end of the stream when no
				 * block arrived for so many seconds */
	const char *tmpl;	/* -f TEMPLATE (GD_OUT_TEMPLATE): %k %i ... */
};

/* Is t a usable -f template for a gdsub with GD on (gd) and records
 * ending in delim? 0, or -1 with why filled. With GD on, gdack must read
 * the key back as it does from -f line: the template starts with %k,
 * then a TAB or its end, and holds no record delimiter. */
int gd_sub_template_check(const char *t, int gd, char delim, char *why,
    size_t whysz);

int gd_sub_run(const struct gd_conf *c, const struct gd_sub_opts *o);

#endif
