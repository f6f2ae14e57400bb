/* Subscriber dedup set (see dedup.h). */
#include "dedup.h"

#include <stdlib.h>
#include <string.h>

int gd_dedup_init(struct gd_dedup *d)
{
	memset(d, 0, sizeof(*d));
	d->free_head = d->fhead = d->ftail = GD_NONE;
	return gd_idmap_init(&d->map, 1024);
}

void gd_dedup_free(struct gd_dedup *d)
{
	free(d->e);
	gd_idmap_free(&d->map);
	memset(d, 0, sizeof(*d));
}

static int grow(struct gd_dedup *d)
{
	uint32_t ncap = d->cap ? d->cap * 2 : 1024, i;
	struct gd_dent *n;

	if (ncap <= d->cap || ncap > GD_IDMAP_MAX_SLOTS)
		return -1;
	n = realloc(d->e, (size_t)ncap * sizeof(*n));
	if (n == NULL)
		return -1;
	d->e = n;
	for (i = ncap; i-- > d->cap;) {
		n[i].fnext = d->free_head;
		d->free_head = i;
	}
	d->cap = ncap;
	return 0;
}

/* A free slot, filled and appended to the arrival order; not in the map. */
static uint32_t take(struct gd_dedup *d, uint64_t id, uint64_t seq,
    uint32_t state)
{
	uint32_t s;
	struct gd_dent *e;

	if (d->free_head == GD_NONE && grow(d) != 0)
		return GD_NONE;
	s = d->free_head;
	e = &d->e[s];
	d->free_head = e->fnext;
	e->id = id;
	e->seq = seq;
	if (seq > d->max_seq)
		d->max_seq = seq;
	e->state = (uint8_t)state;
	e->older = 0;
	e->extra = 0;
	e->fnext = GD_NONE;
	if (d->ftail != GD_NONE)
		d->e[d->ftail].fnext = s;
	else
		d->fhead = s;
	d->ftail = s;
	d->count++;
	return s;
}

/* Back to the free list: the caller unlinked it from the arrival order. */
static void put_back(struct gd_dedup *d, uint32_t s)
{
	d->e[s].fnext = d->free_head;
	d->free_head = s;
	d->count--;
}

/* The tail entry (just taken) goes back: undo take(). */
static void untake(struct gd_dedup *d, uint32_t s)
{
	uint32_t i;

	if (d->fhead == s) {
		d->fhead = d->ftail = GD_NONE;
	} else {	/* rare (out of memory): find the one before the tail */
		for (i = d->fhead; d->e[i].fnext != s; i = d->e[i].fnext)
			;
		d->e[i].fnext = GD_NONE;
		d->ftail = i;
	}
	put_back(d, s);
}

uint32_t gd_dedup_add(struct gd_dedup *d, uint64_t id, uint64_t seq,
    uint32_t state)
{
	uint32_t s = take(d, id, seq, state);

	if (s == GD_NONE)
		return GD_NONE;
	if (gd_idmap_put(&d->map, id, s, d->e, sizeof(*d->e)) != 0) {
		untake(d, s);
		return GD_NONE;
	}
	return s;
}

uint32_t gd_dedup_replace(struct gd_dedup *d, uint32_t slot, uint64_t seq,
    uint32_t state)
{
	uint64_t id = d->e[slot].id;
	uint32_t s = take(d, id, seq, state);
	struct gd_dent *old;

	if (s == GD_NONE)
		return GD_NONE;
	old = &d->e[slot];	/* take() may have moved the array */
	gd_idmap_del(&d->map, id, d->e, sizeof(*d->e));
	if (gd_idmap_put(&d->map, id, s, d->e, sizeof(*d->e)) != 0) {
		/* cannot fail after a delete, but leave a consistent set */
		gd_idmap_put(&d->map, id, slot, d->e, sizeof(*d->e));
		untake(d, s);
		return GD_NONE;
	}
	if (old->fnext == GD_DEDUP_OFF) {	/* already out of the order */
		d->off--;
		put_back(d, slot);
	} else {
		old->state = GD_DS_GONE;	/* freed when the prune reaches it */
		old->older = 0;
		old->extra = 0;
	}
	return s;
}

uint32_t gd_dedup_prune(struct gd_dedup *d, uint64_t floor)
{
	uint32_t n = 0, s;

	while ((s = d->fhead) != GD_NONE) {
		struct gd_dent *e = &d->e[s];
		if (e->seq >= floor && e->state != GD_DS_GONE)
			break;
		d->fhead = e->fnext;
		if (d->fhead == GD_NONE)
			d->ftail = GD_NONE;
		if (e->state != GD_DS_GONE && gd_dent_waiting(e) > 0) {
			e->fnext = GD_DEDUP_OFF;	/* freed once settled */
			d->off++;
			continue;
		}
		if (e->state != GD_DS_GONE)
			gd_idmap_del(&d->map, e->id, d->e, sizeof(*d->e));
		put_back(d, s);
		n++;
	}
	return n;
}

int gd_dedup_settled(struct gd_dedup *d, uint32_t slot)
{
	struct gd_dent *e = &d->e[slot];

	if (e->fnext != GD_DEDUP_OFF || gd_dent_waiting(e) > 0)
		return 0;
	gd_idmap_del(&d->map, e->id, d->e, sizeof(*d->e));
	d->off--;
	put_back(d, slot);
	return 1;
}
