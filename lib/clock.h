/* The one clock of the library: every time a file of lib/ reads comes
 * from here. Monotonic nanoseconds for deadlines, rounds and ages (the
 * same clock as libuv's uv_hrtime, so a timer armed from it agrees);
 * real (wall) nanoseconds for what is shown or stamped: a block's send
 * time, %t, log timestamps, a run's epoch. The rules (deliver, window,
 * qos, receive, cluster, journal, state) never read it: the engines pass
 * them the time of the callback they run in. */
#ifndef GD_CLOCK_H
#define GD_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC, in nanoseconds */
uint64_t gd_clock_mono_ns(void);
/* CLOCK_REALTIME, in nanoseconds since the epoch */
uint64_t gd_clock_real_ns(void);
/* Monotonic seconds, for the blocking clients' waits */
static inline double gd_clock_mono_s(void)
{
	return (double)gd_clock_mono_ns() / 1e9;
}

#endif
