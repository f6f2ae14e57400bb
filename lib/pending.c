/* Pending table (see pending.h). The blocks live in a slot table
 * (slab.h), so the hot path allocates only when the table grows. */
#include "pending.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

GD_SLAB_TYPED(pend, struct gd_pend, next)

_Static_assert(sizeof(struct gd_pend) <= 52,
    "a pending block's entry is 52 bytes (the budget is 64 with the map)");

int gd_pending_init(struct gd_pending *p, uint64_t timeout_ns, uint32_t hint)
{
	memset(p, 0, sizeof(*p));
	p->timeout_ns = timeout_ns;
	p->head = p->tail = p->pcur = GD_NONE;
	if (hint < 64)
		hint = 64;
	if (gd_slab_init(&p->slab, sizeof(*p->e), 1024, GD_IDMAP_MAX_SLOTS,
	    hint) != 0)
		return -1;
	p->nbits = 1024;
	p->bits = calloc(p->nbits / 64, sizeof(uint64_t));
	return p->bits == NULL ? -1 : 0;
}

void gd_pending_free(struct gd_pending *p)
{
	gd_slab_free(&p->slab);
	free(p->bits);
	free(p->ring);
	memset(p, 0, sizeof(*p));
}

#define RING_FIRST 1024u

static uint32_t *ring_new(uint32_t n)
{
	uint32_t *r = malloc((size_t)n * sizeof(*r));

	if (r != NULL)
		memset(r, 0xff, (size_t)n * sizeof(*r));	/* GD_NONE */
	return r;
}

int gd_pending_byseq(struct gd_pending *p)
{
	if (p->ring != NULL || p->count > 0)
		return p->ring != NULL ? 0 : -1;
	if ((p->ring = ring_new(RING_FIRST)) == NULL)
		return -1;
	p->rmask = RING_FIRST - 1;
	return 0;
}

/* In the ring (not spilled to the hash): the slot its seq's place names. */
static inline int in_ring(const struct gd_pending *p, uint32_t s)
{
	return p->ring[p->e[s].seq32 & p->rmask] == s;
}

/* More pending blocks than half the ring's places: twice the places, the
 * blocks in the ring moved over (distinct places stay distinct), the
 * spilled ones left in the hash. Once a doubling: O(1) a block. A ring
 * that cannot grow still serves, spilling more. */
static void ring_grow(struct gd_pending *p)
{
	uint32_t n = (p->rmask + 1) * 2, s, *r;

	if (n > GD_IDMAP_MAX_SLOTS + 2u || (r = ring_new(n)) == NULL)
		return;
	for (s = p->head; s != GD_NONE; s = p->e[s].next)
		if (in_ring(p, s))
			r[p->e[s].seq32 & (n - 1)] = s;
	free(p->ring);
	p->ring = r;
	p->rmask = n - 1;
}

/* Slot s (its seq32 and id set) into the ring; the block whose place it
 * takes, still pending with an older seq, into the hash. 0, or -1 when
 * out of memory (nothing changed). */
static int ring_put(struct gd_pending *p, uint32_t s)
{
	uint32_t *at, old;

	if (p->count + 1 > (p->rmask + 1) / 2)
		ring_grow(p);
	at = &p->ring[p->e[s].seq32 & p->rmask];
	old = *at;
	if (old != GD_NONE &&
	    gd_slab_bind(&p->slab, old, p->e[old].id) != 0)
		return -1;
	*at = s;
	return 0;
}

uint32_t gd_pending_find_seq(const struct gd_pending *p, uint64_t id,
    uint64_t seq)
{
	uint32_t s;

	if (p->count == 0 || seq < p->cursor || seq >= p->top)
		return GD_NONE;
	if (p->ring != NULL && (s = p->ring[(uint32_t)seq & p->rmask]) !=
	    GD_NONE && p->e[s].seq32 == (uint32_t)seq)
		return p->e[s].id == id ? s : GD_NONE;
	/* spilled (or no ring): by id, then its seq */
	s = gd_slab_find(&p->slab, id);
	return s != GD_NONE && gd_pending_seq(p, &p->e[s]) == seq ? s : GD_NONE;
}

static inline int bit_get(const struct gd_pending *p, uint64_t seq)
{
	uint64_t b = seq & (p->nbits - 1);
	return (int)((p->bits[b >> 6] >> (b & 63)) & 1);
}

static inline void bit_set(struct gd_pending *p, uint64_t seq, int v)
{
	uint64_t b = seq & (p->nbits - 1);
	if (v)
		p->bits[b >> 6] |= (uint64_t)1 << (b & 63);
	else
		p->bits[b >> 6] &= ~((uint64_t)1 << (b & 63));
}

/* Make the bitmap cover [cursor, seq]. */
static int grow_bits(struct gd_pending *p, uint64_t seq)
{
	uint64_t nn = p->nbits, s;
	uint64_t *nb, *old = p->bits, on = p->nbits;

	while (seq - p->cursor >= nn)
		nn *= 2;
	if (nn == p->nbits)
		return 0;
	if (nn > ((uint64_t)1 << 31))
		return -1;	/* gd_pending_seq relies on this bound */
	nb = calloc(nn / 64, sizeof(uint64_t));
	if (nb == NULL)
		return -1;
	p->bits = nb;
	p->nbits = nn;
	for (s = p->cursor; s < p->top; s++) {
		uint64_t b = s & (on - 1);
		if ((old[b >> 6] >> (b & 63)) & 1)
			bit_set(p, s, 1);
	}
	free(old);
	return 0;
}

/* Slot s was sent at now: numbered, at the tail of the deadline list. */
static inline void sent(struct gd_pending *p, uint32_t s, uint64_t now_ns)
{
	struct gd_pend *e = &p->e[s];

	e->sent_ns = now_ns;
	e->next = GD_NONE;
	e->prev = p->tail;
	if (p->tail != GD_NONE)
		p->e[p->tail].next = s;
	else
		p->head = s;
	p->tail = s;
	e->ord = p->ords++;
	if (e->ord < p->pass)
		p->npassed++;
	else if (p->pcur == GD_NONE)
		p->pcur = s;
}

uint32_t gd_pending_add(struct gd_pending *p, uint64_t id, uint64_t seq,
    uint32_t off, uint32_t len, uint32_t owner, uint64_t now_ns)
{
	uint32_t s;
	struct gd_pend *e;

	if (p->count == 0)
		p->cursor = seq;
	if (seq - p->cursor >= p->nbits) {
		while (p->cursor < p->top && !bit_get(p, p->cursor))
			p->cursor++;
		if (seq - p->cursor >= p->nbits && grow_bits(p, seq) != 0)
			return GD_NONE;
	}
	if ((s = pend_take(&p->slab)) == GD_NONE)
		return GD_NONE;
	e = &p->e[s];
	e->id = id;
	e->seq32 = (uint32_t)seq;
	if (p->ring != NULL ? ring_put(p, s) != 0 :
	    gd_slab_bind(&p->slab, s, id) != 0) {
		pend_put(&p->slab, s);
		return GD_NONE;
	}
	e->acked = 0;
	e->off = off;
	e->len = len;
	e->owner_res = owner & GD_PEND_MAX_OWNER;
	sent(p, s, now_ns);
	bit_set(p, seq, 1);
	p->top = seq + 1;
	p->count++;
	return s;
}

static void unlink_slot(struct gd_pending *p, uint32_t s)
{
	struct gd_pend *e = &p->e[s];

	if (e->ord < p->pass)
		p->npassed--;
	if (p->pcur == s)
		p->pcur = e->next;
	if (e->prev != GD_NONE)
		p->e[e->prev].next = e->next;
	else
		p->head = e->next;
	if (e->next != GD_NONE)
		p->e[e->next].prev = e->prev;
	else
		p->tail = e->prev;
}

void gd_pending_remove(struct gd_pending *p, uint32_t s)
{
	struct gd_pend *e = &p->e[s];

	unlink_slot(p, s);
	if (p->ring != NULL && in_ring(p, s))
		p->ring[e->seq32 & p->rmask] = GD_NONE;
	else
		gd_slab_unbind(&p->slab, e->id);
	bit_set(p, e->seq32, 0);	/* low bits suffice: nbits < 2^32 */
	pend_put(&p->slab, s);
	p->count--;
}

void gd_pending_touch(struct gd_pending *p, uint32_t s, uint64_t now_ns)
{
	unlink_slot(p, s);
	sent(p, s, now_ns);
}

void gd_pending_pass(struct gd_pending *p, uint64_t pass)
{
	if (pass < p->pass) {
		p->pcur = p->head;
		p->npassed = 0;
	}
	p->pass = pass;
	while (p->pcur != GD_NONE && p->e[p->pcur].ord < pass) {
		p->npassed++;
		p->pcur = p->e[p->pcur].next;
	}
}

void gd_pending_clear_bit(struct gd_pending *p, unsigned bit)
{
	uint32_t m = (uint32_t)1 << bit;
	uint32_t s;

	for (s = p->head; s != GD_NONE; s = p->e[s].next)
		p->e[s].acked &= ~m;
}

uint64_t gd_pending_floor(struct gd_pending *p, uint64_t next_seq)
{
	if (p->count == 0) {
		p->cursor = next_seq;
		return next_seq;
	}
	while (p->cursor < p->top && !bit_get(p, p->cursor))
		p->cursor++;
	return p->cursor;
}
