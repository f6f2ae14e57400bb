/* Unit tests of the input reader (lib/input.c), in both of its modes: on
 * the loop (pipes, sockets, ttys) and on a reader thread (regular files;
 * forced here on pipes too). The test writes into a pipe or socketpair
 * itself: partial writes, a record split at every byte, EOF in the middle
 * of a record, records that span chunks, an oversize record, a framed
 * stream split at every byte, a corrupt tail, a stop while the reader
 * waits, and the loop-mode pause when too much is handed. No sleeps: the
 * loop is run until the condition holds, with a watchdog timer, and
 * alarm() ends a test binary that hangs. */
#include "input.h"
#include "dbuf.h"
#include "stream.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* What the loop was handed, as a transcript: per record "R<bytes>\n",
 * "L<bytes>\n" for a last record without its delimiter, "O<bytes>\n" for
 * the start of an oversize record; for framed input, the bytes of every
 * region in a row. */
struct col {
	struct gd_dbuf log;
	int eof, error, err;
	int frames;		/* framed input */
	int bad_region;		/* a non-LAST region that was not whole */
	int nlast;
	int hold;		/* keep regions instead of returning them */
	struct gd_region *held;
};

static void col_init(struct col *c, int frames)
{
	memset(c, 0, sizeof(*c));
	gd_dbuf_init(&c->log, 1 << 24);
	c->frames = frames;
}

static void note(struct col *c, char kind, const uint8_t *p, size_t n)
{
	int ok = gd_dbuf_add(&c->log, &kind, 1) == GD_DBUF_OK &&
	    gd_dbuf_add(&c->log, p, n) == GD_DBUF_OK &&
	    gd_dbuf_add(&c->log, "\n", 1) == GD_DBUF_OK;
	if (!ok)
		c->bad_region = 1;
}

/* 1 when [p, p + n) holds whole frames (and stream headers) only */
static int whole_frames(const uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t total;
		if (gd_stream_peek(p, n, GD_STREAM_MAX_PAYLOAD, &total) != 1 ||
		    total > n)
			return 0;
		p += total;
		n -= total;
	}
	return 1;
}

static void take_region(struct gd_input *in, struct col *c, struct gd_region *r)
{
	const uint8_t *d = r->c ? r->c->data + r->off : NULL;

	if (r->flags & GD_RG_EOF)
		c->eof = 1;
	if (r->flags & GD_RG_ERROR) {
		c->error = 1;
		c->err = r->err;
	}
	if (r->c == NULL || (r->flags & GD_RG_CHUNK_DONE) || r->len == 0)
		return;
	if (r->flags & GD_RG_LAST)
		c->nlast++;
	if (c->frames) {
		if (!(r->flags & GD_RG_LAST) && !whole_frames(d, r->len))
			c->bad_region = 1;
		if (gd_dbuf_add(&c->log, d, r->len) != GD_DBUF_OK)
			c->bad_region = 1;
		return;
	}
	if (r->flags & GD_RG_OVERSIZE) {
		note(c, 'O', d, r->len);
		return;
	}
	/* whole records, each ending with the delimiter, but a LAST one */
	while (r->len > 0) {
		const uint8_t *e = memchr(d, in->delim, r->len);
		size_t n = e ? (size_t)(e - d) : r->len;
		if (e == NULL && !(r->flags & GD_RG_LAST))
			c->bad_region = 1;
		note(c, e ? 'R' : 'L', d, n);
		if (e == NULL)
			break;
		r->len -= n + 1;
		d += n + 1;
	}
}

static void on_ready(struct gd_input *in)
{
	struct col *c = in->data;
	struct gd_region *r = gd_input_take(in), *n;

	for (; r; r = n) {
		n = r->next;
		r->next = NULL;
		if (c->hold && !(r->flags & (GD_RG_EOF | GD_RG_ERROR))) {
			r->next = c->held;	/* returned later, order kept below */
			c->held = r;
			continue;
		}
		{
			size_t len = r->len;
			take_region(in, c, r);
			r->len = len;	/* what was handed, for the queue count */
		}
		gd_input_done(in, r);
	}
}

/* Give back what was held, oldest first. */
static void release_held(struct gd_input *in, struct col *c)
{
	struct gd_region *rev = NULL, *r, *n;

	for (r = c->held; r; r = n) {
		n = r->next;
		r->next = rev;
		rev = r;
	}
	c->held = NULL;
	c->hold = 0;
	for (r = rev; r; r = n) {
		size_t len = r->len;
		n = r->next;
		take_region(in, c, r);
		r->len = len;
		gd_input_done(in, r);
	}
}

static int watchdog_fired;

static void on_watchdog(uv_timer_t *t)
{
	watchdog_fired = 1;
	uv_stop(t->loop);
}

/* Run the loop until the input ended (EOF or error) or 10 s passed. */
static int run_to_end(uv_loop_t *loop, struct col *c)
{
	uv_timer_t t;

	watchdog_fired = 0;
	uv_timer_init(loop, &t);
	uv_timer_start(&t, on_watchdog, 10000, 0);
	while (!c->eof && !c->error && !watchdog_fired)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return c->eof || c->error;
}

/* Loop mode: let it read everything now in the fd (each round reads at
 * most a chunk). */
static void drain(uv_loop_t *loop)
{
	int i;
	for (i = 0; i < 64; i++)
		uv_run(loop, UV_RUN_NOWAIT);
}

struct rig {
	uv_loop_t loop;
	struct gd_input in;
	struct col col;
	int fd[2];		/* read end, write end */
};

static int rig_start(struct rig *g, int mode, int frames, size_t chunk,
    int socket)
{
	memset(g, 0, sizeof(*g));
	if (uv_loop_init(&g->loop) != 0)
		return -1;
	if (socket ? socketpair(AF_UNIX, SOCK_STREAM, 0, g->fd) : pipe(g->fd))
		return -1;
	col_init(&g->col, frames);
	g->in.mode = mode;
	g->in.data = &g->col;
	if (frames)
		g->in.max_payload = GD_STREAM_MAX_PAYLOAD;
	return gd_input_start(&g->in, &g->loop, g->fd[0], '\n', chunk,
	    on_ready);
}

static void put(struct rig *g, const void *p, size_t n)
{
	const char *s = p;
	while (n > 0) {
		ssize_t w = write(g->fd[1], s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void close_writer(struct rig *g)
{
	if (g->fd[1] >= 0)
		close(g->fd[1]);
	g->fd[1] = -1;
}

/* 0 when every handle closed and the loop closes cleanly */
static int rig_end(struct rig *g)
{
	int rc;

	gd_input_stop(&g->in);
	uv_run(&g->loop, UV_RUN_DEFAULT);
	gd_input_free(&g->in);
	rc = uv_loop_close(&g->loop);
	close(g->fd[0]);
	close_writer(g);
	gd_dbuf_free(&g->col.log);
	return rc;
}

/* Write in[0, k), let a loop-mode reader take it (a partial read), write
 * the rest, close, and run to the end of the input. */
static int feed_in_two(struct rig *g, const void *in, size_t n, size_t k)
{
	put(g, in, k);
	if (g->in.mode == GD_INPUT_LOOP)
		drain(&g->loop);
	put(g, (const char *)in + k, n - k);
	close_writer(g);
	return run_to_end(&g->loop, &g->col);
}

static const char *log_of(struct rig *g)
{
	return gd_dbuf_ptr(&g->col.log) ? gd_dbuf_ptr(&g->col.log) : "";
}

static const char *const mode_name[] = { "auto", "thread", "loop" };

/* ---- records ---- */

/* The transcript of the records the first k bytes of in complete. */
static void completed(const char *in, size_t k, char *buf, size_t sz)
{
	size_t i, from = 0, p = 0;

	buf[0] = '\0';
	for (i = 0; i < k; i++)
		if (in[i] == '\n') {
			p += (size_t)snprintf(buf + p, sz - p, "R%.*s\n",
			    (int)(i - from), in + from);
			from = i + 1;
		}
}

/* Input split at every byte, in both modes: the same records come out
 * (with 32-byte chunks, bytes 18 to 37 are a record that spans two).
 * In loop mode, after the first part only the records it completes are
 * there: a partial read hands nothing of the unfinished record. */
TEST(records_split_anywhere)
{
	static const char in[] = "alpha\nbeta\n\ngamma\nthe spanning record\nend";
	static const char want[] =
	    "Ralpha\nRbeta\nR\nRgamma\nRthe spanning record\nLend\n";
	size_t n = sizeof(in) - 1, k;
	int mode;

	for (mode = GD_INPUT_THREAD; mode <= GD_INPUT_LOOP; mode++)
		for (k = 0; k <= n; k++) {
			struct rig g;
			ASSERT_EQ(rig_start(&g, mode, 0, 32, 0), 0);
			put(&g, in, k);
			if (mode == GD_INPUT_LOOP) {
				char part[128];
				drain(&g.loop);
				completed(in, k, part, sizeof(part));
				if (strcmp(log_of(&g), part) != 0)
					FAILF("loop, first %zu bytes: '%s', not '%s'", k,
					    log_of(&g), part);
			}
			put(&g, in + k, n - k);
			close_writer(&g);
			ASSERT(run_to_end(&g.loop, &g.col));
			if (strcmp(log_of(&g), want) != 0)
				FAILF("%s, split at %zu: '%s'", mode_name[mode], k,
				    log_of(&g));
			ASSERT(!g.col.bad_region);
			ASSERT(!g.col.error);
			ASSERT_EQ(rig_end(&g), 0);
		}
}

/* Several small writes, each one read on its own in loop mode (a partial
 * read of a record), on a socketpair as on a pipe. */
TEST(records_partial_reads_socket)
{
	struct rig g;
	int mode;

	for (mode = GD_INPUT_THREAD; mode <= GD_INPUT_LOOP; mode++) {
		ASSERT_EQ(rig_start(&g, mode, 0, 64, 1), 0);
		put(&g, "ab", 2);
		if (mode == GD_INPUT_LOOP) {
			drain(&g.loop);
			ASSERT_STR(log_of(&g), "");
		}
		put(&g, "c\nd", 3);
		if (mode == GD_INPUT_LOOP) {
			drain(&g.loop);
			ASSERT_STR(log_of(&g), "Rabc\n");
		}
		put(&g, "e\n", 2);
		close_writer(&g);
		ASSERT(run_to_end(&g.loop, &g.col));
		ASSERT_STR(log_of(&g), "Rabc\nRde\n");
		ASSERT_EQ(g.col.nlast, 0);
		ASSERT_EQ(rig_end(&g), 0);
	}
}

/* EOF right after a delimiter, in the middle of a record, and at once. */
TEST(records_eof)
{
	static const struct { const char *in, *want; } t[] = {
		{ "", "" },
		{ "x\n", "Rx\n" },
		{ "x\nhalf a rec", "Rx\nLhalf a rec\n" },
		{ "no delimiter at all", "Lno delimiter at all\n" },
		{ "\n\n", "R\nR\n" },
	};
	size_t i;
	int mode;

	for (mode = GD_INPUT_THREAD; mode <= GD_INPUT_LOOP; mode++)
		for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			struct rig g;
			ASSERT_EQ(rig_start(&g, mode, 0, 64, 0), 0);
			put(&g, t[i].in, strlen(t[i].in));
			close_writer(&g);
			ASSERT(run_to_end(&g.loop, &g.col));
			ASSERT(g.col.eof);
			if (strcmp(log_of(&g), t[i].want) != 0)
				FAILF("%s, '%s': '%s'", mode_name[mode], t[i].in,
				    log_of(&g));
			ASSERT_EQ(rig_end(&g), 0);
		}
}

/* Records that span 16-byte chunks (the start of one is carried into the
 * next chunk), one of exactly a chunk with its delimiter, and one a byte
 * longer: the start of that one comes as OVERSIZE, the rest is dropped
 * up to its delimiter, and the records after it are intact. */
TEST(records_span_chunks_and_oversize)
{
	static const char in[] =
	    "0123456789\n0123456789\nabcdefghi\n"	/* spans */
	    "exactly-15-byte\n"			/* 15 + 1: fits */
	    "sixteen-bytes-16\n"			/* 16 + 1: over */
	    "a much longer record that takes three chunks\n"
	    "after\n"
	    "tail-oversize-record-without-end";
	static const char want[] =
	    "R0123456789\nR0123456789\nRabcdefghi\n"
	    "Rexactly-15-byte\n"
	    "Osixteen-bytes-16\n"
	    "Oa much longer re\n"
	    "Rafter\n"
	    "Otail-oversize-re\n";
	size_t n = sizeof(in) - 1, k;
	int mode;

	for (mode = GD_INPUT_THREAD; mode <= GD_INPUT_LOOP; mode++)
		for (k = 0; k <= n; k += 7) {
			struct rig g;
			ASSERT_EQ(rig_start(&g, mode, 0, 16, 0), 0);
			ASSERT(feed_in_two(&g, in, n, k));
			if (strcmp(log_of(&g), want) != 0)
				FAILF("%s, split at %zu: '%s'", mode_name[mode], k,
				    log_of(&g));
			ASSERT(!g.col.bad_region);
			ASSERT_EQ(rig_end(&g), 0);
		}
}

/* A stream header and frames, one of them larger than a chunk. */
static size_t make_stream(uint8_t *buf, size_t cap)
{
	static uint8_t big[300];
	const char *origin = "127.0.0.1:7001";
	struct gd_sframe f;
	size_t n = gd_stream_header(buf), i;
	uint32_t lens[] = { 5, 0, 300, 1 };

	memset(big, 'B', sizeof(big));
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(&f, 0, sizeof(f));
		f.type = GD_SF_BLOCK;
		f.id = i + 1;
		f.seq = i + 1;
		f.time_ns = 1;
		f.origin = origin;
		f.origin_len = strlen(origin);
		f.data = big;
		f.len = lens[i];
		if (n + gd_sframe_size(f.origin_len, f.len) > cap)
			break;
		n += gd_sframe_put(buf + n, &f);
	}
	return n;
}

/* Framed input split at every byte: every region holds whole frames,
 * together they are the stream, and the 300-byte frame gets a chunk of
 * its own (the chunk is 64 bytes). */
TEST(frames_split_anywhere)
{
	uint8_t s[2048];
	size_t n = make_stream(s, sizeof(s)), k;
	int mode;

	for (mode = GD_INPUT_THREAD; mode <= GD_INPUT_LOOP; mode++)
		for (k = 0; k <= n; k++) {
			struct rig g;
			ASSERT_EQ(rig_start(&g, mode, 1, 64, 0), 0);
			ASSERT(feed_in_two(&g, s, n, k));
			if (gd_dbuf_len(&g.col.log) != n ||
			    memcmp(log_of(&g), s, n) != 0 || g.col.bad_region ||
			    g.col.nlast != 0)
				FAILF("%s, split at %zu: %zu bytes back, bad %d, last %d",
				    mode_name[mode], k, gd_dbuf_len(&g.col.log),
				    g.col.bad_region, g.col.nlast);
			ASSERT_EQ(rig_end(&g), 0);
		}
}

/* Bytes that cannot start a frame end the input: they come as the LAST
 * region (with any whole frames before them in it), so the loop reports
 * the corruption at its offset, and nothing after them is read; a stream
 * cut inside a frame ends with its partial frame as the LAST region. */
TEST(frames_corrupt_and_cut)
{
	uint8_t s[2048];
	size_t n = make_stream(s, sizeof(s));
	int mode, cut;

	for (mode = GD_INPUT_THREAD; mode <= GD_INPUT_LOOP; mode++)
		for (cut = 0; cut <= 1; cut++) {
			struct rig g;
			size_t m = cut ? n - 3 : n + 4;
			memcpy(s + n, "junk", 4);
			ASSERT_EQ(rig_start(&g, mode, 1, 64, 0), 0);
			put(&g, s, m);
			close_writer(&g);
			ASSERT(run_to_end(&g.loop, &g.col));
			/* cut: every byte; junk: the frames and what was read of
			 * the junk (reading stops at the first bad byte) */
			if (cut)
				ASSERT_EQ(gd_dbuf_len(&g.col.log), m);
			else
				ASSERT(gd_dbuf_len(&g.col.log) > n &&
				    gd_dbuf_len(&g.col.log) <= m);
			ASSERT(memcmp(log_of(&g), s, gd_dbuf_len(&g.col.log)) == 0);
			ASSERT_EQ(g.col.nlast, 1);
			ASSERT(!g.col.bad_region);
			ASSERT(g.col.eof);
			ASSERT_EQ(rig_end(&g), 0);
		}
}

/* Stopping while the reader waits for input that never comes (the
 * writer stays open): the thread leaves its poll() and is joined, the
 * loop closes its poll handle; neither waits for the writer. */
TEST(stop_while_waiting)
{
	int mode;

	for (mode = GD_INPUT_THREAD; mode <= GD_INPUT_LOOP; mode++) {
		struct rig g;
		ASSERT_EQ(rig_start(&g, mode, 0, 64, 0), 0);
		put(&g, "partial", 7);
		if (mode == GD_INPUT_LOOP)
			drain(&g.loop);
		ASSERT_EQ(rig_end(&g), 0);	/* would hang on a blocked reader */
	}
}

/* Loop mode: with more handed than the queue limit (4 chunks) and not
 * given back, the loop stops reading (the pipe keeps the rest); giving
 * the regions back resumes it, and nothing is lost. */
TEST(loop_pauses_when_full)
{
	char line[32];
	struct rig g;
	int i, avail = 0, lines = 200;

	ASSERT_EQ(rig_start(&g, GD_INPUT_LOOP, 0, 16, 0), 0);
	g.col.hold = 1;
	for (i = 0; i < lines; i++) {
		snprintf(line, sizeof(line), "line %05d\n", i);	/* 11 bytes */
		put(&g, line, strlen(line));
	}
	drain(&g.loop);
	ASSERT(g.in.paused);
	ASSERT(g.in.qbytes > g.in.qlimit);
	ASSERT_EQ(ioctl(g.fd[0], FIONREAD, &avail), 0);
	ASSERT(avail > 0);
	release_held(&g.in, &g.col);
	ASSERT(!g.in.paused);
	close_writer(&g);
	ASSERT(run_to_end(&g.loop, &g.col));
	ASSERT_EQ(gd_dbuf_len(&g.col.log), (size_t)lines * 12);	/* "R" + 11 */
	ASSERT(!g.col.bad_region);
	ASSERT_EQ(rig_end(&g), 0);
}

/* gd_input_finish: at a record's edge the input ends at once; inside a
 * record the reader reads on, a byte at a time, to its end, and leaves
 * what follows in the pipe (the next reader's); a record whose writer
 * never finishes it is dropped after the bound, its bytes counted. */
TEST(finish_at_a_record_edge)
{
	struct rig g;
	char rest[64];
	ssize_t n;

	/* nothing begun: ends at once, the rest stays in the pipe */
	ASSERT_EQ(rig_start(&g, GD_INPUT_LOOP, 0, 64, 0), 0);
	put(&g, "a\nb\n", 4);
	drain(&g.loop);
	ASSERT_EQ(gd_input_finish(&g.in, 5000), 0);
	put(&g, "c\n", 2);
	ASSERT(run_to_end(&g.loop, &g.col));
	ASSERT_STR(log_of(&g), "Ra\nRb\n");
	ASSERT_EQ(g.in.cut, 0);
	n = read(g.fd[0], rest, sizeof(rest));
	ASSERT_EQ(n, 2);
	ASSERT_EQ(rig_end(&g), 0);

	/* a record begun: read to its delimiter, not a byte further */
	ASSERT_EQ(rig_start(&g, GD_INPUT_LOOP, 0, 64, 0), 0);
	put(&g, "a\nbb", 4);
	drain(&g.loop);
	ASSERT_STR(log_of(&g), "Ra\n");
	ASSERT_EQ(gd_input_finish(&g.in, 5000), 0);
	put(&g, "b\nc\nd", 5);
	ASSERT(run_to_end(&g.loop, &g.col));
	ASSERT_STR(log_of(&g), "Ra\nRbbb\n");
	ASSERT_EQ(g.in.cut, 0);
	n = read(g.fd[0], rest, sizeof(rest));
	ASSERT_EQ(n, 3);
	ASSERT(n == 3 && memcmp(rest, "c\nd", 3) == 0);
	ASSERT_EQ(rig_end(&g), 0);

	/* a frame begun: read to its end, as its header says */
	ASSERT_EQ(rig_start(&g, GD_INPUT_LOOP, 1, 64, 0), 0);
	ASSERT_EQ(gd_input_finish(&g.in, 5000), 0);	/* ends at once */
	ASSERT(run_to_end(&g.loop, &g.col));
	ASSERT_EQ(rig_end(&g), 0);

	/* its writer never finishes it: dropped after the bound */
	ASSERT_EQ(rig_start(&g, GD_INPUT_LOOP, 0, 64, 0), 0);
	put(&g, "a\nhalf", 6);
	drain(&g.loop);
	ASSERT_EQ(gd_input_finish(&g.in, 50), 0);
	ASSERT(run_to_end(&g.loop, &g.col));
	ASSERT_STR(log_of(&g), "Ra\n");
	ASSERT_EQ(g.in.cut, 4);
	ASSERT_EQ(g.col.nlast, 0);
	ASSERT_EQ(rig_end(&g), 0);

	/* thread mode: a file ends by itself */
	ASSERT_EQ(rig_start(&g, GD_INPUT_THREAD, 0, 64, 0), 0);
	ASSERT_EQ(gd_input_finish(&g.in, 50), -1);
	close_writer(&g);
	ASSERT_EQ(rig_end(&g), 0);
}

/* Which mode the fd gets: a pipe or a socket is read on the loop; a
 * regular file by the thread, to its end. */
TEST(mode_by_fd)
{
	char path[] = "/tmp/gdkit-test-input.XXXXXX";
	struct rig g;
	uv_loop_t loop;
	struct gd_input in;
	struct col c;
	int fd;

	ASSERT_EQ(rig_start(&g, GD_INPUT_AUTO, 0, 64, 0), 0);
	ASSERT_EQ(g.in.mode, GD_INPUT_LOOP);
	ASSERT_EQ(rig_end(&g), 0);
	ASSERT_EQ(rig_start(&g, GD_INPUT_AUTO, 0, 64, 1), 0);
	ASSERT_EQ(g.in.mode, GD_INPUT_LOOP);
	ASSERT_EQ(rig_end(&g), 0);

	fd = mkstemp(path);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, "f1\nf2\n", 6), 6);
	ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
	ASSERT_EQ(uv_loop_init(&loop), 0);
	memset(&in, 0, sizeof(in));
	col_init(&c, 0);
	in.data = &c;
	ASSERT_EQ(gd_input_start(&in, &loop, fd, '\n', 64, on_ready), 0);
	ASSERT_EQ(in.mode, GD_INPUT_THREAD);
	ASSERT(run_to_end(&loop, &c));
	ASSERT_STR(gd_dbuf_ptr(&c.log), "Rf1\nRf2\n");
	gd_input_stop(&in);
	uv_run(&loop, UV_RUN_DEFAULT);
	gd_input_free(&in);
	ASSERT_EQ(uv_loop_close(&loop), 0);
	gd_dbuf_free(&c.log);
	close(fd);
	unlink(path);
}

int main(void)
{
	alarm(120);
	signal(SIGPIPE, SIG_IGN);
	RUN(records_split_anywhere);
	RUN(records_partial_reads_socket);
	RUN(records_eof);
	RUN(records_span_chunks_and_oversize);
	RUN(frames_split_anywhere);
	RUN(frames_corrupt_and_cut);
	RUN(stop_while_waiting);
	RUN(loop_pauses_when_full);
	RUN(mode_by_fd);
	RUN(finish_at_a_record_edge);
	return UNIT_DONE();
}
