/* Unit tests of lib/slab.c: slots taken lowest first and reused after a
 * put, growth by doubling that keeps contents and indices, the cap (the
 * last doubling stops at it, a take past it fails and changes nothing),
 * growth that leaves the new part of the array untouched (its pages not
 * resident), and the id map: find, bind, unbind, a full table's ids all
 * found. */
#include "slab.h"
#include "unit.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

struct item {
	uint64_t id;		/* first: the map's key */
	uint32_t val;
	uint32_t link;		/* free chain */
};

struct big {			/* a cache line */
	uint64_t id;
	uint32_t link;
	uint8_t pad[52];
};

GD_SLAB_TYPED(item, struct item, link)
GD_SLAB_TYPED(big, struct big, link)

static struct item *at(struct gd_slab *s, uint32_t i)
{
	return (struct item *)s->base + i;
}

TEST(test_take_put_reuse)
{
	struct gd_slab s;
	uint32_t i;

	ASSERT_EQ(gd_slab_init(&s, sizeof(struct item), 4, 1000, 16), 0);
	ASSERT_EQ(s.cap, 0);	/* nothing allocated before a take */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(item_take(&s), i);
	ASSERT_EQ(s.cap, 4);
	item_put(&s, 2);
	item_put(&s, 0);
	ASSERT_EQ(item_take(&s), 0);	/* the last put comes back first */
	ASSERT_EQ(item_take(&s), 2);
	ASSERT_EQ(s.cap, 4);		/* reuse, no growth */
	ASSERT_EQ(item_take(&s), 4);
	ASSERT_EQ(s.cap, 8);
	gd_slab_free(&s);
	ASSERT(s.base == NULL);
}

TEST(test_growth_keeps_contents)
{
	struct gd_slab s;
	uint32_t i, n = 5000;

	ASSERT_EQ(gd_slab_init(&s, sizeof(struct item), 16, 1u << 20, 16), 0);
	for (i = 0; i < n; i++) {
		uint32_t k = item_take(&s);
		ASSERT_EQ(k, i);
		at(&s, k)->id = 1000 + i;
		at(&s, k)->val = i * 3;
	}
	ASSERT_EQ(s.cap, 8192);		/* 16 doubled nine times */
	for (i = 0; i < n; i++) {
		ASSERT_U64(at(&s, i)->id, 1000 + i);
		ASSERT_EQ(at(&s, i)->val, i * 3);
	}
	gd_slab_free(&s);
}

TEST(test_cap)
{
	struct gd_slab s;
	uint32_t i;

	ASSERT_EQ(gd_slab_init(&s, sizeof(struct item), 4, 10, 16), 0);
	for (i = 0; i < 10; i++)
		ASSERT_EQ(item_take(&s), i);
	ASSERT_EQ(s.cap, 10);		/* 4, 8, then 10: not 16 */
	ASSERT_EQ(item_take(&s), GD_NONE);
	ASSERT_EQ(item_take(&s), GD_NONE);
	ASSERT_EQ(s.cap, 10);
	item_put(&s, 7);		/* room again at the cap */
	ASSERT_EQ(item_take(&s), 7);
	ASSERT_EQ(item_take(&s), GD_NONE);
	gd_slab_free(&s);
	/* a cap above what the map can index is lowered to it */
	ASSERT_EQ(gd_slab_init(&s, sizeof(struct item), 4, UINT32_MAX, 16), 0);
	ASSERT_EQ(s.max, GD_IDMAP_MAX_SLOTS);
	gd_slab_free(&s);
}

/* Resident pages among the n pages from p (page-aligned). */
static size_t resident(const void *p, size_t n, size_t page)
{
	unsigned char v[1024];
	size_t i, r = 0;

	if (n > sizeof(v) || mincore((void *)(uintptr_t)p, n * page, v) != 0)
		return (size_t)-1;
	for (i = 0; i < n; i++)
		r += v[i] & 1;
	return r;
}

/* A table just past a doubling costs the slots it holds: the doubled
 * array's new part is not written until its slots are taken. */
TEST(test_growth_untouched)
{
	struct gd_slab s;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes, used;
	uintptr_t lo, hi;
	uint32_t i, n = 1u << 15;

	ASSERT_EQ(sizeof(struct big), 64);
	ASSERT_EQ(gd_slab_init(&s, sizeof(struct big), n, 1u << 20, 16), 0);
	for (i = 0; i <= n; i++) {	/* one slot past the first array */
		uint32_t k = big_take(&s);
		ASSERT_EQ(k, i);
		((struct big *)s.base)[k].id = i;
	}
	ASSERT_EQ(s.cap, 2 * n);
	/* whole pages past the slots taken: none resident (a mapping the
	 * size of this one is made by the system, so its untouched pages
	 * stay unbacked) */
	bytes = (size_t)s.cap * sizeof(struct big);
	used = (size_t)(n + 1) * sizeof(struct big);
	lo = ((uintptr_t)s.base + used + page - 1) / page * page;
	hi = ((uintptr_t)s.base + bytes) / page * page;
	ASSERT(hi - lo >= (bytes - used) / 2);
	ASSERT_EQ(resident((void *)lo, (hi - lo) / page, page), 0);
	/* taking them makes them resident, in index order */
	for (i = n + 1; i < 2 * n; i++)
		ASSERT_EQ(big_take(&s), i);
	ASSERT_EQ(big_take(&s), 2 * n);
	ASSERT_EQ(s.cap, 4 * n);
	big_put(&s, 5);			/* a freed slot before the next new one */
	ASSERT_EQ(big_take(&s), 5);
	ASSERT_EQ(big_take(&s), 2 * n + 1);
	gd_slab_free(&s);
}

TEST(test_map)
{
	struct gd_slab s;
	uint32_t i, k, n = 3000;

	ASSERT_EQ(gd_slab_init(&s, sizeof(struct item), 8, 1u << 20, 8), 0);
	ASSERT_EQ(gd_slab_find(&s, 42), GD_NONE);
	for (i = 0; i < n; i++) {
		k = item_take(&s);
		at(&s, k)->id = (uint64_t)i * 7919 + 1;
		ASSERT_EQ(gd_slab_bind(&s, k, at(&s, k)->id), 0);
	}
	/* the array moved while the map grew: every id still found */
	for (i = 0; i < n; i++)
		ASSERT_EQ(gd_slab_find(&s, (uint64_t)i * 7919 + 1), i);
	/* out of the map and free: no longer found, its slot reused */
	k = gd_slab_find(&s, 7919 * 10 + 1);
	ASSERT_EQ(k, 10);
	gd_slab_unbind(&s, 7919 * 10 + 1);
	item_put(&s, k);
	ASSERT_EQ(gd_slab_find(&s, 7919 * 10 + 1), GD_NONE);
	ASSERT_EQ(gd_slab_find(&s, 7919 * 11 + 1), 11);
	k = item_take(&s);
	ASSERT_EQ(k, 10);
	at(&s, k)->id = 5;
	ASSERT_EQ(gd_slab_bind(&s, k, 5), 0);
	ASSERT_EQ(gd_slab_find(&s, 5), 10);
	gd_slab_free(&s);
}

int main(void)
{
	RUN(test_take_put_reuse);
	RUN(test_growth_keeps_contents);
	RUN(test_cap);
	RUN(test_growth_untouched);
	RUN(test_map);
	return UNIT_DONE();
}
