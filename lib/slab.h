/* A table of fixed-size slots, the one behind the publisher's pending
 * blocks, the subscriber's dedup set and a cluster member's held blocks:
 * one array grown by doubling up to a cap set by the owner, freed slots
 * chained through a uint32_t field of the slot itself (a slot costs its
 * own size and nothing more), and a hash from the 64-bit id at offset 0
 * of a slot to its index. Slots never used are handed out in index order
 * after the freed ones, so growing writes nothing into the new part of
 * the array: its pages stay untouched (not resident) until slots there
 * are taken, and a table just past a doubling costs what it holds, not
 * twice that. The index is the handle: it survives the array moving, a
 * pointer does not. The owner counts what it holds (its count means
 * blocks pending, entries remembered, ...).
 *
 * An owner keeps a typed view of the array in a union with the table
 * (union { struct gd_slab slab; struct gd_pend *e; }): base comes first
 * here so that e[i] reads it, and indexing stays a constant stride. */
#ifndef GD_SLAB_H
#define GD_SLAB_H

#include <stddef.h>
#include <stdint.h>

#include "idmap.h"

struct gd_slab {
	void *base;		/* first: an owner's typed view reads it */
	uint32_t size;		/* bytes a slot */
	uint32_t cap, free_head;
	uint32_t used;		/* slots [used, cap) were never taken */
	uint32_t first;		/* slots of the first allocation */
	uint32_t max;		/* the cap: never more slots than this */
	struct gd_idmap map;
};

/* An empty table of slots of size bytes; first slots on the first take,
 * at most max (GD_IDMAP_MAX_SLOTS at most); map_hint sizes the hash. 0,
 * or -1 when out of memory. */
int gd_slab_init(struct gd_slab *s, size_t size, uint32_t first,
    uint32_t max, uint32_t map_hint);
void gd_slab_free(struct gd_slab *s);
/* Double the array (up to max); 0, or -1 at the cap or out of memory. */
int gd_slab_grow(struct gd_slab *s);

/* An owner's take and put, for its slot type and free-chain field:
 * GD_SLAB_TYPED(pend, struct gd_pend, next) defines pend_take(s), a free
 * slot (contents undefined, not in the map; a freed one first, the
 * lowest never used one next) or GD_NONE at the cap or out of memory,
 * and pend_put(s, i), slot i free again (the caller took it out of the
 * map). Typed so that the hot path indexes with a constant
 * stride, as a hand-written free list would. */
#define GD_SLAB_TYPED(name, type, link)					\
static inline uint32_t name##_take(struct gd_slab *s)			\
{									\
	uint32_t i = s->free_head;					\
									\
	if (i != GD_NONE) {						\
		s->free_head = ((type *)s->base)[i].link;		\
		return i;						\
	}								\
	if (s->used == s->cap && gd_slab_grow(s) != 0)			\
		return GD_NONE;						\
	return s->used++;						\
}									\
static inline void name##_put(struct gd_slab *s, uint32_t i)		\
{									\
	((type *)s->base)[i].link = s->free_head;			\
	s->free_head = i;						\
}

static inline uint32_t gd_slab_find(const struct gd_slab *s, uint64_t id)
{
	return gd_idmap_get(&s->map, id, s->base, s->size);
}
/* Enter slot i, which holds id, in the map (id not in it); 0 or -1
 * (out of memory). The caller passes the id it has at hand. */
static inline int gd_slab_bind(struct gd_slab *s, uint32_t i, uint64_t id)
{
	return gd_idmap_put(&s->map, id, i, s->base, s->size);
}
/* The same, with the hint of a miss for gd_slab_bind_hint (idmap.h). */
static inline uint32_t gd_slab_find_hint(const struct gd_slab *s, uint64_t id,
    uint32_t *hint)
{
	return gd_idmap_find(&s->map, id, s->base, s->size, hint);
}
static inline int gd_slab_bind_hint(struct gd_slab *s, uint32_t i, uint64_t id,
    uint32_t hint)
{
	return gd_idmap_put_hint(&s->map, id, i, s->base, s->size, hint);
}
/* Take id (in the map) out of the map. */
static inline void gd_slab_unbind(struct gd_slab *s, uint64_t id)
{
	gd_idmap_del(&s->map, id, s->base, s->size);
}

#endif
