/* Unit tests of lib/order.c, the --consecutive hold-back ring: where an
 * index stands, copies held and taken in order, done marks, the skip
 * list, the byte and index limits, and a reset that frees what is held.
 * The rules that use it are tested in test_receive.c. */
#include "order.h"
#include "unit.h"

#include <stdlib.h>

static int hold(struct gd_order *o, uint64_t seq, uint32_t len)
{
	static uint8_t data[1 << 20];
	return gd_order_hold(o, seq * 10, seq, 5, 1, data, len, "h:1", 3);
}

TEST(places_and_takes)
{
	struct gd_order o;
	struct gd_held *h;

	gd_order_init(&o);
	ASSERT_U64(o.next, 1);
	ASSERT_EQ(gd_order_place(&o, 1), GD_OP_NOW);
	ASSERT_EQ(gd_order_place(&o, 0), GD_OP_LATE);
	ASSERT_EQ(gd_order_place(&o, 2), GD_OP_HOLD);
	ASSERT_EQ(gd_order_place(&o, GD_ORDER_MAX), GD_OP_HOLD);
	ASSERT_EQ(gd_order_place(&o, 1 + GD_ORDER_MAX), GD_OP_FULL);
	ASSERT(gd_order_take(&o) == NULL);
	ASSERT_EQ(hold(&o, 3, 2), 0);
	ASSERT_EQ(gd_order_place(&o, 3), GD_OP_HELD);
	ASSERT_EQ(gd_order_done(&o, 2), 0);		/* marked */
	ASSERT_EQ(gd_order_place(&o, 2), GD_OP_HOLD);	/* a mark is no block */
	ASSERT_EQ(gd_order_done(&o, 1), 0);		/* next: passed */
	ASSERT_U64(o.next, 2);
	h = gd_order_take(&o);		/* past the mark at 2 */
	ASSERT(h != NULL);
	if (h == NULL)
		return;
	ASSERT_U64(h->seq, 3);
	ASSERT_U64(h->id, 30);
	ASSERT_EQ(h->len, 2);
	ASSERT_EQ(h->flags, 1);
	ASSERT(o.olen == 3 && memcmp(o.origin, "h:1", 3) == 0);
	ASSERT_U64(o.next, 3);		/* the caller passes it */
	free(h);
	gd_order_passed(&o);
	ASSERT_EQ(o.held + o.marks, 0);
	ASSERT_U64(o.bytes, 0);
	/* a mark below next or too far is nothing */
	ASSERT_EQ(gd_order_done(&o, 2), 0);
	ASSERT_EQ(gd_order_done(&o, 4 + GD_ORDER_MAX), 0);
	ASSERT_EQ(o.marks, 0);
	/* the start moves only while nothing is held */
	gd_order_start(&o, 10);
	ASSERT_U64(o.next, 10);
	gd_order_start(&o, 5);
	ASSERT_U64(o.next, 10);
	ASSERT_EQ(hold(&o, 12, 0), 0);
	gd_order_start(&o, 11);
	ASSERT_U64(o.next, 10);
	gd_order_free(&o);
}

TEST(skips_listed)
{
	struct gd_order o;
	uint64_t s;

	gd_order_init(&o);
	gd_order_skip(&o, 3);			/* 1-2 */
	gd_order_skip(&o, 5);			/* joins: 1-4 */
	gd_order_passed(&o);
	for (s = 0; s < GD_ORDER_REPORT + 2; s++) {
		gd_order_skip(&o, o.next + 1);
		gd_order_passed(&o);
	}
	ASSERT_EQ(o.skipped.n, GD_ORDER_REPORT);
	ASSERT_U64(o.skipped.lo[0], 1);
	ASSERT_U64(o.skipped.hi[0], 5);
	ASSERT_U64(o.skipped.lo[1], 6);
	ASSERT_U64(o.skipped.hi[1], 7);
	ASSERT_U64(o.skipped.total, 4 + GD_ORDER_REPORT + 2);
	gd_order_skip(&o, o.next);		/* nothing */
	ASSERT_U64(o.skipped.total, 4 + GD_ORDER_REPORT + 2);
	gd_order_free(&o);
}

TEST(byte_limit_and_reset)
{
	struct gd_order o;
	uint64_t s;

	gd_order_init(&o);
	for (s = 2; s < 2 + GD_ORDER_MAX_BYTES / (1 << 20); s++)
		ASSERT_EQ(hold(&o, s, 1 << 20), 0);
	ASSERT_U64(o.bytes, GD_ORDER_MAX_BYTES);
	ASSERT_EQ(hold(&o, s, 1), 1);		/* one byte too many */
	ASSERT_EQ(hold(&o, s, 0), 0);		/* an empty block fits */
	ASSERT_EQ(gd_order_done(&o, s + 1), 0);
	ASSERT_EQ(gd_order_reset(&o), GD_ORDER_MAX_BYTES / (1 << 20) + 1);
	ASSERT_EQ(o.held + o.marks, 0);
	ASSERT_U64(o.bytes, 0);
	ASSERT_U64(o.next, 1);
	ASSERT(o.ring == NULL);
	gd_order_free(&o);
}

int main(void)
{
	RUN(places_and_takes);
	RUN(skips_listed);
	RUN(byte_limit_and_reset);
	return UNIT_DONE();
}
