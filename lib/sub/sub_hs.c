/* What a publisher's welcome tells gdsub: that its blocks come over TCP
 * (or it writes a framed stream, which needs -i), whether it restarted
 * (its run's ids start over), its origin, block limit and whether it
 * takes our acknowledgements; the connection is then active. */
#include "sub_int.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

void sub_hs_welcome(struct sub *s, struct sub_pub *pc,
    const struct gd_welcome *w)
{
	int first = pc->origin_len == 0;

	if (w->flags & GD_WF_STREAM && !s->stream_in) {
		gd_err("publisher %s writes its blocks as a framed stream "
		    "(gdpub -o), not over TCP; read that stream with gdsub -i",
		    pc->addr);
		sub_finish(s, GD_EX_UNAVAILABLE);
		return;
	}
	/* the authenticated welcome says whether its frames carry tags;
	 * without them (a gdkit before stream version 2) every frame would
	 * fail its check, never written, never acknowledged */
	if (w->flags & GD_WF_STREAM && s->key.len > 0 &&
	    !(w->flags & GD_WF_TAGS)) {
		gd_err("publisher %s writes its framed stream without "
		    "authentication tags (a gdkit before stream version 2); "
		    "with GDsub_authKeyFile this gdsub reads only frames it can "
		    "verify", pc->addr);
		sub_finish(s, GD_EX_DATAERR);
		return;
	}
	/* the publisher restarted: its ids start over, so what we remember
	 * of the old run would swallow new blocks. With -i the frames' epoch
	 * decides that (sub_input.c); only the acks kept while disconnected,
	 * for the old run's blocks, are dropped here. */
	if (!first && w->epoch != pc->epoch) {
		/* what the stage reads of the old run's blocks is not news to
		 * this one, whose sequence indexes start over */
		pc->run_from = s->out.total;
		pc->cons_seq = 0;
		pc->cons_due = 0;
		if (!s->stream_in) {
			sub_forget(s, pc);
		} else if (pc->nqueued > 0) {
			gd_warn("publisher %s restarted; %zu acknowledgements for "
			    "its earlier run are dropped", pc->addr, pc->nqueued);
			pc->nqueued = 0;
		}
	}
	if (!first && strcmp(pc->origin, w->origin) != 0)
		gd_warn("publisher %s now stamps its keys %s (was %s)",
		    pc->addr, w->origin, pc->origin);
	snprintf(pc->origin, sizeof(pc->origin), "%s", w->origin);
	pc->origin_len = strlen(pc->origin);
	pc->max_block = w->max_block;
	pc->epoch = w->epoch;
	pc->ack_status = (int)w->ack_status;
	/* it reads what the first stage consumed: say it with the acks */
	pc->cons_ok = (w->flags & GD_WF_CONSUMED) && s->conf->gd &&
	    pc->ack_status == GD_ACK_OK;
	pc->cons_due = pc->cons_ok && pc->cons_seq > 0;
	pc->state = SUB_PS_ACTIVE;
	pc->attempts = 0;
	pc->cl_warned = 0;
	if (gd_recv_refused(pc->ack_status) && s->conf->gd)
		gd_err("publisher %s refused the acknowledgement connection: %s",
		    pc->addr, gd_ack_status_str(pc->ack_status) + 9);
	else if (pc->ack_status == GD_ACK_OFF && s->conf->gd && first)
		gd_warn("publisher %s runs with numSubs=0: its blocks need no "
		    "acknowledgement", pc->addr);
	gd_trace(1, "connected to publisher %s (%s), acknowledgements %s",
	    pc->addr, pc->origin, gd_ack_status_str(pc->ack_status));
	sub_cluster_join(s, pc);
	sub_notify_ready(s);
	sub_in_kick(s);
}
