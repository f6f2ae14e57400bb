/* Top-N selection with a bounded max-heap: the root is the largest item
 * kept, so a new item either replaces it or is dropped at once. Without a
 * bound every item is kept and sorted at the end. */
#include "rank.h"

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
	r->v = NULL;
	r->n = r->cap = 0;
	r->max = max;
}

void gd_rank_free(struct gd_rank *r)
{
	free(r->v);
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
	if (r->n == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 256;
		struct gd_rank_item *nv;
		if (r->max > 0 && ncap > r->max)
			ncap = r->max;
		if ((nv = realloc(r->v, ncap * sizeof(*nv))) == NULL)
			return -1;
		r->v = nv;
		r->cap = ncap;
	}
	r->v[r->n++] = it;
	if (r->max > 0)
		sift_up(r->v, r->n - 1);
	return 0;
}

void gd_rank_sort(struct gd_rank *r)
{
	if (r->n > 1)
		qsort(r->v, r->n, sizeof(*r->v), cmp);
}
