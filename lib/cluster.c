/* Held blocks and remembered pre-acknowledgements of a cluster member
 * (see cluster.h). Entries live in a slot table (slab.h); the hot path
 * allocates only when it grows. */
#include "cluster.h"

#include <stddef.h>
#include <string.h>

GD_SLAB_TYPED(cent, struct gd_cent, next)

_Static_assert(sizeof(struct gd_cent) <= GD_CLUSTER_ENTRY,
    "cluster entries are documented at GD_CLUSTER_ENTRY bytes");

int gd_cluster_init(struct gd_cluster *c, unsigned needed,
    uint64_t tentative_ns, uint64_t confirmed_ns, uint32_t max_held,
    uint32_t max_preacks)
{
	memset(c, 0, sizeof(*c));
	c->held.head = c->held.tail = GD_NONE;
	c->pre.head = c->pre.tail = GD_NONE;
	c->needed = needed ? needed : 1;
	c->tentative_ns = tentative_ns;
	c->confirmed_ns = confirmed_ns;
	c->max_held = max_held;
	c->max_preacks = max_preacks;
	return gd_slab_init(&c->slab, sizeof(*c->e), 1024, GD_IDMAP_MAX_SLOTS,
	    1024);
}

void gd_cluster_free(struct gd_cluster *c)
{
	gd_slab_free(&c->slab);
	memset(c, 0, sizeof(*c));
}

static struct gd_clist *list_of(struct gd_cluster *c, const struct gd_cent *e)
{
	return e->kind == GD_CE_HELD ? &c->held : &c->pre;
}

static void link_tail(struct gd_cluster *c, uint32_t s)
{
	struct gd_cent *e = &c->e[s];
	struct gd_clist *l = list_of(c, e);

	e->next = GD_NONE;
	e->prev = l->tail;
	if (l->tail != GD_NONE)
		c->e[l->tail].next = s;
	else
		l->head = s;
	l->tail = s;
	l->n++;
}

static void unlink_entry(struct gd_cluster *c, uint32_t s)
{
	struct gd_cent *e = &c->e[s];
	struct gd_clist *l = list_of(c, e);

	if (e->prev != GD_NONE)
		c->e[e->prev].next = e->next;
	else
		l->head = e->next;
	if (e->next != GD_NONE)
		c->e[e->next].prev = e->prev;
	else
		l->tail = e->prev;
	l->n--;
}

static void release(struct gd_cluster *c, uint32_t s)
{
	struct gd_cent *e = &c->e[s];

	unlink_entry(c, s);
	gd_slab_unbind(&c->slab, e->id);
	e->kind = GD_CE_FREE;
	cent_put(&c->slab, s);
}

static void take(struct gd_cluster *c, uint32_t s, struct gd_cheld *out)
{
	const struct gd_cent *e = &c->e[s];

	out->id = e->id;
	out->t = e->t;
	out->owner = e->owner;
	out->off = e->off;
	out->len = e->len;
	out->bits = e->bits;
	release(c, s);
}

/* A new entry for id (not present) at the tail of kind's list. */
static uint32_t add(struct gd_cluster *c, uint64_t id, int kind, uint64_t now)
{
	struct gd_cent *e;
	uint32_t s;

	if ((s = cent_take(&c->slab)) == GD_NONE)
		return GD_NONE;
	e = &c->e[s];
	memset(e, 0, sizeof(*e));
	e->id = id;
	e->t = now;
	e->kind = (uint8_t)kind;
	if (gd_slab_bind(&c->slab, s, id) != 0) {
		e->kind = GD_CE_FREE;
		cent_put(&c->slab, s);
		return GD_NONE;
	}
	link_tail(c, s);
	return s;
}

int gd_cluster_block(struct gd_cluster *c, uint64_t id, int hold,
    uint32_t owner, uint32_t off, uint32_t len, uint64_t now)
{
	uint32_t s = gd_slab_find(&c->slab, id);
	struct gd_cent *e;

	if (s != GD_NONE && c->e[s].kind == GD_CE_PREACK) {
		if ((unsigned)__builtin_popcount(c->e[s].bits) >= c->needed) {
			release(c, s);
			c->n_dropped++;
			c->n_early++;
			return GD_CL_DROP;
		}
		if (!hold) {
			release(c, s);
			return GD_CL_SEND;
		}
		/* the pre-acks so far count for the held block */
		unlink_entry(c, s);
		c->e[s].kind = GD_CE_HELD;
		c->e[s].t = now;
		link_tail(c, s);
	} else if (s != GD_NONE) {
		return GD_CL_DUP;	/* the same id twice in the input */
	} else if (!hold) {
		return GD_CL_SEND;
	} else if ((s = add(c, id, GD_CE_HELD, now)) == GD_NONE) {
		return GD_CL_NOMEM;
	}
	e = &c->e[s];
	e->owner = owner;
	e->off = off;
	e->len = len;
	c->n_held++;
	return GD_CL_HOLD;
}

int gd_cluster_preack(struct gd_cluster *c, unsigned bit, uint64_t id,
    uint64_t now, struct gd_cheld *out)
{
	uint32_t s = gd_slab_find(&c->slab, id);
	uint32_t b = (uint32_t)1 << (bit & 31);

	c->n_preacks++;
	if (s != GD_NONE) {
		struct gd_cent *e = &c->e[s];
		e->bits |= b;
		if (e->kind == GD_CE_PREACK)
			return GD_PA_KEPT;
		if ((unsigned)__builtin_popcount(e->bits) < c->needed)
			return GD_PA_COUNTED;
		take(c, s, out);
		c->n_dropped++;
		return GD_PA_DROP;
	}
	if (c->max_preacks == 0)
		return GD_PA_KEPT;	/* nothing is remembered */
	if (c->pre.n >= c->max_preacks) {
		release(c, c->pre.head);
		c->n_evicted++;
	}
	if ((s = add(c, id, GD_CE_PREACK, now)) == GD_NONE)
		return GD_PA_NOMEM;
	c->e[s].bits = b;
	return GD_PA_KEPT;
}

int gd_cluster_due(struct gd_cluster *c, uint64_t now, struct gd_cheld *out)
{
	uint32_t s = c->held.head;

	if (s == GD_NONE || c->e[s].t + c->tentative_ns > now)
		return 0;
	take(c, s, out);
	c->n_forwarded++;
	return 1;
}

int gd_cluster_pop(struct gd_cluster *c, struct gd_cheld *out)
{
	if (c->held.head == GD_NONE)
		return 0;
	take(c, c->held.head, out);
	return 1;
}

uint32_t gd_cluster_expire(struct gd_cluster *c, uint64_t now)
{
	uint32_t n = 0, s;

	while ((s = c->pre.head) != GD_NONE &&
	    c->e[s].t + c->confirmed_ns <= now) {
		release(c, s);
		n++;
	}
	c->n_expired += n;
	return n;
}
