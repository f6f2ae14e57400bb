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
	memset(p, 0, sizeof(*p));
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
	if (gd_slab_bind(&p->slab, s, id) != 0) {
		pend_put(&p->slab, s);
		return GD_NONE;
	}
	e->acked = 0;
	e->off = off;
	e->len = len;
	e->owner_res = owner & GD_PEND_MAX_OWNER;
	e->seq32 = (uint32_t)seq;
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
