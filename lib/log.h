/* Messages: every line starts with the program name, says what failed and
 * ends with the cause. One module so all four programs speak alike. */
#ifndef GD_LOG_H
#define GD_LOG_H

#include <stdarg.h>

/* Exit codes (SPEC §9), one table for every program. */
enum gd_exit {
	GD_EX_OK = 0,
	GD_EX_FAIL = 1,		/* NACK/REJECT (gdpub), unacked keys (gdack) */
	GD_EX_USAGE = 64,	/* bad command line */
	GD_EX_DATAERR = 65,	/* malformed input that cannot be skipped */
	GD_EX_UNAVAILABLE = 69,	/* a needed peer is unreachable */
	GD_EX_IOERR = 74,	/* journal or state file I/O */
	GD_EX_NOPERM = 77,	/* refused by authentication: no retry helps */
	GD_EX_CONFIG = 78,	/* config error */
	GD_EX_SIGINT = 130,
	GD_EX_SIGTERM = 143,
};

/* "s" unless n is 1, for counts in messages: "1 attempt", "2 attempts",
 * "0.5 seconds". */
static inline const char *gd_plural(double n)
{
	return n == 1 ? "" : "s";
}

void gd_log_init(const char *prog);
/* 1 when env ($JOURNAL_STREAM, "DEVICE:INODE") names the stream on fd. */
int gd_log_journald(const char *env, int fd);
const char *gd_prog(void);
/* -q = -1, default 0, -v 1, -vv 2 */
void gd_log_level(int level);

void gd_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gd_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* a notice at the default level (quiet with -q, timestamped at -v) */
void gd_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A trace, shown at -v (level 1) or -vv (level 2); level 0 always (but
 * not at -q). Timestamped at -v and -vv only, like every other line. */
void gd_trace(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* a line an option asked for (gdpub --progress=N): shown at every level,
 * -q included, timestamped at -v like the rest */
void gd_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A status line on stderr, redrawn in place ("\r" PROG ": " text, then
 * clear to the end of the line); the next message or gd_status_clear
 * erases it. */
void gd_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gd_status_clear(void);
/* usage error: message, then "try 'PROG --help'" */
void gd_usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
