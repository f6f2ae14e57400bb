/* id -> slot hash (see idmap.h). */
#include "idmap.h"

#include <stdlib.h>
#include <string.h>

static inline uint64_t key_at(const void *base, size_t stride, uint32_t slot)
{
	uint64_t k;
	memcpy(&k, (const char *)base + (size_t)slot * stride, sizeof(k));
	return k;
}

#define SLOT_MASK GD_IDMAP_MAX_SLOTS
#define EMPTY UINT32_MAX	/* tag 63 with slot SLOT_MASK: never a slot */

static inline uint64_t mix(uint64_t key)
{
	return key * 0x9E3779B97F4A7C15ull;
}

/* Runs of 64 consecutive ids land in consecutive buckets (ids mostly
 * arrive and resolve in order, so lookups walk memory sequentially instead
 * of missing the cache every time); the runs themselves are scattered by a
 * multiplicative hash so patterned ids do not pile up. */
static inline uint32_t home_of(const struct gd_idmap *m, uint64_t key)
{
	return ((uint32_t)(mix(key >> 6) >> m->shift) + (uint32_t)(key & 63)) &
	    m->mask;
}

static inline uint32_t tag(uint64_t h)
{
	return (uint32_t)((h >> 8) & 63) << GD_IDMAP_SLOT_BITS;
}

static inline uint32_t hash(const struct gd_idmap *m, uint64_t key)
{
	return home_of(m, key);
}

static int alloc_table(struct gd_idmap *m, unsigned bits)
{
	size_t cap = (size_t)1 << bits;
	m->t = malloc(cap * sizeof(*m->t));
	if (m->t == NULL)
		return -1;
	memset(m->t, 0xff, cap * sizeof(*m->t));
	m->mask = (uint32_t)(cap - 1);
	m->shift = 64 - bits;
	return 0;
}

int gd_idmap_init(struct gd_idmap *m, uint32_t cap_hint)
{
	unsigned bits = 4;
	while (bits < 31 && ((uint64_t)1 << bits) < (uint64_t)cap_hint * 2)
		bits++;
	m->count = 0;
	return alloc_table(m, bits);
}

void gd_idmap_free(struct gd_idmap *m)
{
	free(m->t);
	m->t = NULL;
	m->count = 0;
}

uint32_t gd_idmap_get(const struct gd_idmap *m, uint64_t key,
    const void *base, size_t stride)
{
	uint64_t h = mix(key);
	uint32_t i = home_of(m, key), b, t = tag(h);

	while ((b = m->t[i]) != EMPTY) {
		if ((b & ~SLOT_MASK) == t &&
		    key_at(base, stride, b & SLOT_MASK) == key)
			return b & SLOT_MASK;
		i = (i + 1) & m->mask;
	}
	return GD_NONE;
}

static void insert(struct gd_idmap *m, uint64_t key, uint32_t slot)
{
	uint64_t h = mix(key);
	uint32_t i = home_of(m, key);
	while (m->t[i] != EMPTY)
		i = (i + 1) & m->mask;
	m->t[i] = tag(h) | slot;
}

int gd_idmap_put(struct gd_idmap *m, uint64_t key, uint32_t slot,
    const void *base, size_t stride)
{
	if (slot >= SLOT_MASK)
		return -1;
	if ((uint64_t)(m->count + 1) * 2 > (uint64_t)m->mask + 1) {
		struct gd_idmap n;
		uint32_t i;
		unsigned bits = 64 - m->shift + 1;
		if (bits > 31 || alloc_table(&n, bits) != 0)
			return -1;
		for (i = 0; i <= m->mask; i++)
			if (m->t[i] != EMPTY)
				insert(&n, key_at(base, stride, m->t[i] & SLOT_MASK),
				    m->t[i] & SLOT_MASK);
		free(m->t);
		m->t = n.t;
		m->mask = n.mask;
		m->shift = n.shift;
	}
	insert(m, key, slot);
	m->count++;
	return 0;
}

void gd_idmap_del(struct gd_idmap *m, uint64_t key, const void *base,
    size_t stride)
{
	uint32_t i = hash(m, key), j, s;

	while ((s = m->t[i]) != EMPTY &&
	    key_at(base, stride, s & SLOT_MASK) != key)
		i = (i + 1) & m->mask;
	if (s == EMPTY)
		return;
	m->count--;
	/* backward shift: move later entries of the run into the hole */
	j = i;
	for (;;) {
		uint32_t h;
		j = (j + 1) & m->mask;
		if ((s = m->t[j]) == EMPTY)
			break;
		h = hash(m, key_at(base, stride, s & SLOT_MASK));
		/* s may move to i only if its home h is not in (i, j] */
		if (((j - h) & m->mask) >= ((j - i) & m->mask)) {
			m->t[i] = s;
			i = j;
		}
	}
	m->t[i] = EMPTY;
}
