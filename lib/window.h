/* How many GD blocks a publisher keeps in flight. Every block sent ahead
 * of a subscriber pipeline waits in its queues (socket, gdsub, pipes), so
 * with a fixed window a pipeline slower than window / timeout would be
 * NACKed for blocks it simply had not reached yet. By Little's law a
 * block waits (blocks ahead of it) / (rate they leave at), so the window
 * aims at rate x timeout/8: once per round (at least 10 ms and 32 blocks
 * out) it moves toward the rate measured over that round times an eighth
 * of the timeout, at most doubling. A block leaves the window when it is
 * acknowledged or passed over (deliver.h). An eighth, not more: the
 * window cannot pull back what is already in flight, so when a pipeline
 * slows down 4x at once (a busy machine) the blocks in flight still reach
 * it within half the timeout. It is controlled by delay as well as by
 * rate: a round whose acknowledged blocks waited more than a quarter of
 * the timeout ends at once and sets the window to what the measured rate
 * allows, however much smaller; it only grows while it is what limits the
 * publisher; it is halved when a block the pipelines owe expires or the
 * oldest of them has waited a quarter of the timeout without an ACK.
 *
 * What the pipelines' first stages have read (gdsub reports it) tells a
 * stage that drops blocks or holds them from a slow one, by what comes
 * back. A slow pipeline acknowledges, late, whatever its first stage
 * reads ahead (cat before a slow stage): while ACKs come, the rules above
 * alone bound the window. A filter that rarely matches acknowledges
 * nothing, or a block far ahead of those it dropped: so
 *  - an ACK batch that passed over N blocks keeps the window at 2N at
 *    least (the pipeline needed N in flight to acknowledge anything),
 *    unless its blocks were late;
 *  - while the stages have read every block sent, the window is full and
 *    no block at all is acknowledged, the window probes: it doubles every
 *    probe interval (a quarter of the timeout, at most GD_WINDOW_PROBE_NS)
 *    of that silence, up to GDpub_maxPending;
 *  - a block the stages read that expired with no ACK since is no sign of
 *    a slow pipeline: it does not shrink the window, the stall check
 *    leaves such a block alone, and from then until the next ACK the
 *    window doubles every round the stages have read all of it.
 * The first ACK ends the probing, and a late one cuts the window at once.
 * Without reports (a gdsub of an earlier version, or whose standard
 * output is not a pipe) nothing is read and the rules above stay as
 * they were. GDpub_maxPending caps the window; GDpub_window fixes it.
 * Pure: the caller passes the clock. */
#ifndef GD_WINDOW_H
#define GD_WINDOW_H

#include <stdint.h>

#define GD_WINDOW_INIT 64		/* safe for 200 blocks/s at -t 2 */
#define GD_WINDOW_ROUND_NS 10000000ull	/* 10 ms */
#define GD_WINDOW_ROUND_ACKS 32
#define GD_WINDOW_PROBE_NS 2000000000ull	/* longest probe interval */

struct gd_window {
	double w;		/* the window, 1..max */
	uint32_t max;		/* GDpub_maxPending */
	int fixed;		/* GDpub_window=N: never moves */
	uint64_t timeout_ns, target_ns;
	/* the current round */
	uint64_t r_start;
	uint64_t r_acks;	/* blocks out of the window in it */
	uint64_t r_delay;	/* longest send -> ACK in it */
	uint32_t r_inflight;	/* most blocks in flight during it */
	uint32_t r_gap;		/* most blocks one ACK batch passed over */
	uint64_t last_cut;	/* when the window was last cut */
	double rate;		/* blocks out per second over the last round */
	uint64_t delay;		/* r_delay of the last round */
	/* what the stages read */
	uint64_t last_ack;	/* when a first copy was last ACKed, 0 never */
	uint64_t probe_at;	/* when the window last grew by probing */
	int held;		/* a block the stages read expired since */
};

/* An ACK batch, as the window sees it. */
struct gd_window_acks {
	uint32_t n;		/* blocks out: acknowledged or passed over */
	uint32_t passed;	/* of them, passed over */
	uint32_t inflight;	/* blocks in flight before them */
	uint32_t firsts;	/* first copies acknowledged (the pipeline's
				 * own word, not a gdsub's re-ack of a copy) */
	uint64_t delay_ns;	/* the longest of those since its send */
};

/* fixed > 0: the window is fixed at that (capped by max). */
void gd_window_init(struct gd_window *w, uint64_t timeout_ns, uint32_t max,
    uint32_t fixed, uint64_t now);
void gd_window_acked(struct gd_window *w, uint64_t now,
    const struct gd_window_acks *a);
/* A block the pipelines owed expired (NACK, or a resend) at now. */
void gd_window_expired(struct gd_window *w, uint64_t now);
/* A block the stages had read expired at now with no ACK since: the
 * pipeline drops or holds what it reads; no cut, faster probing. */
void gd_window_held(struct gd_window *w, uint64_t now);
/* Periodic check (a few times a second): inflight blocks are in flight,
 * the oldest sent at oldest_ns (0 when none), read by the stages or not.
 * Ends a round whose ACKs stopped coming; halves the window when the
 * oldest has waited a quarter of the timeout, unless the stages read it
 * and nothing at all was acknowledged for as long. */
void gd_window_check(struct gd_window *w, uint64_t now, uint64_t oldest_ns,
    uint32_t inflight, int oldest_read);
/* The stages have read every block sent: probe when the window is full
 * (inflight) and no ACK came for a probe interval, nor since oldest_ns
 * (the oldest block in flight was sent). 1 when the window grew. */
int gd_window_probe(struct gd_window *w, uint64_t now, uint64_t oldest_ns,
    uint32_t inflight);
static inline uint32_t gd_window_size(const struct gd_window *w)
{
	return (uint32_t)w->w;
}

#endif
