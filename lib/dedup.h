/* A subscriber's memory of the blocks it has seen from one publisher: id ->
 * state (emitted and waiting for gdack, acknowledged, dropped). Entries are
 * also kept in arrival order so the publisher's floor (every seq below it
 * resolved, never sent again) frees them in O(1) each; an entry still
 * waiting for an ack (of the block or of a copy) is kept until then. */
#ifndef GD_DEDUP_H
#define GD_DEDUP_H

#include <stdint.h>

#include "idmap.h"

enum gd_dstate {
	GD_DS_EMITTED = 1,	/* written on stdout, waiting for gdack */
	GD_DS_ACKED = 2,	/* acknowledged to the publisher */
	GD_DS_DONE = 3,		/* seen, will never be acknowledged */
};

struct gd_dent {
	uint64_t id;		/* first: the idmap key */
	uint64_t seq;
	uint32_t fnext;		/* arrival order; free list */
	uint16_t state;
	uint16_t extra;		/* --dedup none: copies emitted again, unacked */
};

struct gd_dedup {
	struct gd_dent *e;
	uint32_t cap, count, free_head;
	uint32_t fhead, ftail;
	struct gd_idmap map;
	uint64_t max_seq;	/* highest seq ever added: the blocks sent so far */
};

int gd_dedup_init(struct gd_dedup *d);
void gd_dedup_free(struct gd_dedup *d);
static inline uint32_t gd_dedup_find(const struct gd_dedup *d, uint64_t id)
{
	return gd_idmap_get(&d->map, id, d->e, sizeof(*d->e));
}
static inline struct gd_dent *gd_dedup_at(struct gd_dedup *d, uint32_t s)
{
	return &d->e[s];
}
/* id must not be present; returns the slot or GD_NONE (out of memory) */
uint32_t gd_dedup_add(struct gd_dedup *d, uint64_t id, uint64_t seq,
    uint32_t state);
/* Forget entries older than floor that wait for nothing; stops at the
 * first one still waiting for its ack. Returns how many were freed. */
uint32_t gd_dedup_prune(struct gd_dedup *d, uint64_t floor);

#endif
