/* GD slot admission and takeover (see slots.h). */
#include "slots.h"
#include "wire.h"

#include <stdio.h>
#include <string.h>

void gd_slots_init(struct gd_slots *s, unsigned num_subs)
{
	memset(s, 0, sizeof(*s));
	s->n = num_subs < GD_MAX_SUBS ? num_subs : GD_MAX_SUBS;
}

int gd_slots_admit(struct gd_slots *s, const char *name, int *slot,
    int *takeover)
{
	int same = -1, fresh = -1, any = -1;
	unsigned i;

	if (s->n == 0)
		return GD_ACK_OFF;
	for (i = 0; i < s->n; i++) {
		int mine = strncmp(s->name[i], name, GD_SLOT_NAME - 1) == 0;
		if (s->busy[i]) {
			if (mine)
				return GD_ACK_NAME;
			continue;
		}
		if (mine && same < 0)
			same = (int)i;
		if (s->name[i][0] == '\0' && fresh < 0)
			fresh = (int)i;
		if (any < 0)
			any = (int)i;
	}
	if (any < 0)
		return GD_ACK_FULL;
	*slot = same >= 0 ? same : fresh >= 0 ? fresh : any;
	*takeover = same < 0 && fresh < 0;
	s->busy[*slot] = 1;
	s->used++;
	snprintf(s->name[*slot], GD_SLOT_NAME, "%s", name);
	return GD_ACK_OK;
}

void gd_slots_leave(struct gd_slots *s, int slot)
{
	if (slot < 0 || (unsigned)slot >= s->n || !s->busy[slot])
		return;
	s->busy[slot] = 0;
	s->used--;
}
