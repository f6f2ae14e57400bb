/* The gdack engine: read keys (lines or arguments), ask gdsub to
 * acknowledge them in batches, report every key it could not. */
#ifndef GD_ACK_CLIENT_H
#define GD_ACK_CLIENT_H

#include "conf.h"

enum gd_ack_format {
	GD_ACK_LINE,		/* KEY[<TAB>...] records */
	GD_ACK_FRAME,		/* a framed stream (gdkit-stream(5)) */
	GD_ACK_STATUS,		/* gdpub -f frame status lines: ACK ID KEY */
};

struct gd_ack_opts {
	int format;
	const char *ctl;	/* --ctl, or NULL to derive from the config */
	char delim;		/* '\n', or '\0' with -0 */
	int tee;		/* copy input to stdout after acknowledging */
	const char *sink;	/* --sink FILE: append before acknowledging */
	double wait;		/* seconds to wait for gdsub's socket */
	char **keys;		/* keys given as arguments */
	int nkeys;
};

int gd_ack_run(const struct gd_conf *c, const struct gd_ack_opts *o);

#endif
