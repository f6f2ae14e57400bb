/* What ack_client.c (reading keys from stdin or the arguments, the sink,
 * --tee) shares with ack_gdsub.c (the conversation with gdsub over its
 * control socket: connecting within --wait, the "ack N" request and its
 * answer, gdsub's end note), which it sits on. The keys are queued as
 * the runs of an ackbin batch (ackbin.h), and sent so to a gdsub of
 * control protocol 3, as lines of an "ack N" request to one of 2. */
#ifndef GD_ACK_CLIENT_INT_H
#define GD_ACK_CLIENT_INT_H

#include "ack_client.h"
#include "ackbin.h"
#include "ctlproto.h"
#include "dbuf.h"
#include "endnote.h"
#include "sink.h"

#include <limits.h>
#include <stdint.h>

struct ack {
	const struct gd_ack_opts *o;
	const char *path;
	int fd;
	struct gd_lreader rd;
	struct gd_dbuf req;	/* the keys of the next request, as the runs
				 * of an ackbin batch (ackbin.h) */
	struct gd_ackbin_w w;	/* req's last run */
	int bin;		/* gdsub takes ackbin batches (protocol 3) */
	struct gd_dbuf text;	/* req as an "ack N" request's lines, for a
				 * gdsub of protocol 2 */
	uint64_t nreq, line_no, failed, acked, skipped;
	int tee_broken;
	struct gd_sink *sink;	/* --sink FILE, or NULL */
	struct gd_dbuf sbuf;	/* this batch's records for the sink */
	double waited;		/* seconds of --wait spent connecting so far */
	char note_path[PATH_MAX];	/* gdsub's end note (endnote.h) */
	struct gd_endnote note;
	int ended;		/* no socket, and the note: gdsub has ended */
	int answered;		/* a request got its answer on this connection */
	int reconnected;	/* once, when it never did */
};

/* Connect to gdsub, check it is ours and say hello (ctl_client.h),
 * waiting at most the rest of --wait: 0 with a->fd, -1 with errno set
 * when none answered, or an exit code once said (another user's socket,
 * another program, another version). What it waited counts against
 * --wait. With note, it also stops when gdsub has ended and left its end
 * note (a->ended). */
int gd_ack_gdsub_connect(struct ack *a, double most, int note);
/* Send the queued keys and read the answer. 0, or an exit code. */
int gd_ack_gdsub_exchange(struct ack *a);

#endif
