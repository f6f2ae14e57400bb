/* Subscriber dedup set (see dedup.h). */
#include "dedup.h"

#include <stddef.h>
#include <string.h>

GD_SLAB_TYPED(dent, struct gd_dent, fnext)

int gd_dedup_init(struct gd_dedup *d)
{
	memset(d, 0, sizeof(*d));
	d->fhead = d->ftail = GD_NONE;
	return gd_slab_init(&d->slab, sizeof(*d->e), 1024, GD_IDMAP_MAX_SLOTS,
	    1024);
}

void gd_dedup_free(struct gd_dedup *d)
{
	gd_slab_free(&d->slab);
	memset(d, 0, sizeof(*d));
}

/* A free slot, filled and appended to the arrival order; not in the map. */
static uint32_t take(struct gd_dedup *d, uint64_t id, uint64_t seq,
    uint32_t state)
{
	uint32_t s;
	struct gd_dent *e;

	if ((s = dent_take(&d->slab)) == GD_NONE)
		return GD_NONE;
	e = &d->e[s];
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

/* Back to the free slots: the caller unlinked it from the arrival order. */
static void put_back(struct gd_dedup *d, uint32_t s)
{
	dent_put(&d->slab, s);
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
	if (gd_slab_bind(&d->slab, s, id) != 0) {
		untake(d, s);
		return GD_NONE;
	}
	return s;
}

uint32_t gd_dedup_add_hint(struct gd_dedup *d, uint64_t id, uint64_t seq,
    uint32_t state, uint32_t hint)
{
	uint32_t s = take(d, id, seq, state);

	if (s == GD_NONE)
		return GD_NONE;
	if (gd_slab_bind_hint(&d->slab, s, id, hint) != 0) {
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
	gd_slab_unbind(&d->slab, id);
	if (gd_slab_bind(&d->slab, s, id) != 0) {
		/* cannot fail after a delete, but leave a consistent set */
		(void)gd_slab_bind(&d->slab, slot, id);
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
			gd_slab_unbind(&d->slab, e->id);
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
	gd_slab_unbind(&d->slab, e->id);
	d->off--;
	put_back(d, slot);
	return 1;
}
