/* The end of a program's libuv loop, the same for gdpub and gdsub. */
#ifndef GD_LOOP_H
#define GD_LOOP_H

#include <uv.h>

/* Close every handle still open (they are owned by the engine, which
 * frees its structs itself afterwards), run the loop until their close
 * callbacks ran, and close the loop. A loop that still will not close
 * means a handle or request outlived its owner: a bug, reported with the
 * types of what is left. Returns uv_loop_close's result (0 when clean). */
int gd_loop_close(uv_loop_t *loop);

#endif
