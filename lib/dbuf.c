/* Capped growable buffer (see dbuf.h). It grows by doubling, never past
 * its cap (plus the NUL), and a failed add leaves it as it was, so a
 * caller can report the error and still use or free what it holds. */
#include "dbuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DBUF_MIN 64

void gd_dbuf_init_sized(struct gd_dbuf *b, size_t first, size_t max)
{
	b->buf = NULL;
	b->len = b->alloc = 0;
	/* so that max + 1 and doubling never overflow */
	b->max = max > SIZE_MAX / 2 ? SIZE_MAX / 2 : max;
	b->first = first > DBUF_MIN ? first : DBUF_MIN;
}

void gd_dbuf_init(struct gd_dbuf *b, size_t max)
{
	gd_dbuf_init_sized(b, DBUF_MIN, max);
}

void gd_dbuf_free(struct gd_dbuf *b)
{
	free(b->buf);
	b->buf = NULL;
	b->len = b->alloc = 0;
}

void gd_dbuf_reset(struct gd_dbuf *b)
{
	b->len = 0;
	if (b->buf)
		b->buf[0] = '\0';
}

int gd_dbuf_grow(struct gd_dbuf *b, size_t n)
{
	size_t need, a, limit = b->max + 1;
	char *nb;

	if (n > b->max || b->len > b->max - n)
		return GD_DBUF_TOOBIG;
	need = b->len + n + 1;		/* at most limit */
	if (need <= b->alloc)
		return GD_DBUF_OK;
	a = b->alloc ? b->alloc : b->first;
	while (a < need)
		a = a > limit / 2 ? limit : a * 2;
	if (a > limit)
		a = limit;
	if ((nb = realloc(b->buf, a)) == NULL)
		return GD_DBUF_NOMEM;
	if (b->buf == NULL)
		nb[0] = '\0';
	b->buf = nb;
	b->alloc = a;
	return GD_DBUF_OK;
}

int gd_dbuf_grow_exact(struct gd_dbuf *b, size_t n)
{
	char *nb;

	if (n > b->max || b->len > b->max - n)
		return GD_DBUF_TOOBIG;
	if (b->len + n + 1 <= b->alloc)
		return GD_DBUF_OK;
	if ((nb = realloc(b->buf, b->len + n + 1)) == NULL)
		return GD_DBUF_NOMEM;
	if (b->buf == NULL)
		nb[0] = '\0';
	b->buf = nb;
	b->alloc = b->len + n + 1;
	return GD_DBUF_OK;
}

int gd_dbuf_add(struct gd_dbuf *b, const void *p, size_t n)
{
	int rc;

	if (n == 0 && b->buf != NULL)
		return GD_DBUF_OK;
	if ((rc = gd_dbuf_reserve(b, n)) != GD_DBUF_OK)
		return rc;
	if (n > 0)
		memcpy(b->buf + b->len, p, n);
	gd_dbuf_commit(b, n);
	return GD_DBUF_OK;
}

int gd_dbuf_adds(struct gd_dbuf *b, const char *s)
{
	return gd_dbuf_add(b, s, strlen(s));
}

int gd_dbuf_vaddf(struct gd_dbuf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n, rc;

	/* try in the room there is; format again only when it did not fit */
	va_copy(ap2, ap);
	n = b->buf ? vsnprintf(b->buf + b->len, b->alloc - b->len, fmt, ap2) :
	    vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return GD_DBUF_NOMEM;	/* only an encoding error; nothing added */
	if (b->buf != NULL && (size_t)n < b->alloc - b->len) {
		b->len += (size_t)n;	/* alloc <= max + 1: within the cap */
		return GD_DBUF_OK;
	}
	if (b->buf != NULL)
		b->buf[b->len] = '\0';	/* undo the partial write */
	if ((rc = gd_dbuf_reserve(b, (size_t)n)) != GD_DBUF_OK)
		return rc;
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return GD_DBUF_OK;
}

int gd_dbuf_addf(struct gd_dbuf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = gd_dbuf_vaddf(b, fmt, ap);
	va_end(ap);
	return rc;
}

ssize_t gd_dbuf_read(struct gd_dbuf *b, int fd)
{
	size_t room = gd_dbuf_room(b);
	ssize_t r;
	int rc;

	if (room == 0) {
		size_t more = b->len > 0 ? b->len : 1;
		if (more > b->max - b->len)
			more = b->max - b->len;
		if (more == 0)
			return GD_DBUF_TOOBIG;
		if ((rc = gd_dbuf_grow(b, more)) != GD_DBUF_OK)
			return rc;
		room = gd_dbuf_room(b);
	}
	while ((r = read(fd, b->buf + b->len, room)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return GD_DBUF_IOERR;
	gd_dbuf_commit(b, (size_t)r);
	return r;
}

void gd_dbuf_truncate(struct gd_dbuf *b, size_t len)
{
	if (len >= b->len)
		return;
	b->len = len;
	b->buf[len] = '\0';
}

void gd_dbuf_consume(struct gd_dbuf *b, size_t n)
{
	if (n == 0)
		return;
	if (n >= b->len) {
		gd_dbuf_reset(b);
		return;
	}
	memmove(b->buf, b->buf + n, b->len - n);
	b->len -= n;
	b->buf[b->len] = '\0';
}

char *gd_dbuf_take(struct gd_dbuf *b, size_t *len)
{
	char *p = b->buf;

	*len = b->len;
	b->buf = NULL;
	b->len = b->alloc = 0;
	return p;
}

const char *gd_dbuf_strerror(int rc)
{
	switch (rc) {
	case GD_DBUF_OK:
		return "no error";
	case GD_DBUF_NOMEM:
		return "out of memory";
	case GD_DBUF_TOOBIG:
		return "over its size limit";
	case GD_DBUF_IOERR:
		return strerror(errno);
	}
	return "unknown error";
}
