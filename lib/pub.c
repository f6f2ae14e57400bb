/* gdpub's engine, wired: the loop and its handles, from start to teardown;
 * the deadline timer; what the delivery rules decide (a resend goes out
 * through the sink again, a resolution becomes a status line and frees the
 * payload); the prepare phase, where every write of a loop turn leaves;
 * the end of the stream; signals. The parts are in pub_int.h. */
#include "pub_int.h"
#include "log.h"
#include "loop.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TICK_MS 250		/* --progress redraws at most 4 times a second */

uint64_t pub_real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- what the delivery rules decide ---- */

static void on_resend(void *ctx, const struct gd_pend *e, uint64_t seq)
{
	struct pub *p = ctx;
	struct gd_block b = { e->id, seq, pub_real_ns(), GD_FL_RESENT, e->len,
		pub_payload(p, e) };

	gd_trace(2, "block %" PRIu64 " timed out: resend %u of %" PRId64,
	    e->id, gd_pend_resends(e), p->conf->resend);
	p->sink->block(p, &b);
}

/* the one place every pending block's life ends */
static void on_resolved(void *ctx, const struct gd_pend *e, int acked,
    uint64_t now)
{
	struct pub *p = ctx;

	(void)now;
	if (p->journal && !p->journal_failed &&
	    gd_journal_resolved(&p->jn, e->id, gd_deliver_seq(&p->dv, e),
	    e->len, acked) != 0)
		pub_journal_failed(p);
	pub_status_line(p, acked ? "ACK" : "NACK", e);
	pub_release(p, gd_pend_owner(e));
}

static const struct gd_deliver_ops deliver_ops = { on_resend, on_resolved };

/* ---- the journal ---- */

static void close_all(struct pub *p);

void pub_journal_failed(struct pub *p)
{
	if (p->journal_failed)
		return;
	p->journal_failed = 1;
	gd_err("%s; stopping: what was recorded stays in the journal and is "
	    "sent again when gdpub restarts", p->jn.err);
	p->stop_code = GD_EX_IOERR;
	pub_drop_input(p);
	if (!p->finished) {
		p->finished = 1;	/* no end of stream: the run goes on later */
		close_all(p);
	}
}

int pub_journal_commit(struct pub *p)
{
	if (!p->journal)
		return 0;
	if (p->journal_failed)
		return -1;
	if (gd_journal_commit(&p->jn, uv_hrtime()) != 0) {
		pub_journal_failed(p);
		return -1;
	}
	return 0;
}

/* Compaction walks what is pending: the delivery table, then what the
 * replay has not reached yet. */
struct walk {
	struct pub *p;
	uint32_t s;
	size_t r;
};

static int next_pending(void *ctx, struct gd_jblock *b)
{
	struct walk *w = ctx;
	struct pub *p = w->p;

	if (w->s != GD_NONE) {
		const struct gd_pend *e = gd_pending_at(&p->dv.pend, w->s);
		b->id = e->id;
		b->seq = gd_deliver_seq(&p->dv, e);
		b->time_ns = 0;		/* not kept while pending */
		b->data = pub_payload(p, e);
		b->len = e->len;
		w->s = e->next;
		return 1;
	}
	if (w->r < p->replay.n) {
		*b = p->replay.b[w->r++];
		return 1;
	}
	return 0;
}

static void compact(struct pub *p)
{
	struct walk w = { p, p->dv.pend.head, p->replay.next };

	if (gd_journal_compact(&p->jn, next_pending, &w) != 0)
		gd_warn("%s; the journal keeps growing", p->jn.err);
	else
		gd_trace(1, "journal rewritten: %" PRIu64 " bytes", p->jn.size);
}

/* ---- timers ---- */

static void on_timer(uv_timer_t *t)
{
	struct pub *p = t->data;

	p->now = uv_hrtime();
	gd_deliver_expire(&p->dv, p->now);
	pub_arm_timer(p);
	pub_kick(p);
	pub_check_done(p);
}

void pub_arm_timer(struct pub *p)
{
	uint64_t d = gd_deliver_deadline(&p->dv), ms;

	if (d == 0 || uv_is_active((uv_handle_t *)&p->timer))
		return;
	ms = d > p->now ? (d - p->now + 999999) / 1000000 : 0;
	uv_timer_start(&p->timer, on_timer, ms, 0);
}

static void on_tick(uv_timer_t *t)
{
	struct pub *p = t->data;
	uint64_t now = uv_hrtime();

	gd_deliver_tick(&p->dv, now);
	pub_journal_commit(p);	/* fsync=batch: what waits to be synced */
	pub_kick(p);
	pub_tick(p, now);
}

/* ---- every loop turn's writes ---- */

static void on_prepare(uv_prepare_t *h)
{
	struct pub *p = h->data;

	if (pub_journal_commit(p) != 0) {	/* before any block is sent */
		gd_out_flush(&p->status);
		gd_ctl_flush(&p->ctl);
		return;
	}
	if (p->journal && gd_journal_bloated(&p->jn))
		compact(p);
	if (p->sink->readers(p) && !p->finished) {
		uint64_t f = gd_deliver_floor(&p->dv);
		if (f != p->floor_sent) {
			p->sink->floor(p, f);
			p->floor_sent = f;
		}
	}
	p->sink->flush(p);
	gd_out_flush(&p->status);
	gd_ctl_flush(&p->ctl);
}

/* ---- the end ---- */

static void close_all(struct pub *p)
{
	on_prepare(&p->prep);	/* last status lines and replies */
	uv_close((uv_handle_t *)&p->prep, NULL);
	gd_out_close(&p->status, NULL);
	p->sink->close(p);
	pub_net_close(p);
	uv_close((uv_handle_t *)&p->timer, NULL);
	uv_close((uv_handle_t *)&p->ready_timer, NULL);
	uv_close((uv_handle_t *)&p->idle, NULL);
	uv_close((uv_handle_t *)&p->sigint, NULL);
	uv_close((uv_handle_t *)&p->sigterm, NULL);
	gd_ctl_close(&p->ctl);
	gd_input_stop(&p->in);
}

/* Input ended and nothing is pending: the last floor, the end of the
 * stream for every subscriber, and the handles close. */
void pub_check_done(struct pub *p)
{
	if (p->finished || !p->eof || pub_input_left(p) ||
	    p->dv.pend.count > 0)
		return;
	p->finished = 1;
	/* nothing pending: the journal shrinks to its header (and the
	 * highest id and index), unless a replay was cut short */
	if (p->journal && pub_journal_commit(p) == 0 &&
	    p->replay.next >= p->replay.n)
		compact(p);
	if (p->sink->readers(p) && p->dv.next_seq != p->floor_sent) {
		p->sink->floor(p, p->dv.next_seq);
		p->floor_sent = p->dv.next_seq;
	}
	p->sink->end(p);
	pub_net_end(p);
	close_all(p);
}

static void on_ready_timeout(uv_timer_t *t)
{
	struct pub *p = t->data;

	gd_err("no READY within %g seconds: %u of %u GD subscribers connected",
	    p->opt.wait_ready_s, p->ngd, p->needed);
	p->stop_code = GD_EX_UNAVAILABLE;
	p->eof = 1;
	p->finished = 1;
	close_all(p);
}

/* ---- signals ---- */

static void on_force_exit(uv_timer_t *t)
{
	struct pub *p = t->data;

	gd_err("standard output did not take the last status lines within a "
	    "second; exiting");
	uv_stop(&p->loop);	/* gd_pub_run closes what is left */
}

/* Second signal: every pending block is reported NACK (it may still be
 * in a pipeline, but this gdpub will never know), the subscribers are
 * told the stream ended, and gdpub exits as soon as the status lines are
 * written (at most a second later). */
static void stop_now(struct pub *p, const char *signame, int code)
{
	gd_err("second %s: reporting the %u pending blocks as NACK and exiting",
	    signame, p->dv.pend.count);
	p->stop_code = code;
	p->now = uv_hrtime();
	pub_drop_input(p);
	gd_deliver_nack_all(&p->dv, p->now);
	uv_timer_start(&p->force_exit, on_force_exit, 1000, 0);
	uv_unref((uv_handle_t *)&p->force_exit);
	pub_check_done(p);
}

static void on_signal(uv_signal_t *h, int sig)
{
	struct pub *p = h->data;
	const char *name = sig == SIGINT ? "SIGINT" : "SIGTERM";

	if (++p->sigs >= 2) {
		stop_now(p, name, sig == SIGINT ? GD_EX_SIGINT : GD_EX_SIGTERM);
		return;
	}
	pub_stop_input(p, name);
	pub_check_done(p);
}

/* ---- start ---- */

static int open_file(const char *path, const char *what)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);

	if (fd < 0)
		gd_err("cannot open %s '%s': %s", what, path, strerror(errno));
	return fd;
}

/* Status lines go to stdout, or with -o - to stderr, or to --status FILE;
 * the block stream (-o) to stdout or a file. */
static int open_outputs(struct pub *p)
{
	int sfd = 1, ofd = -1;
	const char *st = p->opt.status;

	p->sink = &pub_tcp_sink;
	if (p->opt.out != NULL) {
		if (strcmp(p->opt.out, "-") == 0)
			ofd = 1;
		else if ((ofd = open_file(p->opt.out, "the stream file")) < 0)
			return GD_EX_IOERR;
		if (st == NULL && ofd == 1)
			sfd = 2;
	}
	if (st != NULL && strcmp(st, "-") != 0 &&
	    (sfd = open_file(st, "the status file")) < 0) {
		if (ofd > 2)
			close(ofd);
		return GD_EX_IOERR;
	}
	if (pub_status_open(p, sfd) != 0 ||
	    (ofd >= 0 && pub_stream_open(p, ofd) != 0)) {
		gd_err("cannot set up the outputs: out of memory");
		return GD_EX_FAIL;
	}
	return 0;
}

/* The journal: the run it continues, what is pending in it. */
static int open_journal(struct pub *p)
{
	const struct gd_conf *c = p->conf;

	if (c->journal == NULL)
		return 0;
	if (!pub_gd(p)) {
		gd_usage_err("GDpub_journal needs GDpub_numSubs above 0: with GD "
		    "off nothing is pending to journal");
		return GD_EX_USAGE;
	}
	if (gd_journal_open(&p->jn, c->journal, (int)c->fsync, p->epoch) != 0) {
		gd_err("%s", p->jn.err);
		gd_journal_close(&p->jn);	/* what it read, its path */
		return GD_EX_IOERR;
	}
	p->journal = 1;
	if (p->jn.torn_at)
		gd_warn("journal '%s': a torn record at byte offset %" PRIu64
		    " (%" PRIu64 " bytes, a crash mid-write) was cut off",
		    c->journal, p->jn.torn_at, p->jn.torn_bytes);
	p->epoch = p->jn.epoch;
	p->next_id = p->jn.max_id + 1;	/* this run's ids go on */
	if (p->jn.npending > 0)
		gd_info("journal '%s': %zu blocks pending from before; sending "
		    "them again first", c->journal, p->jn.npending);
	return 0;
}

/* Every handle of the loop, and the input; 0 or an exit code. */
static int start(struct pub *p)
{
	struct gd_conf bound = *p->conf;
	char path[108];
	int rc;

	/* Signals first: once the port is open a script may send SIGTERM,
	 * which must mean "drain and exit" and not the default death. The
	 * callbacks run only in uv_run, once everything below is set up. */
	if (uv_signal_init(&p->loop, &p->sigint) != 0 ||
	    uv_signal_init(&p->loop, &p->sigterm) != 0) {
		gd_err("cannot set up the event loop");
		return GD_EX_FAIL;
	}
	p->sigint.data = p->sigterm.data = p;
	uv_signal_start(&p->sigint, on_signal, SIGINT);
	uv_signal_start(&p->sigterm, on_signal, SIGTERM);
	if ((rc = open_journal(p)) != 0)
		return rc;
	if ((rc = pub_listen(p)) != 0)
		return rc;
	if (p->conf->port == 0)	/* -p 0: say which port */
		gd_info("listening on %s", p->origin);
	bound.port = p->port;	/* the control socket follows the port */
	if ((rc = gd_ctl_path_pub(&bound, path, sizeof(path))) != 0 ||
	    (rc = gd_ctl_listen(&p->ctl, &p->loop, path, pub_ctl_line, p)) != 0)
		return rc;
	if (gd_deliver_init(&p->dv, p->needed, (uint64_t)(p->conf->timeout *
	    1e9), (unsigned)p->conf->resend, (uint32_t)p->conf->max_pending,
	    p->now, &deliver_ops, p) != 0 || gd_snapshot_init(&p->snap,
	    (uint32_t)p->conf->snapshot) != 0) {
		gd_err("out of memory");
		return GD_EX_FAIL;
	}
	if (p->journal)
		p->dv.next_seq = p->jn.max_seq + 1;
	if ((rc = open_outputs(p)) != 0)
		return rc;
	if (uv_timer_init(&p->loop, &p->timer) != 0 ||
	    uv_timer_init(&p->loop, &p->ready_timer) != 0 ||
	    uv_timer_init(&p->loop, &p->force_exit) != 0 ||
	    uv_timer_init(&p->loop, &p->tick) != 0 ||
	    uv_prepare_init(&p->loop, &p->prep) != 0) {
		gd_err("cannot set up the event loop");
		return GD_EX_FAIL;
	}
	p->timer.data = p->ready_timer.data = p->force_exit.data = p;
	p->tick.data = p->prep.data = p;
	uv_timer_start(&p->tick, on_tick, TICK_MS, TICK_MS);
	uv_unref((uv_handle_t *)&p->tick);	/* it never keeps gdpub running */
	uv_prepare_start(&p->prep, on_prepare);
	if (p->opt.wait_ready == 2)
		uv_timer_start(&p->ready_timer, on_ready_timeout,
		    (uint64_t)(p->opt.wait_ready_s * 1000), 0);
	if (!pub_gd(p) && p->opt.wait_ready)
		p->ready = 1;	/* nothing to wait for with numSubs=0 */
	if ((rc = pub_input_start(p)) != 0) {
		gd_err("cannot start reading standard input: %s",
		    uv_strerror(rc));
		p->finished = 1;
		close_all(p);
		return GD_EX_FAIL;
	}
	if (p->journal && pub_replay_start(p) != 0) {
		gd_err("out of memory for the journal's pending blocks");
		p->finished = 1;
		close_all(p);
		return GD_EX_FAIL;
	}
	gd_journal_forget_image(&p->jn);
	gd_trace(1, "listening on %s, numSubs=%u, timeout=%gs", p->origin,
	    p->needed, p->conf->timeout);
	return 0;
}

static int outcome(struct pub *p)
{
	const struct gd_deliver *d = &p->dv;

	if (p->n_nosub > 0 && !pub_gd(p))
		gd_warn("%" PRIu64 " of %" PRIu64 " blocks were published while "
		    "no subscriber was connected", p->n_nosub, d->n_pub);
	gd_trace(1, "published %" PRIu64 ", ACK %" PRIu64 ", NACK %" PRIu64
	    ", REJECT %" PRIu64 ", resent %" PRIu64, d->n_pub, d->n_ack,
	    d->n_nack, p->n_reject, d->n_resent);
	if (p->stop_code)
		return p->stop_code;
	return d->n_nack || p->n_reject ? GD_EX_FAIL : GD_EX_OK;
}

int gd_pub_run(const struct gd_conf *conf, const struct gd_pub_opts *opt)
{
	struct pub *p = calloc(1, sizeof(*p));
	struct gd_chunk *c;
	int rc;

	if (p == NULL || uv_loop_init(&p->loop) != 0) {
		gd_err("cannot start: out of memory");
		free(p);
		return GD_EX_FAIL;
	}
	p->conf = conf;
	p->opt = *opt;
	p->needed = (unsigned)conf->num_subs;
	p->next_id = 1;
	p->floor_sent = 1;
	p->epoch = pub_real_ns();
	p->t_start = p->now = uv_hrtime();
	gd_slots_init(&p->slots, p->needed);
	if ((rc = start(p)) == 0) {
		uv_run(&p->loop, UV_RUN_DEFAULT);
		gd_status_clear();
		rc = outcome(p);
	}
	while ((c = gd_snapshot_pop(&p->snap)) != NULL)
		gd_chunk_unref(&p->in, c);
	gd_snapshot_free(&p->snap);
	gd_deliver_free(&p->dv);
	if (p->replay.c != NULL)
		gd_chunk_unref(&p->in, p->replay.c);
	free(p->replay.b);
	if (p->journal)
		gd_journal_close(&p->jn);
	(void)gd_loop_close(&p->loop);	/* says what was left open */
	while (p->rq) {
		struct gd_region *r = p->rq;
		p->rq = r->next;
		free(r);
	}
	if (p->cur)
		gd_bcast_unref(p->cur);
	gd_input_free(&p->in);
	free(p);
	return rc;
}
