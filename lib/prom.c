/* Prometheus text exposition of a gdpub's or gdsub's counters (see
 * prom.h). */
#include "prom.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { G, C };	/* gauge, counter */

/* A reply as a table: cell[r * ncols + c], row 0 the column names. */
struct gd_prom_tab {
	size_t nrows, ncols;
	const char *const *cell;
};

struct metric {
	const char *col;	/* the reply's column */
	const char *name;	/* after gdkit_pub_ / gdkit_sub_ */
	int kind;
	const char *help;
};

static const struct metric pub_stats[] = {
	{ "published", "published_total", C, "Blocks published." },
	{ "ack", "acked_total", C, "Blocks ACKed by every GD subscriber." },
	{ "nack", "nacked_total", C, "Blocks NACKed." },
	{ "reject", "rejected_total", C, "Input records REJECTed." },
	{ "resent", "resent_total", C, "Blocks sent again (GDpub_resend, a journal's replay)." },
	{ "pending", "pending", G, "Blocks pending: sent and not yet ACKed or NACKed." },
	{ "bytes", "payload_bytes_total", C, "Payload bytes published." },
	{ "uptime", "uptime_seconds", G, "Seconds since gdpub started." },
	{ "rate", "rate_blocks_per_second", G, "Blocks published per second over the last second." },
	{ "late_acks", "late_acks_total", C, "Acknowledgements of blocks no longer pending." },
	{ "window", "window", G, "Blocks a pipeline may owe (the flow-control window)." },
	{ "connections", "connections", G, "Connections open now." },
	{ "auth_refused", "auth_refused_total", C, "Connections refused by authentication." },
	{ "conn_refused", "conn_refused_total", C, "Connections closed at accept (GDpub_maxConnections)." },
	{ "handshake_timeouts", "handshake_timeouts_total", C, "Connections whose handshake timed out." },
	{ "passed_over", "passed_over", G, "Pending blocks no connected GD subscriber owes." },
	{ "nack_passed", "nack_passed_over_total", C, "Blocks NACKed at their deadline after being passed over." },
	{ "nack_absent", "nack_absent_total", C, "Blocks NACKed at their deadline that were sent while fewer than numSubs were connected." },
	{ "nack_late", "nack_late_total", C, "Blocks NACKed at their deadline that a connected pipeline still owed, and was still acknowledging others." },
	{ "tls_refused", "tls_refused_total", C, "Connections whose TLS handshake failed or that spoke the wrong protocol (TLS or not)." },
	{ "nack_held", "nack_held_total", C, "Blocks NACKed at their deadline that the first stage of every pipeline owing them read, with no acknowledgement since (dropped or held by a stage)." },
	{ "ack_rate", "ack_rate_blocks_per_second", G, "Blocks ACKed per second over the last second." },
	{ "seal_failed", "seal_failed_total", C, "Connections closed because a frame failed its seal (CRC32C, or the MAC with a key)." },
	{ "held", "cluster_held", G, "Blocks a secondary holds for a pre-acknowledgement." },
	{ "preacks_kept", "cluster_preacks_kept", G, "Pre-acknowledgements remembered." },
	{ "preacks", "cluster_preacks_total", C, "Pre-acknowledgements received." },
	{ "preacked", "cluster_preacked_total", C, "Held blocks dropped by a pre-acknowledgement." },
	{ "forwarded", "cluster_forwarded_total", C, "Held blocks forwarded at their tentative timeout." },
	{ NULL, NULL, G, NULL }
};

static const struct metric sub_stats[] = {
	{ "publishers", "publishers", G, "Publishers listed." },
	{ "ended", "publishers_ended", G, "Publishers whose stream ended." },
	{ "received", "received_total", C, "Blocks received, duplicates included." },
	{ "unique", "unique_total", C, "Distinct blocks received." },
	{ "duplicates", "duplicates_total", C, "Duplicate blocks received." },
	{ "snapshot", "snapshot_total", C, "Snapshot blocks received." },
	{ "acked", "acked_total", C, "Blocks acknowledged." },
	{ "unacked", "unacked", G, "Blocks written and not yet acknowledged." },
	{ "sent", "sent", G, "Blocks the publishers sent (from the highest sequence index)." },
	{ "reliability", "reliability_ratio", G, "R = unique received / sent." },
	{ "uniqueness", "uniqueness_ratio", G, "UR = unique / received." },
	{ "lines", "lines_total", C, "Input lines read (-i)." },
	{ "frames", "frames_total", C, "Input frames read (-i)." },
	{ "bad_lines", "bad_lines_total", C, "Damaged input lines skipped (-i)." },
	{ "bad_tags", "bad_tags_total", C, "Input frames skipped for a missing or wrong tag (-i)." },
	{ "seal_failed", "seal_failed_total", C, "Connections closed because a frame failed its seal (CRC32C, or the MAC with a key)." },
	{ NULL, NULL, G, NULL }
};

/* per subscriber (gdpub subs) or publisher (gdsub subs) */
static const struct metric pub_subs[] = {
	{ "queue", "subscriber_queue", G, "Blocks queued for the subscriber, not yet written to its socket." },
	{ "in_flight", "subscriber_in_flight", G, "Blocks the subscriber's pipeline owes." },
	{ "failures", "subscriber_failures", G, "Consecutive delivery failures." },
	{ "acks", "subscriber_acks_total", C, "Acknowledgements received from the subscriber on its current connection." },
	{ "discarded", "subscriber_discarded_total", C, "Blocks discarded for it while offline." },
	{ "dropped", "subscriber_dropped_total", C, "Blocks dropped from its full send queue." },
	{ NULL, NULL, G, NULL }
};

static const struct metric sub_subs[] = {
	{ "attempts", "publisher_attempts", G, "Connection attempts in a row." },
	{ "received", "publisher_received_total", C, "Blocks received from the publisher." },
	{ "unique", "publisher_unique_total", C, "Distinct blocks received from it." },
	{ "duplicates", "publisher_duplicates_total", C, "Duplicates received from it." },
	{ "acked", "publisher_acked_total", C, "Blocks acknowledged to it." },
	{ "snapshot", "publisher_snapshot_total", C, "Snapshot blocks received from it." },
	{ "sent", "publisher_sent", G, "Blocks it sent (its highest sequence index)." },
	{ NULL, NULL, G, NULL }
};

/* The exposition as it is written: every add checked once, at the end. */
struct w {
	struct gd_dbuf *b;
	int err;
};

static void put(struct w *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(struct w *w, const char *fmt, ...)
{
	va_list ap;
	int rc;

	if (w->err)
		return;
	va_start(ap, fmt);
	rc = gd_dbuf_vaddf(w->b, fmt, ap);
	va_end(ap);
	if (rc != GD_DBUF_OK)
		w->err = rc;
}

static long col(const struct gd_prom_tab *t, const char *name)
{
	size_t c;

	for (c = 0; t != NULL && c < t->ncols; c++)
		if (strcmp(t->cell[c], name) == 0)
			return (long)c;
	return -1;
}

static const char *at(const struct gd_prom_tab *t, size_t r, long c)
{
	return t->cell[r * t->ncols + (size_t)c];
}

/* a cell that is a number (the exposition takes it as it is) */
static int number(const char *s)
{
	char *end;

	if (*s == '\0' || strcmp(s, "-") == 0)
		return 0;
	(void)strtod(s, &end);
	return *end == '\0';
}

static void label(struct w *w, const char *k, const char *v)
{
	put(w, "%s=\"", k);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			put(w, "\\%c", *v);
		else if (*v == '\n')
			put(w, "\\n");
		else
			put(w, "%c", *v);
	}
	put(w, "\"");
}

static void head(struct w *w, const char *pre, const struct metric *m)
{
	put(w, "# HELP %s%s %s\n# TYPE %s%s %s\n", pre, m->name, m->help,
	    pre, m->name, m->kind == C ? "counter" : "gauge");
}

static void scalars(struct w *w, const char *pre, const struct metric *ms,
    const struct gd_prom_tab *t)
{
	const struct metric *m;
	long c;

	if (t->nrows < 2)
		return;
	for (m = ms; m->col; m++)
		if ((c = col(t, m->col)) >= 0 && number(at(t, 1, c))) {
			head(w, pre, m);
			put(w, "%s%s %s\n", pre, m->name, at(t, 1, c));
		}
}

/* A sum of cells: whole numbers stay exact (counters pass 2^53). */
struct sum {
	uint64_t u;
	double d;
	int frac, n;
};

static void sum_add(struct sum *s, const char *v)
{
	char *end;
	uint64_t u;

	s->n++;
	if (v[0] >= '0' && v[0] <= '9' && (u = strtoull(v, &end, 10), *end == '\0'))
		s->u += u;
	else {
		s->d += strtod(v, NULL);
		s->frac = 1;
	}
}

/* 1 when row r is the first row whose key (column k) is its */
static int first_of(const struct gd_prom_tab *t, size_t r, long k)
{
	for (size_t q = 1; q < r; q++)
		if (strcmp(at(t, q, k), at(t, r, k)) == 0)
			return 0;
	return 1;
}

/* One series per subscriber (gdpub) or publisher (gdsub), labelled by the
 * one column that names it for good: a subscriber's name, which it keeps
 * across its reconnections (its address has a new port each time, and
 * would start a new series), a publisher's HOST:PORT as GDsub_pub gives
 * it. Rows of one name (a subscriber's new connection beside its old
 * one) are summed; rows not named yet (a connection before its hello)
 * have no series. */
static void rows(struct w *w, const char *pre, const struct metric *ms,
    const struct gd_prom_tab *t, const char *key, const char *lname)
{
	const struct metric *m;
	long k = col(t, key), c;
	size_t r, q;

	if (t == NULL || k < 0 || t->nrows < 2)
		return;
	for (m = ms; m->col; m++) {
		if ((c = col(t, m->col)) < 0)
			continue;
		head(w, pre, m);
		for (r = 1; r < t->nrows; r++) {
			struct sum s = { 0, 0, 0, 0 };
			const char *name = at(t, r, k);
			if (strcmp(name, "-") == 0 || strcmp(name, "?") == 0 ||
			    !first_of(t, r, k))
				continue;
			for (q = r; q < t->nrows; q++)
				if (strcmp(at(t, q, k), name) == 0 &&
				    number(at(t, q, c)))
					sum_add(&s, at(t, q, c));
			if (s.n == 0)
				continue;
			put(w, "%s%s{", pre, m->name);
			label(w, lname, name);
			if (s.frac)
				put(w, "} %.17g\n", s.d + (double)s.u);
			else
				put(w, "} %" PRIu64 "\n", s.u);
		}
	}
}

static void latency(struct w *w, const struct gd_prom_tab *t)
{
	long cle = col(t, "le_us"), cn = col(t, "count"), cs = col(t, "sum_us");
	size_t r;

	if (cle < 0 || cn < 0 || cs < 0 || t->nrows < 2)
		return;
	put(w, "# HELP gdkit_pub_ack_latency_seconds Time from a block's last "
	    "send to its ACK.\n# TYPE gdkit_pub_ack_latency_seconds "
	    "histogram\n");
	for (r = 1; r < t->nrows; r++) {
		const char *le = at(t, r, cle);
		if (strcmp(le, "+Inf") == 0)
			put(w, "gdkit_pub_ack_latency_seconds_bucket{le=\"+Inf\"} "
			    "%s\n", at(t, r, cn));
		else
			put(w, "gdkit_pub_ack_latency_seconds_bucket{le=\"%.6f\"} "
			    "%s\n", strtod(le, NULL) / 1e6, at(t, r, cn));
	}
	put(w, "gdkit_pub_ack_latency_seconds_sum %.6f\n",
	    strtod(at(t, t->nrows - 1, cs), NULL) / 1e6);
	put(w, "gdkit_pub_ack_latency_seconds_count %s\n",
	    at(t, t->nrows - 1, cn));
}

/* stats, subs and lat (NULL at a gdsub) appended to out: 0, or -1 when
 * stats is neither a gdpub's nor a gdsub's, or out is at its cap. */
static int write_all(struct gd_dbuf *out, const struct gd_prom_tab *stats,
    const struct gd_prom_tab *subs, const struct gd_prom_tab *lat)
{
	struct w w = { out, 0 };

	if (col(stats, "published") >= 0) {
		scalars(&w, "gdkit_pub_", pub_stats, stats);
		rows(&w, "gdkit_pub_", pub_subs, subs, "name", "name");
		if (lat != NULL)
			latency(&w, lat);
	} else if (col(stats, "publishers") >= 0) {
		scalars(&w, "gdkit_sub_", sub_stats, stats);
		rows(&w, "gdkit_sub_", sub_subs, subs, "publisher", "publisher");
	} else {
		return -1;
	}
	return w.err ? -1 : 0;
}

/* ---- from the engine's own replies ---- */

/* A control reply ("NAME ROWS", a header of NAME:TYPE, rows of TAB-
 * separated cells) cut up in place into a table. */
struct reply {
	struct gd_dbuf text;
	const char **cell;
	struct gd_prom_tab t;
};

static int parse_reply(struct reply *r)
{
	char *p = gd_dbuf_ptr(&r->text), *end, *nl;
	size_t n = 0, cap, lines = 0, w;

	if (p == NULL || (nl = strchr(p, '\n')) == NULL)
		return -1;
	p = nl + 1;		/* past "NAME ROWS" */
	end = gd_dbuf_ptr(&r->text) + gd_dbuf_len(&r->text);
	for (char *q = p; q < end; q++)
		n += *q == '\t' || *q == '\n';
	cap = n + 1;
	if ((r->cell = calloc(cap, sizeof(*r->cell))) == NULL)
		return -1;
	n = 0;
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		*nl = '\0';
		w = 0;
		for (char *f = p;; w++) {
			char *tab = strchr(f, '\t');
			if (tab != NULL)
				*tab = '\0';
			if (lines == 0) {	/* NAME:TYPE: the name */
				char *colon = strrchr(f, ':');
				if (colon != NULL && colon[1] != '\0' &&
				    colon[2] == '\0')
					*colon = '\0';
			}
			if (n >= cap)
				return -1;
			r->cell[n++] = f;
			if (tab == NULL)
				break;
			f = tab + 1;
		}
		if (lines == 0)
			r->t.ncols = w + 1;
		else if (w + 1 != r->t.ncols)
			return -1;	/* a row of another width */
		lines++;
		p = nl + 1;
	}
	r->t.nrows = lines;
	r->t.cell = r->cell;
	return lines > 0 ? 0 : -1;
}

static int ask(gd_ctl_line_cb cb, void *user, const char *req,
    struct reply *r)
{
	const char *p;

	if (gd_ctl_call(cb, user, req, &r->text) != 0)
		return -1;
	p = gd_dbuf_ptr(&r->text);
	/* "error ...", or another request's reply: not the table asked for */
	if (p == NULL || strncmp(p, req, strlen(req)) != 0 ||
	    p[strlen(req)] != ' ')
		return -1;
	return parse_reply(r);
}

int gd_prom_render(gd_ctl_line_cb cb, void *user, struct gd_dbuf *out)
{
	struct reply r[3];
	int i, pub, rc = -1;

	memset(r, 0, sizeof(r));
	/* stats, subs and latency in one turn of the loop: one snapshot */
	if (ask(cb, user, "stats", &r[0]) == 0 &&
	    ask(cb, user, "subs", &r[1]) == 0) {
		pub = col(&r[0].t, "published") >= 0;
		if (!pub || ask(cb, user, "latency", &r[2]) == 0)
			rc = write_all(out, &r[0].t, &r[1].t,
			    pub ? &r[2].t : NULL);
	}
	for (i = 0; i < 3; i++) {
		free(r[i].cell);
		gd_dbuf_free(&r[i].text);
	}
	return rc;
}

int gd_prom_ctl_reply(gd_ctl_line_cb cb, void *user,
    struct gd_ctl_client *cl)
{
	struct gd_dbuf b;
	const char *p, *e;
	size_t n = 0;

	gd_dbuf_init_sized(&b, 16384, GD_CTL_REPLY_MAX);
	if (gd_prom_render(cb, user, &b) != 0) {
		gd_dbuf_free(&b);
		gd_ctl_printf(cl, "error cannot render the metrics: larger "
		    "than %zu bytes, or out of memory\n", GD_CTL_REPLY_MAX);
		return 0;
	}
	p = gd_dbuf_ptr(&b);
	e = p ? p + gd_dbuf_len(&b) : p;
	for (; p < e; p++)
		n += *p == '\n';
	gd_ctl_printf(cl, "metrics %zu\n", n);
	if (n > 0)
		gd_ctl_reply(cl, gd_dbuf_ptr(&b), gd_dbuf_len(&b));
	gd_dbuf_free(&b);
	return 0;
}
