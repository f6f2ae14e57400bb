/* The last N blocks a publisher published (GDpub_snapshot), replayed to a
 * subscriber that connects later, flagged snapshot. A ring: pushing past N
 * evicts the oldest, whose owner the caller releases. */
#ifndef GD_SNAPSHOT_H
#define GD_SNAPSHOT_H

#include <stdint.h>

struct gd_snap_ent {
	uint64_t id, seq, time_ns;
	const uint8_t *data;
	uint32_t len;
	void *owner;		/* what keeps data alive (an input chunk) */
};

struct gd_snapshot {
	struct gd_snap_ent *v;
	uint32_t cap, n, head;
};

/* cap 0: no snapshot. Returns -1 when out of memory. */
int gd_snapshot_init(struct gd_snapshot *s, uint32_t cap);
void gd_snapshot_free(struct gd_snapshot *s);
/* Add e (nothing with cap 0); returns the evicted entry's owner or NULL. */
void *gd_snapshot_push(struct gd_snapshot *s, const struct gd_snap_ent *e);
/* The i-th entry, oldest first (i < n). */
static inline const struct gd_snap_ent *gd_snapshot_at(
    const struct gd_snapshot *s, uint32_t i)
{
	return &s->v[(s->head + i) % s->cap];
}
/* Remove the oldest; returns its owner, NULL when empty (teardown). */
void *gd_snapshot_pop(struct gd_snapshot *s);

#endif
