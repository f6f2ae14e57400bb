/* Prometheus text exposition of gdinspect stats (see prom.h). */
#include "prom.h"

#include <stdlib.h>
#include <string.h>

enum { G, C };	/* gauge, counter */

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
	{ NULL, NULL, G, NULL }
};

/* per subscriber (gdpub subs) or publisher (gdsub subs) */
static const struct metric pub_subs[] = {
	{ "queue", "subscriber_queue", G, "Blocks queued for the subscriber, not yet written to its socket." },
	{ "in_flight", "subscriber_in_flight", G, "Blocks the subscriber's pipeline owes." },
	{ "failures", "subscriber_failures", G, "Consecutive delivery failures." },
	{ "acks", "subscriber_acks_total", C, "Acknowledgements received from the subscriber." },
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

static void label(FILE *f, const char *k, const char *v, int first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", k);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

static void head(FILE *f, const char *pre, const struct metric *m)
{
	fprintf(f, "# HELP %s%s %s\n# TYPE %s%s %s\n", pre, m->name, m->help,
	    pre, m->name, m->kind == C ? "counter" : "gauge");
}

static void scalars(FILE *f, const char *pre, const struct metric *ms,
    const struct gd_prom_tab *t)
{
	const struct metric *m;
	long c;

	if (t->nrows < 2)
		return;
	for (m = ms; m->col; m++)
		if ((c = col(t, m->col)) >= 0 && number(at(t, 1, c))) {
			head(f, pre, m);
			fprintf(f, "%s%s %s\n", pre, m->name, at(t, 1, c));
		}
}

/* one series per row, labelled by the row's two naming columns; gdpub's
 * rows without an address (subscriptions of a gdsub that is away) have
 * no live numbers to give */
static void rows(FILE *f, const char *pre, const struct metric *ms,
    const struct gd_prom_tab *t, const char *k1, const char *k2)
{
	const struct metric *m;
	long c1 = col(t, k1), c2 = col(t, k2), c;
	size_t r;

	if (t == NULL || c1 < 0 || c2 < 0 || t->nrows < 2)
		return;
	for (m = ms; m->col; m++) {
		if ((c = col(t, m->col)) < 0)
			continue;
		head(f, pre, m);
		for (r = 1; r < t->nrows; r++) {
			if (!number(at(t, r, c)) || strcmp(at(t, r, c2), "-") == 0)
				continue;
			fprintf(f, "%s%s{", pre, m->name);
			label(f, k1, at(t, r, c1), 1);
			label(f, k2, at(t, r, c2), 0);
			fprintf(f, "} %s\n", at(t, r, c));
		}
	}
}

static void latency(FILE *f, const struct gd_prom_tab *t)
{
	long cle = col(t, "le_us"), cn = col(t, "count"), cs = col(t, "sum_us");
	size_t r;

	if (cle < 0 || cn < 0 || cs < 0 || t->nrows < 2)
		return;
	fputs("# HELP gdkit_pub_ack_latency_seconds Time from a block's last "
	    "send to its ACK.\n# TYPE gdkit_pub_ack_latency_seconds "
	    "histogram\n", f);
	for (r = 1; r < t->nrows; r++) {
		const char *le = at(t, r, cle);
		if (strcmp(le, "+Inf") == 0)
			fprintf(f, "gdkit_pub_ack_latency_seconds_bucket{le=\"+Inf\"} "
			    "%s\n", at(t, r, cn));
		else
			fprintf(f, "gdkit_pub_ack_latency_seconds_bucket{le=\"%.6f\"} "
			    "%s\n", strtod(le, NULL) / 1e6, at(t, r, cn));
	}
	fprintf(f, "gdkit_pub_ack_latency_seconds_sum %.6f\n",
	    strtod(at(t, t->nrows - 1, cs), NULL) / 1e6);
	fprintf(f, "gdkit_pub_ack_latency_seconds_count %s\n",
	    at(t, t->nrows - 1, cn));
}

int gd_prom_write(FILE *f, const struct gd_prom_tab *stats,
    const struct gd_prom_tab *subs, const struct gd_prom_tab *lat)
{
	if (col(stats, "published") >= 0) {
		scalars(f, "gdkit_pub_", pub_stats, stats);
		rows(f, "gdkit_pub_", pub_subs, subs, "name", "address");
		if (lat != NULL)
			latency(f, lat);
		return 0;
	}
	if (col(stats, "publishers") >= 0) {
		scalars(f, "gdkit_sub_", sub_stats, stats);
		rows(f, "gdkit_sub_", sub_subs, subs, "publisher", "origin");
		return 0;
	}
	return -1;
}
