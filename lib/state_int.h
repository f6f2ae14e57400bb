/* Shared by state.c (the file) and state_runs.c (the ranges in memory). */
#ifndef GD_STATE_INT_H
#define GD_STATE_INT_H

#include "state.h"

/* Merge [in->lo, in->hi) into run's ranges; past the bound of ranges
 * per run the oldest is forgotten. -1 when out of memory. */
int gd_srun_add_range(struct gd_srun *run, const struct gd_srange *in);

#endif
