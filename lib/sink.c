/* gdack's sink file (see sink.h): append and sync, a torn last record cut
 * at open, and the keys of the last records kept in a small hash table
 * (the keys' bytes in one buffer) for the resends that may follow. */
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
	uint32_t off;		/* in keys; a bucket is empty when len == 0 */
	uint16_t len;		/* origin "/" id, flags aside */
	uint16_t left;		/* copies at the tail not yet matched */
};

#define SCAN_CHUNK 65536

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

/* The key of a record, flags aside: its origin, '/', its ID as written.
 * Length, or 0 when the record starts with no key; *flags its flags. */
static size_t record_key(const char *rec, size_t len, int *flags)
{
	const char *tab = memchr(rec, '\t', len);
	size_t klen = tab ? (size_t)(tab - rec) : len, olen;
	const char *slash;
	uint64_t id;

	if (gd_key_parse(rec, klen, &olen, &id, flags) != 0)
		return 0;
	/* the ID ends at the next '/' (the flags) or at the key's end */
	slash = memchr(rec + olen + 1, '/', klen - olen - 1);
	return slash ? (size_t)(slash - rec) : klen;
}

static struct gd_sink_key *find(const struct gd_sink *k, const char *key,
    size_t len, uint64_t h)
{
	uint32_t i = (uint32_t)h & k->mask;

	for (;; i = (i + 1) & k->mask) {
		struct gd_sink_key *e = &k->tab[i];
		if (e->len == 0)
			return e;
		if (e->hash == h && e->len == len &&
		    memcmp(k->keys.buf + e->off, key, len) == 0)
			return e;
	}
}

/* Remember one tail key. 0, or -1 when out of memory. */
static int remember(struct gd_sink *k, const char *key, size_t len)
{
	uint64_t h = gd_fnv1a(key, len);
	struct gd_sink_key *e = find(k, key, len, h);

	if (e->len != 0) {
		if (e->left < UINT16_MAX)
			e->left++;
		return 0;
	}
	e->off = (uint32_t)k->keys.len;
	if (gd_dbuf_add(&k->keys, key, len) != GD_DBUF_OK)
		return -1;
	e->hash = h;
	e->len = (uint16_t)len;
	e->left = 1;
	k->ntail++;
	return 0;
}

/* The record that starts at off: read its key, if it has one. */
static int tail_record(struct gd_sink *k, uint64_t off)
{
	char buf[GD_KEY_MAX + 1];
	ssize_t r;
	size_t n = 0, klen;
	const char *end;
	int flags;

	while (n < sizeof(buf) && (r = pread(k->fd, buf + n, sizeof(buf) - n,
	    (off_t)(off + n))) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return fail(k, "cannot read it: %s", strerror(errno));
		}
		n += (size_t)r;
	}
	if ((end = memchr(buf, k->delim, n)) != NULL)
		n = (size_t)(end - buf);
	if ((klen = record_key(buf, n, &flags)) == 0)
		return 0;	/* not a key: nothing will repeat it */
	if (remember(k, buf, klen) != 0)
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
			return tail_record(k, 0);
		rc = tail_record(k, at + 1);
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
		fail(k, errno == EWOULDBLOCK ? "in use by another gdack" : "%s",
		    strerror(errno));
		goto bad;
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
	struct gd_sink_key *e;
	size_t klen;
	int flags;

	if (k->ntail == 0 || (klen = record_key(rec, len, &flags)) == 0 ||
	    !(flags & GD_FL_RESENT))
		return 0;
	e = find(k, rec, klen, gd_fnv1a(rec, klen));
	if (e->len == 0 || e->left == 0)
		return 0;
	e->left--;
	k->skipped++;
	return 1;
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
