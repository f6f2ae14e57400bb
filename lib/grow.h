/* One capped grow for the typed arrays (a queue of acknowledgements, a
 * table of runs, ...), as dbuf.h is for bytes: every array states the
 * most elements it may ever hold, and running into that bound is a
 * failure its owner reports, never growth without end nor a size that
 * wraps around. */
#ifndef GD_GROW_H
#define GD_GROW_H

#include <stddef.h>

/* Make *base (an array of *cap elements of elem bytes, NULL when *cap is
 * 0) hold at least need elements: doubled (from 16 at least), never past
 * max. 0; or -1 when need is over max, the bytes would not fit a size_t,
 * or out of memory, and then *base and *cap are as they were. */
int gd_grow_slow(void **base, size_t *cap, size_t need, size_t elem,
    size_t max);
static inline __attribute__((warn_unused_result)) int gd_grow(void **base,
    size_t *cap, size_t need, size_t elem, size_t max)
{
	return need <= *cap ? 0 : gd_grow_slow(base, cap, need, elem, max);
}
/* Why a grow of an array holding have elements (at most max) failed, in
 * buf, for its owner's message: "N waiting already" at the cap, else "out
 * of memory". Returns buf. */
const char *gd_grow_why(size_t have, size_t max, char *buf, size_t size);
/* The same for an array pointer arr of any type, its capacity (a size_t)
 * and the count it must reach. */
#define GD_GROW(arr, cap, need, max) \
	gd_grow((void **)&(arr), &(cap), (need), sizeof(*(arr)), (max))

#endif
