/* gdsub's engine, wiring and lifecycle: sources (sub_net.c, sub_input.c)
 * hand blocks to sub_on_block, which applies receive.c's rules; acks,
 * stdout and control replies leave together in the prepare phase. */
#include "sub_int.h"
#include "log.h"
#include "loop.h"
#include "parse.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --consecutive: the gap before block b will not be filled in time */
static void gave_up(struct sub *s, struct sub_pub *pc, const struct gd_block *b)
{
	const struct gd_order *ord = &pc->rv.ord;

	gd_err("publisher %s: sequence index %" PRIu64 " is missing; %" PRIu32
	    " block%s (%" PRIu64 " bytes) held back behind it and block %" PRIu64
	    " (index %" PRIu64 ") would pass the --consecutive limit of %u "
	    "indexes or %u MiB; giving up", pc->addr, ord->next, ord->held,
	    gd_plural(ord->held), ord->bytes, b->id, b->seq, GD_ORDER_MAX,
	    GD_ORDER_MAX_BYTES >> 20);
	s->n_gave_up++;
	sub_begin_close(s, "--consecutive gave up on a gap");
}

/* Hold block b back past a gap; 0, or -1 when gdsub stops. */
static int hold(struct sub *s, struct sub_pub *pc, const struct gd_block *b,
    const struct sub_origin *o)
{
	int rc = gd_order_hold(&pc->rv.ord, b->id, b->seq, b->time_ns, b->flags,
	    b->data, b->len, o->s, o->len);

	if (rc > 0)
		gave_up(s, pc, b);
	else if (rc < 0) {
		gd_err("out of memory holding back block %.*s/%" PRIu64
		    " (--consecutive)", (int)o->len, o->s, b->id);
		sub_finish(s, GD_EX_FAIL);
	}
	return rc == 0 ? 0 : -1;
}

/* One block through receive.c's rules, and what they say is done. */
static void one_block(struct sub *s, struct sub_pub *pc,
    const struct gd_block *b, const struct sub_origin *o, int released)
{
	int gd = s->conf->gd && pc->ack_status == GD_ACK_OK;
	int how = (gd ? GD_RB_GD : 0) | (s->closing ? GD_RB_CLOSED : 0) |
	    (released ? GD_RB_RELEASED : 0);
	const char *flags = b->flags & GD_FL_RESENT ? "r" : "";
	uint64_t mismatch = pc->rv.n_mismatch;
	int rv;

	if (sub_out_cannot_carry(s, b))
		how |= GD_RB_UNWRITABLE;
	rv = gd_recv_block(&pc->rv, b->id, b->seq, how);
	if (pc->rv.n_mismatch != mismatch)
		gd_warn("block %.*s/%" PRIu64 " has sequence index %" PRIu64
		    ", acknowledged before with another id (state file); "
		    "taken as a new block", (int)o->len, o->s, b->id, b->seq);
	switch (rv) {
	case GD_RV_REACK:
		/* its ack was lost: ack again (a failure is reported there) */
		(void)sub_ack_queue(pc, b->id, b->seq);
		return;
	case GD_RV_COPY:
		sub_out_block(s, o, b, flags);
		return;
	case GD_RV_DUP:
	case GD_RV_CLOSED:	/* stdout is closed: the block stays unacked */
		return;
	case GD_RV_UNWRITABLE:
		sub_out_unwritable(s, o, b);
		return;
	case GD_RV_HOLD:
		(void)hold(s, pc, b, o);
		return;
	case GD_RV_GAP:
		gave_up(s, pc, b);
		return;
	case GD_RV_TOO_MANY:
		gd_err("block %.*s/%" PRIu64 " reuses an id whose %u earlier "
		    "blocks are still in the pipeline unacknowledged; not "
		    "written, not acknowledged", (int)o->len, o->s, b->id,
		    GD_DEDUP_MAX_OLDER);
		s->n_unwritable++;
		return;
	case GD_RV_NOMEM:
		gd_err("out of memory for the duplicate filter");
		sub_finish(s, GD_EX_FAIL);
		return;
	}
	if (gd_recv_refused(pc->ack_status) && s->conf->gd)
		gd_err("block %.*s/%" PRIu64 " received but cannot be acknowledged: "
		    "publisher %s %s", (int)o->len, o->s, b->id, pc->addr,
		    gd_ack_status_str(pc->ack_status));
	sub_out_block(s, o, b, flags);
	s->emitted++;
	if (s->opt.count && s->emitted >= s->opt.count)
		sub_begin_close(s, NULL);
}

/* --consecutive: write the held blocks now due, and say which indexes
 * the floor skipped. */
static void release(struct sub *s, struct sub_pub *pc)
{
	struct gd_order *ord = &pc->rv.ord;
	struct gd_skipped *k = &ord->skipped;
	struct gd_held *h;

	while (!s->done && (h = gd_recv_take(&pc->rv)) != NULL) {
		struct gd_block b = { h->id, h->seq, h->time_ns, h->flags,
			h->len, h->data };
		struct sub_origin o = { ord->origin, ord->olen, pc->rv.run ?
			pc->rv.run->epoch : pc->epoch };
		one_block(s, pc, &b, &o, 1);
		free(h);
	}
	if (k->total > 0) {
		char list[GD_ORDER_REPORT * 44 + 1];
		uint64_t named = 0;
		size_t n = 0;
		unsigned i;
		for (i = 0; i < k->n; i++) {
			n += (size_t)snprintf(list + n, sizeof(list) - n,
			    k->hi[i] - k->lo[i] > 1 ? "%s%" PRIu64 "-%" PRIu64 :
			    "%s%" PRIu64, i ? ", " : "", k->lo[i], k->hi[i] - 1);
			named += k->hi[i] - k->lo[i];
		}
		gd_warn("publisher %s: sequence index%s %s%s never arrived and "
		    "%s resolved without this subscriber (NACKed); skipped "
		    "(--consecutive)", pc->addr, k->total == 1 ? "" : "es",
		    list, k->total > named ? ", ..." : "",
		    k->total == 1 ? "was" : "were");
		memset(k, 0, sizeof(*k));
	}
}

void sub_on_block(struct sub *s, struct sub_pub *pc, const struct gd_block *b,
    const struct sub_origin *o)
{
	if (b->flags & GD_FL_SNAPSHOT) {
		/* snapshot blocks are history: shown, never deduped or acked */
		pc->n_snap++;
		if (!s->closing)
			sub_out_block(s, o, b, b->flags & GD_FL_RESENT ? "rs" : "s");
		return;
	}
	if (sub_state_attach(s, pc, o) != 0)
		return;
	one_block(s, pc, b, o, 0);
	if (pc->rv.consecutive)
		release(s, pc);
}

void sub_on_floor(struct sub *s, struct sub_pub *pc, uint64_t floor,
    const struct sub_origin *o)
{
	if (sub_state_attach(s, pc, o) != 0)
		return;
	gd_recv_floor(&pc->rv, floor);
	if (pc->rv.consecutive)
		release(s, pc);
}

/* The publisher restarted: its ids start over, so forget its blocks. */
void sub_forget(struct sub *s, struct sub_pub *pc)
{
	uint32_t held = pc->rv.ord.held;
	int64_t lost = gd_recv_reset(&pc->rv);

	if (lost < 0) {
		gd_err("out of memory");
		sub_finish(s, GD_EX_FAIL);
		return;
	}
	gd_warn("publisher %s restarted; forgetting its earlier blocks "
	    "(%" PRId64 " written on stdout were not acknowledged)",
	    pc->addr, lost);
	if (held > 0)
		gd_warn("publisher %s restarted; %" PRIu32 " block%s held back "
		    "for --consecutive behind a gap of its earlier run %s "
		    "dropped", pc->addr, held, gd_plural(held),
		    held == 1 ? "was" : "were");
	pc->nqueued = 0;
}

/* ---- lifecycle ---- */

static void on_prepare(uv_prepare_t *h)
{
	struct sub *s = h->data;

	if (s->state)
		sub_state_commit(s);
	sub_acks_flush(s);
	gd_out_flush(&s->out);
	gd_ctl_flush(&s->ctl);
}

static void on_linger(uv_timer_t *t)
{
	struct sub *s = t->data;
	uint64_t n = sub_unacked(s);

	if (n == 0 || !s->conf->gd)
		gd_warn("gdack is still connected with its input open %g seconds "
		    "(--linger) after standard output closed; exiting",
		    s->opt.linger);
	else
		gd_warn("%" PRIu64 " block%s written on stdout %s not "
		    "acknowledged within --linger %g seconds", n, n == 1 ? "" : "s",
		    n == 1 ? "was" : "were", s->opt.linger);
	sub_finish(s, GD_EX_OK);
}

/* Once stdout is closed, exit when every block written is acknowledged
 * and the gdack that reads our pipeline has gone (it may still be sending
 * keys that need no acknowledgement, as with numSubs=0; a gdack that has
 * not connected yet finds the end note instead, sub_ctl.c). */
void sub_maybe_done(struct sub *s)
{
	if (s->closing && !s->done && (!s->conf->gd || sub_unacked(s) == 0) &&
	    s->ctl.clients == NULL)
		sub_finish(s, GD_EX_OK);
}

void sub_begin_close(struct sub *s, const char *why)
{
	if (s->closing)
		return;
	s->closing = 1;
	if (why)
		gd_trace(1, "closing standard output: %s", why);
	sub_in_stop(s);
	sub_out_close(s);
	if (!s->done)
		(void)uv_timer_start(&s->linger, on_linger,
		    (uint64_t)(s->opt.linger * 1000), 0);
	sub_maybe_done(s);
}

void sub_finish(struct sub *s, int code)
{
	size_t i;

	if (s->done)
		return;
	if (s->state)
		code = sub_state_last_commit(s, code);
	s->done = 1;
	s->code = code;
	sub_in_stop(s);
	sub_acks_flush(s);	/* after the state that records them */
	gd_ctl_flush(&s->ctl);
	for (i = 0; i < s->npc; i++)
		sub_net_shut(&s->pc[i], s->hard);
	uv_close((uv_handle_t *)&s->prep, NULL);
	uv_close((uv_handle_t *)&s->linger, NULL);
	uv_close((uv_handle_t *)&s->sigint, NULL);
	uv_close((uv_handle_t *)&s->sigterm, NULL);
	if (s->state)
		uv_close((uv_handle_t *)&s->state_sync, NULL);
	sub_ctl_close(s);
	if (s->hard)
		sub_out_abort(s);
	else
		sub_out_close(s);
}

static void on_signal(uv_signal_t *h, int sig)
{
	struct sub *s = h->data;

	if (++s->sigs >= 2) {
		/* at once: the acks queued go out as far as the sockets take
		 * them, nothing waits for a peer; the blocks not acknowledged
		 * are resent or NACKed by their publishers */
		gd_err("second %s: exiting with %" PRIu64 " blocks unacknowledged",
		    sig == SIGINT ? "SIGINT" : "SIGTERM", sub_unacked(s));
		s->hard = 1;
		sub_finish(s, sig == SIGINT ? GD_EX_SIGINT : GD_EX_SIGTERM);
		return;
	}
	sub_begin_close(s, sig == SIGINT ? "SIGINT" : "SIGTERM");
}

/* The exit code once the loop has ended: blocks that could not be
 * written or acknowledged make a clean end a failure. */
static int outcome(const struct sub *s)
{
	uint64_t held = 0;
	size_t i;

	if (s->code != GD_EX_OK)
		return s->code;
	if (s->in.code)
		return s->in.code;
	if (s->n_unwritable > 0) {
		gd_err("%" PRIu64 " blocks could not be written in the output format "
		    "and were not acknowledged", s->n_unwritable);
		return GD_EX_FAIL;
	}
	if (s->in.n_foreign > 0) {
		gd_err("%" PRIu64 " blocks came from publishers not in GDsub_pub "
		    "and were not acknowledged", s->in.n_foreign);
		return GD_EX_FAIL;
	}
	if (s->in.n_stale > 0) {
		gd_err("%" PRIu64 " blocks came from an earlier run of their "
		    "publisher and were not acknowledged", s->in.n_stale);
		return GD_EX_FAIL;
	}
	for (i = 0; i < s->npc; i++) {
		const struct gd_order *ord = &s->pc[i].rv.ord;
		if (ord->held == 0)
			continue;
		gd_err("publisher %s: %" PRIu32 " block%s held back behind "
		    "missing sequence index %" PRIu64 " %s not written "
		    "(--consecutive)", s->pc[i].addr, ord->held,
		    gd_plural(ord->held), ord->next,
		    ord->held == 1 ? "was" : "were");
		held += ord->held;
	}
	if (held > 0)
		return GD_EX_FAIL;
	if (s->n_gave_up > 0)
		return GD_EX_FAIL;
	return GD_EX_OK;
}

/* Everything before the loop runs; an exit code, the reason printed. A
 * failure leaves no request in flight: the caller closes the handles. */
static int setup(struct sub *s)
{
	const struct gd_conf *conf = s->conf;
	size_t i;
	int rc;

	if ((rc = sub_ctl_listen(s)) != 0)
		return rc;
	if (conf->state && (rc = sub_state_open(s)) != 0)
		return rc;
	if ((s->pc = calloc(conf->npubs, sizeof(*s->pc))) == NULL) {
		gd_err("out of memory");
		return GD_EX_FAIL;
	}
	s->npc = conf->npubs;
	if ((rc = sub_out_open(s)) != 0)
		return rc;
	if ((rc = uv_prepare_init(&s->loop, &s->prep)) != 0 ||
	    (rc = uv_timer_init(&s->loop, &s->linger)) != 0 ||
	    (rc = uv_signal_init(&s->loop, &s->sigint)) != 0 ||
	    (rc = uv_signal_init(&s->loop, &s->sigterm)) != 0)
		goto uv_failed;
	s->prep.data = s->linger.data = s->sigint.data = s->sigterm.data = s;
	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		pc->s = s;
		pc->hp = conf->pubs[i];
		pc->addr_len = (size_t)gd_fmt_hostport(pc->addr, sizeof(pc->addr),
		    pc->hp.host, pc->hp.port);
		pc->ack_status = conf->gd ? GD_ACK_OK : GD_ACK_NONE;
		if ((rc = uv_timer_init(&s->loop, &pc->retry)) != 0)
			goto uv_failed;
		pc->retry.data = pc;
		if (gd_rbuf_init(&pc->rb, 256 * 1024) != 0 ||
		    gd_recv_init(&pc->rv, (int)conf->dedup) != 0) {
			gd_err("out of memory");
			return GD_EX_FAIL;
		}
		pc->rv.stream = s->stream_in;
		pc->rv.consecutive = conf->consecutive != 0;
	}
	if ((rc = uv_prepare_start(&s->prep, on_prepare)) != 0 ||
	    (rc = uv_signal_start(&s->sigint, on_signal, SIGINT)) != 0 ||
	    (rc = uv_signal_start(&s->sigterm, on_signal, SIGTERM)) != 0)
		goto uv_failed;
	if (s->stream_in && (rc = sub_in_open(s, s->opt.in)) != 0)
		return rc;
	for (i = 0; i < s->npc; i++)
		if (!s->stream_in || conf->gd)
			sub_net_start(&s->pc[i]);
	return 0;
uv_failed:
	gd_err("cannot set up the event loop: %s", uv_strerror(rc));
	return GD_EX_FAIL;
}

int gd_sub_run(const struct gd_conf *conf, const struct gd_sub_opts *opt)
{
	struct sub *s = calloc(1, sizeof(*s));
	size_t i;
	int rc;

	if (s == NULL) {
		gd_err("out of memory");
		return GD_EX_FAIL;
	}
	s->conf = conf;
	s->opt = *opt;
	s->stream_in = opt->in != NULL;
	gd_sub_identity(conf, s->name, sizeof(s->name));
	if ((rc = uv_loop_init(&s->loop)) != 0) {
		gd_err("cannot set up the event loop: %s", uv_strerror(rc));
		free(s);
		return GD_EX_FAIL;
	}
	if ((rc = setup(s)) != 0) {
		sub_in_stop(s);
		gd_ctl_close(&s->ctl);
	} else {
		uv_run(&s->loop, UV_RUN_DEFAULT);
		rc = outcome(s);
	}
	(void)gd_loop_close(&s->loop);	/* says what was left open */
	for (i = 0; s->pc && i < s->npc; i++) {
		gd_rbuf_free(&s->pc[i].rb);
		gd_recv_free(&s->pc[i].rv);
		free(s->pc[i].ackq);
	}
	free(s->pc);
	sub_in_free(s);
	if (s->state)
		rc = sub_state_close(s, rc);
	free(s);
	return rc;
}
