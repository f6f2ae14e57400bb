/* Reading gdsub's state file back at open (see state.h): every record
 * checked (its header, its CRC) and applied to the runs in memory
 * through a window on the file of at most one record; a torn tail (a
 * crash mid-write) is noted and left for the compaction that follows.
 * Writing is state.c's. */
#include "state.h"
#include "state_int.h"
#include "stream.h"
#include "wire.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

/* A window on the file being read: bytes [pos, pos + len) in d, at most
 * a record of the largest size (or 64 KiB, a read's size). */
struct loader {
	struct gd_state *st;
	struct gd_dbuf d;
	uint64_t pos;		/* file offset of the first byte in d */
	uint64_t size;
	struct gd_srun *last;	/* run-number lookup cache */
	unsigned version;	/* the file's: 1 has no cluster ids */
};
#define LOAD_READ 65536
#define LOAD_MAX (REC_MAX_TOTAL > LOAD_READ ? REC_MAX_TOTAL : LOAD_READ)

static const uint8_t *lbuf(const struct loader *L)
{
	return (const uint8_t *)gd_dbuf_ptr(&L->d);
}

static size_t llen(const struct loader *L)
{
	return gd_dbuf_len(&L->d);
}

/* Have at least need bytes at lbuf (fewer only at the end of the file;
 * need at most LOAD_MAX). 0, or -1 with err. */
static int fill(struct loader *L, size_t need)
{
	int rc;

	if (llen(L) >= need)
		return 0;
	if ((rc = gd_dbuf_reserve(&L->d, need - llen(L))) != GD_DBUF_OK)
		return gd_state_fail(L->st, "cannot read a record of %zu bytes: %s",
		    need, gd_dbuf_strerror(rc));
	while (llen(L) < need && L->pos + llen(L) < L->size) {
		ssize_t r = pread(L->st->fd, gd_dbuf_end(&L->d),
		    gd_dbuf_room(&L->d), (off_t)(L->pos + llen(L)));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return gd_state_fail(L->st, "cannot read: %s", strerror(errno));
		if (r == 0)
			break;
		gd_dbuf_commit(&L->d, (size_t)r);
	}
	return 0;
}

static void consume(struct loader *L, size_t n)
{
	gd_dbuf_consume(&L->d, n);
	L->pos += n;
}

/* Only zero bytes from here to the end: what a crash can leave where a
 * write had reserved room but not filled it. */
static int rest_is_zero(struct loader *L)
{
	while (llen(L) > 0) {
		size_t i;
		for (i = 0; i < llen(L); i++)
			if (lbuf(L)[i] != 0)
				return 0;
		consume(L, llen(L));
		if (fill(L, LOAD_READ) != 0)
			return -1;
	}
	return 1;
}

static struct gd_srun *by_num(struct loader *L, uint32_t num)
{
	uint32_t i;

	if (L->last && L->last->num == num && L->last->logged)
		return L->last;
	for (i = 0; i < L->st->nruns; i++)
		if (L->st->runs[i]->num == num && L->st->runs[i]->logged)
			return L->last = L->st->runs[i];
	return NULL;
}

/* Apply one record whose CRC matched. 0, or -1 with err. */
static int apply(struct loader *L, int type, const uint8_t *b, uint32_t len)
{
	struct gd_state *st = L->st;
	uint64_t at = L->pos;
	struct gd_srun *run;
	uint32_t num, i;

	if (len < 4)
		return gd_state_fail(st, "corrupt record at offset %" PRIu64 ": %u bytes "
		    "of body", at, len);
	num = gd_get32(b);
	if (type == GD_SR_RUN) {
		if (len < RUN_FIXED + 1 || len > RUN_FIXED + GD_STATE_ORIGIN_MAX)
			return gd_state_fail(st, "corrupt run record at offset %" PRIu64
			    ": origin of %u bytes", at, len - RUN_FIXED);
		if (by_num(L, num) != NULL)
			return gd_state_fail(st, "corrupt run record at offset %" PRIu64
			    ": run number %" PRIu32 " used twice", at, num);
		run = gd_state_run(st, (const char *)b + RUN_FIXED,
		    len - RUN_FIXED, gd_get64(b + 4));
		if (run == NULL)
			return gd_state_fail(st, "out of memory");
		run->num = num;
		run->logged = 1;
		if (num >= st->next_num)
			st->next_num = num + 1;
		return 0;
	}
	if ((run = by_num(L, num)) == NULL)
		return gd_state_fail(st, "corrupt record at offset %" PRIu64 ": run number "
		    "%" PRIu32 " has no run record before it", at, num);
	switch (type) {
	case GD_SR_ACKS:
		if ((len - 4) % ACK_SIZE != 0)
			break;
		for (i = 0; i < (len - 4) / ACK_SIZE; i++) {
			struct gd_srange m;
			gd_wire_ack_at(b + 4, i, &m.lo, &m.id_lo);
			m.hi = m.lo + 1;
			m.linear = 1;
			if (m.lo == UINT64_MAX)
				return gd_state_fail(st, "corrupt acks record at offset "
				    "%" PRIu64 ": index 2^64-1", at);
			if (gd_srun_add_range(run, &m) != 0 ||
			    (run->origin[0] == '@' &&
			    gd_srun_cid_add(run, m.id_lo) != 0))
				return gd_state_fail(st, "out of memory");
		}
		return 0;
	case GD_SR_RANGES:
		if ((len - 4) % RANGE_SIZE != 0)
			break;
		for (i = 0; i < (len - 4) / RANGE_SIZE; i++) {
			const uint8_t *p = b + 4 + (size_t)i * RANGE_SIZE;
			struct gd_srange m = { gd_get64(p), gd_get64(p + 8),
				gd_get64(p + 16), gd_get64(p + 24) };
			if (m.lo >= m.hi || m.linear > 1)
				return gd_state_fail(st, "corrupt ranges record at offset "
				    "%" PRIu64 ": range %u is not one", at, i);
			if (gd_srun_add_range(run, &m) != 0)
				return gd_state_fail(st, "out of memory");
		}
		return 0;
	case GD_SR_CIDS:
		if ((len - 4) % CID_SIZE != 0 || L->version < 2 ||
		    run->origin[0] != '@')
			break;
		for (i = 0; i < (len - 4) / CID_SIZE; i++)
			if (gd_srun_cid_add(run, gd_get64(b + 4 +
			    (size_t)i * CID_SIZE)) != 0)
				return gd_state_fail(st, "out of memory");
		return 0;
	case GD_SR_FLOOR:
		if (len != 12)
			break;
		gd_state_floor(run, gd_get64(b + 4));
		run->floor_dirty = 0;
		return 0;
	}
	return gd_state_fail(st, "corrupt record at offset %" PRIu64 ": a body of %u "
	    "bytes for type %d", at, len, type);
}

int gd_state_load(struct gd_state *st, uint64_t size)
{
	struct loader L = { st, { 0 }, 0, size, NULL, GD_STATE_VERSION };
	uint8_t want[GD_STATE_HDR];
	int rc = -1;

	gd_dbuf_init_sized(&L.d, LOAD_READ, LOAD_MAX);
	gd_state_header(want, GD_STATE_VERSION);
	if (fill(&L, GD_STATE_HDR) != 0)
		goto out;
	if (llen(&L) < GD_STATE_HDR) {
		if (memcmp(lbuf(&L), want, llen(&L)) != 0) {
			gd_state_fail(st, "not a gdsub state file (%zu bytes, no header)",
			    llen(&L));
			goto out;
		}
		st->torn_at = 0;	/* created, then a crash: no record yet */
		st->torn_bytes = llen(&L);
		rc = 0;
		goto out;
	}
	if (memcmp(lbuf(&L), want, 8) != 0) {	/* the magic */
		gd_state_fail(st, "not a gdsub state file (bad magic)");
		goto out;
	}
	if (gd_get32(lbuf(&L) + 8) == 1 + ((uint32_t)GD_STATE_HDR << 16)) {
		L.version = 1;	/* before cluster ids: read, rewritten as 2 */
		gd_state_header(want, 1);
	}
	if (memcmp(lbuf(&L), want, GD_STATE_HDR) != 0) {
		gd_state_fail(st, "unsupported state file version %u, or a corrupt header",
		    (unsigned)gd_get32(lbuf(&L) + 8) & 0xffff);
		goto out;
	}
	consume(&L, GD_STATE_HDR);
	for (;;) {
		uint32_t len;
		int type;
		size_t total;
		if (fill(&L, REC_HDR) != 0)
			goto out;
		if (llen(&L) == 0)
			break;
		if (llen(&L) < REC_HDR)
			goto torn;
		type = lbuf(&L)[0];
		len = gd_get32(lbuf(&L) + 4);
		if (type < GD_SR_RUN || type > GD_SR_CIDS || lbuf(&L)[1] ||
		    lbuf(&L)[2] || lbuf(&L)[3] || len > GD_STATE_REC_MAX) {
			uint64_t at = L.pos;
			int z = rest_is_zero(&L);
			if (z < 0)
				goto out;
			if (z) {
				L.pos = at;
				goto torn;
			}
			gd_state_fail(st, "corrupt record at offset %" PRIu64 ": bad "
			    "record header", at);
			goto out;
		}
		total = REC_HDR + len + REC_CRC;
		if (fill(&L, total) != 0)
			goto out;
		if (llen(&L) < total)
			goto torn;
		if (gd_get32(lbuf(&L) + REC_HDR + len) !=
		    gd_crc32c(0, lbuf(&L), REC_HDR + len)) {
			if (L.pos + total == size)
				goto torn;
			gd_state_fail(st, "corrupt record at offset %" PRIu64 ": CRC "
			    "mismatch, and %" PRIu64 " bytes follow it", L.pos,
			    size - L.pos - total);
			goto out;
		}
		if (apply(&L, type, lbuf(&L) + REC_HDR, len) != 0)
			goto out;
		consume(&L, total);
	}
	rc = 0;
	goto out;
torn:
	st->torn_at = L.pos;
	st->torn_bytes = size - L.pos;
	rc = 0;
out:
	gd_dbuf_free(&L.d);
	return rc;
}
