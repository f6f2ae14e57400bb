/* A subscriber's memory of the blocks it has seen from one publisher: id ->
 * the latest block with that id (its sequence index and state). Entries are
 * kept in arrival order so the publisher's floor (every seq below it
 * resolved, never sent again) frees them in O(1) each. An entry below the
 * floor that still waits for acknowledgements leaves that order instead of
 * holding the rest back, and is freed once its last copy is acknowledged.
 * The policy that uses this set is lib/receive.c. */
#ifndef GD_DEDUP_H
#define GD_DEDUP_H

#include <stdint.h>

#include "slab.h"

enum gd_dstate {
	GD_DS_EMITTED = 1,	/* written on stdout, waiting for gdack */
	GD_DS_ACKED = 2,	/* acknowledged to the publisher */
	GD_DS_DONE = 3,		/* seen, will never be acknowledged */
	GD_DS_GONE = 4,		/* replaced by a newer block with the same id:
				 * no longer in the map, freed when pruned */
};

#define GD_DEDUP_OFF (GD_NONE - 1)	/* fnext: out of the arrival order */
#define GD_DEDUP_MAX_OLDER UINT8_MAX

struct gd_dent {
	uint64_t id;		/* first: the idmap key */
	uint64_t seq;
	uint32_t fnext;		/* arrival order; free list; GD_DEDUP_OFF */
	uint8_t state;
	uint8_t older;		/* copies of earlier blocks with this id written
				 * and not yet acknowledged */
	uint16_t extra;		/* --dedup none: copies emitted again, unacked */
};

/* copies still expected back from gdack */
static inline unsigned gd_dent_waiting(const struct gd_dent *e)
{
	return (e->state == GD_DS_EMITTED) + e->extra + e->older;
}

struct gd_dedup {
	union {			/* e: the typed view of the slots */
		struct gd_slab slab;
		struct gd_dent *e;
	};
	uint32_t count;
	uint32_t fhead, ftail;
	uint32_t off;		/* entries waiting out of the arrival order */
	uint64_t max_seq;	/* highest seq ever added: the blocks sent so far */
};

int gd_dedup_init(struct gd_dedup *d);
void gd_dedup_free(struct gd_dedup *d);
static inline uint32_t gd_dedup_find(const struct gd_dedup *d, uint64_t id)
{
	return gd_slab_find(&d->slab, id);
}
static inline struct gd_dent *gd_dedup_at(struct gd_dedup *d, uint32_t s)
{
	return &d->e[s];
}
static inline uint32_t gd_dedup_find_hint(const struct gd_dedup *d,
    uint64_t id, uint32_t *hint)
{
	return gd_slab_find_hint(&d->slab, id, hint);
}
/* id must not be present; returns the slot or GD_NONE (out of memory) */
uint32_t gd_dedup_add(struct gd_dedup *d, uint64_t id, uint64_t seq,
    uint32_t state);
/* The same after gd_dedup_find_hint missed id, the set unchanged since:
 * the insert does not probe again. */
uint32_t gd_dedup_add_hint(struct gd_dedup *d, uint64_t id, uint64_t seq,
    uint32_t state, uint32_t hint);
/* A newer block with the id of slot arrived: a new entry takes the id
 * (the old one is retired), at the tail of the arrival order. Returns the
 * new slot (older 0: the caller carries the old entry's waiting copies
 * over) or GD_NONE (out of memory; the old entry is then unchanged). */
uint32_t gd_dedup_replace(struct gd_dedup *d, uint32_t slot, uint64_t seq,
    uint32_t state);
/* Forget entries older than floor that wait for nothing; those that still
 * wait leave the arrival order. Returns how many were freed. */
uint32_t gd_dedup_prune(struct gd_dedup *d, uint64_t floor);
/* The entry at slot waits for nothing more: free it now if the floor
 * already passed it (it left the arrival order). Returns 1 if freed. */
int gd_dedup_settled(struct gd_dedup *d, uint32_t slot);

#endif
