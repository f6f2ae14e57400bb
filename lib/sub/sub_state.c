/* gdsub's state file (GDsub_state, lib/state.c) in the engine: opened
 * before anything connects, the run of each block's publisher attached to
 * its rules, written before the acknowledgements leave, synced by a timer
 * and closed last. */
#include "sub_int.h"
#include "clock.h"
#include "idmap.h"
#include "log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int sub_state_open(struct sub *s)
{
	struct gd_state *st = malloc(sizeof(*st));
	int rc;

	if (st == NULL) {
		gd_err("out of memory");
		return GD_EX_FAIL;
	}
	if (gd_state_open(st, s->conf->state, gd_clock_mono_ns()) != 0) {
		gd_err("cannot use state file '%s': %s", s->conf->state, st->err);
		free(st);
		return GD_EX_IOERR;
	}
	s->state = st;
	if (st->torn_bytes > 0)
		gd_warn("state file '%s': a torn record at offset %" PRIu64
		    " (%" PRIu64 " byte%s, a crash while it was written) was cut",
		    s->conf->state, st->torn_at, st->torn_bytes,
		    gd_plural((double)st->torn_bytes));
	if ((rc = uv_timer_init(&s->loop, &s->state_sync)) != 0) {
		gd_err("cannot set up the event loop: %s", uv_strerror(rc));
		return GD_EX_FAIL;
	}
	s->state_sync.data = s;
	return 0;
}

/* The state file's record of the run whose blocks arrive now. 0, or -1
 * (out of memory: said, and gdsub stops). */
int sub_state_attach(struct sub *s, struct sub_pub *pc,
    const struct sub_origin *o)
{
	struct gd_srun *run = pc->rv.run;

	if (s->state == NULL || o->len == 0 || (run != NULL &&
	    run->epoch == o->epoch && run->olen == o->len &&
	    memcmp(run->origin, o->s, o->len) == 0))
		return 0;
	if ((run = gd_state_run(s->state, o->s, o->len, o->epoch)) == NULL) {
		gd_err("out of memory for the state of publisher %s", pc->addr);
		sub_finish(s, GD_EX_FAIL);
		return -1;
	}
	gd_recv_attach(&pc->rv, s->state, run);
	return 0;
}

static void state_failed(struct sub *s)
{
	gd_err("state file '%s': %s", s->conf->state, s->state->err);
	s->state_err = 1;
	sub_finish(s, GD_EX_IOERR);
}

static void on_state_sync(uv_timer_t *t)
{
	struct sub *s = t->data;

	if (gd_state_sync(s->state, gd_clock_mono_ns()) != 0)
		state_failed(s);
}

/* Before the acknowledgements leave: what they acknowledge is written
 * (a kill -9 loses nothing of it), synced at most GD_STATE_SYNC_NS later
 * (a machine crash may lose that much: those blocks are written again). */
void sub_state_commit(struct sub *s)
{
	uint64_t now = gd_clock_mono_ns(), due;
	size_t i;

	if (s->state_err)
		return;
	for (i = 0; i < s->npc; i++)
		if (s->pc[i].rv.state_nomem) {
			gd_err("state file '%s': cannot record an "
			    "acknowledgement: out of memory, or %u waiting "
			    "to be written already", s->conf->state,
			    GD_IDMAP_MAX_SLOTS);
			sub_finish(s, GD_EX_FAIL);
			return;
		}
	if (gd_state_commit(s->state, now) != 0) {
		state_failed(s);
		return;
	}
	due = gd_state_sync_due(s->state);
	if (due != 0 && !uv_is_active((uv_handle_t *)&s->state_sync))
		(void)uv_timer_start(&s->state_sync, on_state_sync,
		    due > now ? (due - now + 999999) / 1000000 : 0, 0);
}

/* sub_finish: what the last acknowledgements acknowledge is written
 * before they are sent; a failure makes the exit code 74. */
int sub_state_last_commit(struct sub *s, int code)
{
	if (s->state_err || gd_state_commit(s->state, gd_clock_mono_ns()) == 0)
		return code;
	gd_err("state file '%s': %s", s->conf->state, s->state->err);
	s->state_err = 1;
	return code == GD_EX_OK || code == GD_EX_FAIL ? GD_EX_IOERR : code;
}

/* After the loop: the last sync; returns the exit code. */
int sub_state_close(struct sub *s, int rc)
{
	if (gd_state_close(s->state, gd_clock_mono_ns()) != 0 && !s->state_err) {
		gd_err("state file '%s': %s", s->conf->state, s->state->err);
		if (rc == GD_EX_OK || rc == GD_EX_FAIL)
			rc = GD_EX_IOERR;
	}
	free(s->state);
	s->state = NULL;
	return rc;
}
