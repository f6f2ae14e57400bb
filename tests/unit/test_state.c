/* Unit tests of lib/state.c, gdsub's state file, in a temporary
 * directory with an injected clock: ranges of acknowledged indexes and
 * their id checks, the floor and where a run resumes, reopening (log and
 * compacted forms), a new run of an origin, the bounds, the fsync policy,
 * torn tails (cut and said) and corruption (refused with the offset). */
#include "state.h"
#include "stream.h"
#include "wire.h"
#include "unit.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MS 1000000ull
#define O1 "127.0.0.1:7001"
#define O2 "127.0.0.1:7002"

static char dir[] = "/tmp/gdkit-state-XXXXXX";

static const char *at(const char *name)
{
	static char buf[256];
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static uint64_t fsize(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* open path, failing the test (and saying why) when it cannot */
static int open_ok(struct gd_state *st, const char *path)
{
	if (gd_state_open(st, path, 0) == 0)
		return 1;
	FAILF("open %s: %s", path, st->err);
	return 0;
}

static struct gd_srun *run1(struct gd_state *st, uint64_t epoch)
{
	return gd_state_run(st, O1, sizeof(O1) - 1, epoch);
}

static void ack_range(struct gd_state *st, struct gd_srun *r, uint64_t lo,
    uint64_t hi, uint64_t idoff)
{
	uint64_t s;
	for (s = lo; s < hi; s++)
		ASSERT_EQ(gd_state_ack(st, r, s, s + idoff), 0);
}

static void append(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
	ASSERT(fd >= 0 && write(fd, p, n) == (ssize_t)n);
	close(fd);
}

/* a record as the file holds it: header, body, CRC */
static size_t record(uint8_t *d, int type, const uint8_t *body, uint32_t len)
{
	d[0] = (uint8_t)type;
	d[1] = d[2] = d[3] = 0;
	gd_put32(d + 4, len);
	memcpy(d + 8, body, len);
	gd_put32(d + 8 + len, gd_crc32c(0, d, 8 + len));
	return 12 + len;
}

TEST(ranges_and_ids)
{
	struct gd_state st;
	struct gd_srun *r;

	if (!open_ok(&st, at("a.state")))
		return;
	r = run1(&st, 42);
	ASSERT(r != NULL);
	ack_range(&st, r, 1, 4, 100);	/* ids 101..103 */
	ack_range(&st, r, 5, 7, 100);
	ASSERT_EQ(gd_state_ack(&st, r, 9, 109), 0);
	ASSERT_EQ(r->n, 3);
	ASSERT_EQ(gd_state_has(r, 0, 100), 0);
	ASSERT_EQ(gd_state_has(r, 1, 101), 1);
	ASSERT_EQ(gd_state_has(r, 3, 103), 1);
	ASSERT_EQ(gd_state_has(r, 4, 104), 0);
	ASSERT_EQ(gd_state_has(r, 6, 106), 1);
	ASSERT_EQ(gd_state_has(r, 6, 7), -1);	/* another id */
	ASSERT_EQ(gd_state_has(r, 8, 108), 0);
	ASSERT_EQ(gd_state_has(r, 10, 110), 0);
	ASSERT_EQ(gd_state_has(r, UINT64_MAX, 0), 0);
	/* the hole filled: one range, ids still checked */
	ASSERT_EQ(gd_state_ack(&st, r, 4, 104), 0);
	ASSERT_EQ(r->n, 2);
	ASSERT_EQ(gd_state_has(r, 5, 99), -1);
	/* acknowledged again (gdack repeats a key): nothing changes */
	ASSERT_EQ(gd_state_ack(&st, r, 2, 102), 0);
	ASSERT_EQ(r->n, 2);
	/* ids that do not run with the indexes: kept, not checked */
	ASSERT_EQ(gd_state_ack(&st, r, 8, 5), 0);
	ASSERT_EQ(r->n, 2);
	ASSERT_EQ(gd_state_has(r, 3, 12345), -1);
	ASSERT_EQ(gd_state_has(r, 9, 0), 1);
	ASSERT_EQ(gd_state_ack(&st, r, 7, 107), 0);
	ASSERT_EQ(r->n, 1);
	ASSERT_EQ(gd_state_has(r, 3, 12345), 1);
	/* out of order, far above: a range of its own, merged when met */
	ASSERT_EQ(gd_state_ack(&st, r, 20, 120), 0);
	ASSERT_EQ(gd_state_ack(&st, r, 15, 115), 0);
	ASSERT_EQ(r->n, 3);
	ack_range(&st, r, 10, 21, 100);
	ASSERT_EQ(r->n, 1);
	ASSERT_U64(r->r[r->off].lo, 1);
	ASSERT_U64(r->r[r->off].hi, 21);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	unlink(at("a.state"));
}

TEST(floor_and_resume)
{
	struct gd_state st;
	struct gd_srun *r;

	if (!open_ok(&st, at("f.state")))
		return;
	r = run1(&st, 1);
	ASSERT_U64(gd_state_resume(r), 1);
	ack_range(&st, r, 1, 7, 0);
	ASSERT_U64(gd_state_resume(r), 7);
	ASSERT_EQ(gd_state_ack(&st, r, 9, 9), 0);
	gd_state_floor(r, 5);	/* 7 and 8 still pending */
	ASSERT_U64(gd_state_resume(r), 7);
	gd_state_floor(r, 8);	/* 7 NACKed; 8 pending */
	ASSERT_U64(gd_state_resume(r), 8);
	gd_state_floor(r, 9);
	ASSERT_U64(gd_state_resume(r), 10);
	gd_state_floor(r, 3);	/* a floor never goes back */
	ASSERT_U64(r->floor, 9);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	/* the floor survives */
	if (!open_ok(&st, at("f.state")))
		return;
	r = run1(&st, 1);
	ASSERT_U64(r->floor, 9);
	ASSERT_U64(gd_state_resume(r), 10);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	unlink(at("f.state"));
}

/* What was acknowledged is there after a reopen, whether it was still in
 * the log or compacted; a new run of an origin replaces the old one. */
TEST(reopen)
{
	struct gd_state st;
	struct gd_srun *r, *r2;
	uint64_t s;
	pid_t pid;
	int ws = 0;

	/* a gdsub killed (-9) right after a commit: the log has it all */
	if ((pid = fork()) == 0) {
		if (gd_state_open(&st, at("r.state"), 0) != 0)
			_exit(1);
		if (fsize(at("r.state")) != GD_STATE_HDR)
			_exit(2);
		r = run1(&st, 7);
		r2 = gd_state_run(&st, O2, sizeof(O2) - 1, 8);
		for (s = 1; s < 11; s++)
			gd_state_ack(&st, r, s, s);
		for (s = 1; s < 4; s++)
			gd_state_ack(&st, r2, s, s);
		gd_state_ack(&st, r2, 6, 6);
		if (gd_state_commit(&st, 1 * MS) != 0)
			_exit(3);
		kill(getpid(), SIGKILL);
	}
	ASSERT(pid > 0 && waitpid(pid, &ws, 0) == pid);
	ASSERT(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
	if (!open_ok(&st, at("r.state")))
		return;
	r = run1(&st, 7);
	r2 = gd_state_run(&st, O2, sizeof(O2) - 1, 8);
	ASSERT_EQ(st.nruns, 2);
	ASSERT_EQ(gd_state_has(r, 10, 10), 1);
	ASSERT_EQ(gd_state_has(r, 11, 11), 0);
	ASSERT_EQ(gd_state_has(r2, 3, 3), 1);
	ASSERT_EQ(gd_state_has(r2, 5, 5), 0);
	ASSERT_EQ(gd_state_has(r2, 6, 6), 1);
	/* past GD_STATE_SLACK of log the file is compacted: its size stays
	 * proportional to the ranges, not to history */
	for (s = 11; s < 200011; s += 1000) {
		ack_range(&st, r, s, s + 1000, 0);
		ASSERT_EQ(gd_state_commit(&st, s * MS), 0);
	}
	ASSERT(st.n_compact >= 2);
	ASSERT(fsize(at("r.state")) <= 2 * GD_STATE_SLACK + 4096);
	/* origin 1 restarted without a journal: a new epoch */
	r = run1(&st, 9);
	ASSERT_EQ(gd_state_has(r, 10, 10), 0);
	ASSERT_EQ(gd_state_ack(&st, r, 1, 1), 0);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	if (!open_ok(&st, at("r.state")))
		return;
	ASSERT_EQ(st.nruns, 2);
	ASSERT_EQ(gd_state_has(run1(&st, 9), 1, 1), 1);
	ASSERT_EQ(gd_state_has(run1(&st, 9), 2, 2), 0);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	unlink(at("r.state"));
}

/* The oldest ranges go past GD_STATE_RANGES, the least recently used run
 * past GD_STATE_RUNS. */
TEST(bounds)
{
	struct gd_state st;
	struct gd_srun *r;
	char o[64];
	uint64_t i;

	if (!open_ok(&st, at("b.state")))
		return;
	r = run1(&st, 1);
	for (i = 0; i < GD_STATE_RANGES + 10; i++)
		ASSERT_EQ(gd_state_ack(&st, r, 2 * i + 1, 2 * i + 1), 0);
	ASSERT_EQ(r->n, GD_STATE_RANGES);
	ASSERT_U64(r->n_forgotten, 10);
	ASSERT_EQ(gd_state_has(r, 1, 1), 0);
	ASSERT_EQ(gd_state_has(r, 21, 21), 1);
	ASSERT_EQ(gd_state_has(r, 2 * i - 1, 2 * i - 1), 1);
	/* ranges forgotten at the front make room at the back */
	ASSERT_EQ(gd_state_ack(&st, r, 2 * i + 1, 0), 0);
	ASSERT_EQ(r->n, GD_STATE_RANGES);
	ASSERT_EQ(gd_state_commit(&st, 0), 0);
	for (i = 0; i < GD_STATE_RUNS; i++) {
		int n = snprintf(o, sizeof(o), "10.0.0.%u:%u", (unsigned)i % 250,
		    (unsigned)(1000 + i));
		struct gd_srun *x = gd_state_run(&st, o, (size_t)n, 5);
		ASSERT(x != NULL);
		ASSERT_EQ(gd_state_ack(&st, x, 1, 1), 0);
	}
	ASSERT_EQ(st.nruns, GD_STATE_RUNS);
	ASSERT(gd_state_has(run1(&st, 1), 21, 21) == 0);	/* forgotten */
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	if (!open_ok(&st, at("b.state")))
		return;
	ASSERT_EQ(st.nruns, GD_STATE_RUNS);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	unlink(at("b.state"));
}

/* The write buffer's bound: a commit of more acknowledgements than
 * GD_STATE_FLUSH bytes, and a rewrite of runs whose ranges are larger
 * than that, go to the file a GD_STATE_FLUSH at a time; the buffer never
 * passes its cap, and everything is there at the next open. */
TEST(write_buffer_bound)
{
	struct gd_state st;
	struct gd_srun *r[8];
	char o[64];
	uint64_t i, n = 3 * GD_STATE_FLUSH / 16;	/* 3 MiB of acks */
	unsigned k;

	if (!open_ok(&st, at("w.state")))
		return;
	r[0] = run1(&st, 1);
	for (i = 0; i < n; i++)		/* gaps: one range each (up to the bound) */
		ASSERT_EQ(gd_state_ack(&st, r[0], 2 * i, 2 * i), 0);
	ASSERT_EQ(gd_state_commit(&st, 0), 0);
	ASSERT(st.buf.alloc <= st.buf.max + 1);
	ASSERT(st.buf.max < 3 * GD_STATE_FLUSH);	/* so it went out early */
	ASSERT_EQ(gd_state_acked(r[0], 2 * (n - 1)), 1);
	/* runs whose snapshot is several GD_STATE_FLUSH: the rewrite at the
	 * next open streams them */
	for (k = 1; k < 8; k++) {
		int m = snprintf(o, sizeof(o), "10.0.0.1:%u", 2000 + k);
		ASSERT((r[k] = gd_state_run(&st, o, (size_t)m, 7)) != NULL);
		for (i = 0; i < GD_STATE_RANGES; i++)
			ASSERT_EQ(gd_state_ack(&st, r[k], 2 * i, 2 * i), 0);
	}
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	if (!open_ok(&st, at("w.state")))
		return;
	ASSERT(st.n_compact >= 1);
	ASSERT(st.buf.alloc <= st.buf.max + 1);
	ASSERT(fsize(at("w.state")) > 3 * GD_STATE_FLUSH);	/* 8 x 512 KiB */
	ASSERT_EQ(st.nruns, 8);
	ASSERT_EQ(gd_state_acked(run1(&st, 1), 2 * (n - 1)), 1);
	ASSERT_EQ(gd_state_acked(run1(&st, 1), 2 * (n - 1) + 1), 0);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	unlink(at("w.state"));
}

/* fsync at most GD_STATE_SYNC_NS after a write, and at close. */
TEST(sync_policy)
{
	struct gd_state st;
	struct gd_srun *r;

	if (!open_ok(&st, at("s.state")))
		return;
	r = run1(&st, 1);
	ASSERT_U64(gd_state_sync_due(&st), 0);
	ASSERT_EQ(gd_state_ack(&st, r, 1, 1), 0);
	ASSERT_EQ(gd_state_commit(&st, 10 * MS), 0);
	ASSERT_U64(st.n_sync, 0);
	ASSERT_U64(gd_state_sync_due(&st), GD_STATE_SYNC_NS);
	ASSERT_EQ(gd_state_ack(&st, r, 2, 2), 0);
	ASSERT_EQ(gd_state_commit(&st, 50 * MS), 0);
	ASSERT_U64(st.n_sync, 0);
	ASSERT_EQ(gd_state_commit(&st, 60 * MS), 0);	/* nothing new */
	ASSERT_U64(st.n_sync, 0);
	ASSERT_EQ(gd_state_sync(&st, 100 * MS), 0);	/* the timer */
	ASSERT_U64(st.n_sync, 1);
	ASSERT_U64(gd_state_sync_due(&st), 0);
	ASSERT_EQ(gd_state_ack(&st, r, 3, 3), 0);
	ASSERT_EQ(gd_state_commit(&st, 250 * MS), 0);	/* 150 ms since */
	ASSERT_U64(st.n_sync, 2);
	ASSERT_EQ(gd_state_ack(&st, r, 4, 4), 0);
	ASSERT_EQ(gd_state_commit(&st, 260 * MS), 0);
	ASSERT(gd_state_sync_due(&st) != 0);
	ASSERT_EQ(gd_state_close(&st, 270 * MS), 0);
	unlink(at("s.state"));
}

/* A record cut short, one failing its CRC at the end, or zeros after the
 * last record: a torn tail, cut at its offset; what came before stays. */
TEST(torn_tails)
{
	static const uint8_t zeros[100];
	struct gd_state st;
	struct gd_srun *r;
	uint64_t good, size;
	const char *p = at("t.state");
	int cut;

	for (cut = 0; cut < 3; cut++) {
		unlink(p);
		if (!open_ok(&st, p))
			return;
		r = run1(&st, 3);
		ack_range(&st, r, 1, 6, 0);
		ASSERT_EQ(gd_state_commit(&st, 0), 0);
		good = fsize(p);
		ack_range(&st, r, 6, 9, 0);
		ASSERT_EQ(gd_state_commit(&st, 0), 0);
		size = fsize(p);
		ASSERT_EQ(gd_state_close(&st, 0), 0);	/* writes nothing more */
		ASSERT_U64(fsize(p), size);
		if (cut == 0) {
			ASSERT_EQ(truncate(p, (off_t)(size - 5)), 0);
		} else if (cut == 1) {	/* the last byte of the last CRC */
			int fd = open(p, O_RDWR);
			uint8_t b;
			ASSERT(pread(fd, &b, 1, (off_t)size - 1) == 1);
			b ^= 0x40;
			ASSERT(pwrite(fd, &b, 1, (off_t)size - 1) == 1);
			close(fd);
		} else {
			append(p, zeros, sizeof(zeros));
			good = size;
		}
		if (!open_ok(&st, p))
			return;
		ASSERT(st.torn_bytes > 0);
		ASSERT_U64(st.torn_at, good);
		r = run1(&st, 3);
		ASSERT_EQ(gd_state_has(r, 5, 5), 1);
		ASSERT_EQ(gd_state_has(r, 6, 6), cut == 2);
		ASSERT_EQ(gd_state_close(&st, 0), 0);
		/* rewritten whole: no tear the next time */
		if (!open_ok(&st, p))
			return;
		ASSERT_U64(st.torn_bytes, 0);
		ASSERT_EQ(gd_state_close(&st, 0), 0);
	}
	/* a crash right after creating it: part of a header */
	unlink(p);
	append(p, "\x89GD", 3);
	if (!open_ok(&st, p))
		return;
	ASSERT_U64(st.torn_bytes, 3);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	ASSERT_U64(fsize(p), GD_STATE_HDR);
	unlink(p);
}

/* Anything bad before the last record is refused, naming the offset. */
TEST(corruption)
{
	struct gd_state st;
	struct gd_srun *r;
	uint8_t rec[64], body[16], hdr[GD_STATE_HDR];
	const char *p = at("c.state");
	uint64_t size;
	int fd;
	uint8_t b;

	if (!open_ok(&st, p))
		return;
	r = run1(&st, 3);
	ack_range(&st, r, 1, 6, 0);
	ASSERT_EQ(gd_state_commit(&st, 0), 0);
	ack_range(&st, r, 6, 9, 0);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	size = fsize(p);
	/* a flipped byte in the first record (the run, at 16) */
	fd = open(p, O_RDWR);
	ASSERT(pread(fd, hdr, sizeof(hdr), 0) == sizeof(hdr));
	ASSERT(pread(fd, &b, 1, 30) == 1);
	b ^= 1;
	ASSERT(pwrite(fd, &b, 1, 30) == 1);
	close(fd);
	ASSERT_EQ(gd_state_open(&st, p, 0), -1);
	ASSERT(strstr(st.err, "corrupt record at offset 16: CRC mismatch") != NULL);
	ASSERT_U64(fsize(p), size);	/* left as it was */
	/* garbage between records */
	unlink(p);
	append(p, hdr, sizeof(hdr));
	append(p, "junk", 4);
	gd_put32(body, 0);
	gd_put64(body + 4, 5);
	append(p, rec, record(rec, GD_SR_FLOOR, body, 12));
	ASSERT_EQ(gd_state_open(&st, p, 0), -1);
	ASSERT_STR(st.err, "corrupt record at offset 16: bad record header");
	/* a record of a run never declared */
	ASSERT_EQ(truncate(p, 16), 0);
	append(p, rec, record(rec, GD_SR_FLOOR, body, 12));
	ASSERT_EQ(gd_state_open(&st, p, 0), -1);
	ASSERT_STR(st.err, "corrupt record at offset 16: run number 0 has no "
	    "run record before it");
	/* a body of the wrong size, then a good record */
	ASSERT_EQ(truncate(p, 16), 0);
	memcpy(body + 12, "h:1", 3);
	append(p, rec, record(rec, GD_SR_RUN, body, 15));
	append(p, rec, record(rec, GD_SR_FLOOR, body, 8));
	append(p, rec, record(rec, GD_SR_FLOOR, body, 12));
	ASSERT_EQ(gd_state_open(&st, p, 0), -1);
	ASSERT_STR(st.err, "corrupt record at offset 43: a body of 8 bytes "
	    "for type 4");
	/* not a state file at all */
	unlink(p);
	append(p, "GDsub_pub=127.0.0.1:7001\n", 25);
	ASSERT_EQ(gd_state_open(&st, p, 0), -1);
	ASSERT_STR(st.err, "not a gdsub state file (bad magic)");
	unlink(p);
	append(p, "hello", 5);
	ASSERT_EQ(gd_state_open(&st, p, 0), -1);
	ASSERT_STR(st.err, "not a gdsub state file (5 bytes, no header)");
	unlink(p);
}

TEST(unusable_files)
{
	struct gd_state st, st2;

	ASSERT_EQ(gd_state_open(&st, at("no/such/dir/x.state"), 0), -1);
	ASSERT_STR(st.err, "cannot open: No such file or directory");
	ASSERT_EQ(gd_state_open(&st, dir, 0), -1);
	ASSERT_STR(st.err, "cannot open: Is a directory");
	if (!open_ok(&st, at("l.state")))
		return;
	ASSERT_EQ(gd_state_open(&st2, at("l.state"), 0), -1);
	ASSERT_STR(st2.err, "in use by another gdsub");
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	if (!open_ok(&st2, at("l.state")))
		return;
	ASSERT_EQ(gd_state_close(&st2, 0), 0);
	unlink(at("l.state"));
}

#define C1 "@c1"

/* A multisend cluster's members share the origin @c1, each with its own
 * run (epoch) and indexes: one member's run does not clear another's,
 * and each keeps the ids its copies had acknowledged, across a reopen
 * (log and compacted forms). */
TEST(cluster_runs)
{
	struct gd_state st;
	struct gd_srun *p, *q;
	uint32_t k;
	pid_t pid;
	int ws = 0;

	if ((pid = fork()) == 0) {
		if (gd_state_open(&st, at("k.state"), 0) != 0)
			_exit(1);
		p = gd_state_run(&st, C1, 3, 100);
		gd_state_ack(&st, p, 1, 501);
		gd_state_ack(&st, p, 2, 502);
		/* the secondary forwards 503 (its index 7) */
		q = gd_state_run(&st, C1, 3, 200);
		gd_state_ack(&st, q, 7, 503);
		if (p->epoch != 100 || gd_state_commit(&st, 1 * MS) != 0)
			_exit(2);
		kill(getpid(), SIGKILL);	/* the log alone has them */
	}
	ASSERT(pid > 0 && waitpid(pid, &ws, 0) == pid);
	ASSERT(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
	if (!open_ok(&st, at("k.state")))
		return;
	ASSERT_EQ(st.nruns, 2);
	p = gd_state_run(&st, C1, 3, 100);
	q = gd_state_run(&st, C1, 3, 200);
	ASSERT(p != q);
	ASSERT_EQ(gd_state_has(p, 2, 502), 1);
	ASSERT_EQ(gd_state_has(q, 7, 503), 1);
	ASSERT_EQ(p->ncid, 2);
	ASSERT_EQ(gd_srun_cid(p, 0), 501);
	ASSERT_EQ(gd_srun_cid(p, 1), 502);
	ASSERT_EQ(q->ncid, 1);
	ASSERT_EQ(gd_srun_cid(q, 0), 503);
	/* a third member: the others stay */
	ASSERT_EQ(gd_state_has(gd_state_run(&st, C1, 3, 300), 1, 501), 0);
	ASSERT_EQ(st.nruns, 3);
	ASSERT_EQ(gd_state_has(p, 1, 501), 1);
	/* a publisher that is no cluster's: still one run per origin */
	ASSERT_EQ(gd_state_ack(&st, run1(&st, 5), 1, 1), 0);
	ASSERT_EQ(run1(&st, 6)->ncid, 0);
	ASSERT_EQ(st.nruns, 4);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	/* compacted at open: ranges lose ids, the cluster's ids stay */
	if (!open_ok(&st, at("k.state")))
		return;
	ASSERT_EQ(st.nruns, 4);
	p = gd_state_run(&st, C1, 3, 100);
	ASSERT_EQ(p->ncid, 2);
	ASSERT_EQ(gd_srun_cid(p, 1), 502);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	/* the ring: the last GD_STATE_CIDS, oldest first */
	p = gd_srun_new();
	for (k = 0; k < GD_STATE_CIDS + 3; k++)
		ASSERT_EQ(gd_srun_cid_add(p, k), 0);
	ASSERT_EQ(p->ncid, GD_STATE_CIDS);
	ASSERT_EQ(gd_srun_cid(p, 0), 3);
	ASSERT_EQ(gd_srun_cid(p, GD_STATE_CIDS - 1), GD_STATE_CIDS + 2);
	gd_srun_free(p);
	unlink(at("k.state"));
}

/* A version 1 file (before cluster ids) is read and rewritten as version
 * 2; a version 3 is refused, naming it; a cluster-ids record in a
 * version 1 file is corruption. */
TEST(versions)
{
	struct gd_state st;
	uint8_t h[GD_STATE_HDR], rec[64], body[32];
	const char *p = at("v.state");
	size_t n;

	memcpy(h, "\x89GDS\r\n\x1a\n", 8);
	h[8] = 1; h[9] = 0; h[10] = GD_STATE_HDR; h[11] = 0;
	gd_put32(h + 12, gd_crc32c(0, h, 12));
	append(p, h, sizeof(h));
	gd_put32(body, 0);
	gd_put64(body + 4, 9);
	memcpy(body + 12, C1, 3);
	n = record(rec, GD_SR_RUN, body, 15);
	append(p, rec, n);
	gd_put32(body, 0);
	gd_put64(body + 4, 4);
	gd_put64(body + 12, 704);
	n = record(rec, GD_SR_ACKS, body, 20);
	append(p, rec, n);
	if (!open_ok(&st, p))
		return;
	ASSERT_EQ(gd_state_has(gd_state_run(&st, C1, 3, 9), 4, 704), 1);
	ASSERT_EQ(gd_srun_cid(gd_state_run(&st, C1, 3, 9), 0), 704);
	ASSERT_EQ(gd_state_close(&st, 0), 0);
	{
		int fd = open(p, O_RDONLY);
		uint8_t v[GD_STATE_HDR];
		ASSERT(fd >= 0 && read(fd, v, sizeof(v)) == (ssize_t)sizeof(v));
		close(fd);
		ASSERT_EQ(v[8], GD_STATE_VERSION);
	}
	unlink(p);
	/* version 1 with a cluster-ids record: corrupt */
	append(p, h, sizeof(h));
	gd_put32(body, 0);
	gd_put64(body + 4, 9);
	memcpy(body + 12, C1, 3);
	append(p, rec, record(rec, GD_SR_RUN, body, 15));
	gd_put32(body, 0);
	gd_put64(body + 4, 704);
	append(p, rec, record(rec, GD_SR_CIDS, body, 12));
	append(p, rec, record(rec, GD_SR_CIDS, body, 12));
	ASSERT_EQ(gd_state_open(&st, p, 0), -1);
	ASSERT(strstr(st.err, "corrupt record at offset 43") != NULL);
	unlink(p);
	/* a version from the future */
	h[8] = 3;
	gd_put32(h + 12, gd_crc32c(0, h, 12));
	append(p, h, sizeof(h));
	ASSERT_EQ(gd_state_open(&st, p, 0), -1);
	ASSERT(strstr(st.err, "unsupported state file version 3") != NULL);
	unlink(p);
}

/* An acknowledgement of the index after the last range's grows it; an id
 * that does not run with the indexes makes the range unchecked, as the
 * merge does (gd_srun_ack: the ranges kept in memory without a file). */
TEST(append_after_last)
{
	struct gd_srun *m = gd_srun_new();

	ASSERT(m != NULL);
	ASSERT_EQ(gd_srun_ack(m, 1, 101), 0);
	ASSERT_EQ(gd_srun_ack(m, 2, 102), 0);
	ASSERT_EQ(m->n, 1);
	ASSERT_EQ(gd_state_has(m, 2, 102), 1);
	ASSERT_EQ(gd_state_has(m, 2, 5), -1);	/* checked */
	ASSERT_EQ(gd_srun_ack(m, 3, 7), 0);	/* not id 103 */
	ASSERT_EQ(m->n, 1);
	ASSERT_U64(m->r[m->off].hi, 4);
	ASSERT_EQ(gd_state_has(m, 2, 5), 1);	/* no longer checked */
	ASSERT_EQ(gd_state_has(m, 4, 104), 0);
	ASSERT_EQ(gd_srun_ack(m, 5, 105), 0);	/* a gap: a range of its own */
	ASSERT_EQ(m->n, 2);
	ASSERT_EQ(gd_srun_ack(m, 6, 106), 0);
	ASSERT_EQ(m->n, 2);
	ASSERT_EQ(gd_state_has(m, 6, 106), 1);
	ASSERT_EQ(gd_state_has(m, 6, 1), -1);
	ASSERT_EQ(gd_srun_ack(m, UINT64_MAX, 1), 0);	/* never a range end */
	ASSERT_EQ(m->n, 2);
	gd_srun_free(m);
}

int main(void)
{
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	RUN(append_after_last);
	RUN(ranges_and_ids);
	RUN(floor_and_resume);
	RUN(reopen);
	RUN(bounds);
	RUN(write_buffer_bound);
	RUN(sync_policy);
	RUN(torn_tails);
	RUN(corruption);
	RUN(unusable_files);
	RUN(cluster_runs);
	RUN(versions);
	unlink(at("c.state.tmp"));
	rmdir(dir);
	return UNIT_DONE();
}
