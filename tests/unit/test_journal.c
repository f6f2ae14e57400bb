/* Unit tests of lib/journal.c in a private temporary directory: records
 * survive a reopen, resolved blocks do not come back, the epoch and the
 * highest id and sequence index are kept, a torn tail is cut and said,
 * corruption before the end is an error, compaction keeps exactly what
 * is pending, fsync policies, and a full disk (/dev/full). */
#include "conf.h"
#include "journal.h"
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXB 4096	/* GDpub_maxBlockSize of these tests' journals */

static char dir[256], path[300];

static void setup(const char *name)
{
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

static long fsize(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

/* blocks 1..n, payload "pN" */
static void write_blocks(struct gd_journal *j, uint64_t from, uint64_t n)
{
	char pl[32];
	uint64_t i;

	for (i = from; i < from + n; i++) {
		int k = snprintf(pl, sizeof(pl), "p%" PRIu64, i);
		ASSERT_EQ(gd_journal_block(j, 100 + i, i, 1000 + i,
		    (const uint8_t *)pl, (uint32_t)k), 0);
	}
}

TEST(create_write_reopen)
{
	struct gd_journal j;

	setup("a.j");
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_ALWAYS, 77, MAXB), 0);
	ASSERT_U64(j.epoch, 77);
	ASSERT_EQ(j.npending, 0);
	ASSERT_EQ(fsize(path), GD_JOURNAL_HDR);
	write_blocks(&j, 1, 5);
	ASSERT(j.buf.len > 0);			/* buffered until the commit */
	ASSERT_EQ(gd_journal_commit(&j, 1), 0);
	ASSERT_U64(j.n_sync, 1);		/* one fsync for five blocks */
	ASSERT_EQ(gd_journal_resolved(&j, 102, 2, 2, 1), 0);
	ASSERT_EQ(gd_journal_resolved(&j, 104, 4, 2, 0), 0);
	ASSERT_EQ(gd_journal_commit(&j, 2), 0);
	gd_journal_close(&j);
	/* reopened: 1, 3, 5 pending, in order; the epoch of the file */
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_ALWAYS, 99, MAXB), 0);
	ASSERT_U64(j.epoch, 77);
	ASSERT_EQ(j.npending, 3);
	ASSERT_U64(j.pending[0].seq, 1);
	ASSERT_U64(j.pending[1].seq, 3);
	ASSERT_U64(j.pending[2].seq, 5);
	ASSERT_U64(j.pending[1].id, 103);
	ASSERT_U64(j.pending[1].time_ns, 1003);
	ASSERT_EQ(j.pending[1].len, 2);
	ASSERT(memcmp(j.pending[1].data, "p3", 2) == 0);
	ASSERT_U64(j.max_id, 105);
	ASSERT_U64(j.max_seq, 5);
	ASSERT_U64(j.torn_at, 0);
	ASSERT_U64(j.live, 3 * gd_journal_recsize(2));
	gd_journal_forget_image(&j);
	/* appends go after what was there */
	write_blocks(&j, 6, 1);
	ASSERT_EQ(gd_journal_commit(&j, 3), 0);
	gd_journal_close(&j);
	ASSERT_EQ(gd_journal_scan(&j, path), 0);
	ASSERT_EQ(j.npending, 4);
	ASSERT_U64(j.pending[3].seq, 6);
	gd_journal_close(&j);
}

TEST(torn_tail_is_cut)
{
	struct gd_journal j;
	long full;

	setup("t.j");
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 5, MAXB), 0);
	write_blocks(&j, 1, 3);
	ASSERT_EQ(gd_journal_commit(&j, 0), 0);
	gd_journal_close(&j);
	full = fsize(path);
	/* a crash mid-write: the last record cut 3 bytes short */
	ASSERT_EQ(truncate(path, full - 3), 0);
	ASSERT_EQ(gd_journal_scan(&j, path), 0);	/* read-only: kept */
	ASSERT_U64(j.torn_at, (uint64_t)(full - (long)gd_journal_recsize(2)));
	gd_journal_close(&j);
	ASSERT_EQ(fsize(path), full - 3);
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 5, MAXB), 0);
	ASSERT_EQ(j.npending, 2);
	ASSERT_U64(j.torn_at, (uint64_t)(full - (long)gd_journal_recsize(2)));
	ASSERT_U64(j.torn_bytes, gd_journal_recsize(2) - 3);
	gd_journal_close(&j);
	ASSERT_EQ(fsize(path), full - (long)gd_journal_recsize(2));
	/* a last record with a bad CRC is a torn tail too */
	{
		int fd = open(path, O_RDWR);
		char c;
		ASSERT(fd >= 0);
		ASSERT_EQ(pread(fd, &c, 1, fsize(path) - 6), 1);
		c ^= 1;
		ASSERT_EQ(pwrite(fd, &c, 1, fsize(path) - 6), 1);
		close(fd);
	}
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 5, MAXB), 0);
	ASSERT_EQ(j.npending, 1);
	ASSERT(j.torn_at > 0);
	gd_journal_close(&j);
}

TEST(corruption_before_the_end_is_an_error)
{
	struct gd_journal j;
	int fd;
	char c;

	setup("c.j");
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 5, MAXB), 0);
	write_blocks(&j, 1, 3);
	ASSERT_EQ(gd_journal_commit(&j, 0), 0);
	gd_journal_close(&j);
	/* a flipped payload byte in the first of three records */
	fd = open(path, O_RDWR);
	ASSERT(fd >= 0);
	ASSERT_EQ(pread(fd, &c, 1, GD_JOURNAL_HDR + 32), 1);
	c ^= 0x40;
	ASSERT_EQ(pwrite(fd, &c, 1, GD_JOURNAL_HDR + 32), 1);
	close(fd);
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 5, MAXB), -1);
	ASSERT(strstr(j.err, "is corrupt at byte offset 32, before its end") != NULL);
	gd_journal_close(&j);
	/* not a journal at all; a bad header */
	setup("x.j");
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ASSERT_EQ(write(fd, "hello, world, this is not a journal", 35), 35);
	close(fd);
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 5, MAXB), -1);
	ASSERT(strstr(j.err, "is not a gdpub journal") != NULL);
	gd_journal_close(&j);
}

static struct gd_journal *cj;
static size_t ci;

static int next_pending(void *ctx, struct gd_jblock *b)
{
	(void)ctx;
	if (ci >= cj->npending)
		return 0;
	*b = cj->pending[ci++];
	return 1;
}

TEST(compaction_keeps_what_is_pending)
{
	struct gd_journal j, r;
	uint64_t i;

	setup("k.j");
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_BATCH, 9, MAXB), 0);
	write_blocks(&j, 1, 1000);
	for (i = 1; i <= 1000; i++)
		if (i % 100 != 0)
			gd_journal_resolved(&j, 100 + i, i, (uint32_t)(i < 10 ? 2 :
			    i < 100 ? 3 : i < 1000 ? 4 : 5), 1);
	ASSERT_EQ(gd_journal_commit(&j, 0), 0);
	ASSERT(j.size > 10 * j.live);
	/* what is pending, as the engine would give it */
	ASSERT_EQ(gd_journal_scan(&r, path), 0);
	ASSERT_EQ(r.npending, 10);
	cj = &r;
	ci = 0;
	ASSERT_EQ(gd_journal_compact(&j, next_pending, NULL), 0);
	ASSERT_U64(j.size, (uint64_t)fsize(path));
	ASSERT_U64(j.size, GD_JOURNAL_HDR + 28 + j.live);	/* + the mark */
	gd_journal_close(&r);
	/* appends continue in the new file */
	write_blocks(&j, 1001, 1);
	ASSERT_EQ(gd_journal_commit(&j, 0), 0);
	gd_journal_close(&j);
	ASSERT_EQ(gd_journal_scan(&r, path), 0);
	ASSERT_U64(r.epoch, 9);
	ASSERT_EQ(r.npending, 11);
	ASSERT_U64(r.pending[0].seq, 100);
	ASSERT_U64(r.pending[9].seq, 1000);
	ASSERT_U64(r.pending[10].seq, 1001);
	ASSERT(memcmp(r.pending[9].data, "p1000", 5) == 0);
	gd_journal_close(&r);
	ASSERT_EQ(fsize(path) > 0, 1);
	{
		char tmp[320];
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		ASSERT_EQ(fsize(tmp), -1);
	}
}

static int none(void *ctx, struct gd_jblock *b)
{
	(void)ctx;
	(void)b;
	return 0;
}

/* Everything resolved and the file rewritten: the highest id and index
 * stay, so a restart goes on past them. */
TEST(compaction_keeps_the_highest)
{
	struct gd_journal j;

	setup("m.j");
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 3, MAXB), 0);
	write_blocks(&j, 1, 7);
	ASSERT_EQ(gd_journal_commit(&j, 0), 0);
	ASSERT_EQ(gd_journal_compact(&j, none, NULL), 0);
	gd_journal_close(&j);
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 4, MAXB), 0);
	ASSERT_EQ(j.npending, 0);
	ASSERT_U64(j.epoch, 3);
	ASSERT_U64(j.max_id, 107);
	ASSERT_U64(j.max_seq, 7);
	gd_journal_close(&j);
}

/* One writer: a second open while the first holds the file fails,
 * naming the holder's pid, and changes nothing; the lock follows the file
 * a rewrite puts at the path; locking alone cuts no torn tail. */
TEST(one_writer)
{
	struct gd_journal a, b;
	char want[400];
	long full;

	setup("l.j");
	ASSERT_EQ(gd_journal_open(&a, path, GD_FSYNC_NEVER, 5, MAXB), 0);
	write_blocks(&a, 1, 2);
	ASSERT_EQ(gd_journal_commit(&a, 0), 0);
	full = fsize(path);
	ASSERT_EQ(gd_journal_lock(&b, path, GD_FSYNC_NEVER, 6, MAXB), -1);
	snprintf(want, sizeof(want), "journal '%s' is in use by another gdpub "
	    "(pid %ld)", path, (long)getpid());
	ASSERT_STR(b.err, want);
	gd_journal_close(&b);
	ASSERT_EQ(fsize(path), full);
	ASSERT_EQ(gd_journal_compact(&a, none, NULL), 0);
	ASSERT_EQ(gd_journal_open(&b, path, GD_FSYNC_NEVER, 6, MAXB), -1);
	ASSERT_STR(b.err, want);
	gd_journal_close(&b);
	write_blocks(&a, 3, 2);
	ASSERT_EQ(gd_journal_commit(&a, 0), 0);
	gd_journal_close(&a);
	full = fsize(path);
	ASSERT_EQ(truncate(path, full - 3), 0);
	ASSERT_EQ(gd_journal_lock(&b, path, GD_FSYNC_NEVER, 6, MAXB), 0);
	ASSERT(b.torn_at > 0);
	ASSERT_EQ(b.npending, 1);
	ASSERT_EQ(fsize(path), full - 3);		/* not cut yet */
	ASSERT_EQ(gd_journal_begin(&b), 0);
	ASSERT_EQ(fsize(path), (long)b.torn_at);
	gd_journal_close(&b);
}

TEST(bloated)
{
	struct gd_journal j;

	memset(&j, 0, sizeof(j));
	j.live = 1000;
	j.size = 2000 + GD_JOURNAL_SLACK;
	ASSERT(!gd_journal_bloated(&j));
	j.size++;
	ASSERT(gd_journal_bloated(&j));
}

TEST(fsync_policies)
{
	struct gd_journal j;

	setup("s.j");
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_BATCH, 1, MAXB), 0);
	write_blocks(&j, 1, 1);
	ASSERT_EQ(gd_journal_commit(&j, GD_JOURNAL_BATCH_NS / 2), 0);
	ASSERT_U64(j.n_sync, 0);			/* not yet */
	ASSERT(j.unsynced);
	write_blocks(&j, 2, 1);
	ASSERT_EQ(gd_journal_commit(&j, GD_JOURNAL_BATCH_NS), 0);
	ASSERT_U64(j.n_sync, 1);
	ASSERT_EQ(gd_journal_sync(&j, GD_JOURNAL_BATCH_NS * 2), 0);
	ASSERT_U64(j.n_sync, 1);			/* nothing new */
	gd_journal_close(&j);
	setup("n.j");
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 1, MAXB), 0);
	write_blocks(&j, 1, 1);
	ASSERT_EQ(gd_journal_commit(&j, GD_JOURNAL_BATCH_NS * 9), 0);
	ASSERT_U64(j.n_sync, 0);
	gd_journal_close(&j);
}

TEST(disk_full)
{
	struct gd_journal j;

	if (access("/dev/full", W_OK) != 0) {
		printf("  (skip: no /dev/full)\n");
		return;
	}
	/* /dev/full takes the open but no byte */
	ASSERT_EQ(gd_journal_open(&j, "/dev/full", GD_FSYNC_NEVER, 1, MAXB), -1);
	ASSERT(strstr(j.err, "No space left on device") != NULL);
	gd_journal_close(&j);
}

TEST(unopenable)
{
	struct gd_journal j;

	ASSERT_EQ(gd_journal_open(&j, "/nonexistent/dir/j", GD_FSYNC_NEVER, 1, MAXB), -1);
	ASSERT_STR(j.err, "cannot open journal '/nonexistent/dir/j': No such file or directory");
	gd_journal_close(&j);
}

/* The write buffer's bound: past GD_JOURNAL_FLUSH bytes the records go
 * to the file before the commit (every one kept, the buffer never over
 * its cap); a record over the cap (1 MiB and a block of the
 * GDpub_maxBlockSize given at open) is an error that says so, and what was recorded before stays; a pending block
 * larger than that bound (an earlier run's) still fits a rewrite. */
TEST(write_buffer_bound)
{
	static uint8_t big[GD_JOURNAL_FLUSH + MAXB + 1];
	struct gd_journal j, r;
	uint64_t i, n = 3 * GD_JOURNAL_FLUSH / gd_journal_recsize(MAXB);

	setup("w.j");
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_ALWAYS, 1, MAXB), 0);
	for (i = 1; i <= n; i++)
		ASSERT_EQ(gd_journal_block(&j, i, i, 0, big, MAXB), 0);
	ASSERT(j.buf.len <= GD_JOURNAL_FLUSH);
	ASSERT(j.buf.alloc <= j.buf.max + 1);
	ASSERT(fsize(path) > (long)(2 * GD_JOURNAL_FLUSH));	/* written early */
	ASSERT_U64(j.n_sync, 0);		/* but synced at the commit */
	ASSERT(j.unsynced);
	/* one byte more than the buffer holds, even emptied */
	ASSERT_EQ(gd_journal_block(&j, n + 1, n + 1, 0, big,
	    GD_JOURNAL_FLUSH + MAXB + 1), -1);
	ASSERT(strstr(j.err, "over the") != NULL);
	ASSERT(strstr(j.err, "GDpub_maxBlockSize") != NULL);
	ASSERT_EQ(gd_journal_commit(&j, 1), 0);
	ASSERT_U64(j.n_sync, 1);
	ASSERT(!j.unsynced);
	gd_journal_close(&j);
	ASSERT_EQ(gd_journal_scan(&r, path), 0);
	ASSERT_U64(r.npending, n);
	gd_journal_close(&r);
	/* reopened with a smaller bound: its blocks are still rewritten */
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 1, 16), 0);
	ASSERT_U64(j.npending, n);
	ASSERT(j.buf.max >= GD_JOURNAL_FLUSH + gd_journal_recsize(MAXB));
	gd_journal_close(&j);
}

/* The calls the engine reads the journal through: what the file held, and
 * the pending blocks taken over by the caller (the replay), which the
 * journal then no longer holds nor frees. */
TEST(calls_and_take_pending)
{
	struct gd_journal j;
	struct gd_jblock *b;
	const struct gd_jblock *v;
	uint64_t tb = 9;
	size_t n;

	setup("c.j");
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 41, MAXB), 0);
	write_blocks(&j, 1, 3);
	ASSERT_EQ(gd_journal_commit(&j, 1), 0);
	gd_journal_close(&j);
	ASSERT_EQ(gd_journal_open(&j, path, GD_FSYNC_NEVER, 99, MAXB), 0);
	ASSERT_U64(gd_journal_epoch(&j), 41);
	ASSERT_U64(gd_journal_max_id(&j), 103);
	ASSERT_U64(gd_journal_max_seq(&j), 3);
	ASSERT_U64(gd_journal_size(&j), GD_JOURNAL_HDR + 3 * gd_journal_recsize(2));
	ASSERT_U64(gd_journal_torn(&j, &tb), 0);
	ASSERT_U64(tb, 0);
	v = gd_journal_pending(&j, &n);
	ASSERT_EQ(n, 3);
	ASSERT_U64(v[2].id, 103);
	b = gd_journal_take_pending(&j, &n);
	ASSERT(b == v);
	ASSERT_EQ(n, 3);
	ASSERT(memcmp(b[0].data, "p1", 2) == 0);	/* still in the image */
	ASSERT(gd_journal_pending(&j, &n) == NULL);
	ASSERT_EQ(n, 0);
	gd_journal_set_err(&j, "journal '%s': %d", "x", 7);
	ASSERT(strcmp(gd_journal_err(&j), "journal 'x': 7") == 0);
	gd_journal_forget_image(&j);
	gd_journal_close(&j);
	free(b);
}

int main(void)
{
	int rc;

	snprintf(dir, sizeof(dir), "%s/gdkit-test_journal.XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	RUN(create_write_reopen);
	RUN(torn_tail_is_cut);
	RUN(corruption_before_the_end_is_an_error);
	RUN(compaction_keeps_what_is_pending);
	RUN(compaction_keeps_the_highest);
	RUN(bloated);
	RUN(one_writer);
	RUN(fsync_policies);
	RUN(disk_full);
	RUN(write_buffer_bound);
	RUN(calls_and_take_pending);
	RUN(unopenable);
	rc = UNIT_DONE();
	{
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			rc = 1;
	}
	return rc;
}
