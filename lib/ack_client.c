/* gdack's client engine: one request per read of stdin ("ack N" and N
 * keys), one reply ("ack OK FAILED" and a line per failure) before the
 * next request, so neither side can block the other. Blocking I/O:
 * nothing else to do. */
#include "ack_client_int.h"
#include "ctl_client.h"
#include "dbuf.h"
#include "endnote.h"
#include "fileio.h"
#include "key.h"
#include "log.h"
#include "out.h"
#include "parse.h"
#include "sink.h"
#include "stream.h"
#include "wire.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define START_WAIT 2.0

/* A request holds at most the keys gdsub takes in one (a batch stops
 * there), each in a run of its own at worst. */
#define REQ_MAX ((size_t)GD_ACKBIN_MAX)
/* The same as lines: a key without its flags and a newline. */
#define TEXT_MAX ((size_t)GD_CTL_MAX_KEYS * (GD_KEY_MAX + 2))
/* A record on stdin is a key and a block gdsub wrote (GDsub_maxBlockSize
 * is at most GD_STREAM_MAX_PAYLOAD), with room for a stage that made it
 * longer: a longer one cannot be one of gdsub's records. */
#define RECORD_MAX ((size_t)GD_STREAM_MAX_PAYLOAD * 2)
#define READ_FIRST ((size_t)1 << 20)

/* Queue a key; 0, or -1 said. */
static int req_add(struct ack *a, const char *origin, size_t olen,
    uint64_t id)
{
	int rc = gd_ackbin_add(&a->req, &a->w, origin, olen, id);

	if (rc == GD_DBUF_OK)
		return 0;
	gd_err("cannot queue the key %.*s/%" PRIu64 " for acknowledgement: "
	    "the request of %" PRIu64 " keys is %s", (int)olen, origin, id,
	    a->nreq, gd_dbuf_strerror(rc));
	return -1;
}

/* -f status: "ACK ID KEY" lines of a gdpub reading -f frame name the
 * upstream key; other status lines need nothing. Returns the key's
 * length (its start at *key), 0 to skip the line, -1 if malformed. */
static int status_key(struct ack *a, const char *rec, size_t len,
    const char **key)
{
	const char *sp, *k;
	uint64_t id;

	if (len < 4 || memcmp(rec, "ACK ", 4) != 0) {
		if (len >= 5 && memcmp(rec, "NACK ", 5) == 0)
			gd_trace(1, "line %" PRIu64 ": %.*s: not acknowledged "
			    "upstream", a->line_no, (int)(len > 80 ? 80 : len), rec);
		return 0;
	}
	if ((sp = memchr(rec + 4, ' ', len - 4)) == NULL ||
	    gd_parse_u64n(rec + 4, (size_t)(sp - rec - 4), &id) != 0) {
		if (sp == NULL && gd_parse_u64n(rec + 4, len - 4, &id) == 0)
			gd_err("cannot acknowledge line %" PRIu64 ": '%.*s' names "
			    "no key (gdpub writes one only with -f frame)",
			    a->line_no, (int)(len > 80 ? 80 : len), rec);
		else
			gd_err("cannot acknowledge line %" PRIu64 ": '%.*s' is "
			    "not a status line", a->line_no,
			    (int)(len > 80 ? 80 : len), rec);
		return -1;
	}
	k = sp + 1;
	*key = k;
	return (int)(len - (size_t)(k - rec));
}

/* Queue the key at the start of one record; count what cannot be sent.
 * *resent (if not NULL): the key is flagged r. */
static int add_record(struct ack *a, const char *rec, size_t len,
    int *resent)
{
	const char *tab;
	size_t klen, olen;
	uint64_t id;
	int flags;

	a->line_no++;
	if (a->o->format == GD_ACK_STATUS) {
		const char *k = NULL;
		int n = status_key(a, rec, len, &k);
		if (n <= 0) {
			a->failed += n < 0;
			return 0;
		}
		rec = k;
		len = (size_t)n;
	}
	tab = memchr(rec, '\t', len);
	klen = tab ? (size_t)(tab - rec) : len;
	if (gd_key_parse(rec, klen, &olen, &id, &flags) != 0) {
		gd_err("cannot acknowledge line %" PRIu64 ": '%.*s' is not a key "
		    "(HOST:PORT/ID)", a->line_no, (int)(klen > 80 ? 80 : klen), rec);
		a->failed++;
		return 0;
	}
	if (resent != NULL)
		*resent = (flags & GD_FL_RESENT) != 0;
	if (flags & GD_FL_SNAPSHOT) {
		a->skipped++;	/* snapshot blocks are never acknowledged */
		return 0;
	}
	/* send the key without its flags */
	if (req_add(a, rec, olen, id) != 0)
		return -1;
	a->nreq++;
	return 0;
}

static void tee(struct ack *a, const char *p, size_t n)
{
	if (!a->o->tee || a->tee_broken || n == 0)
		return;
	if (gd_write_all(1, p, n) != 0) {
		gd_err("cannot write standard output: %s", strerror(errno));
		a->tee_broken = 1;
	}
}

/* Read more of stdin into in (gd_dbuf_read: a full buffer doubles up
 * to its cap). 0, or an exit code said. */
static int read_more(struct gd_dbuf *in, const char *what, int *eof)
{
	ssize_t r = gd_dbuf_read(in, 0);

	if (r == GD_DBUF_IOERR) {
		gd_err("cannot read standard input: %s", strerror(errno));
		return GD_EX_FAIL;
	}
	if (r == GD_DBUF_TOOBIG) {
		gd_err("cannot read standard input: %s longer than %zu bytes, "
		    "the most gdack holds", what, gd_dbuf_len(in));
		return GD_EX_DATAERR;
	}
	if (r < 0) {
		gd_err("cannot read standard input: %s of more than %zu bytes: "
		    "%s", what, gd_dbuf_len(in), gd_dbuf_strerror((int)r));
		return GD_EX_FAIL;
	}
	*eof = r == 0;
	return 0;
}

/* -f frame: acknowledge every block frame of a framed stream. */
static int run_frames(struct ack *a)
{
	struct gd_sreader sr;
	struct gd_dbuf in;
	int rc = 0, eof = 0, bad = 0;

	/* a frame is at most GD_STREAM_MAX_PAYLOAD and its header: the
	 * reader refuses a longer one before the buffer reaches the cap */
	gd_dbuf_init_sized(&in, READ_FIRST, RECORD_MAX);
	gd_sreader_init(&sr, GD_STREAM_MAX_PAYLOAD);
	gd_pipe_grow(0);
	while (!eof && !bad && rc == 0) {
		struct gd_sframe f;
		size_t off = 0, used;
		const uint8_t *buf;
		int k;

		if ((rc = read_more(&in, "a frame", &eof)) != 0)
			break;
		buf = (const uint8_t *)gd_dbuf_ptr(&in);
		while ((k = gd_sreader_next(&sr, buf + off, in.len - off, eof,
		    &f, &used)) == 1) {
			off += used;
			if (f.type != GD_SF_BLOCK)
				continue;
			if (f.flags & GD_FL_SNAPSHOT) {
				a->skipped++;
				continue;
			}
			if (req_add(a, f.origin, f.origin_len, f.id) != 0) {
				rc = GD_EX_FAIL;
				break;
			}
			a->nreq++;
		}
		bad = k < 0;
		if (rc == 0)
			rc = gd_ack_gdsub_exchange(a);
		tee(a, (const char *)buf, off);
		gd_dbuf_consume(&in, off);
	}
	gd_dbuf_free(&in);
	if (bad && rc == 0) {
		gd_err("standard input: %s", sr.err);
		rc = GD_EX_DATAERR;
	}
	return rc;
}

/* One record of a batch: its key queued, and with --sink its bytes (and a
 * delimiter, if the input's last record had none) for the sink, unless it
 * is a resend of a record the sink already ends with. 0, or an exit
 * code (the error said). */
static int take(struct ack *a, const char *rec, size_t len)
{
	int resent = 0, rc;

	if (add_record(a, rec, len, &resent) != 0)
		return GD_EX_FAIL;
	if (a->sink == NULL)
		return 0;
	if (resent && (rc = gd_sink_repeat(a->sink, rec, len)) != 0) {
		if (rc < 0) {
			gd_err("cannot compare line %" PRIu64 " with the end of "
			    "sink file '%s': %s; this batch is not "
			    "acknowledged (the publisher resends or NACKs it)",
			    a->line_no, a->o->sink, a->sink->err);
			return GD_EX_IOERR;
		}
		const char *tab = memchr(rec, '\t', len);
		size_t klen = tab ? (size_t)(tab - rec) : len;
		gd_trace(1, "%.*s: resent, already at the end of sink file "
		    "'%s': acknowledged, not appended again",
		    (int)(klen > 80 ? 80 : klen), rec, a->o->sink);
		return 0;
	}
	if ((rc = gd_dbuf_add(&a->sbuf, rec, len)) != GD_DBUF_OK ||
	    (rc = gd_dbuf_add(&a->sbuf, &a->o->delim, 1)) != GD_DBUF_OK) {
		gd_err("cannot hold line %" PRIu64 " for sink file '%s': the "
		    "batch is %s", a->line_no, a->o->sink,
		    gd_dbuf_strerror(rc));
		return GD_EX_FAIL;
	}
	return 0;
}

/* The batch in buf[0, n): into the sink and synced, then acknowledged,
 * then copied on with --tee. 0, or an exit code. */
static int settle(struct ack *a, const char *buf, size_t n)
{
	int rc;

	if (a->sink != NULL && a->sbuf.len > 0) {
		if (gd_sink_write(a->sink, a->sbuf.buf, a->sbuf.len) != 0) {
			gd_err("cannot write sink file '%s': %s; the %" PRIu64
			    " key%s of this batch %s not acknowledged (the "
			    "publisher resends or NACKs %s)", a->o->sink,
			    a->sink->err, a->nreq, gd_plural((double)a->nreq),
			    a->nreq == 1 ? "was" : "were",
			    a->nreq == 1 ? "it" : "them");
			return GD_EX_IOERR;
		}
		gd_dbuf_reset(&a->sbuf);
	}
	if ((rc = gd_ack_gdsub_exchange(a)) == 0)
		tee(a, buf, n);
	return rc;
}

/* Records on stdin, a batch per read (at most GD_SINK_BATCH records with
 * --sink: see sink.h for why the batch is bounded; never more keys than
 * gdsub takes in one request). */
static int run_stdin(struct ack *a)
{
	struct gd_dbuf in;
	size_t most = a->sink ? GD_SINK_BATCH : GD_CTL_MAX_KEYS;
	int rc = 0, eof = 0;

	gd_dbuf_init_sized(&in, READ_FIRST, RECORD_MAX);
	gd_pipe_grow(0);
	while (rc == 0) {
		size_t off = 0, nrec = 0, len = gd_dbuf_len(&in);
		char *buf = gd_dbuf_ptr(&in), *d;

		while (nrec < most && len > 0 && (d = memchr(buf + off,
		    a->o->delim, len - off)) != NULL) {
			if ((rc = take(a, buf + off,
			    (size_t)(d - (buf + off)))) != 0)
				break;
			off = (size_t)(d - buf) + 1;
			nrec++;
		}
		if (rc == 0 && eof && off < len && nrec < most) {
			/* the last record, without its delimiter */
			rc = take(a, buf + off, len - off);
			off = len;
		}
		if (rc == 0 && off > 0)
			rc = settle(a, buf, off);
		gd_dbuf_consume(&in, off);
		if (rc != 0 || (eof && in.len == 0))
			break;
		if (nrec == most)
			continue;	/* more whole records may be held */
		rc = read_more(&in, "a record", &eof);
	}
	gd_dbuf_free(&in);
	return rc;
}

/* Connect and acknowledge what the options name: 0, or an exit code. */
static int run(struct ack *a)
{
	const struct gd_ack_opts *o = a->o;
	int rc = 0, i;

	/* Reading stdin, connect now, so that a gdsub with nothing left to
	 * wait for (GD off) still waits for this gdack; but give up early
	 * and quietly: input without keys (an empty stream) needs no gdsub,
	 * which may have finished already. gd_ack_gdsub_exchange() tries
	 * again at the first key for the rest of --wait. Keys given as
	 * arguments connect there alone, with the whole of --wait. */
	if (o->nkeys == 0 && (rc = gd_ack_gdsub_connect(a, START_WAIT, 1)) > 0)
		return rc;	/* said why */
	rc = 0;
	if (o->nkeys > 0) {
		for (i = 0; i < o->nkeys && rc == 0; i++)
			rc = add_record(a, o->keys[i], strlen(o->keys[i]), NULL);
		if (rc == 0)
			rc = gd_ack_gdsub_exchange(a);
	} else if (o->format == GD_ACK_FRAME) {
		rc = run_frames(a);
	} else {
		rc = run_stdin(a);
	}
	return rc;
}

/* --sink FILE: opened (its torn end cut, its last keys read) before
 * anything is read or acknowledged. 0, or an exit code. */
static int open_sink(struct ack *a)
{
	const char *path = a->o->sink;
	double waited = 0;

	if ((a->sink = malloc(sizeof(*a->sink))) == NULL) {
		gd_err("out of memory");
		return GD_EX_FAIL;
	}
	/* a gdack killed just before this one started (a pipeline started
	 * again at once) may still be on its way out: its lock goes with it */
	while (gd_sink_open(a->sink, path, a->o->delim, GD_SINK_TAIL) != 0) {
		struct timespec nap = { 0, 20 * 1000 * 1000 };
		if (a->sink->busy && waited < a->o->wait) {
			nanosleep(&nap, NULL);
			waited += 0.02;
			continue;
		}
		if (a->sink->busy)
			gd_err("cannot use sink file '%s': %s (waited %g second%s)",
			    path, a->sink->err, a->o->wait,
			    gd_plural(a->o->wait));
		else
			gd_err("cannot use sink file '%s': %s", path,
			    a->sink->err);
		free(a->sink);
		a->sink = NULL;
		return GD_EX_IOERR;
	}
	if (a->sink->torn_bytes > 0)
		gd_warn("sink file '%s': a torn record at offset %" PRIu64 " (%"
		    PRIu64 " byte%s, written when gdack was stopped, never "
		    "acknowledged) was cut", path, a->sink->torn_at,
		    a->sink->torn_bytes, gd_plural((double)a->sink->torn_bytes));
	gd_trace(1, "sink file '%s': %" PRIu64 " bytes, %" PRIu32 " keys at "
	    "its end", path, a->sink->size, a->sink->ntail);
	return 0;
}

static void close_sink(struct ack *a)
{
	if (a->sink == NULL)
		return;
	if (a->sink->skipped > 0)
		gd_info("%" PRIu64 " resent block%s already at the end of sink "
		    "file '%s' %s acknowledged, not appended again",
		    a->sink->skipped, gd_plural((double)a->sink->skipped),
		    a->o->sink, a->sink->skipped == 1 ? "was" : "were");
	gd_sink_close(a->sink);
	free(a->sink);
	a->sink = NULL;
}

int gd_ack_run(const struct gd_conf *c, const struct gd_ack_opts *o)
{
	struct ack a;
	char path[108];
	int rc;

	memset(&a, 0, sizeof(a));
	a.o = o;
	a.fd = -1;
	if (o->ctl)
		snprintf(path, sizeof(path), "%s", o->ctl);
	else if ((rc = gd_ctl_path_sub(c, path, sizeof(path))) != 0)
		return rc;
	a.path = path;
	(void)gd_endnote_path(path, a.note_path, sizeof(a.note_path));
	/* a batch's records for the sink: at most GD_SINK_BATCH of them */
	gd_dbuf_init_sized(&a.sbuf, 1 << 20,
	    (size_t)GD_SINK_BATCH * (RECORD_MAX + 1));
	gd_dbuf_init_sized(&a.req, 65536, REQ_MAX);
	gd_dbuf_init_sized(&a.text, 65536, TEXT_MAX);
	if (o->sink == NULL || (rc = open_sink(&a)) == 0)
		rc = run(&a);
	if (a.fd >= 0) {
		/* a clean end: gdsub tells it from a gdack killed, after which
		 * nothing acknowledges what it writes (gdsub(1)) */
		if (rc == 0)
			(void)gd_write_all(a.fd, "bye\n", 4);
		close(a.fd);
	}
	close_sink(&a);
	gd_dbuf_free(&a.sbuf);
	gd_dbuf_free(&a.req);
	gd_dbuf_free(&a.text);
	gd_endnote_free(&a.note);
	gd_trace(1, "acknowledged %" PRIu64 ", failed %" PRIu64
	    ", snapshot skipped %" PRIu64, a.acked, a.failed, a.skipped);
	if (rc != 0)
		return rc;
	return (a.failed || a.tee_broken) ? GD_EX_FAIL : GD_EX_OK;
}
