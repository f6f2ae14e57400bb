/* gdsub's end when nothing can acknowledge what it writes (gdsub(1),
 * DESCRIPTION): standard output's reader has gone (a write failed, or a
 * pipe that no process reads any more, looked for every SUB_READER_MS
 * and when a gdack finishes), or the gdack that acknowledged
 * went without its bye (killed) while standard output is a pipe or
 * closed. A gdack that says bye leaves gdsub waiting for the next one,
 * as one run per key does, and so does a killed one beside a file (one
 * run by hand). When no gdack is connected SUB_ORPHAN_MS later, gdsub
 * finishes as at the end of its run: its state recorded, its
 * acknowledgements sent, the blocks it wrote without one left to their
 * publishers (gdpub --resend sends them again, else they are NACKed),
 * status 1 when there are some. A service manager then sees the whole
 * pipeline end and starts it again. */
#include "sub_int.h"
#include "log.h"

#include <inttypes.h>
#include <poll.h>

/* The connected clients that are, or may be, a gdack: those that sent
 * an ack, and those that have sent nothing yet (a gdack connects when it
 * starts; gdinspect asks at once). */
static size_t ackers_now(const struct sub *s, int unknown_too)
{
	const struct gd_ctl_client *cl;
	size_t n = 0;

	for (cl = s->ctl.clients; cl != NULL; cl = cl->next)
		n += cl->kind == SUB_CL_GDACK ||
		    (unknown_too && cl->kind == SUB_CL_UNKNOWN);
	return n;
}

/* Why nothing can acknowledge, or NULL while something may. */
static const char *orphan_why(const struct sub *s)
{
	if (s->done || !s->conf->gd || ackers_now(s, 1) > 0)
		return NULL;
	if (s->out_broken)
		return "standard output's reader has gone";
	/* a gdack killed: by hand, beside a file, another may come */
	if (s->lost_acker && (s->closing || s->out.fifo))
		return "the gdack acknowledging its blocks went without finishing "
		    "(killed)";
	return NULL;
}

static void on_orphan(uv_timer_t *t)
{
	struct sub *s = t->data;
	const char *why = orphan_why(s);
	uint64_t n;

	s->orphan_on = 0;
	if (why == NULL)
		return;
	n = sub_unacked(s);
	if (n > 0)
		gd_err("%s and no gdack connected within %g second%s: exiting; %"
		    PRIu64 " block%s written on stdout %s not acknowledged (%s "
		    "publishers send %s again or NACK %s)", why,
		    SUB_ORPHAN_MS / 1000.0, gd_plural(SUB_ORPHAN_MS / 1000.0), n,
		    gd_plural((double)n), n == 1 ? "was" : "were",
		    n == 1 ? "its" : "their", n == 1 ? "it" : "them",
		    n == 1 ? "it" : "them");
	else
		gd_info("%s and no gdack connected within %g second%s: exiting; "
		    "every block written was acknowledged", why,
		    SUB_ORPHAN_MS / 1000.0, gd_plural(SUB_ORPHAN_MS / 1000.0));
	sub_finish(s, n > 0 ? GD_EX_FAIL : GD_EX_OK);
}

/* A pipe that no process reads any more: poll(2) says POLLERR at its
 * write end (Linux), before any write fails. */
static int reader_gone(const struct sub *s)
{
	struct pollfd p = { s->out.fd, POLLOUT, 0 };

	return s->out.fifo && !s->out.closing && !s->out.err &&
	    poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

/* Standard output's reader may go while nothing is written (a stage
 * killed when no block comes): looked at every SUB_READER_MS. */
static void on_reader_tick(uv_timer_t *t)
{
	struct sub *s = t->data;

	if (s->done || s->closing) {
		uv_timer_stop(t);
	} else if (reader_gone(s)) {
		uv_timer_stop(t);
		gd_trace(1, "standard output: no process reads it any more");
		sub_end_out_broken(s);
	}
}

int sub_end_init(struct sub *s)
{
	int rc;

	if ((rc = uv_timer_init(&s->loop, &s->orphan)) != 0 ||
	    (rc = uv_timer_init(&s->loop, &s->reader_tick)) != 0)
		return rc;
	s->orphan.data = s->reader_tick.data = s;
	if (s->out.fifo)
		rc = uv_timer_start(&s->reader_tick, on_reader_tick,
		    SUB_READER_MS, SUB_READER_MS);
	return rc;
}

void sub_end_check(struct sub *s)
{
	if (orphan_why(s) == NULL) {
		if (s->orphan_on) {
			uv_timer_stop(&s->orphan);
			s->orphan_on = 0;
		}
		return;
	}
	if (!s->orphan_on) {
		s->orphan_on = 1;
		(void)uv_timer_start(&s->orphan, on_orphan, SUB_ORPHAN_MS, 0);
	}
}

void sub_end_out_broken(struct sub *s)
{
	s->out_broken = 1;
	sub_begin_close(s, "its reader is gone");
	sub_end_check(s);
}

void sub_end_acker(struct sub *s, struct gd_ctl_client *cl)
{
	if (cl->kind == SUB_CL_GDACK)
		return;
	cl->kind = SUB_CL_GDACK;
	s->ackers++;
	s->lost_acker = 0;
	sub_end_check(s);
}

void sub_end_bye(struct sub *s, struct gd_ctl_client *cl)
{
	if (cl->kind == SUB_CL_GDACK)
		s->ackers--;
	cl->kind = SUB_CL_BYE;
	s->bye_seen = 1;
}

void sub_end_gone(struct sub *s)
{
	size_t n;

	if (s->done)
		return;
	n = ackers_now(s, 0);
	if (n < s->ackers) {
		gd_trace(1, "a gdack went without finishing (killed?); %zu "
		    "still connected", n);
		s->lost_acker = 1;
	}
	s->ackers = n;
	/* a gdack finished while standard output is open: its input ended,
	 * most often because the stage before it did */
	if (s->bye_seen) {
		s->bye_seen = 0;
		if (!s->closing && reader_gone(s)) {
			gd_trace(1, "standard output: no process reads it any more");
			sub_end_out_broken(s);
			return;
		}
	}
	sub_end_check(s);
}
