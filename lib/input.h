/* Reading records (blocks) from a file descriptor in large chunks, handed
 * to the loop as regions of whole records; records are parsed in place
 * and stay in their chunk while they are pending, so the hot path copies
 * and allocates nothing per block. A record too large for a chunk is
 * handed as an OVERSIZE region holding its start, the rest discarded.
 *
 * Who reads depends on what the fd is. A pipe, socket or tty is read on
 * the loop itself (a uv_poll_t, one read() per readiness), so a block that
 * arrives alone is parsed in the same loop iteration, with no thread
 * hand-off. A regular file (or any fd epoll refuses) is read by a reader
 * thread, which waits in poll() on the fd and a wake-up pipe so that
 * stopping it never depends on more input arriving: gd_input_free joins
 * it. Both run the same reader state machine (struct gd_input_rd). */
#ifndef GD_INPUT_H
#define GD_INPUT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

enum {
	GD_RG_LAST = 1,		/* the final record has no delimiter */
	GD_RG_OVERSIZE = 2,	/* start of one record over the chunk size */
	GD_RG_EOF = 4,		/* end of input (len 0) */
	GD_RG_ERROR = 8,	/* read error, err set (len 0) */
	GD_RG_CHUNK_DONE = 16,	/* the reader is done with this chunk (len 0) */
	GD_RG_LINES = 32,	/* framed input that came armored: whole lines */
};

struct gd_chunk {
	struct gd_chunk *next;	/* free list */
	struct gd_chunk *all_next, **all_pprev;	/* every chunk, for teardown */
	uint32_t refs;		/* loop-owned: blocks and regions using it */
	uint32_t idx;		/* slot in the loop's chunk table */
	int reading;		/* the reader may still append to it */
	size_t cap;
	uint8_t data[];
};

struct gd_region {
	struct gd_region *next;
	struct gd_chunk *c;
	size_t off, len;
	int flags;
	int err;
};

enum gd_input_mode {
	GD_INPUT_AUTO = 0,	/* loop for pipes, sockets and ttys, else thread */
	GD_INPUT_THREAD,	/* a reader thread (tests may force either) */
	GD_INPUT_LOOP,		/* read on the loop */
};

/* Where the reader is: owned by the reader thread, or by the loop in
 * loop mode. [start, len) of c is read and not handed yet. */
struct gd_input_rd {
	struct gd_chunk *c;
	size_t start, len;
	size_t scan, need;	/* frames: parsed up to; the next frame's size */
	int discarding;		/* records: skipping the rest of an oversize one */
	int handed;		/* frames: a region of c went to the loop */
	int done;		/* EOF, an error or a stop was handed */
	int decided;		/* framed input: armored or binary is known */
};

struct gd_input {
	int mode;		/* enum gd_input_mode: AUTO unless set before start */
	int fd;
	char delim;
	uint32_t max_payload;	/* set before start: framed input (stream.h) */
	size_t line_max;	/* set before start: framed input may come as
				 * armored lines (armor.h) up to this long */
	int lines;		/* reader: it did; split at newlines */
	size_t chunk_size;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct gd_region *qhead, *qtail;	/* handed to the loop */
	size_t qbytes, qlimit;		/* bytes handed and not yet done */
	struct gd_chunk *free_chunks;
	struct gd_chunk *all;	/* every chunk allocated and not freed */
	unsigned nfree;
	int stop, started;
	int joinable;		/* the reader thread runs or ran: join it */
	int wake[2];		/* pipe: a byte in it tells the reader to stop */
	uv_async_t async;	/* thread mode: regions were handed */
	uv_poll_t poll;		/* loop mode: the fd is readable */
	int paused;		/* loop mode: over qlimit, not polling */
	int finishing;		/* loop mode: gd_input_finish was called */
	uv_timer_t finish_timer;	/* ... and bounds the wait: */
	int timer_on;		/* its handle is initialised */
	size_t cut;		/* bytes of a record it gave up on */
	int notify;		/* loop mode: regions handed, on_ready not called */
	struct gd_input_rd rd;
	void (*on_ready)(struct gd_input *in);	/* regions are waiting */
	void *data;
	/* loop side */
	struct gd_chunk **tab;
	uint32_t ntab, free_idx;
	size_t captab;
};

/* Records end with delim; or, when in->max_payload was set, the input is a
 * framed stream and every region holds whole frames (the last region, at
 * end of input or at bytes that cannot start a frame, may not). When
 * in->line_max was set too and the input starts with the armor prefix,
 * it is read as lines instead (regions flagged GD_RG_LINES, of whole lines
 * but the last; a line over line_max is an OVERSIZE region). */
int gd_input_start(struct gd_input *in, uv_loop_t *loop, int fd, char delim,
    size_t chunk_size, void (*on_ready)(struct gd_input *));
/* A chunk of cap bytes the loop fills itself (gdpub's journal replay),
 * with one reference held by the caller; NULL when out of memory. Call
 * after gd_input_start. */
struct gd_chunk *gd_input_chunk_new(struct gd_input *in, size_t cap);
/* Take every region handed so far (loop thread); NULL when none. */
struct gd_region *gd_input_take(struct gd_input *in);
/* The loop is done parsing r; frees r. */
void gd_input_done(struct gd_input *in, struct gd_region *r);
static inline void gd_chunk_ref(struct gd_chunk *c) { c->refs++; }
void gd_chunk_unref(struct gd_input *in, struct gd_chunk *c);
static inline struct gd_chunk *gd_input_chunk(struct gd_input *in, uint32_t idx)
{
	return in->tab[idx];
}
/* Loop mode (a pipe or FIFO that a writer may keep open for ever): end
 * the input at the first point where the reader holds no part of a
 * record (or frame), as if the input had ended there: at once when it
 * holds none, else once more input completes the record, read as usual,
 * for at most ms milliseconds; then the part is dropped (in->cut says
 * how many bytes) and the input ends. The loop is told as of any
 * region, EOF last. 0, or -1 in thread mode (a regular file ends by
 * itself). */
int gd_input_finish(struct gd_input *in, unsigned ms);
/* Tell the reader to stop (the thread leaves its poll() at once) and
 * close the libuv handle (async or poll). */
void gd_input_stop(struct gd_input *in);
/* After the loop has ended: stop the reader if it was not, wait for it
 * to return, then free every chunk and queued region. */
void gd_input_free(struct gd_input *in);

#endif
