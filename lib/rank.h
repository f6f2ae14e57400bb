/* The first N of many items in (key, ord) order, in O(items log N) time
 * and O(N) memory: what gdpub needs to answer "pending sort=id limit=10"
 * without sorting a million pending blocks. */
#ifndef GD_RANK_H
#define GD_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "dbuf.h"

struct gd_rank_item {
	uint64_t key;
	uint32_t ord;		/* tie-break: lower first */
	uint32_t val;		/* the caller's (a slot) */
};

struct gd_rank {
	struct gd_rank_item *v;	/* the items kept: buf's bytes */
	size_t n, max;
	struct gd_dbuf buf;	/* capped at max items (none: every item) */
};

/* Keep the max smallest items; max 0 keeps every item. */
void gd_rank_init(struct gd_rank *r, size_t max);
void gd_rank_free(struct gd_rank *r);
/* 0, or -1 when out of memory */
int gd_rank_add(struct gd_rank *r, uint64_t key, uint32_t ord, uint32_t val);
/* Sort what was kept, smallest first: r->v[0 .. r->n). */
void gd_rank_sort(struct gd_rank *r);

#endif
