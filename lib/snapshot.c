/* The snapshot ring (see snapshot.h). */
#include "snapshot.h"

#include <stdlib.h>
#include <string.h>

int gd_snapshot_init(struct gd_snapshot *s, uint32_t cap)
{
	memset(s, 0, sizeof(*s));
	if (cap == 0)
		return 0;
	if ((s->v = calloc(cap, sizeof(*s->v))) == NULL)
		return -1;
	s->cap = cap;
	return 0;
}

void gd_snapshot_free(struct gd_snapshot *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void *gd_snapshot_pop(struct gd_snapshot *s)
{
	void *o;

	if (s->n == 0)
		return NULL;
	o = s->v[s->head].owner;
	s->head = (s->head + 1) % s->cap;
	s->n--;
	return o;
}

void *gd_snapshot_push(struct gd_snapshot *s, const struct gd_snap_ent *e)
{
	void *old = NULL;

	if (s->cap == 0)
		return NULL;
	if (s->n == s->cap)
		old = gd_snapshot_pop(s);
	s->v[(s->head + s->n) % s->cap] = *e;
	s->n++;
	return old;
}
