/* gdpub's engine, wired: the loop and its handles, from start to teardown;
 * the deadline timer; what the delivery rules decide (a resend goes out
 * through the sink again, a resolution becomes a status line and frees the
 * payload); the prepare phase, where every write of a loop turn leaves;
 * the end of the stream; signals. The parts are in pub_int.h. The
 * lifecycle steps have the same names as gdsub's (sub.c): start,
 * on_prepare, maybe_done, finish, on_signal, outcome, gd_pub_run. */
#include "pub_int.h"
#include "clock.h"
#include "fileio.h"
#include "log.h"
#include "loop.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TICK_MS 250		/* --progress redraws at most 4 times a second */
/* A new floor goes out with the next blocks sent, in the same write; with
 * none sent within this long, alone (a frame of its own wakes every
 * subscriber: at a low rate that was a third wake-up a block). */
#define FLOOR_ALONE_MS 20

/* ---- what the delivery rules decide ---- */

static void on_resend(void *ctx, const struct gd_pend *e, uint64_t seq)
{
	struct pub *p = ctx;
	struct gd_block b = { e->id, seq, gd_clock_real_ns(), GD_FL_RESENT, e->len,
		pub_payload(p, e) };

	gd_trace(2, "block %" PRIu64 " timed out: resend %u of %" PRId64,
	    e->id, gd_pend_resends(e), p->conf->resend);
	pub_sink_block(p, &b, gd_input_chunk(&p->in, gd_pend_owner(e)));
}

/* the one place every pending block's life ends */
static void on_resolved(void *ctx, const struct gd_pend *e, int acked,
    uint64_t now)
{
	struct pub *p = ctx;

	(void)now;
	pub_journal_resolved(p, e, acked);
	pub_status_line(p, acked ? "ACK" : "NACK", e);
	pub_release(p, gd_pend_owner(e));
}

static const struct gd_deliver_ops deliver_ops = { on_resend, on_resolved };

/* ---- timers ---- */

static void on_timer(uv_timer_t *t)
{
	struct pub *p = t->data;

	p->now = gd_clock_mono_ns();
	gd_deliver_expire(&p->dv, p->now);
	pub_arm_timer(p);
	pub_kick(p);
	pub_maybe_done(p);
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
	uint64_t now = gd_clock_mono_ns();

	gd_deliver_tick(&p->dv, now);
	if (p->sink == &pub_tcp_sink)
		pub_send_tick(p, gd_clock_mono_ns());
	pub_journal_commit(p);	/* fsync=batch: what waits to be synced */
	pub_kick(p);
	pub_tick(p, now);
	pub_notify_tick(p, now);
	pub_hs_sweep(p, now);
}

/* ---- every loop turn's writes ---- */

static void send_floor(struct pub *p)
{
	uint64_t f = gd_deliver_floor(&p->dv);

	if (f != p->floor_sent) {
		p->sink->floor(p, f);
		p->floor_sent = f;
	}
}

static void on_floor_timer(uv_timer_t *t)
{
	struct pub *p = t->data;

	if (p->wound_up || p->finished || !p->sink->readers(p))
		return;
	send_floor(p);
	p->sink->flush(p);
}

/* The floor rides with the blocks this turn sent; none sent, it waits
 * FLOOR_ALONE_MS for some. */
static void floor_turn(struct pub *p)
{
	uint64_t ords = p->dv.pend.ords;

	if (ords != p->floor_ords) {
		p->floor_ords = ords;
		send_floor(p);
		uv_timer_stop(&p->floor_timer);
	} else if (gd_deliver_floor(&p->dv) != p->floor_sent &&
	    !uv_is_active((uv_handle_t *)&p->floor_timer)) {
		uv_timer_start(&p->floor_timer, on_floor_timer, FLOOR_ALONE_MS, 0);
	}
}

static void on_prepare(uv_prepare_t *h)
{
	struct pub *p = h->data;

	if (p->wound_up) {	/* only the control socket still answers */
		gd_ctl_flush(&p->ctl);
		return;
	}
	if (pub_journal_commit(p) != 0) {	/* before any block is sent */
		gd_out_flush(&p->status);
		gd_ctl_flush(&p->ctl);
		return;
	}
	if (p->sink->readers(p) && !p->finished)
		floor_turn(p);
	p->sink->flush(p);
	gd_out_flush(&p->status);
	pub_journal_settle(p, 0);	/* committed with the next turn's records */
	/* here, where no resolution waits (when the status lines are out) */
	if (p->journal && !p->journal_failed && gd_journal_bloated(&p->jn))
		pub_journal_compact(p);
	gd_ctl_flush(&p->ctl);
}

/* ---- the end ---- */

/* The status output is closed, every line written (or given up on):
 * what stayed open for it closes, and the loop ends. */
static void close_the_rest(struct pub *p)
{
	if (p->all_closed)
		return;
	p->all_closed = 1;
	uv_close((uv_handle_t *)&p->prep, NULL);
	uv_close((uv_handle_t *)&p->sigint, NULL);
	uv_close((uv_handle_t *)&p->sigterm, NULL);
	uv_close((uv_handle_t *)&p->status_timer, NULL);
	gd_ctl_close(&p->ctl);
	gd_metrics_close(&p->metrics);
}

static void on_status_closed(uv_handle_t *h)
{
	if (h != NULL)	/* NULL: a blocking fd, closed within gd_out_close */
		close_the_rest(((struct gd_out *)h->data)->data);
}

/* Nobody reads the status lines: gdpub is not stuck without a word. */
static void on_status_slow(uv_timer_t *t)
{
	struct pub *p = t->data;
	char w[4200], f[4200];

	gd_warn("%s has not taken the last status lines (%zu bytes) for %d "
	    "s: waiting for its reader; on SIGINT or SIGTERM gdpub stops "
	    "waiting, and the outcomes not written %s",
	    pub_status_where(p, w, sizeof(w)), gd_out_backlog(&p->status),
	    PUB_STATUS_WAIT_MS / 1000, pub_status_fate(p, f, sizeof(f)));
}

/* A signal while the last status lines wait: give them up. */
static void status_give_up(struct pub *p, const char *signame)
{
	char w[4200], f[4200];

	gd_err("%s: exiting with %zu bytes of status lines not taken by %s; "
	    "the outcomes not written %s", signame, gd_out_backlog(&p->status),
	    pub_status_where(p, w, sizeof(w)), pub_status_fate(p, f, sizeof(f)));
	pub_status_lost(p);
	gd_out_abort(&p->status, NULL);
}

/* Close every handle: the run is over (gd_pub_run then says how). The
 * status output last: until its lines are written, the control socket
 * answers and a signal can end the wait. */
void pub_finish(struct pub *p)
{
	on_prepare(&p->prep);	/* last status lines and replies */
	p->wound_up = 1;
	gd_out_close(&p->status, on_status_closed);
	p->sink->close(p);
	pub_send_close(p);
	uv_close((uv_handle_t *)&p->timer, NULL);
	uv_close((uv_handle_t *)&p->floor_timer, NULL);
	uv_close((uv_handle_t *)&p->ready_timer, NULL);
	uv_close((uv_handle_t *)&p->end_timer, NULL);
	uv_close((uv_handle_t *)&p->idle, NULL);
	pub_cluster_close(p);
	gd_input_stop(&p->in);
	if (p->status.closed)
		close_the_rest(p);
	else
		uv_timer_start(&p->status_timer, on_status_slow,
		    PUB_STATUS_WAIT_MS, 0);
}

/* ---- the end of the stream ----
 *
 * A subscriber answers the end with BYE before it closes. One whose
 * connection is lost before that may not have had the end (a connection
 * cut at the wrong moment): gdpub waits a little for it to connect again,
 * and tells it the end then (pub_hs.c), rather than leave it retrying a
 * publisher that is gone until its maxRetries, and exiting 69 after a
 * stream that was delivered whole. */

static int end_waiting(struct pub *p)
{
	const struct sconn *c;

	if (p->end_lost > 0)
		return 1;
	for (c = p->conns; c; c = c->next)
		if (c->end_sent && c->state != PUB_CS_CLOSING)
			return 1;
	return 0;
}

static void end_done(struct pub *p)
{
	if (!p->ending)
		return;
	p->ending = 0;
	uv_timer_stop(&p->end_timer);
	pub_finish(p);
}

static void on_end_linger(uv_timer_t *t)
{
	struct pub *p = t->data;

	gd_trace(1, "%u subscriber%s lost the connection before the end of "
	    "the stream reached %s, and did not connect again within %d ms",
	    p->end_lost, gd_plural((double)p->end_lost),
	    p->end_lost == 1 ? "it" : "them", PUB_END_LINGER_MS);
	end_done(p);
}

void pub_end_closed(struct pub *p, const struct sconn *c, int bye)
{
	if (!p->ending || !c->end_sent)
		return;
	if (!bye)
		p->end_lost++;	/* it may not have had the end */
	else if (c->end_late && p->end_lost > 0)
		p->end_lost--;	/* one that had lost it has it now */
	if (!end_waiting(p))
		end_done(p);
}

/* Input ended and nothing is pending: the last floor, the end of the
 * stream for every subscriber, and the handles close. */
void pub_maybe_done(struct pub *p)
{
	if (p->finished || !p->eof || pub_input_left(p) ||
	    gd_deliver_pending_count(&p->dv) > 0 || pub_held(p))
		return;
	p->finished = 1;
	/* nothing pending: the journal shrinks to its header (and the
	 * highest id and index), unless a replay was cut short; once the
	 * status lines are out (else at the end, pub_journal_end) */
	gd_out_flush(&p->status);
	pub_journal_settle(p, 1);
	if (p->journal && pub_journal_commit(p) == 0 &&
	    p->replay.next >= p->replay.n)
		pub_journal_compact(p);
	if (p->sink->readers(p) &&
	    gd_deliver_next_seq(&p->dv) != p->floor_sent) {
		p->sink->floor(p, gd_deliver_next_seq(&p->dv));
		p->floor_sent = gd_deliver_next_seq(&p->dv);
	}
	p->sink->end(p);
	pub_send_end_all(p);
	/* (after a second signal, exit at once) */
	if (p->sigs < 2 && end_waiting(p)) {
		gd_trace(1, "the stream has ended: waiting up to %d ms for the "
		    "subscribers to say they have the end", PUB_END_LINGER_MS);
		p->ending = 1;
		uv_timer_start(&p->end_timer, on_end_linger, PUB_END_LINGER_MS, 0);
		return;
	}
	pub_finish(p);
}

static void on_ready_timeout(uv_timer_t *t)
{
	struct pub *p = t->data;

	gd_err("no READY within %g seconds: %u of %u GD subscribers connected",
	    p->opt.wait_ready_s, p->ngd, p->needed);
	p->stop_code = GD_EX_UNAVAILABLE;
	p->eof = 1;
	p->finished = 1;
	pub_finish(p);
}

/* ---- signals ---- */

static void on_force_exit(uv_timer_t *t)
{
	struct pub *p = t->data;

	gd_err("standard output did not take the last status lines within a "
	    "second; exiting");
	/* what was not written is not recorded as said; closed here, its
	 * writes cancelled, rather than by the teardown's walk, which would
	 * close it a second time from their callbacks (an abort) */
	p->status_lost = 1;
	gd_out_abort(&p->status, NULL);
	uv_stop(&p->loop);	/* gd_pub_run closes what is left */
}

/* Second signal: every pending block is reported NACK (it may still be
 * in a pipeline, but this gdpub will never know), the subscribers are
 * told the stream ended, and gdpub exits as soon as the status lines are
 * written (at most a second later). */
static void stop_now(struct pub *p, const char *signame, int code)
{
	gd_err("second %s: reporting the %u pending blocks as NACK and exiting",
	    signame, gd_deliver_pending_count(&p->dv));
	p->stop_code = code;
	p->now = gd_clock_mono_ns();
	pub_drop_input(p);
	pub_cluster_nack_held(p);
	gd_deliver_nack_all(&p->dv, p->now);
	uv_timer_start(&p->force_exit, on_force_exit, 1000, 0);
	uv_unref((uv_handle_t *)&p->force_exit);
	pub_maybe_done(p);
}

static void on_signal(uv_signal_t *h, int sig)
{
	struct pub *p = h->data;
	const char *name = sig == SIGINT ? "SIGINT" : "SIGTERM";

	if (p->ending) {	/* the stream has ended: stop waiting */
		end_done(p);
		return;
	}
	if (p->wound_up) {	/* for the last status lines */
		status_give_up(p, name);
		return;
	}
	if (++p->sigs >= 2) {
		stop_now(p, name, sig == SIGINT ? GD_EX_SIGINT : GD_EX_SIGTERM);
		return;
	}
	gd_notify_send(&p->notify, "STOPPING=1");
	pub_stop_input(p, name);
	pub_maybe_done(p);
}

/* ---- start ---- */

/* --port-file: written aside and renamed, so that a script that waits for
 * the file never reads half a number; by then the port and the control
 * socket both take connections. */
static int write_port_file(const struct pub *p)
{
	const char *path = p->opt.port_file;
	char tmp[PATH_MAX], line[16];
	int fd, n, e = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		gd_err("cannot write the port to '%s': %s", path,
		    strerror(ENAMETOOLONG));
		return GD_EX_IOERR;
	}
	n = snprintf(line, sizeof(line), "%d\n", p->port);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || gd_write_all(fd, line, (size_t)n) != 0)
		e = errno;
	if (fd >= 0 && close(fd) != 0 && e == 0)
		e = errno;
	if (e == 0 && rename(tmp, path) != 0)
		e = errno;
	if (e != 0) {
		if (fd >= 0)
			(void)unlink(tmp);
		gd_err("cannot write the port to '%s': %s", path, strerror(e));
		return GD_EX_IOERR;
	}
	return 0;
}

/* Every handle of the loop, and the input; 0 or an exit code. */
static int start(struct pub *p)
{
	struct gd_conf bound = *p->conf;
	char path[108], why[768];
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
	/* checked when the key was set; read here, as it is now */
	if (p->conf->pub_auth != NULL &&
	    gd_auth_load(p->conf->pub_auth, &p->key, why, sizeof(why)) != 0) {
		gd_err("%s", why);
		return GD_EX_CONFIG;
	}
	if (p->conf->pub_tls_cert != NULL) {
		struct gd_tls_conf tc = { 1, p->conf->pub_tls_cert,
			p->conf->pub_tls_key, p->conf->pub_tls_ca,
			p->conf->pub_tls_min == GD_TLS_MIN_12 ? 12 : 13 };
		/* checked with the keys; read here, as the files are now */
		if ((p->tls = gd_tls_ctx_new(&tc, why, sizeof(why))) == NULL) {
			gd_err("%s", why);
			return GD_EX_CONFIG;
		}
	}
	if ((rc = pub_journal_open(p)) != 0)
		return rc;
	if ((rc = pub_listen(p)) != 0 || (rc = pub_journal_begin(p)) != 0)
		return rc;
	p->korigin = p->origin;
	bound.port = p->port;	/* the control socket follows the port */
	if ((rc = gd_ctl_path_pub(&bound, path, sizeof(path))) != 0 ||
	    (rc = gd_ctl_listen(&p->ctl, &p->loop, path, pub_ctl_line, p)) != 0)
		return rc;
	/* -p 0: say which port, unless --port-file already tells; once
	 * the control socket answers, as the port file is written */
	if (p->conf->port == 0 && p->opt.port_file == NULL)
		gd_info("listening on %s", p->origin);
	if ((rc = pub_metrics_open(p)) != 0)
		return rc;
	if (p->opt.port_file && (rc = write_port_file(p)) != 0)
		return rc;
	if (gd_deliver_init(&p->dv, p->needed, (uint64_t)(p->conf->timeout *
	    1e9), (unsigned)p->conf->resend, (uint32_t)p->conf->max_pending,
	    (uint32_t)p->conf->window,
	    p->now, &deliver_ops, p) != 0 || gd_snapshot_init(&p->snap,
	    (uint32_t)p->conf->snapshot) != 0) {
		gd_err("out of memory");
		return GD_EX_FAIL;
	}
	/* ids gdpub assigns itself are never looked up alone (those of
	 * --ids and -f frame are, for their duplicates, and a cluster's for
	 * its pre-acknowledgements): acknowledgements find their blocks by
	 * sequence index, and no id is hashed */
	if (!p->opt.ids && !p->opt.frame && !p->conf->cluster)
		(void)gd_deliver_byseq(&p->dv);
	if (p->journal)
		gd_deliver_set_next_seq(&p->dv, gd_journal_max_seq(&p->jn) + 1);
	if ((rc = pub_outputs_open(p)) != 0)
		return rc;
	if (uv_timer_init(&p->loop, &p->timer) != 0 ||
	    uv_timer_init(&p->loop, &p->floor_timer) != 0 ||
	    uv_timer_init(&p->loop, &p->ready_timer) != 0 ||
	    uv_timer_init(&p->loop, &p->end_timer) != 0 ||
	    uv_timer_init(&p->loop, &p->force_exit) != 0 ||
	    uv_timer_init(&p->loop, &p->tick) != 0 ||
	    uv_timer_init(&p->loop, &p->status_timer) != 0 ||
	    uv_prepare_init(&p->loop, &p->prep) != 0) {
		gd_err("cannot set up the event loop");
		return GD_EX_FAIL;
	}
	p->timer.data = p->ready_timer.data = p->force_exit.data = p;
	p->end_timer.data = p->status_timer.data = p;
	p->tick.data = p->prep.data = p->floor_timer.data = p;
	uv_unref((uv_handle_t *)&p->floor_timer);	/* nor does a late floor */
	uv_timer_start(&p->tick, on_tick, TICK_MS, TICK_MS);
	uv_unref((uv_handle_t *)&p->tick);	/* it never keeps gdpub running */
	uv_prepare_start(&p->prep, on_prepare);
	pub_notify_open(p);
	if (p->conf->cluster && (rc = pub_cluster_start(p)) != 0) {
		p->finished = 1;
		pub_finish(p);
		return rc;
	}
	if (p->opt.wait_ready == 2)
		uv_timer_start(&p->ready_timer, on_ready_timeout,
		    (uint64_t)(p->opt.wait_ready_s * 1000), 0);
	if (!pub_gd(p) && p->opt.wait_ready)
		p->ready = 1;	/* nothing to wait for with numSubs=0 */
	if ((rc = pub_input_start(p)) != 0) {
		gd_err("cannot start reading standard input: %s",
		    uv_strerror(rc));
		p->finished = 1;
		pub_finish(p);
		return GD_EX_FAIL;
	}
	if (p->journal && pub_replay_start(p) != 0) {
		gd_err("out of memory for the journal's pending blocks");
		p->finished = 1;
		pub_finish(p);
		return GD_EX_FAIL;
	}
	gd_journal_forget_image(&p->jn);
	gd_trace(1, "listening on %s, numSubs=%u, timeout=%gs", p->origin,
	    p->needed, p->conf->timeout);
	return 0;
}

/* The run in one line on stderr, without -v, when a block failed: how
 * many blocks, how long, each outcome; for NACKs the count of each cause
 * gdpub saw at their deadlines, and the likeliest named. -q silences it
 * (a warning). */
static void nack_summary(const struct pub *p)
{
	const struct gd_deliver_counts d = gd_deliver_counts(&p->dv);
	uint64_t a = d.nack_absent, ps = d.nack_passed, h = d.nack_held;
	uint64_t sl = d.nack_slow, o;
	double secs = (double)(gd_clock_mono_ns() - p->t_start) / 1e9;
	char head[256], journal[64] = "";
	const char *why;

	if (d.nack == 0 && p->n_reject == 0)
		return;
	if (d.restored > 0)
		snprintf(journal, sizeof(journal), " (%" PRIu64 " from the "
		    "journal)", d.restored);
	if (pub_gd(p))
		snprintf(head, sizeof(head), "%" PRIu64 " blocks%s in %.1f s: %"
		    PRIu64 " ACK, %" PRIu64 " NACK, %" PRIu64 " REJECT",
		    d.pub + p->n_reject + d.restored, journal, secs, d.ack,
		    d.nack, p->n_reject);
	else	/* nothing is ACKed or NACKed with GD off */
		snprintf(head, sizeof(head), "%" PRIu64 " blocks in %.1f s: %"
		    PRIu64 " published (GD off), %" PRIu64 " REJECT",
		    d.pub + p->n_reject, secs, d.pub, p->n_reject);
	if (d.nack == 0) {
		gd_warn("%s (each REJECT line says why)", head);
		return;
	}
	o = d.nack - a - ps - h - sl;	/* at a stop, or by the cluster */
	if (ps >= a && ps >= h && ps >= sl && ps >= o)
		why = "the pipelines passed them over (a later block was "
		    "acknowledged: a stage dropped them; a stage must write a "
		    "line for each line it reads, see gdpub(1) FLOW CONTROL)";
	else if (h >= a && h >= sl && h >= o)
		why = "a stage dropped them or holds them (the first stage read "
		    "them and nothing came back; a stage must write a line for "
		    "each line it reads, see gdpub(1) FLOW CONTROL)";
	else if (a >= sl && a >= o)
		why = "fewer than numSubs GD subscribers were connected when "
		    "they were sent";
	else if (sl >= o)
		why = "the pipelines did not acknowledge them within "
		    "GDpub_timeout (slower than the timeout allows)";
	else
		why = "gdpub was stopped, or the cluster gave them up";
	gd_warn("%s; NACKed most because %s: %" PRIu64 " passed over, %"
	    PRIu64 " dropped or held by a stage, %" PRIu64 " with subscribers "
	    "missing, %" PRIu64 " late (GDpub_timeout=%gs), %" PRIu64
	    " otherwise", head, why, ps, h, a, sl, p->conf->timeout, o);
}

static int outcome(struct pub *p)
{
	const struct gd_deliver_counts d = gd_deliver_counts(&p->dv);

	if (p->n_nosub > 0 && !pub_gd(p))
		gd_warn("%" PRIu64 " of %" PRIu64 " blocks were published while "
		    "no subscriber was connected", p->n_nosub, d.pub);
	gd_trace(1, "published %" PRIu64 ", ACK %" PRIu64 ", NACK %" PRIu64
	    ", REJECT %" PRIu64 ", resent %" PRIu64, d.pub, d.ack,
	    d.nack, p->n_reject, d.resent);
	nack_summary(p);
	if (p->stop_code)
		return p->stop_code;
	return d.nack || p->n_reject ? GD_EX_FAIL : GD_EX_OK;
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
	p->notify.fd = -1;	/* off until pub_notify_open */
	p->conf = conf;
	p->opt = *opt;
	p->needed = (unsigned)conf->num_subs;
	p->next_id = 1;
	p->floor_sent = 1;
	p->epoch = gd_clock_real_ns();
	p->t_start = p->now = gd_clock_mono_ns();
	gd_slots_init(&p->slots, p->needed);
	pub_send_init(p);
	{
		struct gd_qos_conf qc = {
			(uint64_t)(conf->discard_interval * 1e9),
			conf->send_timeout < 0 ? 0 :
			    (uint64_t)(conf->send_timeout * 1e9),
			conf->sq_max, conf->sq_policy == GD_POLICY_DROP
		};
		gd_qos_init(&p->qos, &qc, &pub_qos_ops, p);
	}
	if ((rc = start(p)) == 0) {
		uv_run(&p->loop, UV_RUN_DEFAULT);
		gd_ctl_close(&p->ctl);	/* uv_stop: the socket file goes too */
		gd_metrics_close(&p->metrics);
		pub_journal_end(p);
		gd_status_clear();
		rc = outcome(p);
	}
	while ((c = gd_snapshot_pop(&p->snap)) != NULL)
		gd_chunk_unref(&p->in, c);
	gd_snapshot_free(&p->snap);
	pub_cluster_free(p);
	gd_deliver_free(&p->dv);
	gd_notify_close(&p->notify);
	pub_journal_free(p);
	gd_qos_free(&p->qos);
	(void)gd_loop_close(&p->loop);	/* says what was left open */
	while (p->rq) {
		struct gd_region *r = p->rq;
		p->rq = r->next;
		free(r);
	}
	if (p->cur)
		gd_bcast_unref(p->cur);
	gd_bpool_free(&p->bpool);
	gd_input_free(&p->in);
	gd_auth_clear(&p->key);
	free(p->abuf);
	gd_tls_ctx_free(p->tls);
	free(p);
	return rc;
}
