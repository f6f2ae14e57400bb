/* The publisher's write-ahead journal (see journal.h). Plain POSIX I/O:
 * records are appended in one write() per commit, synced by policy. */
#include "journal.h"
#include "fileio.h"
#include "conf.h"
#include "grow.h"
#include "idmap.h"
#include "stream.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint8_t magic[8] = { 0x89, 'G', 'D', 'J', 0x0d, 0x0a, 0x1a, 0x0a };

#define VERSION 1
#define REC_HDR 8
#define MAX_BODY (24u + GD_STREAM_MAX_PAYLOAD)

/* The directory entry of a new or renamed file, on disk too. */
static void put_header(uint8_t *h, uint64_t epoch)
{
	memset(h, 0, GD_JOURNAL_HDR);
	memcpy(h, magic, 8);
	h[8] = VERSION;
	h[10] = GD_JOURNAL_HDR;
	gd_put64(h + 16, epoch);
	gd_put32(h + 28, gd_crc32c(0, h, 28));
}

static int fail(struct gd_journal *j, const char *what)
{
	snprintf(j->err, sizeof(j->err), "cannot %s journal '%s': %s", what,
	    j->path, strerror(errno));
	return -1;
}

static int read_file(int fd, uint8_t **out, size_t *n)
{
	struct stat st;
	size_t got = 0;
	uint8_t *b;

	if (fstat(fd, &st) != 0)
		return -1;
	if ((b = malloc((size_t)st.st_size + 1)) == NULL)
		return -1;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				break;
			free(b);
			return -1;
		}
		got += (size_t)r;
	}
	*out = b;
	*n = got;
	return 0;
}

/* ---- reading ---- */

/* A record at d[0..n): its total size, 0 when it is cut short, -1 when it
 * is malformed (type, reserved bits, length, CRC). */
static int64_t record_at(const uint8_t *d, size_t n)
{
	uint32_t blen;
	size_t total;

	if (n < REC_HDR)
		return 0;
	blen = gd_get32(d + 4);
	if (d[0] < GD_JR_BLOCK || d[0] > GD_JR_MARK || d[2] || d[3] ||
	    (d[0] == GD_JR_RES && (blen != 16 || d[1] < 1 || d[1] > 2)) ||
	    (d[0] == GD_JR_MARK && (blen != 16 || d[1])) ||
	    (d[0] == GD_JR_BLOCK && (blen < 24 || blen > MAX_BODY || d[1])))
		return -1;
	total = REC_HDR + (size_t)blen + 4;
	if (n < total)
		return 0;
	if (gd_get32(d + total - 4) != gd_crc32c(0, d, total - 4))
		return -1;
	return (int64_t)total;
}

static int by_seq(const void *a, const void *b)
{
	const struct gd_jblock *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void drop_scan(struct gd_journal *j, struct gd_idmap *m)
{
	gd_idmap_free(m);
	free(j->pending);
	j->pending = NULL;
	j->npending = 0;
}

/* Parse the image: the pending blocks in sequence order. -1 with err on
 * corruption before the end; a bad last record sets torn_at. */
static int parse(struct gd_journal *j, const uint8_t *d, size_t n)
{
	struct gd_idmap m;
	size_t off = GD_JOURNAL_HDR, cap = 0, i, k;

	if (n < GD_JOURNAL_HDR || memcmp(d, magic, 8) != 0) {
		snprintf(j->err, sizeof(j->err), "'%s' is not a gdpub journal",
		    j->path);
		return -1;
	}
	if (gd_get32(d + 28) != gd_crc32c(0, d, 28) || d[8] != VERSION ||
	    d[9] != 0 || d[10] != GD_JOURNAL_HDR || d[11] != 0) {
		snprintf(j->err, sizeof(j->err), "journal '%s': bad header "
		    "(version %u)", j->path, d[8] | d[9] << 8);
		return -1;
	}
	j->epoch = gd_get64(d + 16);
	if (gd_idmap_init(&m, 1024) != 0)
		return -1;
	while (off < n) {
		int64_t r = record_at(d + off, n - off);
		uint64_t id, seq;
		uint32_t s;
		if (r <= 0) {
			/* cut short, or bad and reaching the end: a torn tail */
			uint64_t blen = n - off >= REC_HDR ? gd_get32(d + off + 4) : 0;
			if (r == 0 || off + REC_HDR + blen + 4 >= n) {
				j->torn_at = off;
				j->torn_bytes = n - off;
				break;
			}
			snprintf(j->err, sizeof(j->err), "journal '%s' is corrupt "
			    "at byte offset %zu, before its end (%zu bytes): not "
			    "replayed", j->path, off, n);
			drop_scan(j, &m);
			return -1;
		}
		id = gd_get64(d + off + REC_HDR);
		seq = gd_get64(d + off + REC_HDR + 8);
		if (id > j->max_id)
			j->max_id = id;
		if (seq > j->max_seq)
			j->max_seq = seq;
		s = gd_idmap_get(&m, seq, j->pending, sizeof(*j->pending));
		if (d[off] == GD_JR_BLOCK && s == GD_NONE) {
			struct gd_jblock *b;
			/* the map of pending blocks by index holds no more */
			if (GD_GROW(j->pending, cap, j->npending + 1,
			    GD_IDMAP_MAX_SLOTS) != 0) {
				int full = j->npending >= GD_IDMAP_MAX_SLOTS;
				drop_scan(j, &m);
				if (!full) {
					errno = ENOMEM;
					return fail(j, "read");
				}
				snprintf(j->err, sizeof(j->err), "cannot read "
				    "journal '%s': more than %u blocks pending "
				    "in it", j->path, GD_IDMAP_MAX_SLOTS);
				return -1;
			}
			b = &j->pending[j->npending];
			b->seq = seq;
			b->id = id;
			b->time_ns = gd_get64(d + off + REC_HDR + 16);
			b->data = d + off + REC_HDR + 24;
			b->len = (uint32_t)(gd_get32(d + off + 4) - 24);
			if (gd_idmap_put(&m, seq, (uint32_t)j->npending, j->pending,
			    sizeof(*j->pending)) != 0) {
				drop_scan(j, &m);
				errno = ENOMEM;
				return fail(j, "read");
			}
			j->npending++;
			j->live += gd_journal_recsize(b->len);
		} else if (d[off] == GD_JR_RES && s != GD_NONE) {
			j->live -= gd_journal_recsize(j->pending[s].len);
			j->pending[s].len = UINT32_MAX;	/* resolved */
		}
		off += (size_t)r;
	}
	gd_idmap_free(&m);
	/* keep the unresolved, in sequence order (a rewritten file has them
	 * in the order they were due) */
	for (i = k = 0; i < j->npending; i++)
		if (j->pending[i].len != UINT32_MAX)
			j->pending[k++] = j->pending[i];
	j->npending = k;
	if (k > 1)	/* pending is NULL in a journal without blocks */
		qsort(j->pending, k, sizeof(*j->pending), by_seq);
	j->size = off;
	return 0;
}

static int load(struct gd_journal *j, int fd)
{
	size_t n;

	if (read_file(fd, &j->image, &n) != 0)
		return fail(j, "read");
	return parse(j, j->image, n);
}

static int init(struct gd_journal *j, const char *path, int fsync)
{
	memset(j, 0, sizeof(*j));
	gd_dbuf_init(&j->buf, 0);	/* read-only until opened to write */
	j->fd = -1;
	j->fsync = fsync;
	if ((j->path = strdup(path)) == NULL) {
		snprintf(j->err, sizeof(j->err), "out of memory");
		return -1;
	}
	return 0;
}

static int scan(struct gd_journal *j, const char *path)
{
	int fd, rc;

	if (init(j, path, GD_FSYNC_NEVER) != 0)
		return -1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return fail(j, "open");
	rc = load(j, fd);
	close(fd);
	return rc;
}

/* The journal has one writer: a second gdpub on it would send the first
 * one's blocks under its own origin and rewrite the file under it. The
 * lock is on the file itself, so a rewrite locks the new file before it
 * takes the name (gd_journal_compact); a lock taken on a file that was
 * renamed over meanwhile is let go, and the file now at the path locked. */
static int lock_journal(struct gd_journal *j, const char *path)
{
	struct stat a, b;
	int tries;

	for (tries = 0; tries < 100; tries++) {
		if ((j->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
			return fail(j, "open");
		if (flock(j->fd, LOCK_EX | LOCK_NB) != 0) {
			long pid;
			if (errno != EWOULDBLOCK)
				return fail(j, "lock");
			pid = gd_flock_holder(j->fd);
			if (pid > 0)
				snprintf(j->err, sizeof(j->err), "journal '%s' is in "
				    "use by another gdpub (pid %ld)", path, pid);
			else
				snprintf(j->err, sizeof(j->err), "journal '%s' is in "
				    "use by another gdpub", path);
			return -1;
		}
		if (fstat(j->fd, &a) != 0)
			return fail(j, "read");
		if (stat(path, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			return 0;
		close(j->fd);
		j->fd = -1;
	}
	errno = EAGAIN;
	return fail(j, "lock");
}

/* The write buffer's bound: what is buffered is written once it passes
 * GD_JOURNAL_FLUSH, so at most that and one record, the largest of a
 * block of max_block bytes and of a pending block a rewrite records
 * again. */
static void size_buf(struct gd_journal *j, uint32_t max_block)
{
	uint32_t big = max_block;
	size_t i;

	for (i = 0; i < j->npending; i++)
		if (j->pending[i].len > big)
			big = j->pending[i].len;
	gd_dbuf_init_sized(&j->buf, 65536, GD_JOURNAL_FLUSH +
	    (size_t)gd_journal_recsize(big));
}

static int open_journal(struct gd_journal *j, const char *path, int fsync,
    uint64_t epoch, uint32_t max_block)
{
	uint8_t h[GD_JOURNAL_HDR];
	struct stat st;

	if (init(j, path, fsync) != 0)
		return -1;
	if (lock_journal(j, path) != 0)
		return -1;
	if (fstat(j->fd, &st) != 0)
		return fail(j, "read");
	if (st.st_size == 0) {	/* a new journal */
		j->epoch = epoch;
		put_header(h, epoch);
		if (gd_write_all(j->fd, h, sizeof(h)) != 0 || fdatasync(j->fd) != 0 ||
		    gd_sync_dir(path) != 0)
			return fail(j, "write");
		j->size = GD_JOURNAL_HDR;
		size_buf(j, max_block);
		return 0;
	}
	if (load(j, j->fd) != 0)
		return -1;
	size_buf(j, max_block);
	return 0;
}

int gd_journal_begin(struct gd_journal *j)
{
	if (j->torn_at && (ftruncate(j->fd, (off_t)j->torn_at) != 0 ||
	    fdatasync(j->fd) != 0))
		return fail(j, "truncate");
	if (lseek(j->fd, (off_t)j->size, SEEK_SET) < 0)
		return fail(j, "seek in");
	return 0;
}

/* A failed open or scan leaves nothing allocated, only the reason. */
static int undo(struct gd_journal *j)
{
	char err[sizeof(j->err)];

	memcpy(err, j->err, sizeof(err));
	gd_journal_close(j);
	memcpy(j->err, err, sizeof(err));
	return -1;
}

int gd_journal_scan(struct gd_journal *j, const char *path)
{
	return scan(j, path) != 0 ? undo(j) : 0;
}

int gd_journal_lock(struct gd_journal *j, const char *path, int fsync,
    uint64_t epoch, uint32_t max_block)
{
	return open_journal(j, path, fsync, epoch, max_block) != 0 ? undo(j) : 0;
}

int gd_journal_open(struct gd_journal *j, const char *path, int fsync,
    uint64_t epoch, uint32_t max_block)
{
	if (gd_journal_lock(j, path, fsync, epoch, max_block) != 0)
		return -1;
	return gd_journal_begin(j) != 0 ? undo(j) : 0;
}

/* ---- writing ---- */

/* The records buffered, to the file (not synced: that is the commit's). */
static int write_out(struct gd_journal *j)
{
	if (gd_write_all(j->fd, gd_dbuf_ptr(&j->buf), gd_dbuf_len(&j->buf)) != 0) {
		int e = errno;
		/* a partial record at the end would read as a torn
		 * tail: cut it so the file ends on a record */
		if (ftruncate(j->fd, (off_t)j->size) == 0)
			lseek(j->fd, (off_t)j->size, SEEK_SET);
		errno = e;
		return fail(j, "write");
	}
	j->size += gd_dbuf_len(&j->buf);
	gd_dbuf_reset(&j->buf);
	j->unsynced = 1;
	return 0;
}

/* Room for a record of n bytes; NULL with err. */
static uint8_t *room(struct gd_journal *j, size_t n)
{
	int rc;

	if (gd_dbuf_len(&j->buf) > 0 && gd_dbuf_len(&j->buf) + n >
	    GD_JOURNAL_FLUSH) {
		if (write_out(j) != 0)
			return NULL;
	}
	if ((rc = gd_dbuf_reserve(&j->buf, n)) == GD_DBUF_OK)
		return (uint8_t *)gd_dbuf_end(&j->buf);
	if (rc == GD_DBUF_TOOBIG)
		snprintf(j->err, sizeof(j->err), "journal '%s': a record of "
		    "%zu bytes is over the %zu bytes its write buffer holds "
		    "(1 MiB and a block of GDpub_maxBlockSize when it was "
		    "opened)", j->path, n, j->buf.max);
	else
		snprintf(j->err, sizeof(j->err), "journal '%s': out of memory "
		    "for a record of %zu bytes", j->path, n);
	return NULL;
}

static void put_rec(uint8_t *d, uint8_t type, uint8_t outcome, uint32_t blen)
{
	d[0] = type;
	d[1] = outcome;
	d[2] = d[3] = 0;
	gd_put32(d + 4, blen);
}

int gd_journal_block(struct gd_journal *j, uint64_t id, uint64_t seq,
    uint64_t time_ns, const uint8_t *data, uint32_t len)
{
	size_t total = (size_t)gd_journal_recsize(len);
	uint8_t *d = room(j, total);

	if (d == NULL)
		return -1;
	put_rec(d, GD_JR_BLOCK, 0, 24 + len);
	gd_put64(d + 8, id);
	gd_put64(d + 16, seq);
	gd_put64(d + 24, time_ns);
	if (id > j->max_id)
		j->max_id = id;
	if (seq > j->max_seq)
		j->max_seq = seq;
	if (len)
		memcpy(d + 32, data, len);
	gd_put32(d + total - 4, gd_crc32c(0, d, total - 4));
	gd_dbuf_commit(&j->buf, total);
	j->live += total;
	return 0;
}

int gd_journal_resolved(struct gd_journal *j, uint64_t id, uint64_t seq,
    uint32_t len, int acked)
{
	uint8_t *d = room(j, REC_HDR + 16 + 4);

	if (d == NULL)
		return -1;
	put_rec(d, GD_JR_RES, acked ? 1 : 2, 16);
	gd_put64(d + 8, id);
	gd_put64(d + 16, seq);
	gd_put32(d + 24, gd_crc32c(0, d, 24));
	gd_dbuf_commit(&j->buf, REC_HDR + 16 + 4);
	j->live -= gd_journal_recsize(len);
	return 0;
}

int gd_journal_sync(struct gd_journal *j, uint64_t now_ns)
{
	if (!j->unsynced)
		return 0;
	if (fdatasync(j->fd) != 0)
		return fail(j, "sync");
	j->unsynced = 0;
	j->synced_ns = now_ns;
	j->n_sync++;
	return 0;
}

int gd_journal_commit(struct gd_journal *j, uint64_t now_ns)
{
	if (gd_dbuf_len(&j->buf) > 0 && write_out(j) != 0)
		return -1;
	if (j->fsync == GD_FSYNC_ALWAYS ||
	    (j->fsync == GD_FSYNC_BATCH && now_ns - j->synced_ns >=
	    GD_JOURNAL_BATCH_NS))
		return gd_journal_sync(j, now_ns);
	return 0;
}

int gd_journal_compact(struct gd_journal *j,
    int (*next)(void *ctx, struct gd_jblock *b), void *ctx)
{
	char tmp[4200];
	struct gd_journal t;
	struct gd_jblock b;
	uint8_t h[GD_JOURNAL_HDR], *d;
	int fd, rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", j->path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		return fail(j, "rewrite");
	memset(&t, 0, sizeof(t));
	t.fd = fd;
	t.path = tmp;		/* its errors name the file being written */
	gd_dbuf_init_sized(&t.buf, 65536, j->buf.max);
	put_header(h, j->epoch);
	t.size = GD_JOURNAL_HDR;
	if (gd_write_all(fd, h, sizeof(h)) != 0) {
		rc = fail(&t, "write");
	} else if ((d = room(&t, REC_HDR + 16 + 4)) == NULL) {
		rc = -1;
	} else {	/* the highest id and seq survive what is dropped */
		put_rec(d, GD_JR_MARK, 0, 16);
		gd_put64(d + 8, j->max_id);
		gd_put64(d + 16, j->max_seq);
		gd_put32(d + 24, gd_crc32c(0, d, 24));
		gd_dbuf_commit(&t.buf, REC_HDR + 16 + 4);
	}
	/* room() writes every GD_JOURNAL_FLUSH bytes to the file */
	while (rc == 0 && next(ctx, &b))
		rc = gd_journal_block(&t, b.id, b.seq, b.time_ns, b.data, b.len);
	if (rc == 0 && gd_dbuf_len(&t.buf) > 0)
		rc = write_out(&t);
	gd_dbuf_free(&t.buf);
	if (rc != 0) {
		memcpy(j->err, t.err, sizeof(j->err));
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (rc == 0)
		rc = fdatasync(fd);
	/* locked before it has the name: no second gdpub takes it between */
	if (rc == 0)
		rc = flock(fd, LOCK_EX | LOCK_NB);
	if (rc != 0 || rename(tmp, j->path) != 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		return fail(j, "rewrite");
	}
	gd_sync_dir(j->path);
	close(j->fd);
	j->fd = fd;
	if (lseek(fd, 0, SEEK_END) < 0)
		return fail(j, "seek in");
	j->size = t.size;
	j->live = t.live;
	gd_dbuf_reset(&j->buf);	/* what was recorded since is in the new file */
	j->unsynced = 0;
	return 0;
}

void gd_journal_set_err(struct gd_journal *j, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->err, sizeof(j->err), fmt, ap);
	va_end(ap);
}

void gd_journal_forget_image(struct gd_journal *j)
{
	free(j->image);
	free(j->pending);
	j->image = NULL;
	j->pending = NULL;
	j->npending = 0;
}

void gd_journal_close(struct gd_journal *j)
{
	if (j->fd >= 0)
		close(j->fd);
	gd_journal_forget_image(j);
	gd_dbuf_free(&j->buf);
	free(j->path);
	memset(j, 0, sizeof(*j));
	j->fd = -1;
}
