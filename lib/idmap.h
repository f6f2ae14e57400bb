/* An open-addressing hash from 64-bit ids to slot numbers (< 2^26). It keeps
 * only the slot: the id lives in the caller's array (first field of each
 * element), so a pending block costs 4-8 bytes here. Linear probing;
 * deletion leaves tombstones, cleared by rebuilds. */
#ifndef GD_IDMAP_H
#define GD_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#define GD_NONE UINT32_MAX
/* Buckets hold a 26-bit slot and a 6-bit tag from the hash, so a probe
 * that misses rarely touches the caller's array (no cache miss). */
#define GD_IDMAP_SLOT_BITS 26
#define GD_IDMAP_MAX_SLOTS ((1u << GD_IDMAP_SLOT_BITS) - 2)

struct gd_idmap {
	uint32_t *t;
	uint32_t mask;		/* capacity - 1, capacity a power of two */
	uint32_t count;
	uint32_t tombs;		/* deleted buckets not yet reused */
	unsigned shift;
};

/* base/stride: the caller's element array; the u64 key is at offset 0 */
int gd_idmap_init(struct gd_idmap *m, uint32_t cap_hint);
void gd_idmap_free(struct gd_idmap *m);
uint32_t gd_idmap_get(const struct gd_idmap *m, uint64_t key,
    const void *base, size_t stride);
/* key must not be present; returns 0 or -1 (out of memory) */
int gd_idmap_put(struct gd_idmap *m, uint64_t key, uint32_t slot,
    const void *base, size_t stride);
/* gd_idmap_get; when key is absent, *hint is where the probe ended, for
 * gd_idmap_put_hint: a miss and the insert after it probe once. */
uint32_t gd_idmap_find(const struct gd_idmap *m, uint64_t key,
    const void *base, size_t stride, uint32_t *hint);
/* gd_idmap_put of a key gd_idmap_find missed, the map unchanged since. */
int gd_idmap_put_hint(struct gd_idmap *m, uint64_t key, uint32_t slot,
    const void *base, size_t stride, uint32_t hint);
/* remove key (present); */
void gd_idmap_del(struct gd_idmap *m, uint64_t key, const void *base,
    size_t stride);

#endif
