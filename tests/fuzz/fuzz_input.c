/* The record splitters: gdpub's and gdsub's chunked input reader
 * (lib/input.c) on a libuv loop, reading a socketpair written in pieces,
 * and the --ids record split (gd_parse_id_record, lib/parse.c) of every
 * record it hands. A 3-byte prefix picks records (newline or NUL, as -0)
 * or framed input (-f frame, gdsub -i), the chunk size and the write
 * size. Checks: the regions handed, put together, are the input (but the
 * discarded tail of an oversize record); a region that is not the last
 * ends with the delimiter, or holds whole frames; --ids splits stay
 * inside their record. */
#include "fuzz.h"
#include "dbuf.h"
#include "input.h"
#include "parse.h"
#include "stream.h"

#include <errno.h>
#include <sys/socket.h>

struct col {
	struct gd_dbuf got;
	int frames, eof, error, oversize, nlast;
};

static void check_records(const struct gd_input *in, const uint8_t *d,
    size_t len, int flags)
{
	while (len > 0) {
		const uint8_t *e = memchr(d, in->delim, len);
		size_t n = e ? (size_t)(e - d) : len, off = 0;
		uint64_t id;

		if (e == NULL && !(flags & (GD_RG_LAST | GD_RG_OVERSIZE)))
			abort();	/* a record cut in two */
		if (gd_parse_id_record((const char *)d, n, &id, &off) == 0 &&
		    (off == 0 || off > n || d[off - 1] != '\t'))
			abort();
		if (e == NULL)
			break;
		len -= n + 1;
		d += n + 1;
	}
}

static int whole_frames(const uint8_t *p, size_t n, uint32_t max)
{
	while (n > 0) {
		size_t total;
		if (gd_stream_peek(p, n, max, &total) != 1 || total > n)
			return 0;
		p += total;
		n -= total;
	}
	return 1;
}

static void on_ready(struct gd_input *in)
{
	struct col *c = in->data;
	struct gd_region *r = gd_input_take(in), *n;

	for (; r; r = n) {
		const uint8_t *d = r->c ? r->c->data + r->off : NULL;
		n = r->next;
		if (r->flags & GD_RG_EOF)
			c->eof = 1;
		if (r->flags & GD_RG_ERROR)
			c->error = 1;
		if (d != NULL && r->len > 0 && !(r->flags & GD_RG_CHUNK_DONE)) {
			if (r->off + r->len > r->c->cap)
				abort();
			if (r->flags & GD_RG_LAST)
				c->nlast++;
			if (r->flags & GD_RG_OVERSIZE)
				c->oversize = 1;
			if (c->frames) {
				if (!(r->flags & GD_RG_LAST) &&
				    !whole_frames(d, r->len, in->max_payload))
					abort();
			} else {
				check_records(in, d, r->len, r->flags);
			}
			if (gd_dbuf_add(&c->got, d, r->len) != GD_DBUF_OK)
				abort();
		}
		gd_input_done(in, r);
	}
}

/* Write p while the reader reads; 0 once it ended (a corrupt stream
 * ends the input: nobody reads the rest). */
static int put_all(int fd, const uint8_t *p, size_t n, uv_loop_t *loop,
    const struct col *c)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			if (c->eof || c->error)
				return 0;
			uv_run(loop, UV_RUN_ONCE);
			continue;
		}
		if (w <= 0)
			abort();
		p += w;
		n -= (size_t)w;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uv_loop_t loop;
	struct gd_input in;
	struct col c;
	size_t chunk, step, pos = 0;
	int fd[2], spins;

	if (size < 3)
		return 0;
	fuzz_once();
	memset(&c, 0, sizeof(c));
	memset(&in, 0, sizeof(in));
	gd_dbuf_init(&c.got, 1u << 24);
	c.frames = data[0] & 1;
	chunk = 32 + (size_t)data[1] * 16;
	step = 1 + data[2];
	if (uv_loop_init(&loop) != 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd) != 0)
		abort();
	in.mode = GD_INPUT_LOOP;
	in.data = &c;
	if (c.frames)
		in.max_payload = data[0] & 2 ? 512 : GD_STREAM_MAX_PAYLOAD;
	if (gd_input_start(&in, &loop, fd[0], data[0] & 2 ? '\0' : '\n',
	    chunk, on_ready) != 0)
		abort();
	data += 3;
	size -= 3;
	while (pos < size) {
		size_t n = size - pos < step ? size - pos : step;
		if (!put_all(fd[1], data + pos, n, &loop, &c))
			break;
		pos += n;
		uv_run(&loop, UV_RUN_NOWAIT);
	}
	close(fd[1]);
	for (spins = 0; !c.eof && !c.error; spins++) {
		if (spins > 100000)
			abort();	/* the reader never ended */
		uv_run(&loop, UV_RUN_ONCE);
	}
	if (c.error || c.nlast > 1)
		abort();
	/* records: everything but what an oversize record discarded;
	 * frames: everything up to the end or to the bytes that cannot
	 * start a frame, after which nothing is read */
	if (gd_dbuf_len(&c.got) > size || (!c.frames && !c.oversize &&
	    gd_dbuf_len(&c.got) != size) || (!c.oversize &&
	    gd_dbuf_len(&c.got) > 0 && memcmp(gd_dbuf_ptr(&c.got), data,
	    gd_dbuf_len(&c.got)) != 0))
		abort();
	gd_input_stop(&in);
	uv_run(&loop, UV_RUN_DEFAULT);
	gd_input_free(&in);
	if (uv_loop_close(&loop) != 0)
		abort();	/* a handle left open */
	close(fd[0]);
	gd_dbuf_free(&c.got);
	return 0;
}
