/* The binary form of gdack's acknowledgements (ackbin.h): the streaming
 * parser gdsub (and gdack, converting for an older gdsub) reads a batch
 * with, and the writer gdack queues keys with. */
#include "ackbin.h"

#include <string.h>

static uint64_t get_le(const char *s, int n)
{
	const unsigned char *u = (const unsigned char *)s;
	uint64_t v = 0;

	while (n-- > 0)
		v = v << 8 | u[n];
	return v;
}

uint64_t gd_ackbin_id(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	/* one load where the compiler sees it is one */
	return (uint64_t)u[0] | (uint64_t)u[1] << 8 | (uint64_t)u[2] << 16 |
	    (uint64_t)u[3] << 24 | (uint64_t)u[4] << 32 |
	    (uint64_t)u[5] << 40 | (uint64_t)u[6] << 48 |
	    (uint64_t)u[7] << 56;
}

static void put_le(char *d, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++, v >>= 8)
		d[i] = (char)(v & 0xff);
}

void gd_ackbin_start(struct gd_ackbin *p, uint64_t len)
{
	p->left = len;
	p->ids = 0;
	p->keys = 0;
	p->olen = 0;
}

int64_t gd_ackbin_feed(struct gd_ackbin *p, const char *buf, size_t n,
    const struct gd_ackbin_ops *ops, void *user, const char **why)
{
	size_t off = 0;
	int last = n == p->left;

	*why = NULL;
	if (n > p->left) {
		*why = "more bytes than the batch holds";
		return -1;
	}
	while (off < n) {
		if (p->ids > 0) {
			/* the run's IDs, as many whole ones as are here */
			uint64_t k = (n - off) / 8;
			if (k > p->ids)
				k = p->ids;
			if (k == 0)
				break;
			if (ops->ids(user, p->origin, p->olen, buf + off,
			    (size_t)k) != 0)
				return -1;
			off += (size_t)k * 8;
			p->ids -= k;
			continue;
		}
		/* a run's head: OLEN, the origin, COUNT */
		size_t olen;
		uint64_t count;
		if (n - off < 2)
			break;
		olen = (size_t)get_le(buf + off, 2);
		if (olen == 0 || olen > GD_KEY_MAX) {
			*why = olen ? "an origin longer than a key" :
			    "an empty origin";
			return -1;
		}
		if (n - off < 2 + olen + 4)
			break;
		count = get_le(buf + off + 2 + olen, 4);
		if (count == 0) {
			*why = "a run of no IDs";
			return -1;
		}
		if (count > GD_CTL_MAX_KEYS - p->keys) {
			*why = "more keys than a batch may hold";
			return -1;
		}
		memcpy(p->origin, buf + off + 2, olen);
		p->olen = olen;
		p->ids = count;
		p->keys += count;
		off += 2 + olen + 4;
		if (ops->run != NULL && ops->run(user, p->origin, olen) != 0)
			return -1;
	}
	if (last && (off < n || p->ids > 0)) {
		*why = off < n ? "a run cut short at the batch's end" :
		    "fewer IDs than the run's count";
		return -1;
	}
	p->left -= off;
	return (int64_t)off;
}

int gd_ackbin_add(struct gd_dbuf *b, struct gd_ackbin_w *w,
    const char *origin, size_t olen, uint64_t id)
{
	char *d;
	int rc;

	if (w->open && w->run < b->len) {
		char *r = b->buf + w->run;
		uint64_t count;
		if (get_le(r, 2) == olen && memcmp(r + 2, origin, olen) == 0 &&
		    (count = get_le(r + 2 + olen, 4)) < UINT32_MAX) {
			if ((rc = gd_dbuf_reserve(b, 8)) != GD_DBUF_OK)
				return rc;
			r = b->buf + w->run;	/* it may have moved */
			put_le(r + 2 + olen, count + 1, 4);
			put_le(gd_dbuf_end(b), id, 8);
			gd_dbuf_commit(b, 8);
			return GD_DBUF_OK;
		}
	}
	if (olen == 0 || olen > GD_KEY_MAX)
		return GD_DBUF_TOOBIG;
	if ((rc = gd_dbuf_reserve(b, 2 + olen + 4 + 8)) != GD_DBUF_OK)
		return rc;
	d = gd_dbuf_end(b);
	w->run = b->len;
	w->open = 1;
	put_le(d, olen, 2);
	memcpy(d + 2, origin, olen);
	put_le(d + 2 + olen, 1, 4);
	put_le(d + 2 + olen + 4, id, 8);
	gd_dbuf_commit(b, 2 + olen + 4 + 8);
	return GD_DBUF_OK;
}
