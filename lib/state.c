/* gdsub's state file (see state.h) on disk: an append log of
 * acknowledgements, compacted by writing a snapshot aside and renaming it
 * over the log. Reading it back at open is state_load.c's; the ranges in
 * memory are state_runs.c's. */
#include "state.h"
#include "state_int.h"
#include "fileio.h"
#include "stream.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PER_RECORD_RANGES ((GD_STATE_REC_MAX - 4) / RANGE_SIZE)
#define PER_RECORD_CIDS ((GD_STATE_REC_MAX - 4) / CID_SIZE)

/* ---- records ---- */

/* The records buffered, to wfd. 0, or -1 with err. */
static int write_out(struct gd_state *st)
{
	if (gd_write_all(st->wfd, gd_dbuf_ptr(&st->buf),
	    gd_dbuf_len(&st->buf)) != 0)
		return gd_state_fail(st, "cannot write: %s", strerror(errno));
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
		gd_state_fail(st, "%s for a record of %zu bytes", rc == GD_DBUF_TOOBIG ?
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

static void put_cid(uint8_t *p, const struct gd_srun *run, size_t i)
{
	gd_put64(p, gd_srun_cid(run, (uint32_t)i));
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
		n += (uint64_t)run->ncid * CID_SIZE + (run->ncid /
		    PER_RECORD_CIDS + 1) * (REC_HDR + 4 + REC_CRC);
	}
	return n;
}

/* ---- the file ---- */

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
		return gd_state_fail(st, "the path is too long");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return gd_state_fail(st, "cannot create %s: %s", tmp, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		e = errno;
		goto failed;
	}
	gd_dbuf_reset(&st->buf);	/* what a commit had is in the runs */
	st->wfd = fd;
	st->wrote = 0;
	if ((h = reserve(st, GD_STATE_HDR)) == NULL)
		goto gone;
	gd_state_header(h, GD_STATE_VERSION);
	gd_dbuf_commit(&st->buf, GD_STATE_HDR);
	for (i = 0; i < st->nruns; i++) {
		struct gd_srun *run = st->runs[i];
		run->num = i;
		if (put_run(st, run) != 0 || put_items(st, GD_SR_RANGES, run,
		    run->n, RANGE_SIZE, put_range) != 0 || put_items(st,
		    GD_SR_CIDS, run, run->ncid, CID_SIZE, put_cid) != 0 ||
		    put_floor(st, run) != 0)
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
		return gd_state_fail(st, "cannot sync its directory: %s", strerror(e));
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
	return gd_state_fail(st, "cannot write %s: %s", tmp, strerror(e));
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
		return gd_state_fail(st, "cannot sync: %s", strerror(errno));
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

static void release(struct gd_state *st);

static int open_file(struct gd_state *st, const char *path, uint64_t now_ns)
{
	struct stat sb;

	if ((st->path = strdup(path)) == NULL)
		return gd_state_fail(st, "out of memory");
	st->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (st->fd < 0)
		return gd_state_fail(st, "cannot open: %s", strerror(errno));
	if (flock(st->fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			return gd_state_fail(st, "in use by another gdsub");
		return gd_state_fail(st, "cannot lock: %s", strerror(errno));
	}
	if (fstat(st->fd, &sb) != 0)
		return gd_state_fail(st, "cannot read: %s", strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return gd_state_fail(st, "not a regular file");
	if (sb.st_size > 0 && gd_state_load(st, (uint64_t)sb.st_size) != 0)
		return -1;
	if (compact(st, now_ns) != 0)
		return -1;
	if (lseek(st->fd, 0, SEEK_END) < 0)
		return gd_state_fail(st, "cannot seek: %s", strerror(errno));
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
