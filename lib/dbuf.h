/* One capped growable buffer (after curl's dynbuf) instead of a realloc
 * loop in every module: a buffer is created with the most bytes it may
 * ever hold, and every call that adds returns a code the caller must
 * check, so a reply, a table or a file read into memory has a stated
 * bound and running into it is an error the caller reports, not a
 * silent truncation or unbounded growth. The bytes are always followed
 * by a NUL (not counted in len), so text needs no terminating call. */
#ifndef GD_DBUF_H
#define GD_DBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

enum {
	GD_DBUF_OK = 0,
	GD_DBUF_NOMEM = -1,	/* malloc failed; the buffer is as it was */
	GD_DBUF_TOOBIG = -2,	/* the cap would be passed; as it was */
	GD_DBUF_IOERR = -3,	/* gd_dbuf_read: read() failed, errno says */
};

#define GD_DBUF_CHECK __attribute__((warn_unused_result))

struct gd_dbuf {
	char *buf;		/* NULL until the first add */
	size_t len;		/* bytes held */
	size_t alloc;		/* bytes allocated, the NUL's included */
	size_t max;		/* the cap: len never exceeds it */
	size_t first;		/* the first allocation, at least */
};

/* An empty buffer that will hold at most max bytes. */
void gd_dbuf_init(struct gd_dbuf *b, size_t max);
/* The same, allocating at least first bytes at once when it first grows
 * (a hot path that fills and hands off a buffer many times a second
 * should not double its way up from nothing each time). */
void gd_dbuf_init_sized(struct gd_dbuf *b, size_t first, size_t max);
/* Free the memory; the buffer is empty and may be used again. */
void gd_dbuf_free(struct gd_dbuf *b);
/* Empty it, keeping the memory for what is added next. */
void gd_dbuf_reset(struct gd_dbuf *b);

GD_DBUF_CHECK int gd_dbuf_add(struct gd_dbuf *b, const void *p, size_t n);
GD_DBUF_CHECK int gd_dbuf_adds(struct gd_dbuf *b, const char *s);
GD_DBUF_CHECK int gd_dbuf_addf(struct gd_dbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
GD_DBUF_CHECK int gd_dbuf_vaddf(struct gd_dbuf *b, const char *fmt,
    va_list ap) __attribute__((format(printf, 2, 0)));

/* Room for n more bytes without moving what is held (for read() or an
 * encoder to write into at gd_dbuf_end, then gd_dbuf_commit). */
GD_DBUF_CHECK int gd_dbuf_grow(struct gd_dbuf *b, size_t n);
/* The same, allocating just that (no doubling past it): for a large
 * record whose length is known before its bytes come. */
GD_DBUF_CHECK int gd_dbuf_grow_exact(struct gd_dbuf *b, size_t n);
static inline GD_DBUF_CHECK int gd_dbuf_reserve(struct gd_dbuf *b, size_t n)
{
	if (b->alloc > b->len && b->alloc - b->len - 1 >= n)
		return GD_DBUF_OK;
	return gd_dbuf_grow(b, n);
}
/* The bytes written after a reserve now count (n at most what was
 * reserved). */
static inline void gd_dbuf_commit(struct gd_dbuf *b, size_t n)
{
	b->len += n;
	b->buf[b->len] = '\0';
}
/* One read() of fd into the room after the bytes held (past EINTR); a
 * full buffer first doubles, never past its cap, so a reader's memory
 * follows the bytes that came. The bytes read, 0 at the end of input, or
 * GD_DBUF_NOMEM, GD_DBUF_TOOBIG (full at its cap: the record the caller
 * waits for is longer than its bound) or GD_DBUF_IOERR (errno set). */
GD_DBUF_CHECK ssize_t gd_dbuf_read(struct gd_dbuf *b, int fd);
/* Keep the first len bytes (len at most gd_dbuf_len). */
void gd_dbuf_truncate(struct gd_dbuf *b, size_t len);
/* Drop the first n bytes, moving the rest to the front. */
void gd_dbuf_consume(struct gd_dbuf *b, size_t n);
/* Hand the memory to the caller (who frees it); *len gets the byte
 * count. The buffer is left empty, with its cap. NULL when empty. */
char *gd_dbuf_take(struct gd_dbuf *b, size_t *len);

static inline char *gd_dbuf_ptr(const struct gd_dbuf *b) { return b->buf; }
static inline char *gd_dbuf_end(const struct gd_dbuf *b) { return b->buf + b->len; }
static inline size_t gd_dbuf_len(const struct gd_dbuf *b) { return b->len; }
/* Bytes that fit after a reserve-free add: what is allocated, not held. */
static inline size_t gd_dbuf_room(const struct gd_dbuf *b)
{
	return b->alloc > b->len ? b->alloc - b->len - 1 : 0;
}

/* "out of memory" or "more than N bytes" for a code that is not OK. */
const char *gd_dbuf_strerror(int rc);

#endif
