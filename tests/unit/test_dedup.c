/* Unit tests of lib/dedup.c (a subscriber's set of seen block ids, pruned
 * by the publisher's floor, waiting entries set aside, ids replaced) and
 * lib/idmap.c (the id -> slot hash under it and under the pending table): backward-shift deletion, rehash, and a
 * long random run against a plain reference array. Fixed seeds. */
#include "dedup.h"
#include "idmap.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 42;

static uint64_t rnd(void)	/* splitmix64 */
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- dedup ---- */

TEST(dedup_add_find)
{
	struct gd_dedup d;
	uint32_t a, b, c;

	ASSERT_EQ(gd_dedup_init(&d), 0);
	ASSERT_EQ(d.count, 0);
	ASSERT_EQ(gd_dedup_find(&d, 1), GD_NONE);
	a = gd_dedup_add(&d, 1, 10, GD_DS_EMITTED);
	b = gd_dedup_add(&d, 0, 11, GD_DS_ACKED);
	c = gd_dedup_add(&d, UINT64_MAX, 12, GD_DS_DONE);
	ASSERT(a != GD_NONE && b != GD_NONE && c != GD_NONE);
	ASSERT(a != b && b != c && a != c);
	ASSERT_EQ(d.count, 3);
	ASSERT_EQ(gd_dedup_find(&d, 1), a);
	ASSERT_EQ(gd_dedup_find(&d, 0), b);
	ASSERT_EQ(gd_dedup_find(&d, UINT64_MAX), c);
	ASSERT_EQ(gd_dedup_find(&d, 2), GD_NONE);
	ASSERT_U64(gd_dedup_at(&d, a)->id, 1);
	ASSERT_U64(gd_dedup_at(&d, a)->seq, 10);
	ASSERT_EQ(gd_dedup_at(&d, a)->state, GD_DS_EMITTED);
	ASSERT_EQ(gd_dedup_at(&d, b)->state, GD_DS_ACKED);
	ASSERT_EQ(gd_dedup_at(&d, c)->state, GD_DS_DONE);
	/* arrival order */
	ASSERT_EQ(d.fhead, a);
	ASSERT_EQ(d.ftail, c);
	gd_dedup_free(&d);
}

TEST(dedup_prune_sets_waiting_aside)
{
	struct gd_dedup d;
	uint32_t s[6];
	uint64_t i;

	ASSERT_EQ(gd_dedup_init(&d), 0);
	for (i = 0; i < 6; i++)
		s[i] = gd_dedup_add(&d, 100 + i, i + 1,
		    i == 2 ? GD_DS_EMITTED : i == 3 ? GD_DS_DONE : GD_DS_ACKED);
	/* nothing below floor 1 */
	ASSERT_EQ(gd_dedup_prune(&d, 1), 0);
	ASSERT_EQ(d.count, 6);
	/* floor 5: seqs 1-4 leave the order; 3 (EMITTED) waits for gdack
	 * aside instead of holding back the rest */
	ASSERT_EQ(gd_dedup_prune(&d, 5), 3);
	ASSERT_EQ(d.count, 3);
	ASSERT_EQ(d.off, 1);
	ASSERT_EQ(gd_dedup_find(&d, 100), GD_NONE);
	ASSERT_EQ(gd_dedup_find(&d, 101), GD_NONE);
	ASSERT_EQ(gd_dedup_find(&d, 102), s[2]);
	ASSERT_EQ(gd_dedup_at(&d, s[2])->fnext, GD_DEDUP_OFF);
	ASSERT_EQ(gd_dedup_find(&d, 103), GD_NONE);
	ASSERT_EQ(gd_dedup_find(&d, 104), s[4]);
	ASSERT_EQ(d.fhead, s[4]);
	ASSERT_EQ(gd_dedup_prune(&d, 5), 0);
	/* still waiting: settling does nothing */
	ASSERT_EQ(gd_dedup_settled(&d, s[2]), 0);
	/* acknowledged: freed at once, the floor passed it long ago */
	gd_dedup_at(&d, s[2])->state = GD_DS_ACKED;
	ASSERT_EQ(gd_dedup_settled(&d, s[2]), 1);
	ASSERT_EQ(gd_dedup_find(&d, 102), GD_NONE);
	ASSERT_EQ(d.off, 0);
	ASSERT_EQ(d.count, 2);
	/* an entry in the order is freed by the prune, not by settling */
	ASSERT_EQ(gd_dedup_settled(&d, s[4]), 0);
	ASSERT_EQ(gd_dedup_prune(&d, 7), 2);
	ASSERT_EQ(d.count, 0);
	ASSERT_EQ(d.fhead, GD_NONE);
	ASSERT_EQ(d.ftail, GD_NONE);
	ASSERT_EQ(gd_dedup_prune(&d, UINT64_MAX), 0);
	/* usable after being emptied */
	s[0] = gd_dedup_add(&d, 200, 20, GD_DS_ACKED);
	ASSERT_EQ(d.fhead, s[0]);
	ASSERT_EQ(d.ftail, s[0]);
	ASSERT_EQ(gd_dedup_find(&d, 200), s[0]);
	gd_dedup_free(&d);
}

TEST(dedup_waiting_copies_keep_entries)
{
	struct gd_dedup d;
	uint32_t a, b;

	ASSERT_EQ(gd_dedup_init(&d), 0);
	a = gd_dedup_add(&d, 1, 1, GD_DS_ACKED);
	b = gd_dedup_add(&d, 2, 2, GD_DS_ACKED);
	gd_dedup_at(&d, a)->extra = 1;	/* --dedup none copy out */
	gd_dedup_at(&d, b)->older = 2;	/* earlier blocks' copies out */
	ASSERT_EQ(gd_dent_waiting(gd_dedup_at(&d, a)), 1);
	ASSERT_EQ(gd_dent_waiting(gd_dedup_at(&d, b)), 2);
	ASSERT_EQ(gd_dedup_prune(&d, 10), 0);
	ASSERT_EQ(d.off, 2);
	ASSERT_EQ(d.count, 2);
	gd_dedup_at(&d, a)->extra = 0;
	ASSERT_EQ(gd_dedup_settled(&d, a), 1);
	gd_dedup_at(&d, b)->older = 1;
	ASSERT_EQ(gd_dedup_settled(&d, b), 0);
	gd_dedup_at(&d, b)->older = 0;
	ASSERT_EQ(gd_dedup_settled(&d, b), 1);
	ASSERT_EQ(d.count, 0);
	ASSERT_EQ(d.off, 0);
	gd_dedup_free(&d);
}

TEST(dedup_replace)
{
	struct gd_dedup d;
	uint32_t a, b, n, m;

	ASSERT_EQ(gd_dedup_init(&d), 0);
	a = gd_dedup_add(&d, 7, 1, GD_DS_EMITTED);
	b = gd_dedup_add(&d, 8, 2, GD_DS_ACKED);
	/* id 7 published again as seq 3: a new entry at the tail */
	n = gd_dedup_replace(&d, a, 3, GD_DS_EMITTED);
	ASSERT(n != GD_NONE && n != a && n != b);
	ASSERT_EQ(gd_dedup_find(&d, 7), n);
	ASSERT_U64(gd_dedup_at(&d, n)->seq, 3);
	ASSERT_EQ(gd_dedup_at(&d, n)->older, 0);
	ASSERT_EQ(gd_dedup_at(&d, a)->state, GD_DS_GONE);
	ASSERT_EQ(d.count, 3);
	ASSERT_EQ(d.ftail, n);
	ASSERT_U64(d.max_seq, 3);
	/* the retired entry goes with the prune, leaving the map alone */
	ASSERT_EQ(gd_dedup_prune(&d, 3), 2);
	ASSERT_EQ(d.count, 1);
	ASSERT_EQ(gd_dedup_find(&d, 7), n);
	ASSERT_EQ(gd_dedup_find(&d, 8), GD_NONE);
	/* replacing an entry that waits aside frees it at once */
	ASSERT_EQ(gd_dedup_prune(&d, 4), 0);
	ASSERT_EQ(d.off, 1);
	m = gd_dedup_replace(&d, n, 9, GD_DS_DONE);
	ASSERT(m != GD_NONE);
	ASSERT_EQ(d.off, 0);
	ASSERT_EQ(d.count, 1);
	ASSERT_EQ(gd_dedup_find(&d, 7), m);
	ASSERT_EQ(gd_dedup_at(&d, m)->state, GD_DS_DONE);
	ASSERT_EQ(d.fhead, m);
	gd_dedup_free(&d);
}

TEST(dedup_prune_frees_and_reuses)
{
	struct gd_dedup d;
	uint32_t a, b, c, x, y;

	ASSERT_EQ(gd_dedup_init(&d), 0);
	a = gd_dedup_add(&d, 1, 1, GD_DS_ACKED);
	b = gd_dedup_add(&d, 2, 2, GD_DS_DONE);
	c = gd_dedup_add(&d, 3, 3, GD_DS_ACKED);
	ASSERT_EQ(gd_dedup_prune(&d, 3), 2);
	x = gd_dedup_add(&d, 4, 4, GD_DS_EMITTED);
	y = gd_dedup_add(&d, 5, 5, GD_DS_EMITTED);
	ASSERT((x == a || x == b) && (y == a || y == b) && x != y);
	ASSERT_EQ(gd_dedup_find(&d, 4), x);
	ASSERT_EQ(gd_dedup_find(&d, 5), y);
	ASSERT_EQ(gd_dedup_find(&d, 1), GD_NONE);
	ASSERT_EQ(gd_dedup_find(&d, 3), c);
	ASSERT_EQ(gd_dedup_at(&d, x)->state, GD_DS_EMITTED);
	ASSERT_U64(gd_dedup_at(&d, x)->seq, 4);
	/* arrival order continues from 3: c, x, y */
	ASSERT_EQ(d.fhead, c);
	ASSERT_EQ(d.ftail, y);
	ASSERT_EQ(gd_dedup_prune(&d, 100), 1);	/* c; x and y wait aside */
	ASSERT_EQ(d.fhead, GD_NONE);
	ASSERT_EQ(d.off, 2);
	/* a long steady state of add + prune never grows the array */
	{
		uint64_t i;
		uint32_t freed = 0;
		gd_dedup_at(&d, x)->state = GD_DS_ACKED;
		gd_dedup_at(&d, y)->state = GD_DS_ACKED;
		ASSERT_EQ(gd_dedup_settled(&d, x) + gd_dedup_settled(&d, y), 2);
		for (i = 10; i < 100000; i++) {
			gd_dedup_add(&d, i * 7919, i, GD_DS_ACKED);
			if (i % 100 == 0)
				freed += gd_dedup_prune(&d, i - 50);
		}
		ASSERT(freed > 99000);
		ASSERT_EQ(d.slab.cap, 1024);
	}
	gd_dedup_free(&d);
}

/* Many entries pruned in batches by a floor 100 behind, with EMITTED
 * ones acknowledged 200 behind (so they wait aside a while), against a
 * reference of what must remain. */
TEST(dedup_many_with_window)
{
	enum { N = 60000 };
	struct gd_dedup d;
	unsigned char *present = calloc(N, 1);
	uint32_t *slot = malloc(N * sizeof(*slot));
	uint64_t bad = 0, i, acked_to = 0, floor = 0;

	ASSERT_EQ(gd_dedup_init(&d), 0);
	for (i = 0; i < N; i++) {
		slot[i] = gd_dedup_add(&d, (i * 0x9e3779b97f4a7c15ull) | 1, i,
		    (i % 97) == 0 ? GD_DS_EMITTED : GD_DS_ACKED);
		if (slot[i] == GD_NONE)
			bad++;
		present[i] = 1;
		if (i >= 300 && i % 50 == 0) {
			uint64_t k;
			/* gdack confirms EMITTED entries 200 behind */
			for (; acked_to < i - 200; acked_to++) {
				k = acked_to;
				if (!present[k] || gd_dedup_at(&d, slot[k])->state !=
				    GD_DS_EMITTED)
					continue;
				gd_dedup_at(&d, slot[k])->state = GD_DS_ACKED;
				/* only entries the floor passed (aside) settle */
				if (gd_dedup_settled(&d, slot[k]) != (k < floor))
					bad++;
				else if (k < floor)
					present[k] = 0;
			}
			/* floor i - 100: what waits for nothing goes */
			gd_dedup_prune(&d, i - 100);
			for (k = floor; k < i - 100; k++)
				if (gd_dedup_at(&d, slot[k])->state != GD_DS_EMITTED)
					present[k] = 0;
			floor = i - 100;
		}
	}
	ASSERT_U64(bad, 0);
	for (i = 0; i < N; i++) {
		uint32_t s = gd_dedup_find(&d, (i * 0x9e3779b97f4a7c15ull) | 1);
		if (present[i] ? s != slot[i] : s != GD_NONE)
			bad++;
	}
	ASSERT_U64(bad, 0);
	{
		uint64_t n = 0;
		for (i = 0; i < N; i++)
			n += present[i];
		ASSERT_U64(d.count, n);
		ASSERT(n < 400);
	}
	gd_dedup_free(&d);
	free(present);
	free(slot);
}

/* ---- idmap directly ---- */

struct el {
	uint64_t id;	/* the idmap key, first field */
	uint64_t pad;
};

static uint32_t home(unsigned bits, uint64_t key)	/* idmap's hash */
{
	return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* Keys that hash to the last buckets of a 16-slot table, so their run
 * wraps around to the front; delete them in every rotation and check
 * the rest stay reachable (backward shift across the wrap). */
TEST(idmap_wraparound_delete)
{
	struct el e[8];
	uint32_t n = 0, start, i, j, bad = 0;
	uint64_t k;

	/* 3 keys with home 15, 2 with home 14, 2 with home 0 */
	for (k = 1; n < 7 && k < 10000000; k++) {
		uint32_t h = home(4, k);
		uint32_t c15 = 0, c14 = 0, c0 = 0;
		for (i = 0; i < n; i++) {
			uint32_t hh = home(4, e[i].id);
			c15 += hh == 15;
			c14 += hh == 14;
			c0 += hh == 0;
		}
		if ((h == 15 && c15 < 3) || (h == 14 && c14 < 2) || (h == 0 && c0 < 2))
			e[n++].id = k;
	}
	ASSERT_EQ(n, 7);
	for (start = 0; start < 7; start++) {
		struct gd_idmap m;
		unsigned char gone[7] = { 0 };
		ASSERT_EQ(gd_idmap_init(&m, 4), 0);	/* 16 slots */
		ASSERT_EQ(m.mask, 15);
		for (i = 0; i < 7; i++)
			ASSERT_EQ(gd_idmap_put(&m, e[i].id, i, e, sizeof(e[0])), 0);
		ASSERT_EQ(m.mask, 15);			/* no rehash yet */
		for (j = 0; j < 7; j++) {
			uint32_t del = (start + j * 3) % 7;
			gd_idmap_del(&m, e[del].id, e, sizeof(e[0]));
			gone[del] = 1;
			for (i = 0; i < 7; i++) {
				uint32_t s = gd_idmap_get(&m, e[i].id, e, sizeof(e[0]));
				if (s != (gone[i] ? GD_NONE : i))
					bad++;
			}
		}
		ASSERT_EQ(m.count, 0);
		for (i = 0; i <= m.mask; i++)
			if (m.t[i] != GD_NONE)
				bad++;
		gd_idmap_free(&m);
	}
	ASSERT_EQ(bad, 0);
}

TEST(idmap_small_rehash)
{
	struct el e[100];
	struct gd_idmap m;
	uint32_t i, bad = 0;

	ASSERT_EQ(gd_idmap_init(&m, 0), 0);
	ASSERT_EQ(m.mask, 15);
	for (i = 0; i < 100; i++) {
		e[i].id = (uint64_t)i << 40;	/* same low bits */
		ASSERT_EQ(gd_idmap_put(&m, e[i].id, i, e, sizeof(e[0])), 0);
		/* load factor at most 1/2 */
		if ((uint64_t)m.count * 2 > (uint64_t)m.mask + 1)
			bad++;
	}
	ASSERT_EQ(m.count, 100);
	ASSERT_EQ(m.mask, 255);
	for (i = 0; i < 100; i++)
		if (gd_idmap_get(&m, e[i].id, e, sizeof(e[0])) != i)
			bad++;
	ASSERT_EQ(gd_idmap_get(&m, 12345, e, sizeof(e[0])), GD_NONE);
	/* deleting an absent key is harmless */
	gd_idmap_del(&m, 999, e, sizeof(e[0]));
	ASSERT_EQ(m.count, 100);
	ASSERT_EQ(bad, 0);
	gd_idmap_free(&m);
	ASSERT(m.t == NULL);
}

/* 200000 ids with random deletes and re-inserts, checked against a plain
 * array of which ids are present. Ids are a mix of sequential (as blocks
 * are numbered) and random, so runs form and have to shift back. */
TEST(idmap_random_vs_reference)
{
	enum { N = 200000 };
	struct el *e = malloc(N * sizeof(*e));
	unsigned char *in = calloc(N, 1);
	struct gd_idmap m;
	uint64_t bad = 0;
	uint32_t i, r, count = 0;

	for (i = 0; i < N; i++)
		e[i].id = i < N / 2 ? 1000000 + i : rnd();
	ASSERT_EQ(gd_idmap_init(&m, 64), 0);

	/* phase 1: insert all, deleting a random present one now and then */
	for (i = 0; i < N; i++) {
		if (gd_idmap_put(&m, e[i].id, i, e, sizeof(e[0])) != 0)
			bad++;
		in[i] = 1;
		count++;
		if (rnd() % 3 == 0) {
			uint32_t j = (uint32_t)(rnd() % (i + 1));
			if (in[j]) {
				gd_idmap_del(&m, e[j].id, e, sizeof(e[0]));
				in[j] = 0;
				count--;
			}
		}
	}
	ASSERT_EQ(m.count, count);
	for (i = 0; i < N; i++)
		if (gd_idmap_get(&m, e[i].id, e, sizeof(e[0])) != (in[i] ? i : GD_NONE))
			bad++;
	ASSERT_U64(bad, 0);

	/* phase 2: random toggles, checking each touched key and a sample;
	 * every other insert after a gd_idmap_find miss, by its hint */
	for (r = 0; r < 300000; r++) {
		uint32_t j = (uint32_t)(rnd() % N);
		if (in[j]) {
			gd_idmap_del(&m, e[j].id, e, sizeof(e[0]));
			in[j] = 0;
			count--;
		} else if (r & 1) {
			if (gd_idmap_put(&m, e[j].id, j, e, sizeof(e[0])) != 0)
				bad++;
			in[j] = 1;
			count++;
		} else {	/* a miss, and the insert where it ended */
			uint32_t hint = UINT32_MAX;
			if (gd_idmap_find(&m, e[j].id, e, sizeof(e[0]), &hint) !=
			    GD_NONE || hint > m.mask)
				bad++;
			if (gd_idmap_put_hint(&m, e[j].id, j, e, sizeof(e[0]),
			    hint) != 0)
				bad++;
			in[j] = 1;
			count++;
		}
		if (gd_idmap_get(&m, e[j].id, e, sizeof(e[0])) != (in[j] ? j : GD_NONE))
			bad++;
		j = (uint32_t)(rnd() % N);
		if (gd_idmap_get(&m, e[j].id, e, sizeof(e[0])) != (in[j] ? j : GD_NONE))
			bad++;
	}
	ASSERT_U64(bad, 0);
	ASSERT_EQ(m.count, count);

	/* phase 3: full check, absent keys, then delete everything */
	for (i = 0; i < N; i++)
		if (gd_idmap_get(&m, e[i].id, e, sizeof(e[0])) != (in[i] ? i : GD_NONE))
			bad++;
	for (i = 0; i < 10000; i++)
		if (gd_idmap_get(&m, 3000000 + (uint64_t)i, e, sizeof(e[0])) != GD_NONE)
			bad++;
	for (i = 0; i < N; i++)
		if (in[i]) {
			gd_idmap_del(&m, e[i].id, e, sizeof(e[0]));
			in[i] = 0;
		}
	ASSERT_EQ(m.count, 0);
	for (i = 0; i <= m.mask; i++)
		if (m.t[i] != GD_NONE)
			bad++;
	ASSERT_U64(bad, 0);
	gd_idmap_free(&m);
	free(e);
	free(in);
}

int main(void)
{
	RUN(dedup_add_find);
	RUN(dedup_prune_sets_waiting_aside);
	RUN(dedup_waiting_copies_keep_entries);
	RUN(dedup_replace);
	RUN(dedup_prune_frees_and_reuses);
	RUN(dedup_many_with_window);
	RUN(idmap_wraparound_delete);
	RUN(idmap_small_rehash);
	RUN(idmap_random_vs_reference);
	return UNIT_DONE();
}
