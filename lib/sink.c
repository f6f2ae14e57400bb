/* gdack's sink file (see sink.h): append and sync, a torn last record cut
 * at open, and the keys of the last records kept in a small hash table
 * (the keys' bytes in one buffer) for the resends that may follow; a
 * resend that matches one by key, length and the hash of its start is
 * compared with it byte for byte, read back from the file. */
#define _GNU_SOURCE	/* memrchr */
#include "sink.h"
#include "fileio.h"
#include "hash.h"
#include "key.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct gd_sink_key {
	uint64_t hash;
	uint64_t plen;		/* the record's bytes after its key field */
	uint64_t phash;		/* and the hash of the first PRINT_BYTES */
	uint64_t at;		/* where those bytes are in the file */
	uint32_t off;		/* in keys; a bucket is empty when len == 0 */
	uint16_t len;		/* origin "/" id, flags aside */
	uint16_t used;		/* a resend matched it already */
};

/* A record as the sink tells records apart: its key (flags aside), and
 * what follows the key field: its length and the hash of its start, to
 * find a candidate quickly; then every byte, compared. A block published
 * again under the same ID with other contents is not taken for the
 * earlier one, wherever they differ. */
struct print {
	size_t klen, kf;	/* the key, flags aside; the whole key field */
	uint64_t plen, phash;
	int flags;
};

#define SCAN_CHUNK 65536
#define PRINT_BYTES 4096

static int fail(struct gd_sink *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail(struct gd_sink *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(k->err, sizeof(k->err), fmt, ap);
	va_end(ap);
	return -1;
}

/* The print of a record of reclen bytes, of which rec holds the first
 * have (at least its key field and PRINT_BYTES more, when it has them).
 * 0, or -1 when the record starts with no key. */
static int record_print(const char *rec, size_t have, uint64_t reclen,
    struct print *pr)
{
	const char *tab = memchr(rec, '\t', have);
	size_t kf = tab ? (size_t)(tab - rec) : have, olen, n;
	const char *slash;
	uint64_t id;

	if (gd_key_parse(rec, kf, &olen, &id, &pr->flags) != 0)
		return -1;
	/* the ID ends at the next '/' (the flags) or at the key's end */
	slash = memchr(rec + olen + 1, '/', kf - olen - 1);
	pr->klen = slash ? (size_t)(slash - rec) : kf;
	pr->kf = kf;
	pr->plen = reclen - kf;
	n = have - kf < PRINT_BYTES ? have - kf : PRINT_BYTES;
	pr->phash = gd_fnv1a(rec + kf, n);
	return 0;
}

static uint64_t print_hash(const char *key, const struct print *pr)
{
	return gd_fnv1a(key, pr->klen) ^ (pr->phash * 0x9E3779B97F4A7C15ull) ^
	    pr->plen;
}

static int same_print(const struct gd_sink *k, const struct gd_sink_key *e,
    const char *key, const struct print *pr, uint64_t h)
{
	return e->hash == h && e->len == pr->klen && e->plen == pr->plen &&
	    e->phash == pr->phash &&
	    memcmp(k->keys.buf + e->off, key, pr->klen) == 0;
}

/* Do the plen bytes at e->at in the file equal p? 1, 0, or -1 when the
 * file cannot be read (err set). */
static int same_bytes(struct gd_sink *k, const struct gd_sink_key *e,
    const char *p)
{
	char buf[16384];
	uint64_t done = 0;

	while (done < e->plen) {
		size_t want = e->plen - done < sizeof(buf) ?
		    (size_t)(e->plen - done) : sizeof(buf);
		ssize_t r = pread(k->fd, buf, want, (off_t)(e->at + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return fail(k, "cannot read it back: %s",
			    r < 0 ? strerror(errno) : "it shrank");
		if (memcmp(buf, p + done, (size_t)r) != 0)
			return 0;
		done += (uint64_t)r;
	}
	return 1;
}

/* Remember the print of one record at the end, whose bytes after the key
 * field are at `at` in the file: each record its own entry, so that two
 * with the same print and other bytes are told apart. 0, or -1 when out
 * of memory. */
static int remember(struct gd_sink *k, const char *key, const struct print *pr,
    uint64_t at)
{
	uint64_t h = print_hash(key, pr);
	uint32_t i = (uint32_t)h & k->mask;
	struct gd_sink_key *e;
	size_t len = pr->klen;

	while (k->tab[i].len != 0)
		i = (i + 1) & k->mask;
	e = &k->tab[i];
	e->off = (uint32_t)k->keys.len;
	if (gd_dbuf_add(&k->keys, key, len) != GD_DBUF_OK)
		return -1;
	e->hash = h;
	e->plen = pr->plen;
	e->phash = pr->phash;
	e->at = at;
	e->len = (uint16_t)len;
	e->used = 0;
	k->ntail++;
	return 0;
}

/* The record [off, end) (end: its delimiter): remember its print, if it
 * starts with a key. */
static int tail_record(struct gd_sink *k, uint64_t off, uint64_t end)
{
	char buf[GD_KEY_MAX + 1 + PRINT_BYTES];
	size_t want = end - off < sizeof(buf) ? (size_t)(end - off) :
	    sizeof(buf), n = 0;
	struct print pr;

	while (n < want) {
		ssize_t r = pread(k->fd, buf + n, want - n, (off_t)(off + n));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return fail(k, "cannot read it: %s",
			    r < 0 ? strerror(errno) : "it shrank");
		n += (size_t)r;
	}
	if (record_print(buf, n, end - off, &pr) != 0)
		return 0;	/* not a key: nothing will repeat it */
	if (remember(k, buf, &pr, off + pr.kf) != 0)
		return fail(k, "out of memory for the keys at its end");
	return 0;
}

/* Reading the file backwards for delimiters, a chunk at a time: buf
 * holds the bytes [base, base + n). */
struct back {
	char *buf;
	uint64_t base;
	size_t n;
};

/* Where the last delimiter before pos is: 0 (*at set), 1 when there is
 * none, -1 when the file cannot be read (err set). */
static int delim_before(struct gd_sink *k, struct back *b, uint64_t pos,
    uint64_t *at)
{
	while (pos > 0) {
		const char *d;
		if (pos <= b->base || pos > b->base + b->n) {
			size_t n = pos > SCAN_CHUNK ? SCAN_CHUNK : (size_t)pos;
			ssize_t r;
			b->base = pos - n;
			b->n = 0;
			while (b->n < n) {
				r = pread(k->fd, b->buf + b->n, n - b->n,
				    (off_t)(b->base + b->n));
				if (r < 0 && errno == EINTR)
					continue;
				if (r <= 0)
					return fail(k, "cannot read it: %s",
					    r < 0 ? strerror(errno) : "it shrank");
				b->n += (size_t)r;
			}
		}
		if ((d = memrchr(b->buf, k->delim, (size_t)(pos - b->base))) != NULL) {
			*at = b->base + (uint64_t)(d - b->buf);
			return 0;
		}
		pos = b->base;
	}
	return 1;
}

/* A last record without its delimiter was being written when gdack died:
 * never acknowledged, it comes again. Cut it. */
static int cut_torn(struct gd_sink *k, struct back *b)
{
	uint64_t keep = 0, at;
	int rc;

	if (k->size == 0)
		return 0;
	if ((rc = delim_before(k, b, k->size, &at)) < 0)
		return -1;
	if (rc == 0)
		keep = at + 1;
	if (keep == k->size)
		return 0;
	if (ftruncate(k->fd, (off_t)keep) != 0 || fsync(k->fd) != 0)
		return fail(k, "cannot cut its torn last record: %s",
		    strerror(errno));
	k->torn_at = keep;
	k->torn_bytes = k->size - keep;
	k->size = keep;
	b->n = 0;	/* what it read is gone */
	return 0;
}

/* The keys of the last tail records: each delimiter starts the record
 * after it (the last byte ends the last record), the file the first. */
static int scan_tail(struct gd_sink *k, struct back *b, uint32_t tail)
{
	uint64_t pos = k->size, at;
	uint32_t seen;
	int rc = 0;

	if (k->size == 0)
		return 0;
	pos = k->size - 1;
	for (seen = 0; seen < tail && rc == 0; seen++) {
		if ((rc = delim_before(k, b, pos, &at)) < 0)
			return -1;
		if (rc == 1)	/* none before: the file's first record */
			return tail_record(k, 0, pos);
		rc = tail_record(k, at + 1, pos);
		pos = at;
	}
	return rc;
}

int gd_sink_open(struct gd_sink *k, const char *path, char delim,
    uint32_t tail)
{
	struct stat st;
	struct back b = { NULL, 0, 0 };
	uint32_t cap = 16;

	memset(k, 0, sizeof(*k));
	k->delim = delim;
	gd_dbuf_init(&k->keys, (size_t)tail * GD_KEY_MAX);
	k->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
	if (k->fd < 0)
		return fail(k, "%s", strerror(errno));
	if (fstat(k->fd, &st) != 0) {
		fail(k, "%s", strerror(errno));
		goto bad;
	}
	if (!S_ISREG(st.st_mode)) {
		fail(k, "not a regular file (a sink is appended to and read "
		    "back when gdack starts again)");
		goto bad;
	}
	if (flock(k->fd, LOCK_EX | LOCK_NB) != 0) {
		int busy = errno == EWOULDBLOCK;
		fail(k, busy ? "in use by another gdack" : "%s",
		    strerror(errno));
		gd_sink_close(k);
		k->busy = busy;
		return -1;
	}
	k->size = (uint64_t)st.st_size;
	/* a file just created must still be there after a crash */
	if (k->size == 0 && gd_sync_dir(path) != 0) {
		fail(k, "cannot sync its directory: %s", strerror(errno));
		goto bad;
	}
	while (cap < 2 * (uint64_t)tail && cap < (1u << 30))
		cap *= 2;
	if ((k->tab = calloc(cap, sizeof(*k->tab))) == NULL) {
		fail(k, "out of memory for the keys at its end");
		goto bad;
	}
	k->mask = cap - 1;
	if ((b.buf = malloc(SCAN_CHUNK)) == NULL) {
		fail(k, "out of memory for the keys at its end");
		goto bad;
	}
	if (cut_torn(k, &b) != 0 || scan_tail(k, &b, tail) != 0)
		goto bad;
	free(b.buf);
	return 0;
bad:
	free(b.buf);
	gd_sink_close(k);
	return -1;
}

int gd_sink_repeat(struct gd_sink *k, const char *rec, size_t len)
{
	struct print pr;
	uint64_t h;
	uint32_t i;

	if (k->ntail == 0 || record_print(rec, len, len, &pr) != 0 ||
	    !(pr.flags & GD_FL_RESENT))
		return 0;
	h = print_hash(rec, &pr);
	for (i = (uint32_t)h & k->mask; k->tab[i].len != 0;
	    i = (i + 1) & k->mask) {
		struct gd_sink_key *e = &k->tab[i];
		int same;
		if (e->used || !same_print(k, e, rec, &pr, h))
			continue;
		if ((same = same_bytes(k, e, rec + pr.kf)) < 0)
			return -1;
		if (same) {
			e->used = 1;
			k->skipped++;
			return 1;
		}
	}
	return 0;
}

int gd_sink_write(struct gd_sink *k, const void *p, size_t n)
{
	int e;

	if (gd_write_all(k->fd, p, n) == 0 && (n == 0 || fsync(k->fd) == 0)) {
		k->size += n;
		return 0;
	}
	e = errno;
	/* what was appended of this batch is not acknowledged: cut it, so
	 * that it cannot be taken for a record already delivered */
	(void)ftruncate(k->fd, (off_t)k->size);
	return fail(k, "%s", strerror(e));
}

void gd_sink_close(struct gd_sink *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	free(k->tab);
	k->tab = NULL;
	gd_dbuf_free(&k->keys);
}
