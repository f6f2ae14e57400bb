/* A multisend cluster member's memory (SPEC §8, webMethods "multisend
 * guaranteed"), with no I/O and an injected clock: the blocks a secondary
 * holds until a pre-acknowledgement drops them or its tentative timeout
 * forwards them, and the pre-acknowledgements that came before their
 * block, kept for the confirmed timeout so that block is dropped when it
 * arrives. A pre-ack comes from one GD subscriber slot; a block is
 * dropped once pre-acks from `needed` distinct slots (numSubs) arrived.
 *
 * One entry per id, in one of two lists ordered by arrival: every held
 * block has the same timeout, and so has every pre-ack, so arrival order
 * is deadline order and the head of each list is the next due. A hash
 * from id to entry makes each operation O(1).
 *
 * Bounds: at most max_held held blocks (the engine stops reading input
 * there), at most max_preacks remembered pre-acks (the oldest is
 * forgotten first, counted in n_evicted); GD_CLUSTER_ENTRY bytes each
 * plus about 8 bytes of hash. */
#ifndef GD_CLUSTER_H
#define GD_CLUSTER_H

#include <stdint.h>

#include "slab.h"
#include "pending.h"	/* gd_u64a4 */

#define GD_CLUSTER_MAX_PREACKS (1u << 20)	/* remembered pre-acks */
#define GD_CLUSTER_ENTRY 44			/* sizeof(struct gd_cent) */

enum { GD_CE_FREE = 0, GD_CE_HELD = 1, GD_CE_PREACK = 2 };

struct gd_cent {
	gd_u64a4 id;		/* first: the idmap key */
	gd_u64a4 t;		/* arrival (ns): of the block, or the pre-ack */
	uint32_t prev, next;	/* its list; next links free entries */
	uint32_t owner;		/* held: the caller's payload location */
	uint32_t off, len;
	uint32_t bits;		/* GD slots whose pre-ack arrived */
	uint8_t kind;		/* GD_CE_* */
};

/* A held block handed back (forwarded, dropped, drained). */
struct gd_cheld {
	uint64_t id, t;
	uint32_t owner, off, len, bits;
};

struct gd_clist {
	uint32_t head, tail, n;
};

struct gd_cluster {
	union {			/* e: the typed view of the slots */
		struct gd_slab slab;
		struct gd_cent *e;
	};
	struct gd_clist held, pre;
	unsigned needed;	/* distinct pre-acks that drop a block */
	uint64_t tentative_ns, confirmed_ns;
	uint32_t max_held, max_preacks;
	uint64_t n_held, n_dropped, n_forwarded, n_preacks, n_expired,
	    n_evicted, n_early;	/* early: dropped on arrival */
};

int gd_cluster_init(struct gd_cluster *c, unsigned needed,
    uint64_t tentative_ns, uint64_t confirmed_ns, uint32_t max_held,
    uint32_t max_preacks);
void gd_cluster_free(struct gd_cluster *c);

enum gd_cl_block {
	GD_CL_SEND = 0,		/* send it now (a primary, or no entry) */
	GD_CL_HOLD,		/* held: forwarded when due unless pre-acked */
	GD_CL_DROP,		/* pre-acked before it arrived: drop it */
	GD_CL_DUP,		/* a secondary holds a block with this id */
	GD_CL_NOMEM,
};
/* Block id arrives (hold: this member is a secondary). A pre-ack kept
 * for it drops it when enough slots sent one; otherwise a secondary
 * holds it (the pre-acks so far count), a primary sends it and forgets
 * the partial pre-acks. */
int gd_cluster_block(struct gd_cluster *c, uint64_t id, int hold,
    uint32_t owner, uint32_t off, uint32_t len, uint64_t now);

enum gd_cl_preack {
	GD_PA_DROP = 0,		/* the held block is dropped: *out */
	GD_PA_COUNTED,		/* held, more pre-acks needed */
	GD_PA_KEPT,		/* no such block yet: remembered */
	GD_PA_NOMEM,
};
/* A pre-ack of id from GD slot bit (the caller has checked that id is
 * not a block it already sent). */
int gd_cluster_preack(struct gd_cluster *c, unsigned bit, uint64_t id,
    uint64_t now, struct gd_cheld *out);

/* The oldest held block if its tentative timeout has passed at now:
 * removed, 1 and *out; else 0. */
int gd_cluster_due(struct gd_cluster *c, uint64_t now, struct gd_cheld *out);
/* The oldest held block, due or not (a stop): 1 and *out, else 0. */
int gd_cluster_pop(struct gd_cluster *c, struct gd_cheld *out);
/* Forget the pre-acks kept past the confirmed timeout; how many. */
uint32_t gd_cluster_expire(struct gd_cluster *c, uint64_t now);

static inline uint32_t gd_cluster_held(const struct gd_cluster *c)
{
	return c->held.n;
}
static inline int gd_cluster_full(const struct gd_cluster *c)
{
	return c->held.n >= c->max_held;
}
/* When the oldest held block is due, 0 when none is held. */
static inline uint64_t gd_cluster_next_due(const struct gd_cluster *c)
{
	return c->held.head == GD_NONE ? 0 :
	    c->e[c->held.head].t + c->tentative_ns;
}

#endif
