/* The message module: program name first, no trailing newline in formats,
 * the cause last. Writes go straight to fd 2 in one write() per line so
 * lines from concurrent programs in a pipeline do not interleave. At -v
 * and -vv every line carries a timestamp, so a trace reads as a timeline;
 * without -v no line does, traces of level 0 included.
 * A status line (gdpub --progress) is redrawn in place and erased in the
 * same write() as any message, so the two never mix.
 * Under systemd, when $JOURNAL_STREAM names our stderr, each line starts
 * with its syslog priority (<3> error, <4> warning, <6> info, <7> trace),
 * which journald reads and strips, and carries no timestamp: journald
 * stamps every line itself. */
#include "log.h"
#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *prog_name = "gdkit";
static int log_level;
static int status_shown;	/* a status line is on the terminal */
static int journald;		/* stderr is journald's stream */

#define CLEAR_LINE "\r\033[K"

/* $JOURNAL_STREAM is "DEVICE:INODE" of the stream systemd connected;
 * it names our stderr only if fd 2 is still that stream (not redirected
 * by a shell in between). */
int gd_log_journald(const char *env, int fd)
{
	unsigned long long dev, ino;
	struct stat st;
	char tail;

	if (env == NULL || sscanf(env, "%llu:%llu%c", &dev, &ino, &tail) != 2 ||
	    fstat(fd, &st) != 0)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

void gd_log_init(const char *prog)
{
	const char *s = strrchr(prog, '/');
	prog_name = s ? s + 1 : prog;
	journald = gd_log_journald(getenv("JOURNAL_STREAM"), 2);
}

const char *gd_prog(void) { return prog_name; }
void gd_log_level(int level) { log_level = level; }

static void emit(const char *tag, const char *fmt, va_list ap)
{
	char line[2048];
	int n = 0;

	if (status_shown) {
		memcpy(line, CLEAR_LINE, sizeof(CLEAR_LINE) - 1);
		n = (int)sizeof(CLEAR_LINE) - 1;
		status_shown = 0;
	}
	if (journald)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "<%c>",
		    tag == NULL ? '3' : tag[0] == 'W' ? '4' : tag[0] == 'I' ?
		    '6' : '7');
	else if (log_level > 0) {
		uint64_t real = gd_clock_real_ns();
		time_t secs = (time_t)(real / 1000000000u);
		struct tm tm;
		localtime_r(&secs, &tm);
		n += (int)strftime(line + n, sizeof(line) - (size_t)n, "%H:%M:%S", &tm);
		n += snprintf(line + n, sizeof(line) - (size_t)n, ".%06lu ",
		    (unsigned long)(real % 1000000000u / 1000));
	}
	n += snprintf(line + n, sizeof(line) - (size_t)n, "%s: ", prog_name);
	if (tag != NULL && tag[0] == 'W')
		n += snprintf(line + n, sizeof(line) - (size_t)n, "warning: ");
	if ((size_t)n < sizeof(line))
		n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if ((size_t)n >= sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(2, line, (size_t)n);
}

void gd_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(NULL, fmt, ap);
	va_end(ap);
}

void gd_warn(const char *fmt, ...)
{
	va_list ap;
	if (log_level < 0)
		return;
	va_start(ap, fmt);
	emit("W", fmt, ap);
	va_end(ap);
}

void gd_info(const char *fmt, ...)
{
	va_list ap;
	if (log_level < 0)
		return;
	va_start(ap, fmt);
	emit("I", fmt, ap);
	va_end(ap);
}

void gd_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(NULL, fmt, ap);
	va_end(ap);
}

void gd_trace(int level, const char *fmt, ...)
{
	va_list ap;
	if (log_level < level)
		return;
	va_start(ap, fmt);
	emit("T", fmt, ap);
	va_end(ap);
}

void gd_usage_err(const char *fmt, ...)
{
	va_list ap;
	char line[256];
	int n;
	va_start(ap, fmt);
	emit(NULL, fmt, ap);
	va_end(ap);
	n = snprintf(line, sizeof(line), "%stry '%s --help'\n",
	    journald ? "<3>" : "", prog_name);
	(void)!write(2, line, (size_t)n);
}

void gd_status(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), CLEAR_LINE "%s: ", prog_name);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	status_shown = 1;
	(void)!write(2, line, (size_t)n);
}

void gd_status_clear(void)
{
	if (!status_shown)
		return;
	status_shown = 0;
	(void)!write(2, CLEAR_LINE, sizeof(CLEAR_LINE) - 1);
}
