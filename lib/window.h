/* How many GD blocks a publisher keeps in flight. Every block sent ahead
 * of a subscriber pipeline waits in its queues (socket, gdsub, pipes), so
 * with a fixed window a pipeline slower than window / timeout would be
 * NACKed for blocks it simply had not reached yet. By Little's law a
 * block waits (blocks ahead of it) / (rate they are acknowledged at), so
 * the window aims at rate x timeout/8: once per round (at least 10 ms and
 * 32 ACKs) it moves toward the ACK rate measured over that round times an
 * eighth of the timeout, at most doubling. An eighth, not more: the
 * window cannot pull back what is already in flight, so when a pipeline
 * slows down 4x at once (a busy machine) the blocks in flight still reach
 * it within half the timeout. It is controlled by delay as well as by
 * rate: a round whose acknowledged blocks waited more than a quarter of
 * the timeout ends at once and sets the window to what the measured rate
 * allows, however much smaller; it only grows while it is what limits the
 * publisher; it is halved when a block the pipelines owe expires or the
 * oldest of them has waited a quarter of the timeout without an ACK.
 * GDpub_maxPending caps it; GDpub_window fixes it. Pure: the caller
 * passes the clock. */
#ifndef GD_WINDOW_H
#define GD_WINDOW_H

#include <stdint.h>

#define GD_WINDOW_INIT 64		/* safe for 200 blocks/s at -t 2 */
#define GD_WINDOW_ROUND_NS 10000000ull	/* 10 ms */
#define GD_WINDOW_ROUND_ACKS 32

struct gd_window {
	double w;		/* the window, 1..max */
	uint32_t max;		/* GDpub_maxPending */
	int fixed;		/* GDpub_window=N: never moves */
	uint64_t timeout_ns, target_ns;
	/* the current round */
	uint64_t r_start;
	uint64_t r_acks;
	uint64_t r_delay;	/* longest send -> ACK in it */
	uint32_t r_inflight;	/* most blocks in flight during it */
	uint64_t last_cut;	/* when the window was last cut */
	double rate;		/* ACKs per second over the last round */
	uint64_t delay;		/* r_delay of the last round */
};

/* fixed > 0: the window is fixed at that (capped by max). */
void gd_window_init(struct gd_window *w, uint64_t timeout_ns, uint32_t max,
    uint32_t fixed, uint64_t now);
/* n blocks were ACKed at now, with inflight blocks in flight before them;
 * the longest of them had waited delay_ns since it was sent. */
void gd_window_acked(struct gd_window *w, uint64_t now, uint32_t n,
    uint32_t inflight, uint64_t delay_ns);
/* A block the pipelines owed expired (NACK, or a resend) at now. */
void gd_window_expired(struct gd_window *w, uint64_t now);
/* Periodic check (a few times a second): inflight blocks are in flight,
 * the oldest sent at oldest_ns (0 when none). Ends a round whose ACKs
 * stopped coming; halves the window when the oldest has waited a quarter
 * of the timeout. */
void gd_window_check(struct gd_window *w, uint64_t now, uint64_t oldest_ns,
    uint32_t inflight);
static inline uint32_t gd_window_size(const struct gd_window *w)
{
	return (uint32_t)w->w;
}

#endif
