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

static void put_le32(char *d, uint32_t v)
{
	d[0] = (char)(v & 0xff);
	d[1] = (char)(v >> 8 & 0xff);
	d[2] = (char)(v >> 16 & 0xff);
	d[3] = (char)(v >> 24 & 0xff);
}

static void put_le64(char *d, uint64_t v)
{
	put_le32(d, (uint32_t)v);
	put_le32(d + 4, (uint32_t)(v >> 32));
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

	if (w->open && w->olen == olen && w->count < UINT32_MAX &&
	    memcmp(b->buf + w->run + 2, origin, olen) == 0) {
		/* the same origin: one more ID in its run */
		if ((rc = gd_dbuf_reserve(b, 8)) != GD_DBUF_OK)
			return rc;
		put_le32(b->buf + w->run + 2 + olen, ++w->count);
		put_le64(gd_dbuf_end(b), id);
		gd_dbuf_commit(b, 8);
		return GD_DBUF_OK;
	}
	if (olen == 0 || olen > GD_KEY_MAX)
		return GD_DBUF_TOOBIG;
	if ((rc = gd_dbuf_reserve(b, 2 + olen + 4 + 8)) != GD_DBUF_OK)
		return rc;
	d = gd_dbuf_end(b);
	w->run = b->len;
	w->olen = olen;
	w->count = 1;
	w->open = 1;
	d[0] = (char)(olen & 0xff);
	d[1] = (char)(olen >> 8);
	memcpy(d + 2, origin, olen);
	put_le32(d + 2 + olen, 1);
	put_le64(d + 2 + olen + 4, id);
	gd_dbuf_commit(b, 2 + olen + 4 + 8);
	return GD_DBUF_OK;
}
