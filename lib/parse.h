/* Strict, bounded parsing of everything a user types: numbers, durations,
 * host:port. No atoi: every parser rejects trailing junk and range errors. */
#ifndef GD_PARSE_H
#define GD_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* 0 on success, -1 on error (the caller names the value in its message) */
int gd_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
/* decimal digits only, 0 .. 2^64-1; len-bounded, no NUL needed */
int gd_parse_u64n(const char *s, size_t len, uint64_t *out);
int gd_parse_u64(const char *s, uint64_t *out);
/* An ID as keys and status lines write it: "0" or decimal digits without
 * a leading zero, 0 .. 2^64-1; len-bounded. -2 for digits with a leading
 * zero ("0001" would be reported as "1", matching no input line), -1 for
 * anything else that is not an ID. */
int gd_parse_id(const char *s, size_t len, uint64_t *out);
/* Split a gdpub --ids record, "ID<TAB>payload" without its delimiter:
 * 0 with *id and *payload_off (the payload is rec[*payload_off .. len)),
 * else what gd_parse_id says (-2: leading zeros) or -1 (no TAB within
 * the first 21 bytes, no ID). Reads only rec[0 .. len). */
int gd_parse_id_record(const char *rec, size_t len, uint64_t *id,
    size_t *payload_off);
/* decimal digits of v into buf (at least 20 bytes), no NUL; returns the
 * length. For hot paths where printf is too slow. */
size_t gd_u64toa(char *buf, uint64_t v);
/* The digits of the number written last, for gd_u64toa_next: ids mostly
 * come one after the other, and one more is mostly one digit changed.
 * Zeroed: nothing written yet. */
struct gd_u64txt {
	uint64_t v;
	size_t n;		/* 0: none */
	char d[20];
};
/* gd_u64toa(buf, v), from the digits of the number before when v is it
 * or the one after it. */
size_t gd_u64toa_next(struct gd_u64txt *t, char *buf, uint64_t v);
/* seconds, may be fractional ("0.25"); finite, within [min, max] */
int gd_parse_dur(const char *s, double min, double max, double *out);
/* "HOST:PORT" or "[V6]:PORT"; host copied without brackets */
int gd_parse_hostport(const char *s, char *host, size_t hostsz, int *port);
/* 1 when host may be written into a block's key and a stream's origin:
 * a host name of letters, digits, '-', '.' and '_' (which covers IPv4
 * literals), at most GD_VALID_HOST_MAX bytes, or an IPv6 literal (keys
 * bracket it); else 0. */
#define GD_VALID_HOST_MAX 253
#define GD_VALID_HOST_WHAT "a host name (at most 253 letters, digits, " \
	"'-', '.' and '_'), an IPv4 or an IPv6 address"
int gd_valid_host(const char *host);
/* write "HOST:PORT" (bracketing IPv6) into buf; returns length */
int gd_fmt_hostport(char *buf, size_t sz, const char *host, int port);

#endif
