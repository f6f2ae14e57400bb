/* gdpub's write-ahead journal (GDpub_journal): every block is recorded
 * before it is sent, every resolution (ACK, NACK) after, so a gdpub that
 * restarts finds what was pending and sends it again. The run continues:
 * the journal keeps the publisher's epoch, and sequence indexes and gdpub's
 * own IDs go on past the highest recorded, so subscribers (and their
 * GDsub_state) recognise a block sent again as the very same block.
 *
 * File: a 32-byte header (magic 89 'G' 'D' 'J' 0D 0A 1A 0A, u16 version,
 * u16 header size, u32 0, u64 epoch, u32 0, u32 CRC32C of bytes 0..27),
 * then records, little-endian:
 *   u8 type (1 block, 2 resolution), u8 outcome (2: 1 ACK, 2 NACK),
 *   u16 0, u32 body length, body, u32 CRC32C of the record before it;
 *   block body: u64 id, u64 seq, u64 time_ns, payload;
 *   resolution body: u64 id, u64 seq;
 *   mark body: u64 id, u64 seq, the highest so far (a rewritten file
 *   starts with one, so IDs and indexes never go back).
 * A record cut short or failing its CRC at the end of the file is a torn
 * tail (a crash mid-write): it is cut off, and said. Anything bad before
 * the last record is corruption: an error, never skipped. The file is
 * rewritten with only the pending blocks once it is more than twice
 * their size (plus 16 MiB), so it stays proportional to what is pending.
 * One gdpub at a time: the file is locked (flock) while it is open. */
#ifndef GD_JOURNAL_H
#define GD_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dbuf.h"

#define GD_JOURNAL_HDR 32
#define GD_JOURNAL_SLACK (16u << 20)
#define GD_JOURNAL_BATCH_NS 100000000ull	/* fsync=batch: at most this late */
/* Records buffered before a commit: past this many bytes they go to the
 * file at once (synced at the commit, as ever), so the buffer holds at
 * most this and one record, whatever a loop turn records. */
#define GD_JOURNAL_FLUSH (1u << 20)

enum { GD_JR_BLOCK = 1, GD_JR_RES = 2, GD_JR_MARK = 3 };

/* a pending block found in a journal */
struct gd_jblock {
	uint64_t seq;		/* first: the idmap key while scanning */
	uint64_t id, time_ns;
	const uint8_t *data;
	uint32_t len;
};

struct gd_journal {
	int fd;
	char *path;
	int fsync;		/* GD_FSYNC_* (conf.h) */
	uint64_t epoch;
	uint64_t size;		/* bytes in the file */
	uint64_t live;		/* bytes of the records of pending blocks */
	struct gd_dbuf buf;	/* records not yet written: at most
				 * GD_JOURNAL_FLUSH and the largest record */
	int unsynced;		/* written since the last fsync */
	uint64_t synced_ns;
	uint64_t n_sync;	/* fsyncs (group commits) */
	char err[300];		/* why the last call failed */
	/* what the file held when opened */
	struct gd_jblock *pending;	/* in sequence order */
	size_t npending;
	uint8_t *image;		/* the file as read; pending[].data point in */
	uint64_t max_id, max_seq;
	uint64_t torn_at;	/* a torn tail cut at this offset, else 0 */
	uint64_t torn_bytes;
};

/* Open (or create, with epoch) the journal at path, lock it (flock: one
 * gdpub per journal; err names the holder's pid when /proc/locks tells)
 * and read it, changing nothing: a torn tail is found (torn_at says
 * where), not cut. Blocks recorded are of max_block bytes at most (or
 * of a pending one's size, which a rewrite records again). 0, or -1 with
 * err (and nothing left to close). */
int gd_journal_lock(struct gd_journal *j, const char *path, int fsync,
    uint64_t epoch, uint32_t max_block);
/* The journal locked and read is to be written: the torn tail is cut.
 * 0, or -1 with err. */
int gd_journal_begin(struct gd_journal *j);
/* Both: lock, then begin. */
int gd_journal_open(struct gd_journal *j, const char *path, int fsync,
    uint64_t epoch, uint32_t max_block);
/* Read a journal without changing it (gdinspect journal): 0, or -1. */
int gd_journal_scan(struct gd_journal *j, const char *path);
/* The replay is done: free what the file held. */
void gd_journal_forget_image(struct gd_journal *j);
void gd_journal_close(struct gd_journal *j);

/* Record a block / a resolution (buffered until commit, or written once
 * GD_JOURNAL_FLUSH bytes wait). 0, or -1 with err: out of memory, a
 * write error, or a block over the bound given at open. */
int gd_journal_block(struct gd_journal *j, uint64_t id, uint64_t seq,
    uint64_t time_ns, const uint8_t *data, uint32_t len);
int gd_journal_resolved(struct gd_journal *j, uint64_t id, uint64_t seq,
    uint32_t len, int acked);
/* Write what was recorded; fsync as the policy says (always: now, one
 * fsync for every record since the last; batch: when GD_JOURNAL_BATCH_NS
 * passed). 0, or -1 with err (an I/O error: the file is left as it was
 * last synced or written). */
int gd_journal_commit(struct gd_journal *j, uint64_t now_ns);
/* fsync=batch, from a timer: sync what was written. 0 or -1. */
int gd_journal_sync(struct gd_journal *j, uint64_t now_ns);
/* The file is so much larger than what is pending that it should be
 * rewritten. */
static inline int gd_journal_bloated(const struct gd_journal *j)
{
	return j->size > 2 * j->live + GD_JOURNAL_SLACK;
}
/* Rewrite the file with only the pending blocks, which next() gives one
 * at a time (returns 0 at the end). 0, or -1 with err (the old file is
 * then kept). */
int gd_journal_compact(struct gd_journal *j,
    int (*next)(void *ctx, struct gd_jblock *b), void *ctx);

/* ---- what the engine reads: calls, not fields ---- */

/* Why the last call failed. */
static inline const char *gd_journal_err(const struct gd_journal *j)
{
	return j->err;
}
/* The caller's reason the journal can no longer be kept (it failed
 * beside the file: the outcomes waiting for their status lines). */
void gd_journal_set_err(struct gd_journal *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* What the file held when locked: the run's epoch, the highest id and
 * sequence index it recorded, its size now. */
static inline uint64_t gd_journal_epoch(const struct gd_journal *j)
{
	return j->epoch;
}
static inline uint64_t gd_journal_max_id(const struct gd_journal *j)
{
	return j->max_id;
}
static inline uint64_t gd_journal_max_seq(const struct gd_journal *j)
{
	return j->max_seq;
}
static inline uint64_t gd_journal_size(const struct gd_journal *j)
{
	return j->size;
}
/* The offset of the torn tail that begin cuts off (0: none), its bytes in
 * *bytes. */
static inline uint64_t gd_journal_torn(const struct gd_journal *j,
    uint64_t *bytes)
{
	*bytes = j->torn_bytes;
	return j->torn_at;
}
/* The blocks pending from before, in sequence order (their data in the
 * file's image until gd_journal_forget_image). */
static inline const struct gd_jblock *gd_journal_pending(
    const struct gd_journal *j, size_t *n)
{
	*n = j->npending;
	return j->pending;
}
/* The caller takes the pending blocks (the array is its to free; the
 * data still point into the image): the journal no longer has them. */
static inline struct gd_jblock *gd_journal_take_pending(struct gd_journal *j,
    size_t *n)
{
	struct gd_jblock *b = j->pending;

	*n = j->npending;
	j->pending = NULL;
	j->npending = 0;
	return b;
}

/* Bytes a block's record takes. */
static inline uint64_t gd_journal_recsize(uint32_t len)
{
	return 8 + 24 + (uint64_t)len + 4;
}

#endif
