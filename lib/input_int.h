/* What input.c (chunks, regions, the splitters) offers input_read.c (the
 * thread and loop readers, start, stop, done), which sits on it. */
#ifndef GD_INPUT_INT_H
#define GD_INPUT_INT_H

#include "input.h"

#define IDX_NONE UINT32_MAX

/* One read() of what the fd has into the current chunk, split into
 * regions: 0 to go on, -1 when the reader is done (end of input, an error
 * or a stop handed), 1 when nothing was there (a non-blocking fd). */
int gd_input_read_step(struct gd_input *in);
/* The end of the input: the rest bytes of the current chunk at
 * rest_off, then EOF (or ERROR with err, an errno); -1 when the loop
 * asked to stop. */
int gd_input_hand_end(struct gd_input *in, size_t rest_off, size_t rest,
    int err);
/* The loop is done with region r: its bytes leave the queue's count, its
 * chunk reference goes, r is freed. gd_input_done is this and, in loop
 * mode, polling again once the loop took enough. */
void gd_input_region_free(struct gd_input *in, struct gd_region *r);

#endif
