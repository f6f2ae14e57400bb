/* --consecutive (GDsub_consecutive): the blocks of one publisher run held
 * back past a gap in its sequence indexes until the missing block arrives
 * (a resend) or the publisher's floor says it never will (it was NACKed:
 * the index is skipped and reported). A ring of GD_ORDER_MAX slots from
 * the next index to write; a slot holds a copy of a block, or a mark that
 * its index needs nothing written (acknowledged before a restart).
 * Bounded: a block GD_ORDER_MAX indexes or more past the next to write,
 * or more than GD_ORDER_MAX_BYTES of payload held, is a gap that will not
 * be filled in time. GD_ORDER_MAX is GDpub_maxPending's default, so a
 * publisher with the default window stops before gdsub's limit: the gap
 * is then filled by a resend or skipped at the NACK. No I/O: receive.c
 * decides, the engine copies blocks in and writes what comes out. */
#ifndef GD_ORDER_H
#define GD_ORDER_H

#include <stddef.h>
#include <stdint.h>

#define GD_ORDER_MAX 65536u
#define GD_ORDER_MAX_BYTES (64u << 20)
#define GD_ORDER_ORIGIN_MAX 300
#define GD_ORDER_REPORT 8	/* skipped ranges named in one report */

/* a block held back, with its own copy of the payload */
struct gd_held {
	uint64_t id, seq, time_ns;
	uint32_t len;
	uint8_t flags;
	uint8_t data[];
};

/* indexes skipped at a floor, for one warning */
struct gd_skipped {
	uint64_t lo[GD_ORDER_REPORT], hi[GD_ORDER_REPORT];	/* [lo, hi) */
	unsigned n;		/* ranges named */
	uint64_t total;		/* indexes skipped, named or not */
};

struct gd_order {
	uint64_t next;		/* the next index to write */
	uint64_t floor;		/* every index below it is resolved */
	struct gd_held **ring;	/* ring[seq % GD_ORDER_MAX] */
	uint32_t held;		/* blocks in the ring */
	uint32_t marks;		/* done marks in the ring */
	uint64_t bytes;		/* payload bytes held */
	char origin[GD_ORDER_ORIGIN_MAX];	/* the key origin of the held */
	size_t olen;
	struct gd_skipped skipped;
};

enum gd_oplace {
	GD_OP_NOW = 1,		/* seq is the next to write */
	GD_OP_LATE,		/* below the next to write: not a gap matter */
	GD_OP_HOLD,		/* past a gap: hold it (gd_order_hold) */
	GD_OP_HELD,		/* already held: a duplicate */
	GD_OP_FULL,		/* too far past the gap: GD_ORDER_MAX */
};

void gd_order_init(struct gd_order *o);
/* Drop everything held (a new run); returns how many blocks were held. */
uint32_t gd_order_reset(struct gd_order *o);
void gd_order_free(struct gd_order *o);
/* Where block seq stands. */
int gd_order_place(const struct gd_order *o, uint64_t seq);
/* seq (GD_OP_NOW) was written or needs nothing: the next one is due. */
static inline void gd_order_passed(struct gd_order *o)
{
	o->next++;
}
/* seq needs nothing written (acknowledged before a restart): passed now
 * if it is next, marked if it is past a gap, nothing if below. 0, or -1
 * when out of memory. */
int gd_order_done(struct gd_order *o, uint64_t seq);
/* Hold a copy of a block placed GD_OP_HOLD, with its key origin. 0, 1
 * when that would pass GD_ORDER_MAX_BYTES, -1 when out of memory. */
int gd_order_hold(struct gd_order *o, uint64_t id, uint64_t seq,
    uint64_t time_ns, uint8_t flags, const uint8_t *data, uint32_t len,
    const char *origin, size_t olen);
/* The publisher's floor: every index below it is resolved. */
void gd_order_floor(struct gd_order *o, uint64_t floor);
/* The held block at the next index, removed from the ring (the caller
 * hands it on as a block, then frees it), past done marks; NULL when
 * nothing is held there. */
struct gd_held *gd_order_take(struct gd_order *o);
/* Indexes [next, to) never arrived and never will (below the floor):
 * skipped and listed in o->skipped. Nothing may be held among them. */
void gd_order_skip(struct gd_order *o, uint64_t to);
/* Where a run resumes (the state file knows): nothing held yet. */
void gd_order_start(struct gd_order *o, uint64_t next);

#endif
