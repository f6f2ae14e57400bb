/* Shared batch buffers: blocks and control frames are encoded once into a
 * reference-counted buffer that every subscriber connection writes with
 * its own uv_write; the last writer to finish frees it.
 *
 * Batches of the usual size come from a pool of buffers mapped from the
 * system, not from the heap: a burst of them (a subscriber behind, up to
 * gdpub's backlog mark) freed between long-lived heap chunks (payloads of
 * pending blocks) would stay resident for good, as the allocator keeps
 * such pages. The pool keeps the buffers freed while a burst drains, for
 * reuse without a fault, until its owner trims it (every connection
 * drained): then all but a few go back to the system. */
#ifndef GD_BCAST_H
#define GD_BCAST_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct gd_bpool;

struct gd_bcast {
	uint32_t refs;
	uint32_t nblk;		/* block frames in it */
	size_t len, cap;
	struct gd_bpool *pool;	/* where it goes when done; NULL: the heap */
	struct gd_bcast *next;	/* the pool's free list */
	/* a large block's payload, not copied: the bytes are data[0, hdr)
	 * then ext (len counts both); ext_done(ext_ctx, ext_ref) once the
	 * last writer is done (NULL ext: the bytes are data[0, len)) */
	const uint8_t *ext;
	size_t hdr;
	void (*ext_done)(void *ctx, void *ref);
	void *ext_ctx, *ext_ref;
	uint8_t data[];
};

struct gd_bpool {
	struct gd_bcast *free;
	size_t bytes;		/* one mapping: header and data, whole pages */
	uint32_t nfree;
	uint32_t keep;		/* free buffers a trim leaves */
};

/* A pool of buffers of at least cap data bytes (rounded up to whole
 * pages) that keeps keep free buffers across a trim. */
void gd_bpool_init(struct gd_bpool *p, size_t cap, uint32_t keep);
/* A buffer held once by the caller (len 0); NULL when out of memory. */
struct gd_bcast *gd_bpool_get(struct gd_bpool *p);
void gd_bpool_put(struct gd_bpool *p, struct gd_bcast *b);
/* Unmap the free buffers past keep. */
void gd_bpool_trim(struct gd_bpool *p);
/* Unmap every free buffer (the owner's teardown, once none is held). */
void gd_bpool_free(struct gd_bpool *p);

/* A heap buffer of cap bytes, held once by the caller; NULL when out of
 * memory. */
static inline struct gd_bcast *gd_bcast_new(size_t cap)
{
	struct gd_bcast *b = malloc(sizeof(*b) + cap);

	if (b != NULL) {
		b->refs = 1;
		b->nblk = 0;
		b->len = 0;
		b->cap = cap;
		b->pool = NULL;
		b->ext = NULL;
	}
	return b;
}

static inline void gd_bcast_ref(struct gd_bcast *b) { b->refs++; }
static inline void gd_bcast_unref(struct gd_bcast *b)
{
	if (--b->refs != 0)
		return;
	if (b->ext != NULL && b->ext_done != NULL)
		b->ext_done(b->ext_ctx, b->ext_ref);
	if (b->pool != NULL)
		gd_bpool_put(b->pool, b);
	else
		free(b);
}

#endif
