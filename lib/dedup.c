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

uint32_t gd_dedup_add(struct gd_dedup *d, uint64_t id, uint64_t seq,
    uint32_t state)
{
	uint32_t s;
	struct gd_dent *e;

	if (d->free_head == GD_NONE && grow(d) != 0)
		return GD_NONE;
	s = d->free_head;
	d->e[s].id = id;
	if (gd_idmap_put(&d->map, id, s, d->e, sizeof(*d->e)) != 0)
		return GD_NONE;
	e = &d->e[s];
	d->free_head = e->fnext;
	e->seq = seq;
	if (seq > d->max_seq)
		d->max_seq = seq;
	e->state = (uint16_t)state;
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

uint32_t gd_dedup_prune(struct gd_dedup *d, uint64_t floor)
{
	uint32_t n = 0, s;

	while ((s = d->fhead) != GD_NONE) {
		struct gd_dent *e = &d->e[s];
		if (e->seq >= floor || e->state == GD_DS_EMITTED || e->extra > 0)
			break;
		d->fhead = e->fnext;
		if (d->fhead == GD_NONE)
			d->ftail = GD_NONE;
		gd_idmap_del(&d->map, e->id, d->e, sizeof(*d->e));
		e->fnext = d->free_head;
		d->free_head = s;
		d->count--;
		n++;
	}
	return n;
}
