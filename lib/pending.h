/* The pending table of a publisher: every block sent and not yet resolved,
 * with its acks, deadline and resend count. O(1) per block: a hash from id
 * to slot, a deadline-ordered list (one timeout for all, so appending keeps
 * it sorted and a resend moves the block to the tail), and a bitmap by
 * sequence index that yields the floor (oldest unresolved index). Every
 * send (first or again) is numbered, so the blocks last sent before a
 * given send (the pass mark) are a prefix of the deadline list: the table
 * counts them, with a cursor past them, so the caller can leave out of
 * its window the blocks every subscriber has passed over (deliver.h). */
#ifndef GD_PENDING_H
#define GD_PENDING_H

#include <stddef.h>
#include <stdint.h>

#include "slab.h"

/* 4-byte aligned 64-bit fields let the entry pack to 52 bytes */
typedef uint64_t gd_u64a4 __attribute__((aligned(4)));

struct gd_pend {
	gd_u64a4 id;		/* first: the idmap key */
	gd_u64a4 sent_ns;	/* last (re)send; deadline = sent_ns + timeout */
	gd_u64a4 ord;		/* the number of that send */
	uint32_t acked;		/* one bit per GD subscriber slot (GD_MAX_SUBS) */
	uint32_t len;
	uint32_t off;		/* payload offset in the owner's buffer */
	uint32_t owner_res;	/* owner (caller's buffer tag, 24 bits), resends */
	uint32_t prev, next;	/* deadline list; next links free slots */
	uint32_t seq32;		/* low bits of the sequence index */
};				/* 52 bytes: the budget is 64 per pending block */

#define GD_PEND_MAX_OWNER ((1u << 24) - 1)
#define GD_PEND_MAX_RESENDS 255

static inline uint32_t gd_pend_owner(const struct gd_pend *e)
{
	return e->owner_res & GD_PEND_MAX_OWNER;
}
static inline unsigned gd_pend_resends(const struct gd_pend *e)
{
	return e->owner_res >> 24;
}
static inline void gd_pend_resent(struct gd_pend *e)
{
	if (gd_pend_resends(e) < GD_PEND_MAX_RESENDS)
		e->owner_res += 1u << 24;
}
/* distinct acknowledgements so far */
static inline unsigned gd_pend_acks(const struct gd_pend *e)
{
	/* the bit trick: without -mpopcnt __builtin_popcount is a call into
	 * libgcc, once for every acknowledgement */
	uint32_t v = e->acked - ((e->acked >> 1) & 0x55555555u);

	v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
	return (((v + (v >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24;
}

struct gd_pending {
	union {			/* e: the typed view of the slots */
		struct gd_slab slab;
		struct gd_pend *e;
	};
	uint32_t count;
	uint32_t head, tail;	/* deadline list */
	uint64_t timeout_ns;
	/* floor: bit set = that seq is pending */
	uint64_t *bits;
	uint64_t nbits;		/* power of two */
	uint64_t cursor;	/* no pending seq below this */
	uint64_t top;		/* highest seq added + 1 */
	uint64_t ords;		/* sends numbered so far */
	/* blocks last sent before send number pass: npassed of them, all
	 * ahead of pcur (the first sent since, GD_NONE when none was) */
	uint64_t pass;
	uint32_t pcur, npassed;
	/* by sequence (gd_pending_byseq): ring[seq & rmask] is the slot of
	 * the pending block of that seq, GD_NONE, or another one's; a block
	 * whose place a newer one took is in the id hash instead (spilled).
	 * NULL: every block is in the id hash. */
	uint32_t *ring;
	uint32_t rmask;
};

int gd_pending_init(struct gd_pending *p, uint64_t timeout_ns, uint32_t hint);
void gd_pending_free(struct gd_pending *p);

static inline struct gd_pend *gd_pending_at(struct gd_pending *p, uint32_t s)
{
	return &p->e[s];
}
/* The pending block id's slot, GD_NONE when it is not pending; not with
 * gd_pending_byseq on, when ids are the caller's own, known not to be
 * pending (the hash holds only blocks spilled from the ring). */
static inline uint32_t gd_pending_find(const struct gd_pending *p, uint64_t id)
{
	return gd_slab_find(&p->slab, id);
}
/* Look blocks up by their sequence index (acknowledgements carry it)
 * instead of hashing every id: for a caller that never asks for one by
 * id alone (gd_pending_find), as when it assigns the ids itself. Before
 * the first add; 0, or -1 when out of memory (then the hash serves). */
int gd_pending_byseq(struct gd_pending *p);
/* The slot of the pending block of sequence index seq if its id is id,
 * else GD_NONE: what an acknowledgement (id, seq) is for. */
uint32_t gd_pending_find_seq(const struct gd_pending *p, uint64_t id,
    uint64_t seq);
/* The full sequence index of a pending block: pending blocks are within
 * 2^32 of the newest (the floor bitmap never grows that far). */
static inline uint64_t gd_pending_seq(const struct gd_pending *p,
    const struct gd_pend *e)
{
	uint64_t last = p->top - 1;
	return last - (uint32_t)((uint32_t)last - e->seq32);
}
/* Add a block; seq must be larger than any seq added before, owner at
 * most GD_PEND_MAX_OWNER. Returns its slot, or GD_NONE when out of memory.
 * The id must not be pending. */
uint32_t gd_pending_add(struct gd_pending *p, uint64_t id, uint64_t seq,
    uint32_t off, uint32_t len, uint32_t owner, uint64_t now_ns);
/* Resolve (ACK or final NACK): forget the block. */
void gd_pending_remove(struct gd_pending *p, uint32_t slot);
/* Record an ack from GD slot bit; returns the number of distinct acks. */
static inline unsigned gd_pending_ack(struct gd_pending *p, uint32_t slot,
    unsigned bit)
{
	struct gd_pend *e = &p->e[slot];
	e->acked |= (uint32_t)1 << bit;
	return gd_pend_acks(e);
}
/* Earliest deadline (ns), or 0 when nothing is pending. */
static inline uint64_t gd_pending_deadline(const struct gd_pending *p)
{
	return p->head == GD_NONE ? 0 : p->e[p->head].sent_ns + p->timeout_ns;
}
/* Slot of a block whose deadline has passed at now, or GD_NONE. */
static inline uint32_t gd_pending_expired(const struct gd_pending *p,
    uint64_t now_ns)
{
	if (p->head == GD_NONE || p->e[p->head].sent_ns + p->timeout_ns > now_ns)
		return GD_NONE;
	return p->head;
}
/* The block was sent again at now: new deadline, to the tail. */
void gd_pending_touch(struct gd_pending *p, uint32_t slot, uint64_t now_ns);
/* Clear GD slot bit from every pending block (a slot changed owner). */
void gd_pending_clear_bit(struct gd_pending *p, unsigned bit);
/* Move the pass mark to send number pass: O(blocks it passes) when it
 * moves forward, O(passed) when back (a subscriber came). */
void gd_pending_pass(struct gd_pending *p, uint64_t pass);
static inline int gd_pending_passed(const struct gd_pending *p,
    const struct gd_pend *e)
{
	return e->ord < p->pass;
}
/* Oldest sequence index still pending, or next_seq when none is. */
uint64_t gd_pending_floor(struct gd_pending *p, uint64_t next_seq);

#endif
