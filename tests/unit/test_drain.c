/* Unit tests of lib/drain.c: what the first stage of gdsub's pipeline has
 * read, from the marks of the blocks written and the bytes read. */
#include "drain.h"
#include "unit.h"

static struct { uint32_t who; uint64_t seq; } got[2 * GD_DRAIN_MARKS];
static unsigned ngot;

static void on_read(void *ctx, const struct gd_drain_mark *m)
{
	(void)ctx;
	if (ngot < 2 * GD_DRAIN_MARKS) {
		got[ngot].who = m->who;
		got[ngot++].seq = m->seq;
	}
}

TEST(marks_read_in_order)
{
	struct gd_drain d;

	gd_drain_init(&d);
	ngot = 0;
	ASSERT_EQ(gd_drain_read(&d, 0, on_read, NULL), 0);
	/* 3 blocks of publisher 0, far apart; 1 of publisher 1 */
	ASSERT_EQ(gd_drain_mark(&d, 5000, 0, 1), 0);
	ASSERT_EQ(gd_drain_mark(&d, 10000, 0, 2), 0);
	ASSERT_EQ(gd_drain_mark(&d, 10100, 1, 7), 0);
	ASSERT_EQ(gd_drain_mark(&d, 20000, 0, 3), 0);
	ASSERT_EQ(gd_drain_waiting(&d), 4);
	/* a block half read is not read */
	ASSERT_EQ(gd_drain_read(&d, 4999, on_read, NULL), 0);
	ASSERT_EQ(gd_drain_read(&d, 10100, on_read, NULL), 3);
	ASSERT_EQ(ngot, 3);
	ASSERT_U64(got[1].seq, 2);
	ASSERT_EQ(got[2].who, 1);
	ASSERT_U64(got[2].seq, 7);
	/* what was read stays read */
	ASSERT_EQ(gd_drain_read(&d, 100, on_read, NULL), 0);
	ASSERT_EQ(gd_drain_read(&d, 20000, on_read, NULL), 1);
	ASSERT_U64(got[3].seq, 3);
	ASSERT_EQ(gd_drain_waiting(&d), 0);
	gd_drain_free(&d);
}

/* Close marks of one publisher merge: the newest tells of them all. */
TEST(close_marks_merge)
{
	struct gd_drain d;
	uint64_t i;

	gd_drain_init(&d);
	ngot = 0;
	for (i = 1; i <= 100; i++)	/* 100 blocks of 40 bytes */
		ASSERT_EQ(gd_drain_mark(&d, 40 * i, 0, i), 0);
	ASSERT_EQ(gd_drain_waiting(&d), 1);
	/* 4,000 bytes: under the quantum, and read only whole */
	ASSERT_EQ(gd_drain_read(&d, 3999, on_read, NULL), 0);
	ASSERT_EQ(gd_drain_read(&d, 4000, on_read, NULL), 1);
	ASSERT_U64(got[0].seq, 100);
	/* another publisher's block in between starts a new mark */
	ASSERT_EQ(gd_drain_mark(&d, 4040, 0, 101), 0);
	ASSERT_EQ(gd_drain_mark(&d, 4080, 1, 1), 0);
	ASSERT_EQ(gd_drain_mark(&d, 4120, 0, 102), 0);
	ASSERT_EQ(gd_drain_waiting(&d), 3);
	gd_drain_free(&d);
}

/* However far behind the stage is, the ring holds GD_DRAIN_MARKS marks:
 * the newest of one publisher grows, another's new ones wait. */
TEST(bounded)
{
	struct gd_drain d;
	uint64_t i, end = 0;

	gd_drain_init(&d);
	ngot = 0;
	for (i = 1; i <= 3 * GD_DRAIN_MARKS; i++) {
		end += 2 * GD_DRAIN_QUANTUM;
		ASSERT_EQ(gd_drain_mark(&d, end, 0, i), 0);
	}
	ASSERT_EQ(gd_drain_waiting(&d), GD_DRAIN_MARKS);
	ASSERT_EQ(gd_drain_mark(&d, end + 10, 1, 5), 0);
	ASSERT_EQ(gd_drain_waiting(&d), GD_DRAIN_MARKS);
	ASSERT_EQ(gd_drain_read(&d, end + 10, on_read, NULL), GD_DRAIN_MARKS);
	/* the last mark took the newest blocks of publisher 0 */
	ASSERT_U64(got[GD_DRAIN_MARKS - 1].seq, 3 * GD_DRAIN_MARKS);
	ASSERT_EQ(gd_drain_waiting(&d), 0);
	/* and it takes marks again */
	ASSERT_EQ(gd_drain_mark(&d, end + 50, 1, 6), 0);
	ASSERT_EQ(gd_drain_read(&d, end + 50, on_read, NULL), 1);
	ASSERT_U64(got[GD_DRAIN_MARKS].seq, 6);
	gd_drain_free(&d);
}

int main(void)
{
	RUN(marks_read_in_order);
	RUN(close_marks_merge);
	RUN(bounded);
	return UNIT_DONE();
}
