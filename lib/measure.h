/* gdinspect measure: what a run achieved, from the keys (or IDs) sent and
 * the keys received, as the reliability model defines it: reliability
 * R = Ru/S, uniqueness UR = Ru/R, and the delivery mode they show. */
#ifndef GD_MEASURE_H
#define GD_MEASURE_H

#include <stdint.h>

struct gd_measure {
	uint64_t sent;		/* S: distinct blocks sent */
	uint64_t received;	/* R: blocks received, duplicates included */
	uint64_t unique;	/* Ru: distinct sent blocks received */
	uint64_t duplicates;	/* received lines repeating a sent block */
	uint64_t unexpected;	/* received lines that were never sent */
	double reliability, uniqueness;
	const char *mode;	/* exactly-once, at-least-once, at-most-once, unreliable */
};

/* Read both files; returns 0, or prints why and returns an exit code. */
int gd_measure_files(const char *sent, const char *received,
    struct gd_measure *m);
/* One header line and one row, or a JSON object with --json. */
void gd_measure_print(const struct gd_measure *m, int json);

#endif
