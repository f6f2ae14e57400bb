/* What gdpub answers on its control socket (gdinspect(1), protocol 2):
 * pending, stats, subs, latency and metrics, each by its handler from one
 * table (hello is the dispatcher's, ctl.c).
 * Replies are rows of typed, TAB-separated cells. */
#include "pub_int.h"
#include "clock.h"
#include "hist.h"
#include "log.h"
#include "prom.h"
#include "rank.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

/* The names of the GD subscribers whose slot bits are set, comma-separated */
static void reply_acked_by(struct pub *p, struct gd_ctl_client *cl,
    uint32_t mask)
{
	char cell[GD_SLOT_NAME];
	unsigned i;
	int first = 1;

	if (mask == 0) {
		gd_ctl_reply(cl, "-", 1);
		return;
	}
	for (i = 0; i < GD_MAX_SUBS; i++) {
		if (!(mask & ((uint32_t)1 << i)))
			continue;
		gd_ctl_cell(cell, sizeof(cell), p->slots.name[i]);
		if (!first)
			gd_ctl_reply(cl, ",", 1);
		gd_ctl_reply(cl, cell, strlen(cell));
		first = 0;
	}
}

static void reply_pending_row(struct pub *p, struct gd_ctl_client *cl,
    uint32_t s, uint64_t now)
{
	const struct gd_pend *e = gd_deliver_at(&p->dv, s);
	double age = (double)(now - e->sent_ns) / 1e9;
	double left = (double)(int64_t)(e->sent_ns +
	    gd_deliver_pending(&p->dv)->timeout_ns - now) / 1e9;

	gd_ctl_printf(cl, "%" PRIu64 "\t%s/%" PRIu64 "\t%u\t%u\t%.3f\t%.3f\t%u\t%u\t",
	    e->id, p->korigin, e->id, gd_pend_acks(e), p->needed,
	    age, left < 0 ? 0 : left, gd_pend_resends(e), e->len);
	reply_acked_by(p, cl, e->acked);
	gd_ctl_reply(cl, p->cluster ? "\tsent\n" : "\n", p->cluster ? 6 : 1);
}

/* A block a secondary holds: its pre-acks so far, and the time left
 * before its tentative timeout forwards it. */
static void reply_held_row(struct pub *p, struct gd_ctl_client *cl,
    const struct gd_cent *e, uint64_t now)
{
	double age = (double)(now - e->t) / 1e9;
	double left = (double)(int64_t)(e->t + p->cl.tentative_ns - now) / 1e9;

	gd_ctl_printf(cl, "%" PRIu64 "\t%s/%" PRIu64 "\t%d\t%u\t%.3f\t%.3f\t0\t%u\t",
	    (uint64_t)e->id, p->korigin, (uint64_t)e->id,
	    __builtin_popcount(e->bits), p->needed, age, left < 0 ? 0 : left,
	    e->len);
	reply_acked_by(p, cl, e->bits);
	gd_ctl_reply(cl, "\theld\n", 6);
}

/* pending [sort=age|expires|id|acks] [limit=N]. The deadline list is
 * already in age (and expiry) order, so those stop after N rows; id and
 * acks keep the first N in a bounded heap: O(pending log N) per request,
 * nothing per block. */
static int ctl_pending(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	struct pub *p = user;
	const struct gd_pending *pd = gd_deliver_pending(&p->dv);
	uint64_t now = gd_clock_mono_ns();
	struct gd_ctl_pending_req q;
	struct gd_rank rk;
	char why[128];
	uint64_t rows, held;
	uint32_t s, ord = 0;
	size_t i;

	(void)line;
	if (gd_ctl_pending_args(args, &q, why, sizeof(why)) != 0) {
		gd_ctl_printf(cl, "error %s\n", why);
		return 0;
	}
	rows = pd->count;
	/* a cluster secondary's held blocks come first, in arrival order */
	held = p->cluster ? gd_cluster_held(&p->cl) : 0;
	if (q.limit > 0 && q.limit < rows + held) {
		held = q.limit > rows ? q.limit - rows : 0;
		rows = q.limit - held;
	}
	gd_ctl_printf(cl, "pending %" PRIu64 "\n", rows + held);
	gd_ctl_printf(cl, "id:n\tkey:s\tacks:n\tneeded:n\tage:n\texpires_in:n\t"
	    "resends:n\tsize:n\tacked_by:s%s\n", p->cluster ? "\tstate:s" : "");
	for (s = p->cluster ? p->cl.held.head : GD_NONE, i = 0;
	    s != GD_NONE && i < held; s = p->cl.e[s].next, i++)
		reply_held_row(p, cl, &p->cl.e[s], now);
	if (q.sort == GD_SORT_AGE || q.sort == GD_SORT_EXPIRES) {
		for (s = pd->head; s != GD_NONE && ord < rows;
		    s = pd->e[s].next, ord++)
			reply_pending_row(p, cl, s, now);
		return 0;
	}
	gd_rank_init(&rk, (size_t)rows);
	for (s = pd->head; s != GD_NONE; s = pd->e[s].next, ord++) {
		const struct gd_pend *e = &pd->e[s];
		/* acks: fewest first, the blocks furthest from an ACK */
		if (gd_rank_add(&rk, q.sort == GD_SORT_ID ? e->id :
		    gd_pend_acks(e), ord, s) != 0)
			break;
	}
	gd_rank_sort(&rk);
	/* out of memory: fewer rows than announced would break the reply, so
	 * pad with deadline order */
	for (i = 0; i < rk.n; i++)
		reply_pending_row(p, cl, rk.v[i].val, now);
	for (s = pd->head; i < rows && s != GD_NONE; s = pd->e[s].next, i++)
		reply_pending_row(p, cl, s, now);
	gd_rank_free(&rk);
	return 0;
}

/* A subscription's state: subscribed, online, offline until a wall-clock
 * time, or removed and why. */
static void qsub_state(const struct gd_qsub *s, char *buf,
    size_t sz)
{
	uint64_t now = gd_clock_mono_ns(), real = gd_clock_real_ns(), at;
	time_t t;
	struct tm tm;
	char hms[16] = "?";

	switch (s->state) {
	case GD_QS_OFFLINE:
		at = real + (s->until > now ? s->until - now : 0);
		t = (time_t)(at / 1000000000u);
		if (localtime_r(&t, &tm) != NULL)
			strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
		snprintf(buf, sz, "offline until %s.%03u: %s",
		    hms, (unsigned)(at / 1000000u % 1000u), s->why);
		break;
	case GD_QS_REMOVED:
		snprintf(buf, sz, "removed: %s", s->why);
		break;
	default:
		snprintf(buf, sz, "%s", gd_qos_state_name(s->state));
	}
}

static void conn_state(const struct sconn *c, char *buf,
    size_t sz)
{
	const char *st = "refused";

	if (c->state != PUB_CS_ACTIVE) {
		snprintf(buf, sz, "%s", c->state == PUB_CS_REFUSED ? "refused" :
		    c->state == PUB_CS_PROOF ? "authenticating" :
		    c->state == PUB_CS_TLS ? "TLS handshake" : "connecting");
		return;
	}
	switch (c->ack_status) {
	case GD_ACK_OK: st = "active"; break;
	case GD_ACK_NONE: st = "receive-only"; break;
	case GD_ACK_OFF: st = "active, GD off"; break;
	case GD_ACK_FULL: st = "refused: numSubs reached"; break;
	case GD_ACK_NAME: st = "refused: name in use"; break;
	}
	/* a refused acknowledgement connection says so first */
	if (c->qs != NULL && (c->ack_status == GD_ACK_OK ||
	    c->ack_status == GD_ACK_NONE || c->ack_status == GD_ACK_OFF))
		qsub_state(c->qs, buf, sz);
	else
		snprintf(buf, sz, "%s", st);
}

/* discarded, dropped and tls: the connection's TLS ("TLSv1.3 CIPHER
 * SUBJECT"), "-" over plain TCP or without a connection */
static void reply_qsub_tail(struct gd_ctl_client *cl, const struct gd_qsub *s,
    const struct sconn *c)
{
	char tls[400] = "-", cell[400];

	if (c != NULL && c->tls != NULL)
		gd_tls_describe(c->tls, tls, sizeof(tls));
	gd_ctl_cell(cell, sizeof(cell), tls);
	if (s == NULL) {
		gd_ctl_printf(cl, "\t-\t-\t%s\n", cell);
		return;
	}
	gd_ctl_printf(cl, "\t%" PRIu64 "\t%" PRIu64 "\t%s\n", s->discarded,
	    s->dropped, cell);
}

/* in_flight per GD slot: pending blocks sent (or resent) to it since it
 * connected that it has not acked. One walk of the pending table. Then
 * the subscriptions without a connection: offline ones that wait for
 * their gdsub, and the last removed ones. */
static int ctl_subs(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	struct pub *p = user;
	uint64_t infl[GD_MAX_SUBS] = { 0 };
	unsigned slots[GD_MAX_SUBS], nslots = 0, i, n = 0;
	const struct gd_pending *pd = gd_deliver_pending(&p->dv);
	struct sconn *c;
	struct gd_qsub *qs;
	uint32_t s;
	char name[GD_SLOT_NAME], state[300], cell[300], qos[96];

	(void)line;
	(void)args;
	for (i = 0; i < p->needed && i < GD_MAX_SUBS; i++)
		if (p->slot_conn[i] != NULL)
			slots[nslots++] = i;
	for (s = pd->head; nslots > 0 && s != GD_NONE; s = pd->e[s].next) {
		const struct gd_pend *e = &pd->e[s];
		for (i = 0; i < nslots; i++)
			if (!(e->acked & ((uint32_t)1 << slots[i])) &&
			    e->sent_ns >= p->slot_conn[slots[i]]->hello_ns)
				infl[slots[i]]++;
	}
	for (c = p->conns; c; c = c->next)
		n++;
	for (qs = p->qos.subs; qs; qs = qs->next)
		if (!qs->attached)
			n++;
	gd_ctl_printf(cl, "subs %u\n", n);
	gd_ctl_printf(cl, "name:s\taddress:s\tgd:s\tstate:s\tqos:s\tqueue:n\t"
	    "in_flight:n\tfailures:n\tacks:n\tdiscarded:n\tdropped:n\t"
	    "tls:s\n");
	for (c = p->conns; c; c = c->next) {
		gd_ctl_cell(name, sizeof(name), c->name);
		conn_state(c, state, sizeof(state));
		gd_ctl_cell(cell, sizeof(cell), state);
		if (c->qs != NULL)
			gd_qos_describe(&c->qs->q, qos, sizeof(qos));
		else
			snprintf(qos, sizeof(qos), "-");
		gd_ctl_printf(cl, "%s\t%s\t%s\t%s\t%s\t%" PRIu64 "\t", name,
		    c->addr, c->slot >= 0 ? "yes" : "no", cell, qos,
		    c->qs != NULL ? c->qs->queued : 0);
		if (c->slot >= 0)
			gd_ctl_printf(cl, "%" PRIu64, infl[c->slot]);
		else
			gd_ctl_reply(cl, "-", 1);
		gd_ctl_printf(cl, "\t%u\t%" PRIu64, c->qs != NULL ?
		    c->qs->failures : 0, c->acks);
		reply_qsub_tail(cl, c->qs, c);
	}
	for (qs = p->qos.subs; qs; qs = qs->next) {
		if (qs->attached)
			continue;
		gd_ctl_cell(name, sizeof(name), qs->name);
		qsub_state(qs, state, sizeof(state));
		gd_ctl_cell(cell, sizeof(cell), state);
		gd_qos_describe(&qs->q, qos, sizeof(qos));
		gd_ctl_printf(cl, "%s\t-\t-\t%s\t%s\t0\t-\t%u\t0", name, cell,
		    qos, qs->failures);
		reply_qsub_tail(cl, qs, NULL);
	}
	return 0;
}

static int ctl_stats(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	struct pub *p = user;
	uint64_t now = gd_clock_mono_ns();
	const struct gd_deliver_counts d = gd_deliver_counts(&p->dv);
	const struct gd_hist *lat = gd_deliver_latency(&p->dv);
	double up = (double)(now - p->t_start) / 1e9;
	char l50[24], l90[24], l99[24], lmax[24];	/* "-" before an ACK */

	(void)line;
	(void)args;
	gd_hist_cell(lat, 50, l50, sizeof(l50));
	gd_hist_cell(lat, 90, l90, sizeof(l90));
	gd_hist_cell(lat, 99, l99, sizeof(l99));
	gd_hist_cell(lat, 100, lmax, sizeof(lmax));
	gd_ctl_printf(cl, "stats 1\n");
	gd_ctl_printf(cl, "published:n\tack:n\tnack:n\treject:n\tresent:n\t"
	    "pending:n\tbytes:n\tuptime:n\trate:n\trate_avg:n\tlat_p50_us:n\t"
	    "lat_p90_us:n\tlat_p99_us:n\tlat_max_us:n\tlate_acks:n\twindow:n\t"
	    "port:n\tconnections:n\tauth_refused:n\tconn_refused:n\t"
	    "handshake_timeouts:n\tpassed_over:n\tnack_passed:n\t"
	    "nack_absent:n\tnack_late:n\ttls_refused:n\tnack_held:n\t"
	    "ack_rate:n\tseal_failed:n%s\n",
	    p->cluster ? "\theld:n\theld_max:n\t"
	    "preacks_kept:n\tpreacks_max:n\tpreacks:n\tpreacked:n\t"
	    "forwarded:n\tpreacks_expired:n\tpreacks_evicted:n" : "");
	gd_ctl_printf(cl, "%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
	    "\t%" PRIu64 "\t%u\t%" PRIu64 "\t%.3f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%"
	    PRIu64 "\t", d.pub, d.ack, d.nack, p->n_reject,
	    d.resent, d.pending, p->n_bytes, up, pub_rate(p, now),
	    up > 0 ? (double)d.pub / up : 0.0, l50, l90, l99, lmax,
	    d.late);
	if (pub_gd(p))
		gd_ctl_printf(cl, "%u\t", gd_deliver_window(&p->dv));
	else
		gd_ctl_printf(cl, "-\t");
	gd_ctl_printf(cl, "%d\t%u\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64,
	    p->port, p->nconns, p->n_auth_refused, p->n_conn_refused,
	    p->n_hs_timeout);
	gd_ctl_printf(cl, "\t%u\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%"
	    PRIu64, d.passed, d.nack_passed, d.nack_absent, d.nack_slow,
	    p->n_tls_refused);
	gd_ctl_printf(cl, "\t%" PRIu64 "\t%.1f\t%" PRIu64, d.nack_held,
	    pub_ack_rate(p, now), p->n_seal_failed);
	if (p->cluster)	/* held blocks and pre-acks: counts and bounds */
		gd_ctl_printf(cl, "\t%u\t%u\t%u\t%u\t%" PRIu64 "\t%" PRIu64
		    "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, p->cl.held.n,
		    p->cl.max_held, p->cl.pre.n, p->cl.max_preacks,
		    p->cl.n_preacks, p->cl.n_dropped, p->cl.n_forwarded,
		    p->cl.n_expired, p->cl.n_evicted);
	gd_ctl_reply(cl, "\n", 1);
	return 0;
}

/* The publish -> ACK histogram as cumulative buckets (for gdinspect's
 * Prometheus output): each bound rounded up to the top of the bucket
 * holding it, so that every count is exact; the last row is +Inf, the
 * count of every ACK; the sum is the same on every row. */
static int ctl_latency(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	static const uint64_t bounds_us[] = { 50, 100, 250, 500, 1000, 2500,
	    5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000,
	    2500000, 5000000, 10000000, 30000000, 60000000 };
	struct pub *p = user;
	const struct gd_hist *h = gd_deliver_latency(&p->dv);
	size_t i, nb = sizeof(bounds_us) / sizeof(bounds_us[0]);

	(void)line;
	(void)args;
	gd_ctl_printf(cl, "latency %zu\n", nb + 1);
	gd_ctl_printf(cl, "le_us:s\tcount:n\tsum_us:n\n");
	for (i = 0; i < nb; i++) {
		uint64_t top, n = gd_hist_upto(h, bounds_us[i], &top);
		gd_ctl_printf(cl, "%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
		    top, n, h->sum);
	}
	gd_ctl_printf(cl, "+Inf\t%" PRIu64 "\t%" PRIu64 "\n", h->n, h->sum);
	return 0;
}

static int ctl_metrics(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	(void)line;
	(void)args;
	return gd_prom_ctl_reply(pub_ctl_line, user, cl);
}

/* pending takes its arguments or none; the rest are the word alone
 * (hello is the dispatcher's) */
static const struct gd_ctl_req requests[] = {
	{ "latency", GD_CTL_NOARGS, ctl_latency },
	{ "metrics", GD_CTL_NOARGS, ctl_metrics },
	{ "pending", GD_CTL_OPTARGS, ctl_pending },
	{ "stats", GD_CTL_NOARGS, ctl_stats },
	{ "subs", GD_CTL_NOARGS, ctl_subs },
};
static const struct gd_ctl_table table = { "gdpub", requests,
	sizeof(requests) / sizeof(requests[0]) };

int pub_ctl_line(void *user, struct gd_ctl_client *cl, char *line,
    size_t len)
{
	(void)len;
	gd_trace(2, "control request '%.64s'", line);
	return gd_ctl_dispatch(&table, user, cl, line);
}

static int render(void *user, struct gd_dbuf *body)
{
	return gd_prom_render(pub_ctl_line, user, body);
}

int pub_metrics_open(struct pub *p)
{
	char why[512];

	if (p->conf->pub_metrics == NULL)
		return 0;
	if (gd_metrics_listen(&p->metrics, &p->loop, p->conf->pub_metrics,
	    render, p, why, sizeof(why)) != 0) {
		gd_err("%s", why);
		return GD_EX_UNAVAILABLE;
	}
	gd_trace(1, "serving metrics on http://%s/metrics",
	    p->conf->pub_metrics);
	return 0;
}
