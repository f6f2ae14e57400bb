/* gdsub's state file (see state.h) on disk: an append log of
 * acknowledgements, compacted by writing a snapshot aside and renaming it
 * over the log; loaded at open. The ranges in memory are state_runs.c's. */
#include "state.h"
#include "state_int.h"
#include "fileio.h"
#include "stream.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define REC_HDR 8
#define REC_CRC 4
#define RANGE_SIZE 32
#define ACK_SIZE 16
#define RUN_FIXED 12		/* u32 run number, u64 epoch */
#define PER_RECORD_RANGES ((GD_STATE_REC_MAX - 4) / RANGE_SIZE)
#define REC_MAX_TOTAL (REC_HDR + GD_STATE_REC_MAX + REC_CRC)

static const uint8_t magic[8] = { 0x89, 'G', 'D', 'S', 0x0d, 0x0a, 0x1a, 0x0a };

static int fail(struct gd_state *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(struct gd_state *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- records ---- */

/* The records buffered, to wfd. 0, or -1 with err. */
static int write_out(struct gd_state *st)
{
	if (gd_write_all(st->wfd, gd_dbuf_ptr(&st->buf),
	    gd_dbuf_len(&st->buf)) != 0)
		return fail(st, "cannot write: %s", strerror(errno));
	st->wrote += gd_dbuf_len(&st->buf);
	gd_dbuf_reset(&st->buf);
	return 0;
}

/* Room for n bytes of records; NULL with err. */
static uint8_t *reserve(struct gd_state *st, size_t n)
{
	int rc;

	if (gd_dbuf_len(&st->buf) > 0 && gd_dbuf_len(&st->buf) + n >
	    GD_STATE_FLUSH && write_out(st) != 0)
		return NULL;
	if ((rc = gd_dbuf_reserve(&st->buf, n)) != GD_DBUF_OK) {
		fail(st, "%s for a record of %zu bytes", rc == GD_DBUF_TOOBIG ?
		    "no room in the write buffer" : "out of memory", n);
		return NULL;
	}
	return (uint8_t *)gd_dbuf_end(&st->buf);
}

/* Start a record of body length len for run num; returns where the body
 * goes after the run number, or NULL with err. */
static uint8_t *rec_begin(struct gd_state *st, int type, uint32_t num,
    size_t len)
{
	uint8_t *p = reserve(st, REC_HDR + len + REC_CRC);

	if (p == NULL)
		return NULL;
	p[0] = (uint8_t)type;
	p[1] = p[2] = p[3] = 0;
	gd_put32(p + 4, (uint32_t)len);
	gd_put32(p + REC_HDR, num);
	return p + REC_HDR + 4;
}

static void rec_end(struct gd_state *st, size_t len)
{
	uint8_t *p = (uint8_t *)gd_dbuf_end(&st->buf);

	gd_put32(p + REC_HDR + len, gd_crc32c(0, p, REC_HDR + len));
	gd_dbuf_commit(&st->buf, REC_HDR + len + REC_CRC);
}

static int put_run(struct gd_state *st, const struct gd_srun *run)
{
	size_t len = RUN_FIXED + run->olen;
	uint8_t *p = rec_begin(st, GD_SR_RUN, run->num, len);

	if (p == NULL)
		return -1;
	gd_put64(p, run->epoch);
	memcpy(p + 8, run->origin, run->olen);
	rec_end(st, len);
	return 0;
}

static int put_floor(struct gd_state *st, const struct gd_srun *run)
{
	uint8_t *p = rec_begin(st, GD_SR_FLOOR, run->num, 12);

	if (p == NULL)
		return -1;
	gd_put64(p, run->floor);
	rec_end(st, 12);
	return 0;
}

static void put_ack(uint8_t *p, const struct gd_srun *run, size_t i)
{
	gd_wire_ack_put(p, run->pend[i].seq, run->pend[i].id);
}

static void put_range(uint8_t *p, const struct gd_srun *run, size_t i)
{
	const struct gd_srange *r = &run->r[run->off + i];

	gd_put64(p, r->lo);
	gd_put64(p + 8, r->hi);
	gd_put64(p + 16, r->id_lo);
	gd_put64(p + 24, r->linear);
}

/* n items of size bytes of run in records of type, as many per record as
 * GD_STATE_REC_MAX allows; put writes item i. */
static int put_items(struct gd_state *st, int type, const struct gd_srun *run,
    size_t n, size_t size,
    void (*put)(uint8_t *p, const struct gd_srun *run, size_t i))
{
	size_t i = 0, per = (GD_STATE_REC_MAX - 4) / size;

	while (i < n) {
		size_t k, m = n - i < per ? n - i : per;
		uint8_t *p = rec_begin(st, type, run->num, 4 + m * size);
		if (p == NULL)
			return -1;
		for (k = 0; k < m; k++, i++)
			put(p + k * size, run, i);
		rec_end(st, 4 + m * size);
	}
	return 0;
}

/* Bytes of the compacted file: what the log is measured against. */
static uint64_t snapshot_size(const struct gd_state *st)
{
	uint64_t n = GD_STATE_HDR;
	uint32_t i;

	for (i = 0; i < st->nruns; i++) {
		const struct gd_srun *run = st->runs[i];
		n += REC_HDR + RUN_FIXED + run->olen + REC_CRC;
		n += REC_HDR + 4 + 8 + REC_CRC;
		n += (uint64_t)run->n * RANGE_SIZE +
		    (run->n / PER_RECORD_RANGES + 1) * (REC_HDR + 4 + REC_CRC);
	}
	return n;
}

/* ---- the file ---- */

static void put_header(uint8_t *p)
{
	memcpy(p, magic, 8);
	p[8] = 1;		/* version */
	p[9] = 0;
	p[10] = GD_STATE_HDR;
	p[11] = 0;
	gd_put32(p + 12, gd_crc32c(0, p, 12));
}

/* Rewrite the file as one snapshot of every run: written aside (a
 * GD_STATE_FLUSH at a time), synced, then renamed over the log, which it
 * replaces as our fd. */
static int compact(struct gd_state *st, uint64_t now_ns)
{
	char tmp[PATH_MAX];
	uint8_t *h;
	uint32_t i;
	int fd, e;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", st->path) >= (int)sizeof(tmp))
		return fail(st, "the path is too long");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fail(st, "cannot create %s: %s", tmp, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		e = errno;
		goto failed;
	}
	gd_dbuf_reset(&st->buf);	/* what a commit had is in the runs */
	st->wfd = fd;
	st->wrote = 0;
	if ((h = reserve(st, GD_STATE_HDR)) == NULL)
		goto gone;
	put_header(h);
	gd_dbuf_commit(&st->buf, GD_STATE_HDR);
	for (i = 0; i < st->nruns; i++) {
		struct gd_srun *run = st->runs[i];
		run->num = i;
		if (put_run(st, run) != 0 || put_items(st, GD_SR_RANGES, run,
		    run->n, RANGE_SIZE, put_range) != 0 || put_floor(st, run) != 0)
			goto gone;
		run->logged = 1;
		run->floor_dirty = 0;
		run->npend = 0;
	}
	st->next_num = st->nruns;
	if (write_out(st) != 0)
		goto gone;
	if (fsync(fd) != 0 || rename(tmp, st->path) != 0) {
		e = errno;
		goto failed;
	}
	st->wfd = st->fd;
	if (gd_sync_dir(st->path) != 0) {
		e = errno;
		close(fd);
		return fail(st, "cannot sync its directory: %s", strerror(e));
	}
	if (st->fd >= 0)
		close(st->fd);
	st->fd = st->wfd = fd;
	st->size = st->wrote;
	st->unsynced = 0;
	st->synced_ns = now_ns;
	st->n_compact++;
	return 0;
failed:
	st->wfd = st->fd;
	close(fd);
	unlink(tmp);
	return fail(st, "cannot write %s: %s", tmp, strerror(e));
gone:		/* err says why */
	st->wfd = st->fd;
	close(fd);
	unlink(tmp);
	return -1;
}

int gd_state_sync(struct gd_state *st, uint64_t now_ns)
{
	if (!st->unsynced)
		return 0;
	if (fsync(st->fd) != 0)
		return fail(st, "cannot sync: %s", strerror(errno));
	st->unsynced = 0;
	st->synced_ns = now_ns;
	st->n_sync++;
	return 0;
}

int gd_state_commit(struct gd_state *st, uint64_t now_ns)
{
	uint32_t i;

	gd_dbuf_reset(&st->buf);
	st->wfd = st->fd;
	st->wrote = 0;
	for (i = 0; i < st->nruns; i++) {
		struct gd_srun *run = st->runs[i];
		if (run->npend == 0 && !run->floor_dirty && run->logged)
			continue;
		if ((!run->logged && put_run(st, run) != 0) ||
		    put_items(st, GD_SR_ACKS, run, run->npend, ACK_SIZE,
		    put_ack) != 0 ||
		    (run->floor_dirty && put_floor(st, run) != 0)) {
			st->size += st->wrote;	/* whole records, in the log */
			return -1;
		}
		run->logged = 1;
		run->floor_dirty = 0;
		run->npend = 0;
	}
	if (st->wrote > 0 || gd_dbuf_len(&st->buf) > 0) {
		st->unsynced = 1;
		if (st->size + st->wrote + gd_dbuf_len(&st->buf) >
		    2 * snapshot_size(st) + GD_STATE_SLACK)
			return compact(st, now_ns);
		if (write_out(st) != 0)
			return -1;
		st->size += st->wrote;
	}
	if (st->unsynced && now_ns - st->synced_ns >= GD_STATE_SYNC_NS)
		return gd_state_sync(st, now_ns);
	return 0;
}

/* ---- loading ---- */

/* A window on the file being read: bytes [pos, pos + len) in d, at most
 * a record of the largest size (or 64 KiB, a read's size). */
struct loader {
	struct gd_state *st;
	struct gd_dbuf d;
	uint64_t pos;		/* file offset of the first byte in d */
	uint64_t size;
	struct gd_srun *last;	/* run-number lookup cache */
};
#define LOAD_READ 65536
#define LOAD_MAX (REC_MAX_TOTAL > LOAD_READ ? REC_MAX_TOTAL : LOAD_READ)

static const uint8_t *lbuf(const struct loader *L)
{
	return (const uint8_t *)gd_dbuf_ptr(&L->d);
}

static size_t llen(const struct loader *L)
{
	return gd_dbuf_len(&L->d);
}

/* Have at least need bytes at lbuf (fewer only at the end of the file;
 * need at most LOAD_MAX). 0, or -1 with err. */
static int fill(struct loader *L, size_t need)
{
	int rc;

	if (llen(L) >= need)
		return 0;
	if ((rc = gd_dbuf_reserve(&L->d, need - llen(L))) != GD_DBUF_OK)
		return fail(L->st, "cannot read a record of %zu bytes: %s",
		    need, gd_dbuf_strerror(rc));
	while (llen(L) < need && L->pos + llen(L) < L->size) {
		ssize_t r = pread(L->st->fd, gd_dbuf_end(&L->d),
		    gd_dbuf_room(&L->d), (off_t)(L->pos + llen(L)));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail(L->st, "cannot read: %s", strerror(errno));
		if (r == 0)
			break;
		gd_dbuf_commit(&L->d, (size_t)r);
	}
	return 0;
}

static void consume(struct loader *L, size_t n)
{
	gd_dbuf_consume(&L->d, n);
	L->pos += n;
}

/* Only zero bytes from here to the end: what a crash can leave where a
 * write had reserved room but not filled it. */
static int rest_is_zero(struct loader *L)
{
	while (llen(L) > 0) {
		size_t i;
		for (i = 0; i < llen(L); i++)
			if (lbuf(L)[i] != 0)
				return 0;
		consume(L, llen(L));
		if (fill(L, LOAD_READ) != 0)
			return -1;
	}
	return 1;
}

static struct gd_srun *by_num(struct loader *L, uint32_t num)
{
	uint32_t i;

	if (L->last && L->last->num == num && L->last->logged)
		return L->last;
	for (i = 0; i < L->st->nruns; i++)
		if (L->st->runs[i]->num == num && L->st->runs[i]->logged)
			return L->last = L->st->runs[i];
	return NULL;
}

/* Apply one record whose CRC matched. 0, or -1 with err. */
static int apply(struct loader *L, int type, const uint8_t *b, uint32_t len)
{
	struct gd_state *st = L->st;
	uint64_t at = L->pos;
	struct gd_srun *run;
	uint32_t num, i;

	if (len < 4)
		return fail(st, "corrupt record at offset %" PRIu64 ": %u bytes "
		    "of body", at, len);
	num = gd_get32(b);
	if (type == GD_SR_RUN) {
		if (len < RUN_FIXED + 1 || len > RUN_FIXED + GD_STATE_ORIGIN_MAX)
			return fail(st, "corrupt run record at offset %" PRIu64
			    ": origin of %u bytes", at, len - RUN_FIXED);
		if (by_num(L, num) != NULL)
			return fail(st, "corrupt run record at offset %" PRIu64
			    ": run number %" PRIu32 " used twice", at, num);
		run = gd_state_run(st, (const char *)b + RUN_FIXED,
		    len - RUN_FIXED, gd_get64(b + 4));
		if (run == NULL)
			return fail(st, "out of memory");
		run->num = num;
		run->logged = 1;
		if (num >= st->next_num)
			st->next_num = num + 1;
		return 0;
	}
	if ((run = by_num(L, num)) == NULL)
		return fail(st, "corrupt record at offset %" PRIu64 ": run number "
		    "%" PRIu32 " has no run record before it", at, num);
	switch (type) {
	case GD_SR_ACKS:
		if ((len - 4) % ACK_SIZE != 0)
			break;
		for (i = 0; i < (len - 4) / ACK_SIZE; i++) {
			struct gd_srange m;
			gd_wire_ack_at(b + 4, i, &m.lo, &m.id_lo);
			m.hi = m.lo + 1;
			m.linear = 1;
			if (m.lo == UINT64_MAX)
				return fail(st, "corrupt acks record at offset "
				    "%" PRIu64 ": index 2^64-1", at);
			if (gd_srun_add_range(run, &m) != 0)
				return fail(st, "out of memory");
		}
		return 0;
	case GD_SR_RANGES:
		if ((len - 4) % RANGE_SIZE != 0)
			break;
		for (i = 0; i < (len - 4) / RANGE_SIZE; i++) {
			const uint8_t *p = b + 4 + (size_t)i * RANGE_SIZE;
			struct gd_srange m = { gd_get64(p), gd_get64(p + 8),
				gd_get64(p + 16), gd_get64(p + 24) };
			if (m.lo >= m.hi || m.linear > 1)
				return fail(st, "corrupt ranges record at offset "
				    "%" PRIu64 ": range %u is not one", at, i);
			if (gd_srun_add_range(run, &m) != 0)
				return fail(st, "out of memory");
		}
		return 0;
	case GD_SR_FLOOR:
		if (len != 12)
			break;
		gd_state_floor(run, gd_get64(b + 4));
		run->floor_dirty = 0;
		return 0;
	}
	return fail(st, "corrupt record at offset %" PRIu64 ": a body of %u "
	    "bytes for type %d", at, len, type);
}

/* Read every record; a torn tail is noted (torn_at) and left for the
 * compaction that follows to drop. 0, or -1 with err. */
static int load(struct gd_state *st, uint64_t size)
{
	struct loader L = { st, { 0 }, 0, size, NULL };
	uint8_t want[GD_STATE_HDR];
	int rc = -1;

	gd_dbuf_init_sized(&L.d, LOAD_READ, LOAD_MAX);
	put_header(want);
	if (fill(&L, GD_STATE_HDR) != 0)
		goto out;
	if (llen(&L) < GD_STATE_HDR) {
		if (memcmp(lbuf(&L), want, llen(&L)) != 0) {
			fail(st, "not a gdsub state file (%zu bytes, no header)",
			    llen(&L));
			goto out;
		}
		st->torn_at = 0;	/* created, then a crash: no record yet */
		st->torn_bytes = llen(&L);
		rc = 0;
		goto out;
	}
	if (memcmp(lbuf(&L), magic, 8) != 0) {
		fail(st, "not a gdsub state file (bad magic)");
		goto out;
	}
	if (memcmp(lbuf(&L), want, GD_STATE_HDR) != 0) {
		fail(st, "unsupported state file version %u, or a corrupt header",
		    (unsigned)gd_get32(lbuf(&L) + 8) & 0xffff);
		goto out;
	}
	consume(&L, GD_STATE_HDR);
	for (;;) {
		uint32_t len;
		int type;
		size_t total;
		if (fill(&L, REC_HDR) != 0)
			goto out;
		if (llen(&L) == 0)
			break;
		if (llen(&L) < REC_HDR)
			goto torn;
		type = lbuf(&L)[0];
		len = gd_get32(lbuf(&L) + 4);
		if (type < GD_SR_RUN || type > GD_SR_FLOOR || lbuf(&L)[1] ||
		    lbuf(&L)[2] || lbuf(&L)[3] || len > GD_STATE_REC_MAX) {
			uint64_t at = L.pos;
			int z = rest_is_zero(&L);
			if (z < 0)
				goto out;
			if (z) {
				L.pos = at;
				goto torn;
			}
			fail(st, "corrupt record at offset %" PRIu64 ": bad "
			    "record header", at);
			goto out;
		}
		total = REC_HDR + len + REC_CRC;
		if (fill(&L, total) != 0)
			goto out;
		if (llen(&L) < total)
			goto torn;
		if (gd_get32(lbuf(&L) + REC_HDR + len) !=
		    gd_crc32c(0, lbuf(&L), REC_HDR + len)) {
			if (L.pos + total == size)
				goto torn;
			fail(st, "corrupt record at offset %" PRIu64 ": CRC "
			    "mismatch, and %" PRIu64 " bytes follow it", L.pos,
			    size - L.pos - total);
			goto out;
		}
		if (apply(&L, type, lbuf(&L) + REC_HDR, len) != 0)
			goto out;
		consume(&L, total);
	}
	rc = 0;
	goto out;
torn:
	st->torn_at = L.pos;
	st->torn_bytes = size - L.pos;
	rc = 0;
out:
	gd_dbuf_free(&L.d);
	return rc;
}

static void release(struct gd_state *st);

static int open_file(struct gd_state *st, const char *path, uint64_t now_ns)
{
	struct stat sb;

	if ((st->path = strdup(path)) == NULL)
		return fail(st, "out of memory");
	st->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (st->fd < 0)
		return fail(st, "cannot open: %s", strerror(errno));
	if (flock(st->fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			return fail(st, "in use by another gdsub");
		return fail(st, "cannot lock: %s", strerror(errno));
	}
	if (fstat(st->fd, &sb) != 0)
		return fail(st, "cannot read: %s", strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return fail(st, "not a regular file");
	if (sb.st_size > 0 && load(st, (uint64_t)sb.st_size) != 0)
		return -1;
	if (compact(st, now_ns) != 0)
		return -1;
	if (lseek(st->fd, 0, SEEK_END) < 0)
		return fail(st, "cannot seek: %s", strerror(errno));
	return 0;
}

int gd_state_open(struct gd_state *st, const char *path, uint64_t now_ns)
{
	memset(st, 0, sizeof(*st));
	gd_dbuf_init_sized(&st->buf, 65536, GD_STATE_FLUSH + REC_MAX_TOTAL);
	st->fd = st->wfd = -1;
	if (open_file(st, path, now_ns) == 0)
		return 0;
	release(st);
	return -1;
}

int gd_state_close(struct gd_state *st, uint64_t now_ns)
{
	int rc = 0;

	if (st->fd >= 0 && (gd_state_commit(st, now_ns) != 0 ||
	    gd_state_sync(st, now_ns) != 0))
		rc = -1;
	release(st);
	return rc;
}

/* Free everything; err is kept. */
static void release(struct gd_state *st)
{
	uint32_t i;

	if (st->fd >= 0)
		close(st->fd);
	for (i = 0; i < st->nruns; i++)
		gd_srun_free(st->runs[i]);
	free(st->runs);
	gd_dbuf_free(&st->buf);
	free(st->path);
	st->runs = NULL;
	st->path = NULL;
	st->nruns = 0;
	st->fd = -1;
}
