/* What the first stage of gdsub's pipeline has read (see drain.h). */
#include "drain.h"

#include <stdlib.h>

void gd_drain_init(struct gd_drain *d)
{
	d->m = NULL;
	d->head = d->n = d->tail = 0;
	d->from = d->read = 0;
}

void gd_drain_free(struct gd_drain *d)
{
	free(d->m);
	gd_drain_init(d);
}

int gd_drain_add(struct gd_drain *d, uint64_t end, uint32_t who,
    uint64_t seq)
{
	struct gd_drain_mark *m;

	if (d->m == NULL &&
	    (d->m = malloc(GD_DRAIN_MARKS * sizeof(*d->m))) == NULL)
		return -1;
	if (d->n == GD_DRAIN_MARKS)
		return 0;	/* a later mark of who tells of this block */
	d->from = d->n > 0 ? d->m[d->tail].end : d->read;
	d->tail = (d->head + d->n) % GD_DRAIN_MARKS;
	m = &d->m[d->tail];
	m->end = end;
	m->seq = seq;
	m->who = who;
	d->n++;
	return 0;
}

unsigned gd_drain_read(struct gd_drain *d, uint64_t read, gd_drain_cb cb,
    void *ctx)
{
	unsigned k = 0;

	if (read > d->read)
		d->read = read;
	while (d->n > 0 && d->m[d->head].end <= d->read) {
		cb(ctx, &d->m[d->head]);
		d->head = (d->head + 1) % GD_DRAIN_MARKS;
		d->n--;
		k++;
	}
	return k;
}
