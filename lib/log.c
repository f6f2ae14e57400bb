/* The message module: program name first, no trailing newline in formats,
 * the cause last. Writes go straight to fd 2 in one write() per line so
 * lines from concurrent programs in a pipeline do not interleave. */
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *prog_name = "gdkit";
static int log_level;

void gd_log_init(const char *prog)
{
	const char *s = strrchr(prog, '/');
	prog_name = s ? s + 1 : prog;
}

const char *gd_prog(void) { return prog_name; }
void gd_log_level(int level) { log_level = level; }
int gd_log_get_level(void) { return log_level; }

static void emit(const char *tag, const char *fmt, va_list ap)
{
	char line[2048];
	int n = 0;

	if (tag != NULL && tag[0] == 'T') {
		struct timespec ts;
		struct tm tm;
		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		n = (int)strftime(line, sizeof(line), "%H:%M:%S", &tm);
		n += snprintf(line + n, sizeof(line) - (size_t)n, ".%06ld ",
		    ts.tv_nsec / 1000);
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
	n = snprintf(line, sizeof(line), "try '%s --help'\n", prog_name);
	(void)!write(2, line, (size_t)n);
}
