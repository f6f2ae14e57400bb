/* GD slot admission (SPEC §4): the first numSubs distinct subscriber names
 * that ask for acknowledgements get a slot, one bit in every pending
 * block's ack mask; a second connection under a connected name, or one
 * beyond numSubs, is refused. A subscriber that reconnects under its name
 * gets its own slot back, with the acks it gave; a new name takes a slot
 * never used, else a departed subscriber's, whose acks then no longer
 * count (the caller clears that bit). Pure. */
#ifndef GD_SLOTS_H
#define GD_SLOTS_H

#include "conf.h"

#define GD_SLOT_NAME 256

struct gd_slots {
	unsigned n;			/* numSubs */
	unsigned used;			/* slots held by a connection */
	unsigned char busy[GD_MAX_SUBS];
	char name[GD_MAX_SUBS][GD_SLOT_NAME];	/* last holder, "" never */
};

void gd_slots_init(struct gd_slots *s, unsigned num_subs);
/* Returns a GD_ACK_* status (wire.h); on GD_ACK_OK *slot is the slot and
 * *takeover 1 when it belonged to another name (clear its acks). */
int gd_slots_admit(struct gd_slots *s, const char *name, int *slot,
    int *takeover);
void gd_slots_leave(struct gd_slots *s, int slot);
static inline int gd_slots_ready(const struct gd_slots *s)
{
	return s->n > 0 && s->used == s->n;
}

#endif
