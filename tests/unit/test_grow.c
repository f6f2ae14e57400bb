/* Unit tests of lib/grow.c: doubling from the first size, the cap (need
 * at it, one past it, a cap that is not a power of two), sizes whose
 * bytes would not fit a size_t, and a failed grow leaving the array as
 * it was. */
#include "grow.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct pair {
	uint64_t a, b;
};

TEST(test_doubling)
{
	struct pair *v = NULL;
	size_t cap = 0, i;

	ASSERT_EQ(GD_GROW(v, cap, 1, 1000), 0);
	ASSERT_EQ(cap, 16);
	ASSERT(v != NULL);
	for (i = 0; i < 16; i++)
		v[i].a = i;
	ASSERT_EQ(GD_GROW(v, cap, 16, 1000), 0);	/* fits: no move */
	ASSERT_EQ(cap, 16);
	ASSERT_EQ(GD_GROW(v, cap, 17, 1000), 0);
	ASSERT_EQ(cap, 32);
	ASSERT_EQ(GD_GROW(v, cap, 100, 1000), 0);	/* several doublings */
	ASSERT_EQ(cap, 128);
	for (i = 0; i < 16; i++)
		ASSERT_U64(v[i].a, i);			/* kept what it held */
	free(v);
}

TEST(test_cap)
{
	uint32_t *v = NULL;
	size_t cap = 0;

	ASSERT_EQ(GD_GROW(v, cap, 300, 300), 0);	/* exactly at the cap */
	ASSERT_EQ(cap, 300);				/* clipped, not 512 */
	v[299] = 7;
	ASSERT_EQ(GD_GROW(v, cap, 301, 300), -1);	/* one past it */
	ASSERT_EQ(cap, 300);
	ASSERT_EQ(v[299], 7);				/* as it was */
	free(v);
	v = NULL;
	cap = 0;
	ASSERT_EQ(GD_GROW(v, cap, 20, 10), -1);		/* first need over */
	ASSERT(v == NULL);
	ASSERT_EQ(cap, 0);
	ASSERT_EQ(GD_GROW(v, cap, 3, 10), 0);		/* cap below the first size */
	ASSERT_EQ(cap, 10);
	free(v);
}

TEST(test_overflow)
{
	struct pair *v = NULL;
	size_t cap = 0;

	/* the bytes of need elements would wrap a size_t: refused, no
	 * allocation of the wrapped size */
	ASSERT_EQ(GD_GROW(v, cap, SIZE_MAX / 8, SIZE_MAX), -1);
	ASSERT_EQ(GD_GROW(v, cap, SIZE_MAX / sizeof(*v) + 1, SIZE_MAX), -1);
	ASSERT(v == NULL);
	ASSERT_EQ(cap, 0);
	/* a zero element size is a caller's bug: refused */
	ASSERT_EQ(gd_grow((void **)&v, &cap, 1, 0, 100), -1);
	ASSERT(v == NULL);
}

TEST(test_why)
{
	char why[64];

	/* what an owner's message says: the cap when at it, else memory */
	ASSERT_STR(gd_grow_why(1000, 1000, why, sizeof(why)),
	    "1000 waiting already");
	ASSERT_STR(gd_grow_why(999, 1000, why, sizeof(why)),
	    "out of memory");
}

int main(void)
{
	RUN(test_doubling);
	RUN(test_cap);
	RUN(test_overflow);
	RUN(test_why);
	return UNIT_DONE();
}
