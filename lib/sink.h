/* gdack's sink file (gdack --sink FILE): the pipeline's records appended
 * and synced before their keys are acknowledged, so that a kill loses
 * none; and, when gdack starts again, the keys of the records at the
 * file's end, so that a resent block already there is acknowledged
 * without being appended a second time.
 *
 * Why the end of the file is enough: gdack appends a batch of at most
 * GD_SINK_BATCH records, asks for their acknowledgement, and appends the
 * next only once gdsub has answered; gdsub writes what it acknowledges to
 * its state file before its answer leaves (both in the loop's prepare
 * phase, the state first: sub.c). So at a kill only the last batch can be
 * unknown to both the publisher and gdsub's state and come again (flagged
 * r); the end kept is two batches, a margin. */
#ifndef GD_SINK_H
#define GD_SINK_H

#include "dbuf.h"

#include <stddef.h>
#include <stdint.h>

#define GD_SINK_BATCH 16384u			/* records per acknowledgement */
#define GD_SINK_TAIL (2 * GD_SINK_BATCH)	/* keys remembered at open */

struct gd_sink_key;

struct gd_sink {
	int fd;
	char delim;
	uint64_t size;			/* bytes in the file */
	uint64_t torn_at, torn_bytes;	/* a torn last record, cut at open */
	uint32_t ntail;			/* keys read from the file's end */
	uint64_t skipped;		/* resends found there, not appended */
	struct gd_sink_key *tab;	/* open addressing, mask + 1 buckets */
	uint32_t mask;
	struct gd_dbuf keys;		/* the keys' bytes, one after another */
	char err[256];
	int busy;			/* open failed: another gdack has it */
};

/* Open (create) path for appending, take its lock, cut a torn last record
 * (one without delim: never acknowledged, it comes again) and read the
 * keys of its last tail records. 0, or -1 with err set. */
int gd_sink_open(struct gd_sink *k, const char *path, char delim,
    uint32_t tail);
/* Does a record (KEY[/FLAGS][<TAB>...]) repeat one at the file's end? 1
 * for a resent block (flag r) whose key, flags aside, and every byte that
 * follows the key field (read back from the file) match a record at the
 * end not yet matched (the match is used up); 0 when none does; -1 when
 * the file cannot be read back (err set). */
int gd_sink_repeat(struct gd_sink *k, const char *rec, size_t len);
/* Append n bytes and make them durable (fsync). 0, or -1 with err set;
 * after a failure the file is cut back to its size before. */
int gd_sink_write(struct gd_sink *k, const void *p, size_t n);
void gd_sink_close(struct gd_sink *k);

#endif
