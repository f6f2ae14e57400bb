/* The --consecutive hold-back ring (see order.h). */
#include "order.h"

#include <stdlib.h>
#include <string.h>

/* the mark of an index that needs nothing written */
static struct gd_held done_mark;
#define DONE (&done_mark)

void gd_order_init(struct gd_order *o)
{
	memset(o, 0, sizeof(*o));
	o->next = 1;		/* every run's indexes start at 1 */
}

uint32_t gd_order_reset(struct gd_order *o)
{
	uint32_t n = o->held;
	uint64_t s;

	for (s = o->next; o->ring && o->held + o->marks > 0; s++) {
		struct gd_held **p = &o->ring[s % GD_ORDER_MAX];
		if (*p == NULL)
			continue;
		if (*p == DONE)
			o->marks--;
		else {
			o->held--;
			free(*p);
		}
		*p = NULL;
	}
	free(o->ring);
	gd_order_init(o);
	return n;
}

void gd_order_free(struct gd_order *o)
{
	(void)gd_order_reset(o);
}

void gd_order_start(struct gd_order *o, uint64_t next)
{
	if (o->held + o->marks == 0 && next > o->next)
		o->next = next;
}

int gd_order_place(const struct gd_order *o, uint64_t seq)
{
	const struct gd_held *h;

	if (seq < o->next)
		return GD_OP_LATE;
	if (seq == o->next)
		return GD_OP_NOW;
	if (seq - o->next >= GD_ORDER_MAX)
		return GD_OP_FULL;
	h = o->ring ? o->ring[seq % GD_ORDER_MAX] : NULL;
	return h != NULL && h != DONE ? GD_OP_HELD : GD_OP_HOLD;
}

static int have_ring(struct gd_order *o)
{
	if (o->ring == NULL &&
	    (o->ring = calloc(GD_ORDER_MAX, sizeof(*o->ring))) == NULL)
		return -1;
	return 0;
}

int gd_order_done(struct gd_order *o, uint64_t seq)
{
	struct gd_held **p;

	if (seq == o->next) {
		o->next++;
		return 0;
	}
	if (seq < o->next || seq - o->next >= GD_ORDER_MAX)
		return 0;	/* too far to mark: awaited as usual */
	if (have_ring(o) != 0)
		return -1;
	p = &o->ring[seq % GD_ORDER_MAX];
	if (*p == NULL) {
		*p = DONE;
		o->marks++;
	}
	return 0;
}

int gd_order_hold(struct gd_order *o, uint64_t id, uint64_t seq,
    uint64_t time_ns, uint8_t flags, const uint8_t *data, uint32_t len,
    const char *origin, size_t olen)
{
	struct gd_held *h, **p;

	if (o->bytes + len > GD_ORDER_MAX_BYTES)
		return 1;
	if (have_ring(o) != 0 || (h = malloc(sizeof(*h) + len)) == NULL)
		return -1;
	h->id = id;
	h->seq = seq;
	h->time_ns = time_ns;
	h->flags = flags;
	h->len = len;
	if (len)
		memcpy(h->data, data, len);
	p = &o->ring[seq % GD_ORDER_MAX];
	if (*p == DONE)
		o->marks--;
	*p = h;
	o->held++;
	o->bytes += len;
	if (olen > sizeof(o->origin))
		olen = sizeof(o->origin);
	memcpy(o->origin, origin, olen);
	o->olen = olen;
	return 0;
}

void gd_order_floor(struct gd_order *o, uint64_t floor)
{
	if (floor > o->floor)
		o->floor = floor;
}

void gd_order_skip(struct gd_order *o, uint64_t to)
{
	struct gd_skipped *k = &o->skipped;

	if (to <= o->next)
		return;
	if (k->n > 0 && k->hi[k->n - 1] == o->next)
		k->hi[k->n - 1] = to;
	else if (k->n < GD_ORDER_REPORT) {
		k->lo[k->n] = o->next;
		k->hi[k->n++] = to;
	}
	k->total += to - o->next;
	o->next = to;
}

struct gd_held *gd_order_take(struct gd_order *o)
{
	while (o->held + o->marks > 0) {
		struct gd_held **p = &o->ring[o->next % GD_ORDER_MAX], *h = *p;
		if (h == NULL)
			return NULL;
		*p = NULL;
		if (h == DONE) {
			o->marks--;
			o->next++;
			continue;
		}
		o->held--;
		o->bytes -= h->len;
		return h;	/* the caller passes it (gd_order_passed) */
	}
	return NULL;
}
