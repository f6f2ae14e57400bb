/* What gdpub says on its status output (READY, ACK, NACK, REJECT, one line
 * each, in order) and on standard error while it runs: the --progress line
 * and the rates it and gdinspect stats show (read and ACKed per second);
 * where the status lines and the -o stream go. */
#include "pub_int.h"
#include "clock.h"
#include "fileio.h"
#include "log.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *pub_status_where(const struct pub *p, char *buf, size_t sz)
{
	if (p->status.fd == 2)
		return "standard error";
	if (p->status.fd == 1)
		return "standard output";
	snprintf(buf, sz, "the status file '%s'", p->opt.status);
	return buf;
}

const char *pub_status_fate(const struct pub *p, char *buf, size_t sz)
{
	if (p->journal && !p->journal_failed)
		snprintf(buf, sz, "stay in journal '%s' and are said when gdpub "
		    "starts again with it", p->conf->journal);
	else
		snprintf(buf, sz, "go unreported");
	return buf;
}

/* Like a broken -o: an outcome that cannot be said must not be recorded
 * as said, nor more blocks published whose outcomes nobody will hear. */
static void on_status_error(struct gd_out *o, int err)
{
	struct pub *p = o->data;
	char w[4200], f[4200];

	gd_err("cannot write status lines on %s: %s; no more input is read, "
	    "and the outcomes not written %s", pub_status_where(p, w, sizeof(w)),
	    uv_strerror(err), pub_status_fate(p, f, sizeof(f)));
	pub_status_lost(p);
}

void pub_status_lost(struct pub *p)
{
	if (p->status_lost)
		return;
	p->status_lost = 1;
	/* a signal's or bad input's own code stays */
	if (p->stop_code == 0 || p->stop_code == GD_EX_FAIL)
		p->stop_code = p->journal && !p->journal_failed ? GD_EX_IOERR :
		    GD_EX_FAIL;
	pub_drop_input(p);
	if (p->finished)
		return;
	if (p->journal && !p->journal_failed) {
		p->finished = 1;	/* no end of stream: the run goes on later */
		pub_finish(p);
	} else {
		pub_arm_timer(p);
		pub_maybe_done(p);
	}
}

int pub_status_synced(struct pub *p, int force)
{
	uint64_t now;

	if (!p->status_sync)
		return 1;
	now = gd_clock_mono_ns();
	if (!force && p->conf->fsync == GD_FSYNC_BATCH &&
	    now - p->status_synced_ns < GD_JOURNAL_BATCH_NS)
		return 0;
	if (fdatasync(p->status.fd) != 0) {
		char f[4200];

		gd_err("cannot sync the status file '%s': %s; no more input is "
		    "read, and the outcomes not synced %s", p->opt.status,
		    strerror(errno), pub_status_fate(p, f, sizeof(f)));
		pub_status_lost(p);
		return -1;
	}
	p->status_synced_ns = now;
	return 1;
}

static int pub_status_open(struct pub *p, int fd)
{
	int rc = gd_out_open(&p->status, &p->loop, fd);

	p->status.data = p;
	p->status.on_error = on_status_error;
	return rc;
}

/* "ACK ID"; with -f frame input also the block's key as it came in,
 * "ACK ID ORIGIN/ID", so the upstream stage can be acknowledged. */
void pub_status_line(struct pub *p, const char *what, const struct gd_pend *e)
{
	size_t wl = strlen(what), n, uplen = 0;
	const char *up = NULL;
	int snap = 0;
	uint8_t *d;

	if (p->opt.frame)
		up = gd_sframe_origin_of(pub_payload(p, e), e->len, &uplen,
		    &snap);
	if ((d = gd_out_reserve(&p->status, wl + 44 + uplen)) == NULL)
		return;
	memcpy(d, what, wl);
	d[wl] = ' ';
	n = wl + 1 + gd_u64toa_next(&p->idtxt, (char *)d + wl + 1, e->id);
	if (up != NULL) {
		d[n++] = ' ';
		memcpy(d + n, up, uplen);
		n += uplen;
		d[n++] = '/';
		n += gd_u64toa_next(&p->idtxt, (char *)d + n, e->id);
		if (snap) {	/* never acknowledged upstream */
			memcpy(d + n, "/s", 2);
			n += 2;
		}
	}
	d[n++] = '\n';
	gd_out_commit(&p->status, n);
}

/* "WHAT ID": a cluster member's PREACK, FORWARD and the NACK of a held
 * block. */
void pub_status_word(struct pub *p, const char *what, uint64_t id)
{
	char line[48];
	int n = snprintf(line, sizeof(line), "%s %" PRIu64 "\n", what, id);

	gd_out_write(&p->status, line, (size_t)n);
}

void pub_reject(struct pub *p, const char *idtxt, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	gd_out_write(&p->status, "REJECT ", 7);
	gd_out_write(&p->status, idtxt, strlen(idtxt));
	gd_out_write(&p->status, " ", 1);
	gd_out_write(&p->status, why, strlen(why));
	gd_out_write(&p->status, "\n", 1);
	gd_err("REJECT %s: %s", idtxt, why);
	p->n_reject++;
}

void pub_ready(struct pub *p)
{
	p->ready = 1;
	gd_out_write(&p->status, "READY\n", 6);
	gd_notify_send(&p->notify, "READY=1");
	uv_timer_stop(&p->ready_timer);
	pub_kick(p);
}

/* what moved per second over the last second or so: blocks read (acks
 * 0) or ACKed (acks 1) */
static double per_second(const struct pub *p, uint64_t now, int acks)
{
	const struct gd_deliver_counts d = gd_deliver_counts(&p->dv);
	uint64_t t0 = p->t_start, n0 = 0;

	if (p->rate_n > 0) {
		unsigned old = (p->rate_head + PUB_RATE_SAMPLES - p->rate_n) %
		    PUB_RATE_SAMPLES;
		t0 = p->rate_s[old].t;
		n0 = acks ? p->rate_s[old].a : p->rate_s[old].n;
	}
	if (now <= t0)
		return 0;
	return (double)((acks ? d.ack : d.pub) - n0) * 1e9 /
	    (double)(now - t0);
}

double pub_rate(const struct pub *p, uint64_t now)
{
	return per_second(p, now, 0);
}

double pub_ack_rate(const struct pub *p, uint64_t now)
{
	return per_second(p, now, 1);
}

/* 4 times a second: sample the rates, draw --progress */
void pub_tick(struct pub *p, uint64_t now)
{
	struct gd_deliver_counts d = gd_deliver_counts(&p->dv);

	p->rate_s[p->rate_head].t = now;
	p->rate_s[p->rate_head].n = d.pub;
	p->rate_s[p->rate_head].a = d.ack;
	p->rate_head = (p->rate_head + 1) % PUB_RATE_SAMPLES;
	if (p->rate_n < PUB_RATE_SAMPLES)
		p->rate_n++;
	if (p->progress_at == 0)
		p->progress_at = p->t_start;
	if (p->opt.progress_every > 0) {
		if (p->finished || now - p->progress_at <
		    (uint64_t)(p->opt.progress_every * 1e9))
			return;
		p->progress_at = now;
		gd_note("progress: %.1f s, %" PRIu64 " read, %" PRIu64 " ACK, %"
		    PRIu64 " NACK, %" PRIu64 " REJECT, %u pending, %.0f "
		    "read/s, %.0f ACK/s", (double)(now - p->t_start) / 1e9,
		    d.pub + p->n_reject, d.ack, d.nack, p->n_reject, d.pending,
		    pub_rate(p, now), pub_ack_rate(p, now));
	} else if (p->opt.progress && !p->finished)
		gd_status("%" PRIu64 " read, %" PRIu64 " ACK, %" PRIu64 " NACK, %u "
		    "pending, %.0f read/s, %.0f ACK/s", d.pub + p->n_reject,
		    d.ack, d.nack, d.pending, pub_rate(p, now),
		    pub_ack_rate(p, now));
}

/* ---- the service manager ($NOTIFY_SOCKET) ---- */

/* Once listening: with GD off there is no READY line to wait for. */
void pub_notify_open(struct pub *p)
{
	char why[512];

	if (gd_notify_open(&p->notify, getenv("NOTIFY_SOCKET"),
	    getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), (long)getpid(),
	    why, sizeof(why)) != 0)
		gd_warn("%s; the service manager is not told", why);
	/* the pings ride the loop's tick, 4 times a second */
	if (p->notify.wd_ns > 0 && p->notify.wd_ns < 500000000ull)
		gd_warn("WATCHDOG_USEC=%" PRIu64 " is shorter than gdpub can "
		    "keep (pings every 0.25 s): give WatchdogSec= 1 s or more",
		    p->notify.wd_ns / 1000);
	if (!pub_gd(p))
		gd_notify_send(&p->notify, "READY=1");
}

/* From the loop's tick: a stalled loop stops the watchdog's pings. */
void pub_notify_tick(struct pub *p, uint64_t now)
{
	struct gd_deliver_counts d = gd_deliver_counts(&p->dv);
	char msg[256];

	gd_notify_tick(&p->notify, now);
	if (!gd_notify_status_due(&p->notify, now))
		return;
	snprintf(msg, sizeof(msg), "STATUS=%" PRIu64 " published, %" PRIu64
	    " ACK, %" PRIu64 " NACK, %u pending, %.0f read/s, %.0f ACK/s",
	    d.pub, d.ack, d.nack, d.pending, pub_rate(p, now),
	    pub_ack_rate(p, now));
	gd_notify_send(&p->notify, msg);
}

/* ---- where the status lines and the stream go ---- */

/* append: the status file of a run that a journal continues keeps the
 * outcomes said before (read too: its last line may be cut short) */
static int open_file(const char *path, const char *what, int append)
{
	int fd = open(path, O_CREAT | O_CLOEXEC | (append ? O_RDWR |
	    O_APPEND : O_WRONLY | O_TRUNC), 0666);

	if (fd < 0)
		gd_err("cannot open %s '%s': %s", what, path, strerror(errno));
	return fd;
}

/* A kill may have cut the last line short: its outcome was not recorded
 * as said (the line is synced first), so it is said again, whole. */
static int cut_torn_line(int fd, const char *path)
{
	size_t cut;

	if (gd_cut_partial_line(fd, 16384, &cut) != 0) {
		gd_err("cannot read the status file '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	if (cut > 0)
		gd_warn("the status file '%s' ended in a line cut short (%zu "
		    "bytes, a kill mid-write): cut off; its outcome is said "
		    "again", path, cut);
	return 0;
}

/* Status lines go to stdout, or with -o - to stderr, or to --status FILE;
 * the block stream (-o) to stdout or a file. */
int pub_outputs_open(struct pub *p)
{
	int sfd = 1, ofd = -1;
	const char *st = p->opt.status;
	struct stat sb;

	p->sink = &pub_tcp_sink;
	if (p->opt.out != NULL) {
		if (strcmp(p->opt.out, "-") == 0)
			ofd = 1;
		else if ((ofd = open_file(p->opt.out, "the stream file", 0)) < 0)
			return GD_EX_IOERR;
		if (st == NULL && ofd == 1)
			sfd = 2;
	}
	if (st != NULL && strcmp(st, "-") != 0 &&
	    ((sfd = open_file(st, "the status file", p->journal)) < 0 ||
	    (p->journal && cut_torn_line(sfd, st) != 0))) {
		if (sfd > 2)
			close(sfd);
		if (ofd > 2)
			close(ofd);
		return GD_EX_IOERR;
	}
	if (pub_status_open(p, sfd) != 0 ||
	    (ofd >= 0 && pub_stream_open(p, ofd) != 0)) {
		gd_err("cannot set up the outputs: out of memory");
		return GD_EX_FAIL;
	}
	/* standard output too, when it is a file (a service's
	 * StandardOutput=append:) */
	p->status_sync = p->journal && p->conf->fsync != GD_FSYNC_NEVER &&
	    fstat(sfd, &sb) == 0 && S_ISREG(sb.st_mode);
	return 0;
}
