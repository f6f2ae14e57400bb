/* gdsub's state file (GDsub_state): the blocks this subscriber has
 * acknowledged, so that a restarted gdsub acknowledges a resent block
 * again instead of writing it again. A block is identified by its
 * publisher's run (origin and epoch: a gdpub with a journal keeps its
 * epoch across restarts) and its sequence index; its id is kept where
 * that costs nothing, to check that a resend is the block recorded.
 *
 * In memory, per run: the publisher's floor as last seen, and sorted,
 * disjoint ranges [lo, hi) of acknowledged sequence indexes. A pipeline
 * that acknowledges in order keeps one range; each block resolved without
 * this subscriber's acknowledgement (NACKed) or still in the pipeline
 * leaves a hole. A range whose ids run with its indexes (id = id_lo +
 * (seq - lo), as gdpub's own ids do) checks ids; others do not.
 * Bounds: GD_STATE_RANGES ranges per run (past that the lowest, oldest,
 * range is forgotten: a very old block resent after a publisher crash
 * would then be written again, a duplicate and never a loss), only the
 * latest run of each origin, and GD_STATE_RUNS runs (the least recently
 * acknowledged is forgotten).
 *
 * Multisend clusters: every member's blocks have the origin @CLUSTER, and
 * each member its own run (epoch) and sequence indexes, so the runs of an
 * origin that starts with '@' are told apart by epoch too, and live side
 * by side (a member's run does not replace another's). Such a run also
 * keeps the IDs of the blocks acknowledged through its copies, the last
 * GD_STATE_CIDS: the block's identity across the cluster's members, from
 * which a restarted gdsub recognises another member's copy of a block it
 * already wrote (lib/sub/sub_cluster.c).
 *
 * File: a 16-byte header (magic 89 'G' 'D' 'S' 0D 0A 1A 0A, u16 version
 * 2 (1 is read too: it has no record 5), u16 header size, u32 CRC32C of
 * bytes 0..11), then records,
 * little-endian: u8 type, u8 0, u16 0, u32 body length (at most
 * GD_STATE_REC_MAX), body, u32 CRC32C of the record before it.
 *   1 run:    u32 run number, u64 epoch, origin (1..300 bytes)
 *   2 acks:   u32 run number, n x (u64 seq, u64 id)
 *   3 ranges: u32 run number, n x (u64 lo, u64 hi, u64 id_lo, u64 flags:
 *             1 the ids run with the indexes)
 *   4 floor:  u32 run number, u64 floor
 *   5 cluster ids: u32 run number, n x u64 id, oldest first (runs of an
 *             origin @CLUSTER only; acks records add to them too)
 * A run number refers to an earlier run record of the same file. Records
 * are appended as acknowledgements are made; the file is rewritten
 * (written aside, synced, renamed) with one run, ranges and floor record
 * per run when it opens and whenever the log has grown past twice that
 * snapshot plus GD_STATE_SLACK. A record cut short or failing its CRC at
 * the end of the file is a torn tail (a crash mid-write): it is cut, and
 * said. Anything bad before the last record is corruption: an error,
 * never skipped. */
#ifndef GD_STATE_H
#define GD_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "dbuf.h"

#define GD_STATE_HDR 16
#define GD_STATE_REC_MAX (1u << 20)	/* bound on a record body */
#define GD_STATE_RANGES 16384		/* ranges kept per run */
#define GD_STATE_RUNS 1024		/* runs kept (GDsub_pub's bound) */
#define GD_STATE_ORIGIN_MAX 300
#define GD_STATE_VERSION 2		/* written; 1 and 2 are read */
#define GD_STATE_CIDS (1u << 18)	/* cluster ids kept per run */
#define GD_STATE_SLACK (1u << 20)
#define GD_STATE_SYNC_NS 100000000ull	/* fsync at most this late */
/* Records buffered before they are written: past this many bytes they go
 * to the file at once, so a commit of many acknowledgements or the
 * rewrite of every run holds at most this and one record in memory. */
#define GD_STATE_FLUSH (1u << 20)

enum { GD_SR_RUN = 1, GD_SR_ACKS = 2, GD_SR_RANGES = 3, GD_SR_FLOOR = 4,
	GD_SR_CIDS = 5 };

struct gd_srange {
	uint64_t lo, hi;	/* acknowledged: lo <= seq < hi */
	uint64_t id_lo;		/* the id of block lo */
	uint64_t linear;	/* 1: block seq has id id_lo + (seq - lo) */
};

struct gd_sack {
	uint64_t seq, id;
};

/* One publisher run. The pointer stays valid while the state is open: a
 * new run of the same origin takes over its predecessor's struct. */
struct gd_srun {
	char origin[GD_STATE_ORIGIN_MAX + 1];
	size_t olen;
	uint64_t epoch;
	uint64_t floor;		/* every index below it resolved, as last seen */
	struct gd_srange *r;	/* r[off .. off + n), sorted */
	uint32_t off, n;
	size_t cap;
	uint32_t num;		/* its run number in the file */
	int logged;		/* its run record is in the file */
	int floor_dirty;
	struct gd_sack *pend;	/* acknowledgements not yet in the file */
	size_t npend, cappend;
	uint64_t used;		/* recency, for GD_STATE_RUNS */
	uint64_t n_forgotten;	/* ranges dropped by GD_STATE_RANGES */
	/* origin @CLUSTER: the ids acknowledged, a ring of the last
	 * GD_STATE_CIDS (cid[cidhead] the oldest once full) */
	uint64_t *cid;
	size_t cidcap;
	uint32_t ncid, cidhead;
};

struct gd_state {
	int fd;
	char *path;
	struct gd_srun **runs;
	uint32_t nruns;
	size_t caprun;
	uint32_t next_num;
	uint64_t clock;		/* for recency */
	uint64_t size;		/* bytes in the file */
	struct gd_dbuf buf;	/* records being written: at most
				 * GD_STATE_FLUSH and one record */
	int wfd;		/* where they go: fd, or a rewrite's file */
	uint64_t wrote;		/* bytes of them that went there before */
	int unsynced;		/* written since the last fsync */
	uint64_t synced_ns;
	uint64_t n_sync, n_compact;
	/* torn_bytes > 0: a torn tail of that many bytes was cut at torn_at
	 * when the file was opened */
	uint64_t torn_at, torn_bytes;
	char err[400];		/* why the last call failed */
};

/* Open (or create) the state file at path, load it, cut a torn tail and
 * rewrite it compacted. 0, or -1 with err (unreadable, unwritable,
 * corrupt, in use by another gdsub). */
int gd_state_open(struct gd_state *st, const char *path, uint64_t now_ns);
/* Write what is recorded and sync; free everything. 0, or -1 with err
 * (everything is freed either way). */
int gd_state_close(struct gd_state *st, uint64_t now_ns);

/* The run (origin, epoch), created if new; a new run replaces the one
 * of the same origin, but for a cluster's (@CLUSTER), one per member.
 * NULL when out of memory. */
struct gd_srun *gd_state_run(struct gd_state *st, const char *origin,
    size_t olen, uint64_t epoch);
/* Was block seq acknowledged? 1 yes, 0 no, -1 an acknowledged index with
 * another id (not the block recorded: treat it as new). */
int gd_state_has(const struct gd_srun *run, uint64_t seq, uint64_t id);
/* Was index seq acknowledged, whatever its id? 1 or 0. */
int gd_state_acked(const struct gd_srun *run, uint64_t seq);
/* The first index at or after seq that was not acknowledged. */
uint64_t gd_state_acked_end(const struct gd_srun *run, uint64_t seq);
/* The first index at or after seq that was acknowledged (UINT64_MAX:
 * none). */
uint64_t gd_state_next_acked(const struct gd_srun *run, uint64_t seq);
/* Block (seq, id) was acknowledged: recorded now, written at the next
 * commit. 0, or -1 when out of memory. */
int gd_state_ack(struct gd_state *st, struct gd_srun *run, uint64_t seq,
    uint64_t id);
/* A run in memory only, for a gdsub without a state file: the same
 * ranges and bounds, nothing written. NULL when out of memory; freed by
 * gd_srun_free. */
struct gd_srun *gd_srun_new(void);
void gd_srun_free(struct gd_srun *run);
/* Block (seq, id) was acknowledged, in a run of gd_srun_new. 0, or -1
 * when out of memory. */
int gd_srun_ack(struct gd_srun *run, uint64_t seq, uint64_t id);
/* Of a cluster's run: its i-th id acknowledged, oldest first (i below
 * run->ncid). */
static inline uint64_t gd_srun_cid(const struct gd_srun *run, uint32_t i)
{
	return run->cid[(run->cidhead + i) % run->ncid];
}
/* Of a cluster's run: id acknowledged (the oldest forgotten past
 * GD_STATE_CIDS). 0, or -1 when out of memory. */
int gd_srun_cid_add(struct gd_srun *run, uint64_t id);
/* The publisher's floor, recorded when it moves. */
void gd_state_floor(struct gd_srun *run, uint64_t floor);
/* The lowest index at or above the run's floor that is not acknowledged:
 * where a publisher run stood for this subscriber. */
uint64_t gd_state_resume(const struct gd_srun *run);

/* Write what was recorded since the last commit (compacting the file
 * when it has grown), and fsync when GD_STATE_SYNC_NS has passed since
 * the last. Returns 0, or -1 with err. */
int gd_state_commit(struct gd_state *st, uint64_t now_ns);
/* fsync now if anything was written since the last. 0, or -1 with err. */
int gd_state_sync(struct gd_state *st, uint64_t now_ns);
/* When the next fsync is due (0: nothing waits for one). */
static inline uint64_t gd_state_sync_due(const struct gd_state *st)
{
	return st->unsynced ? st->synced_ns + GD_STATE_SYNC_NS : 0;
}

#endif
