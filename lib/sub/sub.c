/* gdsub's engine, wiring and lifecycle: sources (sub_net.c, sub_input.c)
 * hand blocks to sub_on_block (sub_block.c), which applies receive.c's
 * rules; acks, stdout and control replies leave together in the prepare
 * phase. Lifecycle steps as gdpub's (pub.c): start, on_prepare,
 * maybe_done, finish, on_signal, outcome, gd_sub_run. */
#include "sub_int.h"
#include "clock.h"
#include "log.h"
#include "loop.h"
#include "parse.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The publisher whose keys carry this origin (or its configured
 * HOST:PORT), or NULL. */
struct sub_pub *sub_pub_find(struct sub *s, const char *o, size_t n)
{
	size_t i;
	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		if ((pc->origin_len == n && memcmp(pc->origin, o, n) == 0) ||
		    (pc->addr_len == n && memcmp(pc->addr, o, n) == 0))
			return pc;
	}
	return NULL;
}

/* ---- lifecycle ---- */

static void on_prepare(uv_prepare_t *h)
{
	struct sub *s = h->data;

	if (s->state)
		sub_state_commit(s);
	sub_out_marks(s);
	sub_acks_flush(s);
	sub_cluster_flush(s);
	gd_out_flush(&s->out);
	sub_net_confirm(s);
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

/* Blocks arrived from every source, duplicates included, and the bytes
 * of those still arriving: an idle gdsub is one to which nothing comes,
 * not one that writes nothing. */
static uint64_t arrivals(const struct sub *s)
{
	uint64_t n = s->bytes_in;
	size_t i;

	for (i = 0; i < s->npc; i++)
		n += s->pc[i].rv.n_recv;
	return n;
}

/* Connected to a publisher (or reading -i): the idle time counts only
 * then, as mosquitto_sub -W's from its connection, so a publisher that is
 * down is still --max-retries' to report (69), not an idle end. */
static int can_receive(const struct sub *s)
{
	size_t i;

	if (s->stream_in)
		return 1;
	for (i = 0; i < s->npc; i++)
		if (s->pc[i].state == SUB_PS_ACTIVE)
			return 1;
	return 0;
}

/* --idle-timeout: a look every quarter of it (at most a second apart);
 * when no block arrived since a look that long ago, end as the end of the
 * stream would: stdout closed, then what was written acknowledged. */
static void on_idle(uv_timer_t *t)
{
	struct sub *s = t->data;
	uint64_t n = arrivals(s), now = gd_clock_mono_ns() / 1000000;
	uint64_t blocks = n - s->bytes_in;

	if (n != s->idle_seen || !can_receive(s)) {
		s->idle_seen = n;
		s->idle_since = now;
		return;
	}
	if ((double)(now - s->idle_since) < s->opt.idle_timeout * 1000)
		return;
	uv_timer_stop(t);
	gd_info("no block arrived for %g second%s (--idle-timeout); ending "
	    "after %" PRIu64 " block%s", s->opt.idle_timeout,
	    gd_plural(s->opt.idle_timeout), blocks, gd_plural((double)blocks));
	sub_begin_close(s, "--idle-timeout");
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
	sub_notify_stopping(s);
	if (why)
		gd_trace(1, "closing standard output: %s", why);
	sub_in_stop(s);
	sub_out_close(s);
	if (!s->done)
		(void)uv_timer_start(&s->linger, on_linger,
		    (uint64_t)(s->opt.linger * 1000), 0);
	sub_maybe_done(s);
	sub_end_check(s);
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
	sub_cluster_flush(s);
	gd_ctl_flush(&s->ctl);
	for (i = 0; i < s->npc; i++)
		sub_net_shut(&s->pc[i], s->hard);
	uv_close((uv_handle_t *)&s->prep, NULL);
	uv_close((uv_handle_t *)&s->linger, NULL);
	uv_close((uv_handle_t *)&s->idle, NULL);
	uv_close((uv_handle_t *)&s->orphan, NULL);
	uv_close((uv_handle_t *)&s->reader_tick, NULL);
	uv_close((uv_handle_t *)&s->sigint, NULL);
	uv_close((uv_handle_t *)&s->sigterm, NULL);
	if (s->state)
		uv_close((uv_handle_t *)&s->state_sync, NULL);
	sub_ctl_close(s);
	sub_notify_close(s);
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
static int start(struct sub *s)
{
	const struct gd_conf *conf = s->conf;
	size_t i;
	int rc;

	/* signals first: once the control socket is there a script may
	 * send SIGTERM, which must mean "finish" and not the default death
	 * (the callback runs only in uv_run, once all below is set up) */
	if ((rc = uv_signal_init(&s->loop, &s->sigint)) != 0 ||
	    (rc = uv_signal_init(&s->loop, &s->sigterm)) != 0)
		goto uv_failed;
	s->sigint.data = s->sigterm.data = s;
	if ((rc = uv_signal_start(&s->sigint, on_signal, SIGINT)) != 0 ||
	    (rc = uv_signal_start(&s->sigterm, on_signal, SIGTERM)) != 0)
		goto uv_failed;
	if ((rc = sub_ctl_listen(s)) != 0 || (rc = sub_notify_start(s)) != 0)
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
	    (rc = uv_timer_init(&s->loop, &s->idle)) != 0 ||
	    (rc = sub_end_init(s)) != 0)
		goto uv_failed;
	s->prep.data = s->linger.data = s->idle.data = s;
	if (s->opt.idle_timeout > 0) {
		double every = s->opt.idle_timeout * 1000 / 4;
		uint64_t ms = every > 1000 ? 1000 : every < 10 ? 10 :
		    (uint64_t)every;
		s->idle_since = gd_clock_mono_ns() / 1000000;
		if ((rc = uv_timer_start(&s->idle, on_idle, ms, ms)) != 0)
			goto uv_failed;
	}
	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		pc->s = s;
		pc->idx = (uint32_t)i;
		pc->cl = -1;
		pc->hp = conf->pubs[i];
		pc->addr_len = (size_t)gd_fmt_hostport(pc->addr, sizeof(pc->addr),
		    pc->hp.host, pc->hp.port);
		pc->ack_status = conf->gd ? GD_ACK_OK : GD_ACK_NONE;
		if ((rc = uv_timer_init(&s->loop, &pc->retry)) != 0)
			goto uv_failed;
		pc->retry.data = pc;
		if ((s->tls != NULL && (pc->cin = malloc(SUB_CIN_SIZE)) == NULL) ||
		    gd_rbuf_init(&pc->rb, 256 * 1024,
		    sub_rb_max((uint32_t)conf->sub_max_block)) != 0 ||
		    gd_recv_init(&pc->rv, (int)conf->dedup) != 0) {
			gd_err("out of memory");
			return GD_EX_FAIL;
		}
		pc->rv.stream = s->stream_in;
		pc->rv.consecutive = conf->consecutive != 0;
	}
	if ((rc = uv_prepare_start(&s->prep, on_prepare)) != 0)
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
	s->notify.fd = -1;	/* off until sub_notify_start */
	s->stream_in = opt->in != NULL;
	gd_sub_identity(conf, s->name, sizeof(s->name));
	/* checked when the key was set; read here, as it is now */
	if (conf->sub_auth != NULL) {
		char why[768];
		if (gd_auth_load(conf->sub_auth, &s->key, why, sizeof(why)) != 0) {
			gd_err("%s", why);
			free(s);
			return GD_EX_CONFIG;
		}
	}
	if (conf->sub_tls_ca != NULL) {
		struct gd_tls_conf tc = { 0, conf->sub_tls_cert,
			conf->sub_tls_key, conf->sub_tls_ca,
			conf->sub_tls_min == GD_TLS_MIN_12 ? 12 : 13 };
		char why[GD_TLS_ERR_MAX + 600];
		/* checked with the keys; read here, as the files are now */
		if ((s->tls = gd_tls_ctx_new(&tc, why, sizeof(why))) == NULL) {
			gd_err("%s", why);
			gd_auth_clear(&s->key);
			free(s);
			return GD_EX_CONFIG;
		}
	}
	s->run = gd_clock_mono_ns() ^ ((uint64_t)getpid() << 32);
	if ((rc = uv_loop_init(&s->loop)) != 0) {
		gd_err("cannot set up the event loop: %s", uv_strerror(rc));
		free(s);
		return GD_EX_FAIL;
	}
	if ((rc = start(s)) != 0) {
		sub_in_stop(s);
		gd_ctl_close(&s->ctl);
		gd_metrics_close(&s->metrics);
	} else {
		uv_run(&s->loop, UV_RUN_DEFAULT);
		rc = outcome(s);
	}
	(void)gd_loop_close(&s->loop);	/* says what was left open */
	for (i = 0; s->pc && i < s->npc; i++) {
		gd_rbuf_free(&s->pc[i].rb);
		gd_seal_free(&s->pc[i].tx);
		gd_seal_free(&s->pc[i].rx);
		gd_tls_free(s->pc[i].tls);
		free(s->pc[i].cin);
		gd_recv_free(&s->pc[i].rv);
		free(s->pc[i].ackq);
	}
	if (s->pc)
		sub_cluster_free(s);
	free(s->pc);
	gd_drain_free(&s->drain);
	sub_in_free(s);
	if (s->state)
		rc = sub_state_close(s, rc);
	gd_auth_clear(&s->key);
	gd_tls_ctx_free(s->tls);
	free(s);
	return rc;
}
