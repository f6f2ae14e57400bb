/* How many GD blocks a publisher keeps in flight. Every block sent ahead
 * of a subscriber pipeline waits in its queues (socket, gdsub, pipes), so
 * with a fixed window a pipeline slower than window / timeout would be
 * NACKed for blocks it simply had not reached yet. By Little's law a
 * block waits (blocks ahead of it) / (rate they are acknowledged at), so
 * the window aims at rate x timeout/4: once per round (at least 10 ms and
 * 32 ACKs) it moves toward the ACK rate measured over that round times a
 * quarter of the timeout, at most doubling and at least halving. It only
 * grows while it is what limits the publisher, and it is halved when a
 * block expires or the oldest pending block has waited half the timeout.
 * GDpub_maxPending caps it. Pure: the caller passes the clock. */
#ifndef GD_WINDOW_H
#define GD_WINDOW_H

#include <stdint.h>

#define GD_WINDOW_INIT 64		/* safe for 200 blocks/s at -t 2 */
#define GD_WINDOW_ROUND_NS 10000000ull	/* 10 ms */
#define GD_WINDOW_ROUND_ACKS 32

struct gd_window {
	double w;		/* the window, 1..max */
	uint32_t max;		/* GDpub_maxPending */
	uint64_t timeout_ns, target_ns;
	/* the current round */
	uint64_t r_start;
	uint64_t r_acks;
	uint32_t r_inflight;	/* most blocks in flight during it */
	uint64_t last_cut;	/* when the window was last halved */
	double rate;		/* ACKs per second over the last round */
};

void gd_window_init(struct gd_window *w, uint64_t timeout_ns, uint32_t max,
    uint64_t now);
/* n blocks were ACKed at now, with inflight blocks pending before them. */
void gd_window_acked(struct gd_window *w, uint64_t now, uint32_t n,
    uint32_t inflight);
/* A block expired (NACK, or a resend) at now. */
void gd_window_expired(struct gd_window *w, uint64_t now);
/* Periodic check (a few times a second): inflight blocks are pending, the
 * oldest sent at oldest_ns (0 when none). Ends a round whose ACKs stopped
 * coming; halves the window when the oldest has waited half the timeout. */
void gd_window_check(struct gd_window *w, uint64_t now, uint64_t oldest_ns,
    uint32_t inflight);
static inline uint32_t gd_window_size(const struct gd_window *w)
{
	return (uint32_t)w->w;
}

#endif
