/* Slot table (see slab.h). Growing is the only allocation: the hot path
 * takes and puts slots through the free chain, or takes the next never
 * used one. */
#include "slab.h"

#include <stdlib.h>
#include <string.h>

int gd_slab_init(struct gd_slab *s, size_t size, uint32_t first,
    uint32_t max, uint32_t map_hint)
{
	memset(s, 0, sizeof(*s));
	s->size = (uint32_t)size;
	s->first = first ? first : 1;
	s->max = max < GD_IDMAP_MAX_SLOTS ? max : GD_IDMAP_MAX_SLOTS;
	s->free_head = GD_NONE;
	return gd_idmap_init(&s->map, map_hint);
}

void gd_slab_free(struct gd_slab *s)
{
	free(s->base);
	gd_idmap_free(&s->map);
	memset(s, 0, sizeof(*s));
}

int gd_slab_grow(struct gd_slab *s)
{
	uint32_t ncap = s->cap ? s->cap * 2 : s->first;
	char *n;

	if (ncap > s->max || ncap < s->cap)
		ncap = s->max;
	if (ncap <= s->cap)
		return -1;
	if ((n = realloc(s->base, (size_t)ncap * s->size)) == NULL)
		return -1;
	/* nothing written past the old cap: a large realloc maps the new
	 * part, and its pages become resident only as slots are taken */
	s->base = n;
	s->cap = ncap;
	return 0;
}
