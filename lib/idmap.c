/* id -> slot hash (see idmap.h). Deletion leaves a tombstone, so it costs
 * O(1) and reads nothing from the caller's array; tombstones are reused by
 * inserts and cleared by a rebuild once they crowd the table. */
#include "idmap.h"

#include <stdlib.h>
#include <string.h>

#define SLOT_MASK ((1u << GD_IDMAP_SLOT_BITS) - 1)
#define EMPTY UINT32_MAX		/* never a slot (slots < SLOT_MASK) */
#define TOMB (UINT32_MAX - 1)

static inline uint64_t key_at(const void *base, size_t stride, uint32_t slot)
{
	uint64_t k;
	memcpy(&k, (const char *)base + (size_t)slot * stride, sizeof(k));
	return k;
}

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

/* 6 bits of the hash beside the slot: a probe that meets another id
 * rarely needs to read it */
static inline uint32_t tag_of(uint64_t key)
{
	return (uint32_t)((mix(key) >> 8) & 63) << GD_IDMAP_SLOT_BITS;
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
	m->tombs = 0;
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

/* The slot holding key, or GD_NONE with *end at the empty cell where the
 * probe ended (where a put of key goes until the table changes). */
static inline uint32_t probe(const struct gd_idmap *m, uint64_t key,
    const void *base, size_t stride, uint32_t *end)
{
	uint32_t i = home_of(m, key), b, t = tag_of(key);

	while ((b = m->t[i]) != EMPTY) {
		if (b != TOMB && (b & ~SLOT_MASK) == t &&
		    key_at(base, stride, b & SLOT_MASK) == key)
			return b & SLOT_MASK;
		i = (i + 1) & m->mask;
	}
	*end = i;
	return GD_NONE;
}

uint32_t gd_idmap_get(const struct gd_idmap *m, uint64_t key,
    const void *base, size_t stride)
{
	uint32_t end;

	return probe(m, key, base, stride, &end);
}

uint32_t gd_idmap_find(const struct gd_idmap *m, uint64_t key,
    const void *base, size_t stride, uint32_t *hint)
{
	return probe(m, key, base, stride, hint);
}

static void insert(struct gd_idmap *m, uint64_t key, uint32_t slot)
{
	uint32_t i = home_of(m, key);
	while (m->t[i] != EMPTY && m->t[i] != TOMB)
		i = (i + 1) & m->mask;
	if (m->t[i] == TOMB)
		m->tombs--;
	m->t[i] = tag_of(key) | slot;
}

/* Rebuild into 2^bits buckets, dropping tombstones. */
static int rebuild(struct gd_idmap *m, unsigned bits, const void *base,
    size_t stride)
{
	struct gd_idmap n;
	uint32_t i;

	if (bits > 31 || alloc_table(&n, bits) != 0)
		return -1;
	for (i = 0; i <= m->mask; i++)
		if (m->t[i] != EMPTY && m->t[i] != TOMB)
			insert(&n, key_at(base, stride, m->t[i] & SLOT_MASK),
			    m->t[i] & SLOT_MASK);
	free(m->t);
	m->t = n.t;
	m->mask = n.mask;
	m->shift = n.shift;
	m->tombs = 0;
	return 0;
}

/* live entries and tombstones together stay under half the table */
static inline int has_room(const struct gd_idmap *m)
{
	return (uint64_t)(m->count + m->tombs + 1) * 2 <= (uint64_t)m->mask + 1;
}

/* Rebuild for one more: grown when really full, else just without its
 * tombstones; 0 or -1 (out of memory). */
static int make_room(struct gd_idmap *m, const void *base, size_t stride)
{
	unsigned bits = 64 - m->shift;

	if ((uint64_t)(m->count + 1) * 4 > (uint64_t)m->mask + 1)
		bits++;		/* really full: grow */
	return rebuild(m, bits, base, stride);
}

int gd_idmap_put(struct gd_idmap *m, uint64_t key, uint32_t slot,
    const void *base, size_t stride)
{
	if (slot >= GD_IDMAP_MAX_SLOTS)	/* the top two are EMPTY, TOMB */
		return -1;
	if (!has_room(m) && make_room(m, base, stride) != 0)
		return -1;
	insert(m, key, slot);
	m->count++;
	return 0;
}

int gd_idmap_put_hint(struct gd_idmap *m, uint64_t key, uint32_t slot,
    const void *base, size_t stride, uint32_t hint)
{
	if (slot >= GD_IDMAP_MAX_SLOTS)
		return -1;
	if (has_room(m) && hint <= m->mask && m->t[hint] == EMPTY) {
		m->t[hint] = tag_of(key) | slot;	/* where the miss ended */
	} else {
		if (!has_room(m) && make_room(m, base, stride) != 0)
			return -1;
		insert(m, key, slot);	/* rebuilt: probe anew */
	}
	m->count++;
	return 0;
}

void gd_idmap_del(struct gd_idmap *m, uint64_t key, const void *base,
    size_t stride)
{
	uint32_t i = home_of(m, key), b, t = tag_of(key);

	while ((b = m->t[i]) != EMPTY) {
		if (b != TOMB && (b & ~SLOT_MASK) == t &&
		    key_at(base, stride, b & SLOT_MASK) == key)
			break;
		i = (i + 1) & m->mask;
	}
	if (b == EMPTY)
		return;
	m->count--;
	/* at the end of a run no probe needs the marker: empty it, and any
	 * tombstones just before it */
	if (m->t[(i + 1) & m->mask] == EMPTY) {
		m->t[i] = EMPTY;
		i = (i - 1) & m->mask;
		while (m->t[i] == TOMB) {
			m->t[i] = EMPTY;
			m->tombs--;
			i = (i - 1) & m->mask;
		}
	} else {
		m->t[i] = TOMB;
		m->tombs++;
	}
}
