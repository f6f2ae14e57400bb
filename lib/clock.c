/* The one clock of the library (clock.h). */
#include "clock.h"

#include <time.h>

static uint64_t read_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t gd_clock_mono_ns(void)
{
	return read_ns(CLOCK_MONOTONIC);
}

uint64_t gd_clock_real_ns(void)
{
	return read_ns(CLOCK_REALTIME);
}
