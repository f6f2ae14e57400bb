/* Top-N selection with a bounded max-heap: the root is the largest item
 * kept, so a new item either replaces it or is dropped at once. Without a
 * bound every item is kept and sorted at the end. */
#include "rank.h"

#include <stdint.h>
#include <stdlib.h>

static int less(const struct gd_rank_item *a, const struct gd_rank_item *b)
{
	return a->key < b->key || (a->key == b->key && a->ord < b->ord);
}

static int cmp(const void *x, const void *y)
{
	const struct gd_rank_item *a = x, *b = y;
	return less(a, b) ? -1 : less(b, a) ? 1 : 0;
}

void gd_rank_init(struct gd_rank *r, size_t max)
{
	size_t item = sizeof(struct gd_rank_item);

	r->v = NULL;
	r->n = 0;
	r->max = max;
	/* a bound of max items, else none but the caller's item count */
	gd_dbuf_init_sized(&r->buf, 256 * item,
	    max > 0 && max < SIZE_MAX / item ? max * item : SIZE_MAX);
}

void gd_rank_free(struct gd_rank *r)
{
	gd_dbuf_free(&r->buf);
	gd_rank_init(r, 0);
}

static void sift_up(struct gd_rank_item *v, size_t i)
{
	while (i > 0) {
		size_t up = (i - 1) / 2;
		struct gd_rank_item t;
		if (!less(&v[up], &v[i]))
			break;
		t = v[up];
		v[up] = v[i];
		v[i] = t;
		i = up;
	}
}

static void sift_down(struct gd_rank_item *v, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, big = i;
		struct gd_rank_item t;
		if (l < n && less(&v[big], &v[l]))
			big = l;
		if (l + 1 < n && less(&v[big], &v[l + 1]))
			big = l + 1;
		if (big == i)
			return;
		t = v[big];
		v[big] = v[i];
		v[i] = t;
		i = big;
	}
}

int gd_rank_add(struct gd_rank *r, uint64_t key, uint32_t ord, uint32_t val)
{
	struct gd_rank_item it = { key, ord, val };

	if (r->max > 0 && r->n == r->max) {
		if (less(&it, &r->v[0])) {
			r->v[0] = it;
			sift_down(r->v, r->n, 0);
		}
		return 0;
	}
	if (gd_dbuf_add(&r->buf, &it, sizeof(it)) != GD_DBUF_OK)
		return -1;
	r->v = (struct gd_rank_item *)(void *)gd_dbuf_ptr(&r->buf);
	r->n++;
	if (r->max > 0)
		sift_up(r->v, r->n - 1);
	return 0;
}

void gd_rank_sort(struct gd_rank *r)
{
	if (r->n > 1)
		qsort(r->v, r->n, sizeof(*r->v), cmp);
}
