/* Shared by state.c (the file) and state_runs.c (the ranges in memory). */
#ifndef GD_STATE_INT_H
#define GD_STATE_INT_H

#include "state.h"

#include "stream.h"
#include "wire.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The file's records: a header (type, three zero bytes, body length), the
 * body (a u32 run number first), a CRC32C of both. */
#define REC_HDR 8
#define REC_CRC 4
#define RANGE_SIZE 32
#define ACK_SIZE 16
#define CID_SIZE 8
#define RUN_FIXED 12		/* u32 run number, u64 epoch */
#define REC_MAX_TOTAL (REC_HDR + GD_STATE_REC_MAX + REC_CRC)

/* err set from fmt; returns -1. Here, not in state.c, so that the
 * reader (state_load.c) calls nothing of the writer that calls it. */
static inline __attribute__((format(printf, 2, 3))) int
gd_state_fail(struct gd_state *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	return -1;
}

/* The GD_STATE_HDR bytes a file of version v starts with: the magic,
 * the version, the header's length, their CRC32C. */
static inline void gd_state_header(uint8_t *p, unsigned v)
{
	static const uint8_t magic[8] = { 0x89, 'G', 'D', 'S', 0x0d, 0x0a,
	    0x1a, 0x0a };

	memcpy(p, magic, 8);
	p[8] = (uint8_t)v;	/* version */
	p[9] = 0;
	p[10] = GD_STATE_HDR;
	p[11] = 0;
	gd_put32(p + 12, gd_crc32c(0, p, 12));
}

/* state_load.c: read the file's size bytes into the runs (at open). 0,
 * or -1 with err. */
int gd_state_load(struct gd_state *st, uint64_t size);

/* Merge [in->lo, in->hi) into run's ranges; past the bound of ranges
 * per run the oldest is forgotten. -1 when out of memory. */
int gd_srun_add_range(struct gd_srun *run, const struct gd_srange *in);

#endif
