/* Shared batch buffers: blocks and control frames are encoded once into a
 * reference-counted buffer that every subscriber connection writes with
 * its own uv_write; the last writer to finish frees it. */
#ifndef GD_BCAST_H
#define GD_BCAST_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct gd_bcast {
	uint32_t refs;
	uint32_t nblk;		/* block frames in it */
	size_t len, cap;
	uint8_t data[];
};

/* A buffer of cap bytes, held once by the caller; NULL when out of memory. */
static inline struct gd_bcast *gd_bcast_new(size_t cap)
{
	struct gd_bcast *b = malloc(sizeof(*b) + cap);

	if (b != NULL) {
		b->refs = 1;
		b->nblk = 0;
		b->len = 0;
		b->cap = cap;
	}
	return b;
}

static inline void gd_bcast_ref(struct gd_bcast *b) { b->refs++; }
static inline void gd_bcast_unref(struct gd_bcast *b)
{
	if (--b->refs == 0)
		free(b);
}

#endif
