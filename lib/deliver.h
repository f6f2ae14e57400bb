/* The publisher's rules of delivery (SPEC §1, §4), with no I/O and an
 * injected clock: a block is published (it gets the next sequence index
 * and, with GD, waits in the pending table within the flow-control
 * window); acknowledgements from GD slots are counted against the very
 * copy they name (ID and sequence index); a block whose deadline passes is
 * sent again (GDpub_resend) or NACKed; an ACK or NACK resolves it. Every
 * resolution and every resend goes through the caller's ops, the one
 * place a journal or a cluster hooks in.
 *
 * Pipelines are FIFO: when a GD subscriber acknowledges a block, every
 * block sent to it before that one has either been acknowledged too or
 * will never be (a stage dropped it). A block every connected GD
 * subscriber has passed over so (or that none of them owes: sent while it
 * was away) is no sign of congestion: it holds no place in the window and
 * its expiry does not shrink it; it waits for its deadline like any
 * other, then is sent again or NACKed. Only first copies move the mark: a
 * copy sent again may be acknowledged at once by a gdsub that had it.
 *
 * A GD subscriber may also say how far the first stage of its pipeline
 * has read (the sequence index of the last block it wrote that the stage
 * took, gdsub's consumption report): the window (window.h) then tells a
 * stage that drops or holds blocks from a slow one. At its deadline a
 * block is counted under one cause: a subscriber missing (fewer than
 * numSubs connected then, or since it was sent: it was sent before the
 * last of them connected), passed over, dropped or held by a stage (the
 * stages of the subscribers that owe it read it, and none of them
 * acknowledged anything in the last quarter of the timeout), or late. */
#ifndef GD_DELIVER_H
#define GD_DELIVER_H

#include <stdint.h>

#include "hist.h"
#include "pending.h"
#include "window.h"

#define GD_DV_SLOTS 32		/* GD_MAX_SUBS: one bit of acked each */

struct gd_deliver_ops {
	/* send the pending block e again (same id and seq, flag resent) */
	void (*resend)(void *ctx, const struct gd_pend *e, uint64_t seq);
	/* e's life ends: ACK (acked 1) or NACK; e is removed after this */
	void (*resolved)(void *ctx, const struct gd_pend *e, int acked,
	    uint64_t now);
};

struct gd_deliver {
	struct gd_pending pend;
	struct gd_window win;
	const struct gd_deliver_ops *ops;
	void *ctx;
	unsigned needed;	/* acks per block; 0: GD off, nothing pending */
	unsigned resend;	/* GDpub_resend */
	uint64_t next_seq;	/* the next sequence index, from 1 */
	uint64_t n_pub, n_ack, n_nack, n_resent, n_late;
	uint64_t n_restored;	/* of an earlier process (gd_deliver_restore) */
	/* why blocks were NACKed at their deadline */
	uint64_t n_nack_absent, n_nack_passed, n_nack_held, n_nack_slow;
	struct gd_hist lat;	/* last send -> ACK, microseconds */
	uint32_t live;		/* connected GD slots, one bit each */
	uint32_t reports;	/* slots whose gdsub reports what its first
				 * stage read (since they connected) */
	uint64_t full_ord;	/* sends numbered before all numSubs were
				 * last connected: owed by a missing one */
	uint64_t hi[GD_DV_SLOTS];	/* per slot: the last first copy it
					 * acknowledged was sent then */
	uint64_t cons[GD_DV_SLOTS];	/* per slot: its first stage read
					 * every block up to this seq */
	uint64_t t_ack[GD_DV_SLOTS];	/* per slot: its last first-copy
					 * acknowledgement came then */
	/* this ack batch */
	int b_open;
	uint32_t b_inflight;	/* in flight before it */
	uint32_t b_unpassed;	/* resolved by it, not passed over before */
	uint32_t b_firsts;	/* first copies acknowledged */
	uint64_t b_delay;	/* longest send -> ACK of those */
};

enum { GD_DV_OK = 0, GD_DV_NOMEM = -1, GD_DV_PENDING = -2 };

/* window: GDpub_window, 0 for the adaptive window */
int gd_deliver_init(struct gd_deliver *d, unsigned needed,
    uint64_t timeout_ns, unsigned resend, uint32_t max_pending,
    uint32_t window, uint64_t now, const struct gd_deliver_ops *ops,
    void *ctx);
void gd_deliver_free(struct gd_deliver *d);
/* Every id published will be fresh (gd_deliver_publish) and none looked
 * up alone (gd_deliver_find): acknowledgements find their blocks by
 * sequence index, no id is hashed (gd_pending_byseq). Before the first
 * publish or restore; 0, or -1 when out of memory (ids are hashed). */
static inline int gd_deliver_byseq(struct gd_deliver *d)
{
	return gd_pending_byseq(&d->pend);
}

/* A new block: *seq is its sequence index. With GD it becomes pending
 * (owner, off and len locate its payload for a resend); GD_DV_PENDING
 * (nothing done) when id is still pending, which is not looked up when
 * the caller knows it cannot be (fresh: ids it assigned, increasing);
 * GD_DV_NOMEM when the pending table cannot take it. */
int gd_deliver_publish(struct gd_deliver *d, uint64_t id, int fresh,
    uint32_t owner, uint32_t off, uint32_t len, uint64_t now, uint64_t *seq);
/* A block of an earlier process of this run (gdpub's journal), pending
 * again with its own sequence index: restored in increasing order, all
 * below next_seq (which the caller raised past them). GD_DV_NOMEM when
 * the table cannot take it. */
int gd_deliver_restore(struct gd_deliver *d, uint64_t id, uint64_t seq,
    uint32_t owner, uint32_t off, uint32_t len, uint64_t now);
/* The GD subscriber in slot bit acknowledged (id, seq): 1 when that
 * resolved the block (ACK), 0 when more acks are needed, -1 when no
 * pending block is that copy (a late or stale ack, counted). */
int gd_deliver_ack(struct gd_deliver *d, unsigned bit, uint64_t id,
    uint64_t seq, uint64_t now);
/* After a batch of acks: the pass mark moves, the window is fed. */
void gd_deliver_acks_done(struct gd_deliver *d, uint64_t now);
/* The first stage of GD slot bit's pipeline has read every block up to
 * sequence index seq that its gdsub wrote (a consumption report). */
void gd_deliver_consumed(struct gd_deliver *d, unsigned bit, uint64_t seq,
    uint64_t now);
/* Deadlines passed at now: resend or NACK. */
void gd_deliver_expire(struct gd_deliver *d, uint64_t now);
/* The earliest deadline, 0 when nothing is pending. */
static inline uint64_t gd_deliver_deadline(const struct gd_deliver *d)
{
	return gd_pending_deadline(&d->pend);
}
/* Blocks the connected GD subscribers still owe (in the window). */
static inline uint32_t gd_deliver_inflight(const struct gd_deliver *d)
{
	return d->pend.count - d->pend.npassed;
}
/* Input must wait: the window is full, or GDpub_maxPending blocks are
 * pending (passed over or not). */
static inline int gd_deliver_full(const struct gd_deliver *d)
{
	return d->needed > 0 && (d->pend.count >= d->win.max ||
	    gd_deliver_inflight(d) >= gd_window_size(&d->win));
}
/* A few times a second: the window's periodic check. */
void gd_deliver_tick(struct gd_deliver *d, uint64_t now);
/* GD slot bit connected; takeover: it changed owner, so the acks it gave
 * no longer count. */
void gd_deliver_slot_up(struct gd_deliver *d, unsigned bit, int takeover);
/* GD slot bit disconnected: it owes nothing until it is back. */
void gd_deliver_slot_down(struct gd_deliver *d, unsigned bit);
/* Every sequence index below this is resolved (the subscribers' floor). */
uint64_t gd_deliver_floor(struct gd_deliver *d);
/* NACK every pending block now (a second signal). */
void gd_deliver_nack_all(struct gd_deliver *d, uint64_t now);
/* The full sequence index of a pending block. */
static inline uint64_t gd_deliver_seq(const struct gd_deliver *d,
    const struct gd_pend *e)
{
	return gd_pending_seq(&d->pend, e);
}

/* A block this process held and never made pending (a cluster
 * secondary's, given up) is NACKed: counted with the NACKs of pending
 * blocks, so every outcome is in one count. */
void gd_deliver_nack_held(struct gd_deliver *d);

/* ---- what the engine reads: calls, not fields ---- */

static inline uint32_t gd_deliver_pending_count(const struct gd_deliver *d)
{
	return d->pend.count;
}
/* The pending table, read only: the control socket's listings and the
 * journal's compaction walk it in deadline order (head, e[s].next). */
static inline const struct gd_pending *gd_deliver_pending(
    const struct gd_deliver *d)
{
	return &d->pend;
}
/* The pending block id's slot, GD_NONE when it is not pending. */
static inline uint32_t gd_deliver_find(const struct gd_deliver *d,
    uint64_t id)
{
	return gd_pending_find(&d->pend, id);
}
static inline const struct gd_pend *gd_deliver_at(const struct gd_deliver *d,
    uint32_t s)
{
	return &d->pend.e[s];
}
/* The sequence index the next block gets; a journal's run goes on past
 * what it recorded (set before the first publish). */
static inline uint64_t gd_deliver_next_seq(const struct gd_deliver *d)
{
	return d->next_seq;
}
static inline void gd_deliver_set_next_seq(struct gd_deliver *d,
    uint64_t seq)
{
	d->next_seq = seq;
}
/* The counts stats, --progress and the outcome report. */
struct gd_deliver_counts {
	uint64_t pub, ack, nack, resent, late, restored;
	uint64_t nack_absent, nack_passed, nack_held, nack_slow;
	uint32_t pending, passed;
};
static inline struct gd_deliver_counts gd_deliver_counts(
    const struct gd_deliver *d)
{
	struct gd_deliver_counts n = { d->n_pub, d->n_ack, d->n_nack,
	    d->n_resent, d->n_late, d->n_restored, d->n_nack_absent,
	    d->n_nack_passed, d->n_nack_held, d->n_nack_slow, d->pend.count,
	    d->pend.npassed };
	return n;
}
/* Last send -> ACK, microseconds. */
static inline const struct gd_hist *gd_deliver_latency(
    const struct gd_deliver *d)
{
	return &d->lat;
}
static inline uint32_t gd_deliver_window(const struct gd_deliver *d)
{
	return gd_window_size(&d->win);
}

#endif
