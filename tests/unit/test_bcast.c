/* Unit tests of lib/bcast.c: the pool of batch buffers — whole pages
 * with at least the capacity asked, a freed buffer reused before a new
 * one is mapped, a trim that unmaps all but keep free buffers (their
 * pages gone), and heap buffers beside it going back to the heap. */
#include "bcast.h"
#include "unit.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define CAP (256 * 1024 - 64)

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#endif
#ifdef ASAN
#include <sanitizer/asan_interface.h>
#endif

TEST(test_pool_sizes)
{
	struct gd_bpool p;
	struct gd_bcast *b;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	gd_bpool_init(&p, CAP, 2);
	ASSERT_EQ(p.bytes % page, 0);
	ASSERT(p.bytes >= CAP + sizeof(struct gd_bcast));
	ASSERT(p.bytes < CAP + sizeof(struct gd_bcast) + page);
	b = gd_bpool_get(&p);
	ASSERT(b != NULL);
	ASSERT((uintptr_t)b % page == 0);
	ASSERT(b->cap >= CAP);
	ASSERT_EQ(b->cap + sizeof(struct gd_bcast), p.bytes);
	ASSERT_EQ(b->refs, 1);
	ASSERT_EQ(b->len, 0);
	ASSERT_EQ(b->nblk, 0);
	b->data[b->cap - 1] = 1;	/* all of it is writable */
	gd_bcast_unref(b);
	ASSERT_EQ(p.nfree, 1);
	gd_bpool_free(&p);
	ASSERT_EQ(p.nfree, 0);
	ASSERT(p.free == NULL);
}

TEST(test_pool_reuse)
{
	struct gd_bpool p;
	struct gd_bcast *a, *b, *c;

	gd_bpool_init(&p, CAP, 2);
	a = gd_bpool_get(&p);
	b = gd_bpool_get(&p);
	ASSERT(a != NULL && b != NULL && a != b);
	a->len = 10;
	a->nblk = 3;
	gd_bcast_ref(a);
	gd_bcast_unref(a);
	ASSERT_EQ(p.nfree, 0);		/* still held once */
	gd_bcast_unref(a);
	ASSERT_EQ(p.nfree, 1);
	c = gd_bpool_get(&p);
	ASSERT(c == a);			/* no new mapping */
	ASSERT_EQ(c->len, 0);		/* handed out empty */
	ASSERT_EQ(c->nblk, 0);
	ASSERT_EQ(c->refs, 1);
	ASSERT_EQ(p.nfree, 0);
	gd_bcast_unref(b);
	gd_bcast_unref(c);
	gd_bpool_free(&p);
}

TEST(test_pool_trim)
{
	struct gd_bpool p;
	struct gd_bcast *b[8];
	unsigned char v;
	int i, gone = 0;

	gd_bpool_init(&p, CAP, 3);
	for (i = 0; i < 8; i++) {
		b[i] = gd_bpool_get(&p);
		ASSERT(b[i] != NULL);
		b[i]->data[0] = (uint8_t)i;
	}
	for (i = 0; i < 8; i++)
		gd_bcast_unref(b[i]);
	ASSERT_EQ(p.nfree, 8);		/* a burst's buffers wait for reuse */
	gd_bpool_trim(&p);
	ASSERT_EQ(p.nfree, 3);
	/* five of the eight are unmapped: mincore fails with ENOMEM there */
	for (i = 0; i < 8; i++)
		if (mincore(b[i], 1, &v) != 0)
			gone++;
	ASSERT_EQ(gone, 5);
	gd_bpool_trim(&p);		/* nothing more to do */
	ASSERT_EQ(p.nfree, 3);
	gd_bpool_free(&p);
	ASSERT_EQ(p.nfree, 0);
	gone = 0;
	for (i = 0; i < 8; i++)
		if (mincore(b[i], 1, &v) != 0)
			gone++;
	ASSERT_EQ(gone, 8);
}

TEST(test_heap_buffer)
{
	struct gd_bcast *b = gd_bcast_new(100);

	ASSERT(b != NULL);
	ASSERT(b->pool == NULL);
	ASSERT_EQ(b->cap, 100);
	ASSERT_EQ(b->refs, 1);
	gd_bcast_ref(b);
	gd_bcast_unref(b);
	ASSERT_EQ(b->refs, 1);
	gd_bcast_unref(b);		/* freed (the sanitizer build checks) */
}

/* A buffer back in the pool is poisoned for the address sanitizer (a
 * use after its last unref is reported, as after free()), and whole
 * again when handed out. */
TEST(test_pool_poison)
{
	struct gd_bpool p;
	struct gd_bcast *b, *b2;

	gd_bpool_init(&p, CAP, 1);
	b = gd_bpool_get(&p);
	ASSERT(b != NULL);
	b->data[0] = 1;
	gd_bcast_unref(b);
#ifdef ASAN
	ASSERT(__asan_address_is_poisoned(b->data));
	ASSERT(__asan_address_is_poisoned(b->data + b->cap - 1));
#endif
	b2 = gd_bpool_get(&p);
	ASSERT(b2 == b);
#ifdef ASAN
	ASSERT(!__asan_address_is_poisoned(b2->data));
	ASSERT(!__asan_address_is_poisoned(b2->data + b2->cap - 1));
#endif
	b2->data[b2->cap - 1] = 2;	/* all of it writable again */
	ASSERT_EQ(b2->data[b2->cap - 1], 2);
	gd_bcast_unref(b2);
	gd_bpool_free(&p);
	ASSERT_EQ(p.nfree, 0);
}

int main(void)
{
	RUN(test_pool_sizes);
	RUN(test_pool_reuse);
	RUN(test_pool_trim);
	RUN(test_heap_buffer);
	RUN(test_pool_poison);
	return UNIT_DONE();
}
