/* gdack's conversation with gdsub over its control socket: connecting
 * within --wait (and seeing, by its end note, that gdsub has ended), then
 * per batch the request of the queued keys ("ackbin LEN" and the batch,
 * or to a gdsub of control protocol 2 "ack N" and N lines) and its
 * answer, a line per key gdsub could not acknowledge. The keys are queued by ack_client.c. */
#include "ack_client_int.h"
#include "clock.h"
#include "ctl_client.h"
#include "fileio.h"
#include "key.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOTE_POLL 0.1		/* look for gdsub's end note this often */

/* The program at the socket is a gdsub of this protocol: 0. One that
 * closed before it answered (a gdsub on its way out, taken over): -1,
 * for another try. Anything else: an exit code, said. */
static int greet(struct ack *a)
{
	struct gd_ctl_peer peer;
	int fail = gd_ctl_hello(a->path, &a->rd, &peer);

	if (fail == GD_CTL_OK && strcmp(peer.prog, "gdsub") == 0) {
		a->bin = peer.ver >= 3;	/* ackbin batches */
		return 0;
	}
	if (fail == GD_CTL_NOANSWER && peer.err == 0)
		return -1;
	if (fail == GD_CTL_UNTRUSTED)
		return GD_EX_UNAVAILABLE;
	if (fail == GD_CTL_OK) {
		gd_err("cannot use %s: %s serves it, not gdsub (give --ctl or "
		    "the options gdsub was started with)", a->path, peer.prog);
		return GD_EX_UNAVAILABLE;
	}
	return gd_ctl_say(a->path, fail, &peer);
}

int gd_ack_gdsub_connect(struct ack *a, double most, int note)
{
	double t0 = gd_clock_mono_s(), left = a->o->wait - a->waited, spent;
	int e, rc;

	if ((rc = gd_ctl_trust(a->path, -1)) != 0)
		return rc;
	if (left > most)
		left = most;
	for (;;) {
		double slice = left - (gd_clock_mono_s() - t0);
		if (note && slice > NOTE_POLL)
			slice = NOTE_POLL;
		a->fd = gd_ctl_connect(a->path, slice > 0 ? slice : 0,
		    slice > 0 ? slice : 0);
		e = errno;
		spent = gd_clock_mono_s() - t0;
		if (a->fd >= 0) {
			a->rd.fd = a->fd;
			if ((rc = greet(a)) >= 0)
				break;
			struct timespec nap = { 0, 20 * 1000 * 1000 };
			close(a->fd);	/* went before its hello: again */
			a->fd = -1;
			e = ECONNRESET;
			if (spent >= left)
				break;
			nanosleep(&nap, NULL);
			continue;
		}
		/* gd_ctl_connect waits only while nothing listens */
		if (!note || (e != ENOENT && e != ECONNREFUSED && e != EAGAIN))
			break;
		if ((a->ended = gd_endnote_load(&a->note, a->note_path)) ||
		    spent >= left)
			break;
	}
	a->waited += spent;
	if (a->fd >= 0 && rc != 0) {
		close(a->fd);
		a->fd = -1;
		return rc;
	}
	errno = e;
	return a->fd >= 0 ? 0 : -1;
}

/* Empty the queue. */
static void req_reset(struct ack *a)
{
	gd_dbuf_reset(&a->req);
	a->w.open = 0;
	a->nreq = 0;
}

/* Walking the queue (gd_ackbin_feed over it): what is kept of it, in
 * keep, and how many keys were settled. */
struct walk {
	struct ack *a;
	struct gd_dbuf *keep;
	struct gd_ackbin_w w;
	uint64_t settled;
	int ended;		/* the run's publisher is in gdsub's note */
	int err;		/* GD_DBUF_* of keep */
};

static int note_run(void *user, const char *origin, size_t olen)
{
	struct walk *w = user;

	w->ended = gd_endnote_has(&w->a->note, origin, olen);
	return 0;
}

static int note_ids(void *user, const char *origin, size_t olen,
    const char *ids, size_t k)
{
	struct walk *w = user;
	size_t i;

	if (w->ended) {
		w->settled += k;
		return 0;
	}
	for (i = 0; i < k && w->err == GD_DBUF_OK; i++)
		w->err = gd_ackbin_add(w->keep, &w->w, origin, olen,
		    gd_ackbin_id(ids + 8 * i));
	return w->err;
}

/* the queue as lines of an "ack N" request, for a gdsub of protocol 2 */
static int text_ids(void *user, const char *origin, size_t olen,
    const char *ids, size_t k)
{
	struct walk *w = user;
	size_t i;

	for (i = 0; i < k && w->err == GD_DBUF_OK; i++)
		w->err = gd_dbuf_addf(w->keep, "%.*s/%" PRIu64 "\n", (int)olen,
		    origin, gd_ackbin_id(ids + 8 * i));
	return w->err;
}

/* Run the queue through ops into keep: 0, or -1 (said). */
static int walk(struct ack *a, struct walk *k, struct gd_dbuf *keep,
    const struct gd_ackbin_ops *ops)
{
	struct gd_ackbin p;
	const char *why;

	memset(k, 0, sizeof(*k));
	k->a = a;
	k->keep = keep;
	gd_ackbin_start(&p, a->req.len);
	if (gd_ackbin_feed(&p, a->req.buf, a->req.len, ops, k, &why) >= 0)
		return 0;
	gd_err("cannot send gdsub the %" PRIu64 " keys of this batch: %s",
	    a->nreq, why != NULL ? why : gd_dbuf_strerror(k->err));
	return -1;
}

/* gdsub has ended: the queued keys of the publishers its note names ran
 * with numSubs=0 and need no acknowledgement; the others stay queued. */
static int settle_by_note(struct ack *a)
{
	static const struct gd_ackbin_ops ops = { note_run, note_ids };
	struct gd_dbuf keep;
	struct walk k;
	uint64_t settled;

	gd_dbuf_init_sized(&keep, 65536, a->req.max);
	if (walk(a, &k, &keep, &ops) != 0) {
		gd_dbuf_free(&keep);
		return -1;
	}
	settled = k.settled;
	gd_dbuf_free(&a->req);
	a->req = keep;
	a->w = k.w;
	a->nreq -= settled;
	a->acked += settled;
	if (settled > 0)
		gd_trace(1, "gdsub at %s has ended; %" PRIu64 " key%s of "
		    "publishers that ran with numSubs=0 need%s no "
		    "acknowledgement", a->path, settled, settled == 1 ? "" : "s",
		    settled == 1 ? "s" : "");
	return 0;
}

/* The request: "ackbin LEN" and the queue as it is, or to a gdsub of
 * protocol 2 "ack N" and the queue as lines. 0, or -1 with errno. */
static int send_req(struct ack *a)
{
	static const struct gd_ackbin_ops ops = { NULL, text_ids };
	char head[64];
	struct walk k;
	int n;

	if (a->bin) {
		n = snprintf(head, sizeof(head), "ackbin %zu\n", a->req.len);
		return gd_write_all(a->fd, head, (size_t)n) != 0 ||
		    gd_write_all(a->fd, a->req.buf, a->req.len) != 0 ? -1 : 0;
	}
	gd_dbuf_reset(&a->text);
	if (walk(a, &k, &a->text, &ops) != 0) {
		errno = k.err == GD_DBUF_NOMEM ? ENOMEM : EMSGSIZE;
		return -1;
	}
	n = snprintf(head, sizeof(head), "ack %" PRIu64 "\n", a->nreq);
	return gd_write_all(a->fd, head, (size_t)n) != 0 ||
	    gd_write_all(a->fd, a->text.buf, a->text.len) != 0 ? -1 : 0;
}

int gd_ack_gdsub_exchange(struct ack *a)
{
	char *line;
	size_t len;
	uint64_t ok, bad, i;

	if (a->nreq == 0)
		return 0;
	/* not connected at the start: try again for the rest of --wait */
	if (a->fd < 0) {
		int rc = gd_ack_gdsub_connect(a, a->o->wait, 1);
		if (rc < 0 && a->ended) {
			if (settle_by_note(a) != 0)
				return GD_EX_FAIL;
			if (a->nreq == 0)
				return 0;
		}
		if (rc < 0)
			rc = gd_ack_gdsub_connect(a, a->o->wait, 0);
		if (rc > 0)
			return rc;
		if (rc < 0) {
			int e = errno;
			/* gd_ctl_connect waits only while nothing listens */
			if (e == ENOENT || e == ECONNREFUSED || e == EAGAIN ||
			    e == ECONNRESET)
				gd_err("no gdsub answers at %s: %s (waited %g second%s)",
				    a->path, strerror(e), a->o->wait,
				    gd_plural(a->o->wait));
			else
				gd_err("cannot connect to gdsub at %s: %s", a->path,
				    strerror(e));
			return GD_EX_UNAVAILABLE;
		}
	}
again:
	errno = 0;
	if (send_req(a) != 0 || gd_lreader_line(&a->rd, &line, &len) != 1) {
		/* Connected at the start to a gdsub that has gone since,
		 * before it answered anything: the one this gdack's pipeline
		 * was restarted after, which its new gdsub took the socket
		 * from (gdsub(1)); the keys come from the new one. */
		if (!a->answered && !a->reconnected) {
			a->reconnected = 1;
			close(a->fd);
			a->fd = -1;
			a->rd.off = a->rd.len = 0;
			gd_trace(1, "the gdsub at %s went before answering; "
			    "connecting again", a->path);
			int rc = gd_ack_gdsub_connect(a, a->o->wait, 0);
			if (rc == 0)
				goto again;
			if (rc > 0)
				return rc;
		}
		goto lost;
	}
	a->answered = 1;
	req_reset(a);
	if (sscanf(line, "ack %" SCNu64 " %" SCNu64, &ok, &bad) != 2) {
		char said[4 * 80 + 1];
		gd_ctl_escape(said, sizeof(said), line, len < 80 ? len : 80, 0);
		gd_err("unexpected answer from gdsub at %s: %s", a->path, said);
		return GD_EX_UNAVAILABLE;
	}
	a->acked += ok;
	for (i = 0; i < bad; i++) {
		char *tab;
		if (gd_lreader_line(&a->rd, &line, &len) != 1)
			goto lost;
		tab = strchr(line, '\t');
		if (tab)
			*tab++ = '\0';
		gd_err("cannot acknowledge %s: %s", line, tab ? tab : "refused");
		a->failed++;
	}
	return 0;
lost:
	gd_err("lost connection to gdsub at %s: %s", a->path,
	    errno ? strerror(errno) : "connection closed");
	return GD_EX_UNAVAILABLE;
}
