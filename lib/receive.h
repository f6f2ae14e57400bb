/* What a subscriber does with each block of one publisher and with each
 * acknowledgement its pipeline gives back (SPEC §5), with no I/O: the
 * engine (lib/sub*.c) acts on the verdicts.
 *
 * A block is its id *and* its sequence index: a resend keeps both, so a
 * copy with the same pair is a duplicate (dropped with --dedup id, written
 * again with --dedup none, acknowledged again if it was acknowledged); a
 * re-published id gets a new sequence index from the publisher and is a
 * new block. Keys in a pipeline carry only the id, so acknowledgements of
 * one key are credited to its copies in the order they were written: the
 * acknowledgement that reaches the publisher names the sequence index of
 * the copy it completes, and the publisher counts it for that block only.
 * A payload is never acknowledged unless gdack acknowledged that copy, or
 * a later one of the same key.
 *
 * Below the publisher's floor a block is resolved, and a copy is dropped,
 * except one this subscriber acknowledged: it is acknowledged again. A
 * gdpub restarted from its journal keeps its run and sends again every
 * block whose outcome it had not recorded, including blocks its floor
 * had passed; dropped, they were sent until --resend ran out and NACKed
 * (issue 21). What was acknowledged is known from the state file, or
 * without one from the ranges kept in memory (gd_srun_new: the same
 * bound, GD_STATE_RANGES per run), past the floor that frees the dedup
 * set's entries. */
#ifndef GD_RECEIVE_H
#define GD_RECEIVE_H

#include <stdint.h>

#include "dedup.h"
#include "order.h"
#include "state.h"
#include "wire.h"

/* how a block can be handled, from the engine's state */
#define GD_RB_GD 1		/* acknowledgements go back to the publisher */
#define GD_RB_UNWRITABLE 2	/* the output format cannot carry it */
#define GD_RB_CLOSED 4		/* stdout is closed: nothing new is written */
#define GD_RB_RELEASED 8	/* --consecutive: held back, now due (written
				 * even if the floor passed it meanwhile) */

enum gd_rverdict {
	GD_RV_NEW = 1,		/* a new block: write it */
	GD_RV_COPY,		/* --dedup none: write this copy again */
	GD_RV_REACK,		/* a copy of an acknowledged block: ack again */
	GD_RV_DUP,		/* a duplicate, or a copy of a resolved block */
	GD_RV_UNWRITABLE,	/* new, cannot be written: never acknowledged */
	GD_RV_CLOSED,		/* new, but stdout is closed: not recorded */
	GD_RV_TOO_MANY,		/* new, but GD_DEDUP_MAX_OLDER earlier copies of
				 * its id are unacknowledged: not written */
	GD_RV_NOMEM,
	GD_RV_HOLD,		/* --consecutive: past a gap, hold it back
				 * (gd_order_hold on r->ord) */
	GD_RV_GAP,		/* --consecutive: too far past a gap
				 * (GD_ORDER_MAX): give up on the run */
};

/* how an acknowledgement can be handled, from the engine's state */
#define GD_RK_ENDED 1		/* the publisher has ended its stream */
#define GD_RK_NOGD 2		/* gdsub runs with --no-gd */
#define GD_RK_OFF 4		/* the publisher runs with numSubs=0 */
#define GD_RK_REFUSED 8		/* it refused our acknowledgement connection */
#define GD_RK_OTHER_RUN 16	/* -i: the stream's blocks are of another run
				 * than the one answering (gd_recv_stale) */

enum gd_raverdict {
	GD_RA_SEND = 1,		/* send the acknowledgement (id, *seq) */
	GD_RA_OK,		/* credited, or nothing needed; nothing to send */
	GD_RA_UNKNOWN,		/* no such block waits for acknowledgement */
	GD_RA_NOT_WRITTEN,	/* the block was not written on stdout */
	GD_RA_ENDED,		/* the publisher ended before it: it was NACKed */
	GD_RA_NOGD,		/* nothing is acknowledged (--no-gd) */
	GD_RA_OTHER_RUN,	/* -i: that run cannot be acknowledged */
	GD_RA_REFUSED,		/* no acknowledgement connection */
};

struct gd_recv {
	struct gd_dedup dd;
	int dedup;		/* GD_DEDUP_ID, _INDEX or _NONE (conf.h) */
	int consecutive;	/* write in sequence-index order (r->ord) */
	struct gd_order ord;
	uint64_t last;		/* --dedup index: the highest index written */
	struct gd_state *st;	/* GDsub_state, or NULL */
	struct gd_srun *run;	/* the publisher run in st, NULL before its
				 * first block (gd_recv_attach) */
	struct gd_srun *mem;	/* without st: the indexes acknowledged, in
				 * memory (NULL before the first) */
	uint64_t floor;		/* every sequence index below it is resolved */
	uint64_t unacked;	/* copies written and not yet acknowledged */
	uint64_t seq_base;	/* blocks of the publisher's earlier runs */
	int stream;		/* -i: blocks come from a framed stream */
	uint64_t stream_epoch;	/* -i: the run of the stream's latest frames */
	uint64_t n_recv, n_unique, n_dup, n_acked;
	uint64_t n_mismatch;	/* an acknowledged index came with another id */
	int state_nomem;	/* an acknowledgement not recorded in st */
};

int gd_recv_init(struct gd_recv *r, int dedup);
void gd_recv_free(struct gd_recv *r);
/* The state file's record of the publisher run whose blocks arrive now
 * (st and run non-NULL): blocks it holds as acknowledged are acknowledged
 * again instead of written, and every acknowledgement sent goes into it.
 * With --consecutive, a run not yet under way resumes where it stood. */
void gd_recv_attach(struct gd_recv *r, struct gd_state *st,
    struct gd_srun *run);
/* A block (not a snapshot one) arrived; how is one of GD_RB_*. */
int gd_recv_block(struct gd_recv *r, uint64_t id, uint64_t seq, int how);
/* gdack acknowledged key id; how is one of GD_RK_*. On GD_RA_SEND *seq
 * is the copy's sequence index. */
int gd_recv_ack(struct gd_recv *r, uint64_t id, int how, uint64_t *seq);
/* The publisher's floor: every sequence index below it is resolved. With
 * --consecutive, held blocks may now be due (gd_recv_take). */
void gd_recv_floor(struct gd_recv *r, uint64_t floor);
/* --consecutive: the next held block now due (handed back to
 * gd_recv_block with GD_RB_RELEASED, then freed), past the indexes that
 * need nothing (acknowledged before a restart) and the missing ones below
 * the floor (listed in r->ord.skipped); NULL while the next is awaited. */
struct gd_held *gd_recv_take(struct gd_recv *r);
/* The publisher restarted (a new run, ids start over): forget its blocks
 * (held ones too: count r->ord.held first). Returns how many written
 * copies will never be acknowledged, or -1 when out of memory. */
int64_t gd_recv_reset(struct gd_recv *r);
/* Stream mode (-i): blocks come from a framed stream, each frame stamped
 * with the epoch of the publisher run that wrote it, while
 * acknowledgements go over TCP to the run answering now. A frame's
 * epoch: GD_RS_NEW_RUN when the stream moved on from another run (its
 * blocks are to be forgotten, gd_recv_reset), GD_RS_FIRST for the first
 * frame, else GD_RS_SAME. */
enum gd_rsverdict { GD_RS_SAME, GD_RS_FIRST, GD_RS_NEW_RUN };
int gd_recv_stream_epoch(struct gd_recv *r, uint64_t epoch);
/* -i: the stream's blocks are of another run than the one answering now
 * (run: its epoch, 0 before its first welcome), so they can never be
 * acknowledged. Never in TCP mode. */
static inline int gd_recv_stale(const struct gd_recv *r, uint64_t run)
{
	return r->stream && run != 0 && r->stream_epoch != run;
}
/* The publisher refused the acknowledgement connection (GD_ACK_*). */
static inline int gd_recv_refused(int ack_status)
{
	return ack_status == GD_ACK_FULL || ack_status == GD_ACK_NAME;
}
/* Blocks the publisher has sent so far, as far as this subscriber knows:
 * sequence indexes run 1, 2, 3... in each run. */
static inline uint64_t gd_recv_sent(const struct gd_recv *r)
{
	return r->seq_base + r->dd.max_seq;
}

#endif
