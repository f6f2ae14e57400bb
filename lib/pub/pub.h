/* The publisher engine behind gdpub: reads blocks, serves them to
 * subscribers, counts acknowledgements and reports READY/ACK/NACK/REJECT. */
#ifndef GD_PUB_H
#define GD_PUB_H

#include "../conf.h"	/* the engine's public header is read from src/ too */

/* --armor-batch's bound, armor.h's GD_ARMOR_BATCH_MAX (pub_stream.c
 * checks that they agree) */
#define GD_PUB_ARMOR_BATCH_MAX 1048576u

struct gd_pub_opts {
	int ids;		/* --ids: ID<TAB>payload */
	char delim;		/* '\n', or '\0' with -0 */
	int wait_ready;		/* 0 no, 1 until READY, 2 until READY or wait_ready_s */
	double wait_ready_s;
	int frame;		/* -f frame: the input is a framed stream */
	const char *out;	/* -o FILE|-: write the stream, serve no blocks */
	int armor;		/* --armor: frames as text lines (armor.h) */
	size_t armor_batch;	/* --armor-batch: the longest line of several
				 * frames; 0: GD_ARMOR_BATCH_DEFAULT */
	const char *status;	/* --status FILE|-: where status lines go */
	const char *port_file;	/* --port-file FILE: the bound port, once listening */
	int progress;		/* a status line on stderr (--progress) */
	double progress_every;	/* > 0: a line every so many seconds instead
				 * (--progress=SECONDS), for logs */
	/* socket activation (activate.h): the passed listening socket to
	 * serve on instead of binding GDpub_port (0: none, passed fds start
	 * at 3), and the fd read instead of stdin (0: stdin) */
	int listen_fd;
	int input_fd;
};

/* Runs until the input ends and every block is resolved; returns the
 * SPEC exit code. */
int gd_pub_run(const struct gd_conf *c, const struct gd_pub_opts *o);

#endif
