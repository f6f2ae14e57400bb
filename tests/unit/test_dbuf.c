/* Unit tests of lib/dbuf.c: adds of every kind, the cap (exactly at it,
 * one byte past it, a formatted add past it, sizes that would overflow),
 * a failed add leaving the buffer as it was, reserve/commit, and the
 * operations that hand off or drop bytes. */
#include "dbuf.h"
#include "unit.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

TEST(test_add_kinds)
{
	struct gd_dbuf b;

	gd_dbuf_init(&b, 1024);
	ASSERT(gd_dbuf_ptr(&b) == NULL);
	ASSERT_EQ(gd_dbuf_len(&b), 0);
	ASSERT_EQ(gd_dbuf_add(&b, "ab", 2), GD_DBUF_OK);
	ASSERT_EQ(gd_dbuf_adds(&b, "cd"), GD_DBUF_OK);
	ASSERT_EQ(gd_dbuf_addf(&b, "-%d-%s", 42, "x"), GD_DBUF_OK);
	ASSERT_STR(gd_dbuf_ptr(&b), "abcd-42-x");
	ASSERT_EQ(gd_dbuf_len(&b), 9);
	/* binary bytes, a NUL among them, still NUL-terminated after */
	ASSERT_EQ(gd_dbuf_add(&b, "\0z", 2), GD_DBUF_OK);
	ASSERT_EQ(gd_dbuf_len(&b), 11);
	ASSERT(memcmp(gd_dbuf_ptr(&b), "abcd-42-x\0z", 12) == 0);
	gd_dbuf_free(&b);
	ASSERT(gd_dbuf_ptr(&b) == NULL);
	ASSERT_EQ(gd_dbuf_len(&b), 0);
	/* usable again after free, with the same cap */
	ASSERT_EQ(gd_dbuf_adds(&b, "again"), GD_DBUF_OK);
	ASSERT_STR(gd_dbuf_ptr(&b), "again");
	gd_dbuf_free(&b);
}

TEST(test_empty_add_gives_a_string)
{
	struct gd_dbuf b;

	gd_dbuf_init(&b, 16);
	ASSERT_EQ(gd_dbuf_adds(&b, ""), GD_DBUF_OK);
	ASSERT(gd_dbuf_ptr(&b) != NULL);
	ASSERT_STR(gd_dbuf_ptr(&b), "");
	ASSERT_EQ(gd_dbuf_addf(&b, "%s", ""), GD_DBUF_OK);
	ASSERT_EQ(gd_dbuf_len(&b), 0);
	gd_dbuf_free(&b);
}

TEST(test_cap_exact_and_one_past)
{
	struct gd_dbuf b;

	gd_dbuf_init(&b, 10);
	ASSERT_EQ(gd_dbuf_add(&b, "0123456789", 10), GD_DBUF_OK);
	ASSERT_EQ(gd_dbuf_len(&b), 10);
	ASSERT_EQ(gd_dbuf_add(&b, "x", 1), GD_DBUF_TOOBIG);
	ASSERT_EQ(gd_dbuf_addf(&b, "%c", 'x'), GD_DBUF_TOOBIG);
	ASSERT_EQ(gd_dbuf_reserve(&b, 1), GD_DBUF_TOOBIG);
	ASSERT_STR(gd_dbuf_ptr(&b), "0123456789");
	/* an empty add at the cap is fine */
	ASSERT_EQ(gd_dbuf_add(&b, "", 0), GD_DBUF_OK);
	gd_dbuf_free(&b);

	/* one add that is too big leaves earlier bytes alone */
	gd_dbuf_init(&b, 10);
	ASSERT_EQ(gd_dbuf_adds(&b, "abc"), GD_DBUF_OK);
	ASSERT_EQ(gd_dbuf_adds(&b, "12345678"), GD_DBUF_TOOBIG);
	ASSERT_STR(gd_dbuf_ptr(&b), "abc");
	ASSERT_EQ(gd_dbuf_len(&b), 3);
	ASSERT_EQ(gd_dbuf_adds(&b, "1234567"), GD_DBUF_OK);
	ASSERT_STR(gd_dbuf_ptr(&b), "abc1234567");
	gd_dbuf_free(&b);
}

TEST(test_addf_past_cap_in_room)
{
	struct gd_dbuf b;

	/* a first allocation larger than the cap is cut to it, so text
	 * that would pass the cap never lands in the buffer */
	gd_dbuf_init_sized(&b, 4096, 20);
	ASSERT_EQ(gd_dbuf_adds(&b, "0123456789"), GD_DBUF_OK);
	ASSERT_EQ(gd_dbuf_addf(&b, "%s", "abcdefghijk"), GD_DBUF_TOOBIG);
	ASSERT_STR(gd_dbuf_ptr(&b), "0123456789");
	ASSERT_EQ(gd_dbuf_len(&b), 10);
	ASSERT_EQ(gd_dbuf_addf(&b, "%s", "abcdefghij"), GD_DBUF_OK);
	ASSERT_EQ(gd_dbuf_len(&b), 20);
	gd_dbuf_free(&b);
}

TEST(test_addf_longer_than_room)
{
	struct gd_dbuf b;
	char big[3000];
	size_t i;

	for (i = 0; i + 1 < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	big[sizeof(big) - 1] = '\0';
	gd_dbuf_init(&b, 1 << 20);
	ASSERT_EQ(gd_dbuf_adds(&b, "<"), GD_DBUF_OK);	/* 64 allocated */
	ASSERT_EQ(gd_dbuf_addf(&b, "%s>%d", big, 7), GD_DBUF_OK);
	ASSERT_EQ(gd_dbuf_len(&b), 1 + strlen(big) + 2);
	ASSERT(gd_dbuf_ptr(&b)[0] == '<');
	ASSERT(memcmp(gd_dbuf_ptr(&b) + 1, big, strlen(big)) == 0);
	ASSERT_STR(gd_dbuf_ptr(&b) + 1 + strlen(big), ">7");
	gd_dbuf_free(&b);
}

TEST(test_overflowing_sizes)
{
	struct gd_dbuf b;

	gd_dbuf_init(&b, SIZE_MAX);	/* clamped, so max + 1 cannot wrap */
	ASSERT(b.max <= SIZE_MAX / 2);
	ASSERT_EQ(gd_dbuf_adds(&b, "ok"), GD_DBUF_OK);
	ASSERT_EQ(gd_dbuf_reserve(&b, SIZE_MAX), GD_DBUF_TOOBIG);
	ASSERT_EQ(gd_dbuf_add(&b, "x", SIZE_MAX - 1), GD_DBUF_TOOBIG);
	ASSERT_STR(gd_dbuf_ptr(&b), "ok");
	gd_dbuf_free(&b);

	gd_dbuf_init(&b, 0);	/* a cap of nothing: only empty adds */
	ASSERT_EQ(gd_dbuf_add(&b, "", 0), GD_DBUF_OK);
	ASSERT_EQ(gd_dbuf_add(&b, "x", 1), GD_DBUF_TOOBIG);
	gd_dbuf_free(&b);
}

TEST(test_growth_keeps_bytes)
{
	struct gd_dbuf b;
	uint32_t i, v;
	int ok = 1;

	gd_dbuf_init(&b, 4u << 20);
	for (i = 0; i < 1u << 20; i++)
		if (gd_dbuf_add(&b, &i, sizeof(i)) != GD_DBUF_OK)
			ok = 0;
	ASSERT(ok);
	ASSERT_EQ(gd_dbuf_len(&b), 4u << 20);
	ASSERT(b.alloc <= b.max + 1);
	for (i = 0; i < 1u << 20 && ok; i++) {
		memcpy(&v, gd_dbuf_ptr(&b) + 4 * (size_t)i, sizeof(v));
		ok = v == i;
	}
	ASSERT(ok);
	ASSERT_EQ(gd_dbuf_add(&b, "x", 1), GD_DBUF_TOOBIG);
	gd_dbuf_free(&b);
}

TEST(test_reserve_commit)
{
	struct gd_dbuf b;
	char *p;

	gd_dbuf_init_sized(&b, 256, 1000);
	ASSERT_EQ(gd_dbuf_reserve(&b, 10), GD_DBUF_OK);
	ASSERT_EQ(b.alloc, 256);	/* the first allocation, at once */
	ASSERT(gd_dbuf_room(&b) >= 10);
	p = gd_dbuf_end(&b);
	memcpy(p, "hello", 5);
	gd_dbuf_commit(&b, 5);
	ASSERT_STR(gd_dbuf_ptr(&b), "hello");
	ASSERT_EQ(gd_dbuf_reserve(&b, 995), GD_DBUF_OK);
	ASSERT_EQ(b.alloc, 1001);	/* capped: max + its NUL */
	ASSERT_EQ(gd_dbuf_reserve(&b, 996), GD_DBUF_TOOBIG);
	ASSERT_STR(gd_dbuf_ptr(&b), "hello");
	gd_dbuf_free(&b);
}

TEST(test_truncate_consume_reset)
{
	struct gd_dbuf b;

	gd_dbuf_init(&b, 100);
	ASSERT_EQ(gd_dbuf_adds(&b, "0123456789"), GD_DBUF_OK);
	gd_dbuf_truncate(&b, 20);	/* longer than held: nothing */
	ASSERT_EQ(gd_dbuf_len(&b), 10);
	gd_dbuf_truncate(&b, 7);
	ASSERT_STR(gd_dbuf_ptr(&b), "0123456");
	gd_dbuf_consume(&b, 3);
	ASSERT_STR(gd_dbuf_ptr(&b), "3456");
	ASSERT_EQ(gd_dbuf_len(&b), 4);
	gd_dbuf_consume(&b, 0);
	ASSERT_STR(gd_dbuf_ptr(&b), "3456");
	gd_dbuf_consume(&b, 10);
	ASSERT_EQ(gd_dbuf_len(&b), 0);
	ASSERT_STR(gd_dbuf_ptr(&b), "");
	ASSERT_EQ(gd_dbuf_adds(&b, "ab"), GD_DBUF_OK);
	gd_dbuf_reset(&b);
	ASSERT_EQ(gd_dbuf_len(&b), 0);
	ASSERT(b.alloc > 0);	/* the memory is kept */
	ASSERT_STR(gd_dbuf_ptr(&b), "");
	gd_dbuf_free(&b);
}

TEST(test_take)
{
	struct gd_dbuf b;
	size_t len = 99;
	char *p;

	gd_dbuf_init(&b, 100);
	ASSERT(gd_dbuf_take(&b, &len) == NULL);
	ASSERT_EQ(len, 0);
	ASSERT_EQ(gd_dbuf_adds(&b, "mine"), GD_DBUF_OK);
	p = gd_dbuf_take(&b, &len);
	ASSERT_EQ(len, 4);
	ASSERT_STR(p, "mine");
	free(p);
	ASSERT(gd_dbuf_ptr(&b) == NULL);
	ASSERT_EQ(gd_dbuf_len(&b), 0);
	ASSERT_EQ(b.max, 100);
	ASSERT_EQ(gd_dbuf_adds(&b, "next"), GD_DBUF_OK);
	ASSERT_STR(gd_dbuf_ptr(&b), "next");
	gd_dbuf_free(&b);
}

TEST(test_strerror)
{
	ASSERT_STR(gd_dbuf_strerror(GD_DBUF_NOMEM), "out of memory");
	ASSERT_STR(gd_dbuf_strerror(GD_DBUF_TOOBIG), "over its size limit");
}

/* gd_dbuf_read: a full buffer doubles, the last step stops at the cap,
 * a read at the cap is refused with the bytes kept; the end of input and
 * a failed read are told apart. */
TEST(test_read_to_the_cap)
{
	struct gd_dbuf b;
	char src[100];
	int fd[2];
	size_t i;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (char)('a' + i % 26);
	ASSERT_EQ(pipe(fd), 0);
	ASSERT_EQ(write(fd[1], src, sizeof(src)), (long long)sizeof(src));
	gd_dbuf_init(&b, 100);
	ASSERT_EQ(gd_dbuf_read(&b, fd[0]), 63);	/* 64 bytes, NUL one */
	ASSERT_EQ(gd_dbuf_read(&b, fd[0]), 37);	/* 101: not 128 */
	ASSERT_EQ(b.alloc, 101);
	ASSERT_EQ(gd_dbuf_len(&b), 100);
	ASSERT(memcmp(gd_dbuf_ptr(&b), src, sizeof(src)) == 0);
	ASSERT_EQ(write(fd[1], "z", 1), 1);
	ASSERT_EQ(gd_dbuf_read(&b, fd[0]), GD_DBUF_TOOBIG);
	ASSERT_EQ(gd_dbuf_len(&b), 100);		/* as it was */
	ASSERT(memcmp(gd_dbuf_ptr(&b), src, sizeof(src)) == 0);
	gd_dbuf_consume(&b, 50);			/* room again */
	ASSERT_EQ(gd_dbuf_read(&b, fd[0]), 1);
	ASSERT_EQ(gd_dbuf_ptr(&b)[50], 'z');
	close(fd[1]);
	ASSERT_EQ(gd_dbuf_read(&b, fd[0]), 0);	/* the end of input */
	close(fd[0]);
	errno = 0;
	ASSERT_EQ(gd_dbuf_read(&b, fd[0]), GD_DBUF_IOERR);
	ASSERT_EQ(errno, EBADF);
	gd_dbuf_free(&b);
}

int main(void)
{
	RUN(test_add_kinds);
	RUN(test_empty_add_gives_a_string);
	RUN(test_cap_exact_and_one_past);
	RUN(test_addf_past_cap_in_room);
	RUN(test_addf_longer_than_room);
	RUN(test_overflowing_sizes);
	RUN(test_growth_keeps_bytes);
	RUN(test_reserve_commit);
	RUN(test_truncate_consume_reset);
	RUN(test_take);
	RUN(test_strerror);
	RUN(test_read_to_the_cap);
	return UNIT_DONE();
}
