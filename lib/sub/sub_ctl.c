/* gdsub's control socket, where gdack and gdinspect reach it (ctl.h):
 * subs, stats, ack, takeover and metrics requests by a dispatch table
 * (hello is the dispatcher's, ctl.c), the takeover of a socket a gdsub
 * of the same name serves (the client of ctl_client.h), and the end
 * note left beside the socket when gdsub exits (endnote.h). */
#include "sub_int.h"
#include "ackbin.h"
#include "ctl_client.h"
#include "endnote.h"
#include "log.h"
#include "parse.h"
#include "prom.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long a new gdsub waits for the one it takes over from to exit:
 * that one only commits its state and closes, well under a second. */
#define TAKEOVER_WAIT_S 10.0

static int req_subs(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	struct sub *s = user;
	static const char *const st[] = { "waiting", "resolving",
		"connecting", "handshake", "connected", "ended" };
	size_t i;

	(void)line;
	(void)args;
	gd_ctl_printf(cl, "subs %zu\n", s->npc);
	gd_ctl_printf(cl, "publisher:s\torigin:s\tstate:s\tattempts:n\t"
	    "ack_conn:s\treceived:n\tunique:n\tduplicates:n\tacked:n\t"
	    "snapshot:n\tsent:n\ttls:s\n");
	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		char tls[400] = "-", cell[400];
		/* "TLSv1.3 CIPHER SUBJECT" of the publisher's certificate */
		if (pc->tls != NULL)
			gd_tls_describe(pc->tls, tls, sizeof(tls));
		gd_ctl_cell(cell, sizeof(cell), tls);
		gd_ctl_printf(cl, "%s\t%s\t%s\t%d\t%s\t%" PRIu64 "\t%" PRIu64
		    "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%s\n",
		    pc->addr, pc->origin_len ? pc->origin : "-", st[pc->state],
		    pc->attempts, pc->origin_len == 0 ? "-" :
		    gd_ack_status_str(pc->ack_status),
		    pc->rv.n_recv, pc->rv.n_unique, pc->rv.n_dup,
		    pc->rv.n_acked, pc->n_snap, gd_recv_sent(&pc->rv), cell);
	}
	return 0;
}

/* one row of totals; R = Ru/S and UR = Ru/R as gdinspect measure has them */
static int req_stats(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	struct sub *s = user;
	uint64_t recv = 0, uniq = 0, dup = 0, acked = 0, snap = 0, sent = 0;
	size_t i, ended = 0;

	(void)line;
	(void)args;
	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		recv += pc->rv.n_recv;
		uniq += pc->rv.n_unique;
		dup += pc->rv.n_dup;
		acked += pc->rv.n_acked;
		snap += pc->n_snap;
		sent += gd_recv_sent(&pc->rv);
		ended += pc->state == SUB_PS_ENDED;
	}
	gd_ctl_printf(cl, "stats 1\n");
	gd_ctl_printf(cl, "publishers:n\tended:n\treceived:n\tunique:n\t"
	    "duplicates:n\tsnapshot:n\tacked:n\tunacked:n\tsent:n\t"
	    "reliability:n\tuniqueness:n\tlines:n\tframes:n\tbad_lines:n\t"
	    "bad_tags:n\tseal_failed:n\n");
	gd_ctl_printf(cl, "%zu\t%zu\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%"
	    PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t", s->npc, ended,
	    recv, uniq, dup, snap, acked, sub_unacked(s), sent);
	if (sent > 0)
		gd_ctl_printf(cl, "%.4f\t", (double)uniq / (double)sent);
	else
		gd_ctl_reply(cl, "-\t", 2);
	if (recv > 0)
		gd_ctl_printf(cl, "%.4f\t", (double)uniq / (double)recv);
	else
		gd_ctl_reply(cl, "-\t", 2);
	/* what -i read: armored lines, good frames (of either form), bad
	 * lines, frames whose tag failed; none of it without -i */
	if (s->stream_in)
		gd_ctl_printf(cl, "%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%"
		    PRIu64 "\t", s->in.n_lines, s->in.n_frames +
		    s->in.sr.frames, s->in.n_bad, s->in.n_badtag);
	else
		gd_ctl_reply(cl, "-\t-\t-\t-\t", 8);
	/* TCP connections lost to a seal that failed (seal.h) */
	gd_ctl_printf(cl, "%" PRIu64 "\n", s->n_seal_failed);
	return 0;
}

/* An "ack N" request between its lines, or an "ackbin LEN" one between
 * the pieces of its body: the keys still to come, what became of those
 * read, the failures' lines for the reply. One per client that has sent
 * one, freed with it (ctl.c). */
struct ack_batch {
	uint64_t left, ok, failed;
	struct gd_dbuf fail;
	struct sub *s;
	struct gd_ackbin bin;	/* ackbin: the parser's place */
	struct sub_pub *pc;	/* ackbin: the run's publisher, or NULL */
};

static void batch_free(void *p)
{
	struct ack_batch *b = p;

	gd_dbuf_free(&b->fail);
	free(b);
}

/* A key not acknowledged: its line for the reply. 0, or -1 (said). */
static int ack_failed(struct ack_batch *b, const char *origin, size_t olen,
    int with_id, uint64_t id, const char *why)
{
	int rc;

	b->failed++;
	rc = with_id ? gd_dbuf_addf(&b->fail, "%.*s/%" PRIu64 "\t%s\n",
	    (int)olen, origin, id, why) : gd_dbuf_addf(&b->fail, "%.*s\t%s\n",
	    (int)olen, origin, why);
	if (rc != GD_DBUF_OK) {
		/* the reply could not carry them all either */
		gd_err("cannot answer gdack: the failures of its batch "
		    "of %" PRIu64 " keys are %s", b->ok + b->failed +
		    b->left - 1, gd_dbuf_strerror(rc));
		return -1;
	}
	return 0;
}

/* The batch's answer, after its last key. */
static void ack_answer(struct sub *s, struct gd_ctl_client *cl,
    struct ack_batch *b)
{
	gd_ctl_printf(cl, "ack %" PRIu64 " %" PRIu64 "\n", b->ok, b->failed);
	gd_ctl_reply(cl, gd_dbuf_ptr(&b->fail), gd_dbuf_len(&b->fail));
	gd_dbuf_reset(&b->fail);
	sub_maybe_done(s);
}

/* One key of an "ack N" batch; the reply goes out after the last. */
static int ack_line(struct sub *s, struct gd_ctl_client *cl,
    struct ack_batch *b, const char *line, size_t len)
{
	const char *why = sub_ack_key(s, line, len);

	if (why == NULL)
		b->ok++;
	else if (ack_failed(b, line, len, 0, 0, why) != 0)
		return -1;
	if (--b->left == 0)
		ack_answer(s, cl, b);
	return 0;
}

/* The batch of a client, made at its first request. */
static struct ack_batch *batch_of(struct sub *s, struct gd_ctl_client *cl)
{
	struct ack_batch *b = cl->req;

	if (b == NULL) {
		if ((b = calloc(1, sizeof(*b))) == NULL) {
			gd_err("cannot answer gdack: out of memory");
			return NULL;
		}
		/* as much as a reply may carry */
		gd_dbuf_init_sized(&b->fail, 4096, GD_CTL_REPLY_MAX);
		b->s = s;
		cl->req = b;
		cl->req_free = batch_free;
	}
	b->ok = b->failed = b->left = 0;
	return b;
}

static int req_ack(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	struct ack_batch *b;
	int64_t n;

	sub_end_acker(user, cl);
	if (gd_parse_i64(args, 0, GD_CTL_MAX_KEYS, &n) != 0) {
		gd_ctl_printf(cl, "error bad key count in '%.64s'\n", line);
		return -1;
	}
	if ((b = batch_of(user, cl)) == NULL)
		return -1;
	b->left = (uint64_t)n;	/* the keys follow, one a line */
	if (n == 0)
		gd_ctl_printf(cl, "ack 0 0\n");
	return 0;
}

/* ackbin: a run's origin, looked up once for its IDs (a cluster's per
 * ID: its members hold different blocks) */
static int bin_run(void *user, const char *origin, size_t olen)
{
	struct ack_batch *b = user;

	b->pc = origin[0] == '@' ? NULL : sub_pub_find(b->s, origin, olen);
	return 0;
}

static int bin_ids(void *user, const char *origin, size_t olen,
    const char *ids, size_t k)
{
	struct ack_batch *b = user;
	size_t i;

	for (i = 0; i < k; i++) {
		uint64_t id = gd_ackbin_id(ids + 8 * i);
		struct sub_pub *pc = b->pc;
		const char *why;
		if (pc == NULL && origin[0] == '@')
			pc = sub_cluster_find(b->s, origin, olen, id);
		why = pc != NULL ? sub_ack_id(b->s, pc, id) :
		    "not a publisher of this gdsub";
		if (why == NULL)
			b->ok++;
		else if (ack_failed(b, origin, olen, 1, id, why) != 0)
			return -1;
	}
	return 0;
}

static const struct gd_ackbin_ops bin_ops = { bin_run, bin_ids };

/* A piece of an ackbin batch (gd_ctl_raw_cb); the reply after the last. */
static int64_t ack_bin(void *user, struct gd_ctl_client *cl,
    const char *buf, size_t n)
{
	struct ack_batch *b = cl->req;
	const char *why;
	int64_t took = gd_ackbin_feed(&b->bin, buf, n, &bin_ops, b, &why);

	if (took < 0) {
		if (why != NULL)
			gd_ctl_printf(cl, "error malformed ackbin batch: %s\n", why);
		return -1;
	}
	if (b->bin.left == 0)
		ack_answer(user, cl, b);
	return took;
}

static int req_ackbin(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	struct ack_batch *b;
	int64_t n;

	sub_end_acker(user, cl);
	if (gd_parse_i64(args, 0, (int64_t)GD_ACKBIN_MAX, &n) != 0) {
		gd_ctl_printf(cl, "error bad batch length in '%.64s'\n", line);
		return -1;
	}
	if ((b = batch_of(user, cl)) == NULL)
		return -1;
	gd_ackbin_start(&b->bin, (uint64_t)n);
	b->pc = NULL;
	cl->raw_left = (uint64_t)n;	/* the batch follows */
	cl->raw_cb = ack_bin;
	if (n == 0)
		gd_ctl_printf(cl, "ack 0 0\n");
	return 0;
}

/* A gdack at its clean end; the connection closes (sub_end.c). */
static int req_bye(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	(void)line;
	(void)args;
	sub_end_bye(user, cl);
	return -1;
}

/* A new gdsub of the same config (the same name, the same socket) was
 * started: this one's pipeline is being replaced, most often because its
 * gdack was killed, which leaves no one to acknowledge what it writes.
 * It finishes at once, as on a second signal; its acknowledgements are
 * recorded and sent first, and the blocks it wrote without one are sent
 * again by their publishers to the new gdsub. */
static int req_takeover(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	struct sub *s = user;
	uint64_t n = sub_unacked(s);

	(void)line;
	if (strcmp(args, s->name) != 0) {
		gd_ctl_printf(cl, "error this gdsub is named '%s', not '%.300s'\n",
		    s->name, args);
		return 0;
	}
	gd_warn("a new gdsub of the same name takes over control socket %s: "
	    "finishing now; %" PRIu64 " block%s written and not acknowledged "
	    "will be sent again by %s publishers", s->ctl.path, n,
	    gd_plural((double)n), n == 1 ? "its" : "their");
	gd_ctl_printf(cl, "takeover ok\n");
	gd_ctl_flush(&s->ctl);
	s->hard = 1;
	sub_finish(s, n > 0 ? GD_EX_FAIL : GD_EX_OK);
	return 0;	/* this connection was closed with the rest */
}

static int ctl_line(void *user, struct gd_ctl_client *cl, char *line,
    size_t len);

static int req_metrics(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	(void)line;
	(void)args;
	return gd_prom_ctl_reply(ctl_line, user, cl);
}

/* ack, ackbin and takeover must have their arguments; the rest are the word
 * alone (hello is the dispatcher's) */
static const struct gd_ctl_req requests[] = {
	{ "ack", GD_CTL_ARGS, req_ack },
	{ "ackbin", GD_CTL_ARGS, req_ackbin },
	{ "bye", GD_CTL_NOARGS, req_bye },
	{ "metrics", GD_CTL_NOARGS, req_metrics },
	{ "stats", GD_CTL_NOARGS, req_stats },
	{ "subs", GD_CTL_NOARGS, req_subs },
	{ "takeover", GD_CTL_ARGS, req_takeover },
};
static const struct gd_ctl_table table = { "gdsub", requests,
	sizeof(requests) / sizeof(requests[0]) };

static int ctl_line(void *user, struct gd_ctl_client *cl, char *line,
    size_t len)
{
	struct ack_batch *b = cl->req;
	int rc;

	if (b != NULL && b->left > 0)	/* the hot path: a key of gdack's batch */
		return ack_line(user, cl, b, line, len);
	rc = gd_ctl_dispatch(&table, user, cl, line);
	/* gdinspect, a script; hello is gdack's first request too */
	if (cl->kind == SUB_CL_UNKNOWN && strcmp(line, "hello") != 0 &&
	    strncmp(line, "hello ", 6) != 0)
		cl->kind = SUB_CL_OTHER;
	return rc;
}

static void on_ctl_gone(void *user)
{
	sub_maybe_done(user);
	sub_end_gone(user);
}

/* Gone, or a zombie its parent has not reaped yet: either way its files
 * and locks are closed. */
static int proc_gone(long pid)
{
	char path[64], buf[256], *rp;
	FILE *f;
	size_t n;

	if (kill((pid_t)pid, 0) != 0)
		return errno == ESRCH;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "PID (COMM) STATE ...": COMM may hold ')' */
	return (rp = strrchr(buf, ')')) != NULL && rp[1] == ' ' && rp[2] == 'Z';
}

/* The socket is served: by a gdsub of this name (a pipeline restarted
 * while the old gdsub still ran, its gdack killed), ask it to finish and
 * wait until it has exited, so its state file and subscriptions are free;
 * 0 then, or when nothing serves the socket. Anything else serving it is
 * left alone: an exit code after saying why. */
static int take_over(struct sub *s, const char *path)
{
	struct gd_lreader *rd;
	struct gd_ctl_peer peer;
	struct stat st;
	char *line, said[4 * 80 + 1];
	size_t len;
	int fail, rc = GD_EX_UNAVAILABLE;
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	double waited = 0;

	if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode))
		return 0;	/* gd_ctl_listen says what is in the way */
	if ((rd = calloc(1, sizeof(*rd))) == NULL) {
		gd_err("out of memory");
		return GD_EX_FAIL;
	}
	/* a gdsub that does not answer (stopped) is not waited for forever */
	rd->timeout = TAKEOVER_WAIT_S;
	fail = gd_ctl_open(path, 0, rd, &peer);
	if (fail == GD_CTL_NOCONN && peer.err != EAGAIN) {
		free(rd);
		return 0;	/* gd_ctl_listen says what is in the way */
	}
	if (fail == GD_CTL_NOANSWER && peer.err == 0)
		goto gone;	/* it closed as it finished */
	if ((fail == GD_CTL_OK || fail == GD_CTL_VERSION) &&
	    strcmp(peer.prog, "gdsub") != 0) {
		gd_err("cannot use control socket %s: another program (%s) is "
		    "serving it (give --ctl or a different config)", path,
		    peer.prog);
		goto out;
	}
	if (fail != GD_CTL_OK && fail != GD_CTL_VERSION) {
		if (fail != GD_CTL_UNTRUSTED)
			gd_ctl_say(path, fail, &peer);
		goto out;
	}
	if (dprintf(rd->fd, "takeover %s\n", s->name) < 0)
		goto gone;
	/* "takeover ok", or the connection closed as it finishes */
	if (gd_lreader_line(rd, &line, &len) == 1 &&
	    strcmp(line, "takeover ok") != 0) {
		if (strncmp(line, "error ", 6) == 0)
			gd_ctl_escape(said, sizeof(said), line + 6, len - 6, 1);
		else
			gd_ctl_escape(said, sizeof(said), line, len, 1);
		gd_err("cannot use control socket %s: the gdsub (pid %ld) serving "
		    "it does not give it up: %s", path, peer.pid, said);
		goto out;
	}
gone:
	while (peer.pid > 0 && !proc_gone(peer.pid)) {
		if (waited >= TAKEOVER_WAIT_S) {
			gd_err("cannot use control socket %s: the gdsub (pid %ld) "
			    "serving it was asked to finish and still runs after "
			    "%g seconds", path, peer.pid, TAKEOVER_WAIT_S);
			goto out;
		}
		nanosleep(&nap, NULL);
		waited += 0.02;
	}
	gd_warn("took over control socket %s from the gdsub (pid %ld) that "
	    "served it: it has finished", path, peer.pid);
	rc = 0;
out:
	if (rd->fd >= 0)
		close(rd->fd);
	free(rd);
	return rc;
}

static int render(void *user, struct gd_dbuf *body)
{
	return gd_prom_render(ctl_line, user, body);
}

int sub_ctl_listen(struct sub *s)
{
	char path[108], note[PATH_MAX], why[512];
	int rc;

	if ((rc = gd_ctl_path_sub(s->conf, path, sizeof(path))) != 0 ||
	    (rc = take_over(s, path)) != 0 ||
	    (rc = gd_ctl_listen(&s->ctl, &s->loop, path, ctl_line, s)) != 0)
		return rc;
	/* after the takeover: the gdsub it replaced had the port */
	if (s->conf->sub_metrics != NULL && gd_metrics_listen(&s->metrics,
	    &s->loop, s->conf->sub_metrics, render, s, why, sizeof(why)) != 0) {
		gd_err("%s", why);
		return GD_EX_UNAVAILABLE;
	}
	s->ctl.on_gone = on_ctl_gone;
	/* the socket is ours now, and so is the note: an earlier gdsub's
	 * must not speak for this one */
	if (gd_endnote_path(path, note, sizeof(note)) == 0)
		gd_endnote_remove(note);
	return 0;
}

/* Leave the end note, then close: a gdack that finds no socket finds the
 * note. It names the publishers that ran with numSubs=0. */
static void leave_note(struct sub *s)
{
	struct gd_endnote_origin *o = calloc(2 * s->npc + 1, sizeof(*o));
	char path[PATH_MAX];
	size_t i, n = 0;

	for (i = 0; o != NULL && i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		if (pc->ack_status != GD_ACK_OFF)
			continue;
		o[n].s = pc->addr;
		o[n++].len = pc->addr_len;
		if (strcmp(pc->origin, pc->addr) != 0) {
			o[n].s = pc->origin;
			o[n++].len = pc->origin_len;
		}
	}
	/* a socket path (< 108 bytes) always leaves room for the suffix */
	(void)gd_endnote_path(s->ctl.path, path, sizeof(path));
	if (o == NULL)
		gd_warn("cannot leave the note %s for a gdack still to come: out "
		    "of memory", path);
	else if (n > 0 && gd_endnote_save(path, o, n) != 0)
		gd_warn("cannot leave the note %s for a gdack still to come: %s",
		    path, strerror(errno));
	free(o);
}

void sub_ctl_close(struct sub *s)
{
	if (s->ctl.open)
		leave_note(s);
	gd_ctl_close(&s->ctl);
	gd_metrics_close(&s->metrics);
}
