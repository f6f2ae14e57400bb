/* Config files: lines counted here (Debian's inih has no line numbers in
 * its handler), so every error names FILE:LINE: KEY; lines longer than
 * inih takes are split here by inih's rules; a NUL byte and a [section]
 * header are errors, a key set twice a warning. Each key=value goes to
 * conf.c's table (gd_conf_set_named). */
#include "conf.h"
#include "log.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Debian's inih reads lines of at most 197 bytes (INI_MAX_LINE 200, its
 * newline and NUL included) and cannot be rebuilt here; gdkit.conf(5)
 * promises string values of 4096 bytes. So the reader takes lines of up
 * to CONF_LINE_MAX bytes itself: a line that fits inih's buffer goes to
 * inih as it is; a longer one is split into key and value here, by
 * inih's own rules, and inih gets a short stand-in for it ("k=v" or
 * "#"), whose handler call uses the key and value kept aside. Lines
 * still go through inih one for one, so its error line numbers hold. */
#define CONF_LINE_MAX 8192

struct load_ctx {
	struct gd_conf *c;
	FILE *fp;
	const char *file;
	int line;
	int err;		/* exit code once an error was found: reading stops */
	char msg[1536];		/* that error, printed after the parse unless
				 * inih found a syntax error on an earlier line */
	char *buf;		/* the current line, CONF_LINE_MAX + 1 bytes */
	const char *name, *value;	/* the current line's key and value, when
				 * parsed here (they point into buf), or NULL */
	struct seen {		/* per key of conf.c's table, for repeats */
		int first, last, times;
	} *seen;
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	    c == '\f';
}

static char *rstrip(char *s)
{
	char *e = s + strlen(s);
	while (e > s && is_space(e[-1]))
		*--e = '\0';
	return s;
}

/* inih's find_chars_or_comment: the first of chars (NULL: none) or of an
 * inline comment, a ';' after white space; the end of s if neither */
static char *chars_or_comment(char *s, const char *chars)
{
	int was_space = 0;

	while (*s && !(chars && strchr(chars, *s)) && !(was_space && *s == ';')) {
		was_space = is_space(*s);
		s++;
	}
	return s;
}

/* A line too long for inih, whitespace before it removed: what inih gets
 * in its place, with x->name and x->value set for a key=value line. */
static const char *stand_in(struct load_ctx *x, char *line)
{
	char *end;

	if (x->line == 1 && memcmp(line, "\xEF\xBB\xBF", 3) == 0)
		line += 3;	/* a UTF-8 BOM, which inih skips */
	rstrip(line);
	if (*line == '#' || *line == ';' || *line == '\0')
		return "#\n";
	end = chars_or_comment(line, "=:");
	if (*end != '=' && *end != ':')
		return "?\n";	/* inih reports it: expected key=value */
	*end++ = '\0';
	x->name = rstrip(line);
	*chars_or_comment(end, NULL) = '\0';
	while (is_space(*end))
		end++;
	x->value = rstrip(end);
	return "k=v\n";
}

/* Keep the first error, "LINE: what"; the file name is added when it is
 * printed. */
__attribute__((format(printf, 2, 3)))
static void fail(struct load_ctx *x, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(x->msg, sizeof(x->msg), "%d: ", x->line);

	va_start(ap, fmt);
	vsnprintf(x->msg + n, sizeof(x->msg) - (size_t)n, fmt, ap);
	va_end(ap);
	x->err = GD_EX_CONFIG;
}

/* The current line's [section] header (a UTF-8 BOM aside, which inih
 * skips on the first line), or NULL when it is not one. */
static char *section(struct load_ctx *x)
{
	char *t = x->buf;

	if (x->line == 1 && strncmp(t, "\xEF\xBB\xBF", 3) == 0)
		t += 3;
	return *t == '[' ? t : NULL;
}

/* inih reader: one line at a time, counting lines for our messages. */
static char *reader(char *str, int num, void *stream)
{
	struct load_ctx *x = stream;
	int ch, over = 0, col = 0;
	size_t n = 0;
	char *sec;

	x->name = x->value = NULL;
	if (x->err || feof(x->fp) || ferror(x->fp))
		return NULL;
	while ((ch = getc(x->fp)) != EOF && ch != '\n') {
		/* a NUL would end the line for inih and hide the rest of it
		 * (a file starting with one would read as empty) */
		if (ch == '\0') {
			x->line++;
			fail(x, "NUL byte at column %d: a config file is text, "
			    "without NUL bytes", col + 1);
			return NULL;
		}
		col++;
		/* inih would take an indented line as the continuation of the
		 * previous value; a config line is never that here */
		if (n == 0 && (ch == ' ' || ch == '\t'))
			continue;
		if (n < CONF_LINE_MAX)
			x->buf[n++] = (char)ch;
		else
			over = 1;
	}
	if (ch == EOF && n == 0 && ferror(x->fp) == 0) {
		x->line++;
		return NULL;
	}
	x->line++;
	x->buf[n] = '\0';
	if (over) {	/* an error naming the key, if the line starts with one */
		char *end = chars_or_comment(x->buf, "=:");
		int sep = *end == '=' || *end == ':';
		*end = '\0';
		rstrip(x->buf);
		if (sep && *x->buf != '\0' && strlen(x->buf) <= 64)
			fail(x, "%s: line too long (at most %d bytes)", x->buf,
			    CONF_LINE_MAX);
		else
			fail(x, "line too long (at most %d bytes)", CONF_LINE_MAX);
		return NULL;
	}
	if ((sec = section(x)) != NULL) {
		/* inih would read the keys after it as they are, the header
		 * ignored: a file written for another program's sections, or
		 * meant for one section of it, would be taken whole */
		*chars_or_comment(sec, NULL) = '\0';
		rstrip(sec);
		fail(x, "section header '%.64s%s': a gdkit config file has no "
		    "sections, only KEY=VALUE lines", sec,
		    strlen(sec) > 64 ? "..." : "");
		return NULL;
	}
	if (n + 2 > (size_t)num - 1) {	/* with "\n" and NUL, one to spare */
		snprintf(str, (size_t)num, "%s", stand_in(x, x->buf));
		return str;
	}
	memcpy(str, x->buf, n);
	str[n++] = '\n';
	str[n] = '\0';
	return str;
}

/* A key set again is taken with its last value, as before; it is said
 * (after the file is read, once per key), since the earlier line looks in
 * force to whoever reads the file from the top. */
static void note_repeat(struct load_ctx *x, const char *name)
{
	int repeats, i = gd_conf_key_index(name, &repeats);

	if (i < 0 || repeats)
		return;
	if (x->seen[i].times++ == 0)
		x->seen[i].first = x->line;
	x->seen[i].last = x->line;
}

/* One warning per key set more than once, in the order of their last
 * lines: "FILE:LAST: KEY: set N times (first on line F); the value of
 * line LAST is used". */
static void warn_repeats(const struct load_ctx *x)
{
	size_t i, nk = gd_conf_nkeys();
	int done = 0;

	for (;;) {
		int best = -1;
		for (i = 0; i < nk; i++)
			if (x->seen[i].times > 1 && x->seen[i].last > done &&
			    (best < 0 || x->seen[i].last < x->seen[best].last))
				best = (int)i;
		if (best < 0)
			return;
		gd_warn("%s:%d: %s: set %d times (first on line %d); the value "
		    "of line %d is used", x->file, x->seen[best].last,
		    gd_conf_key_at((size_t)best, NULL, NULL),
		    x->seen[best].times, x->seen[best].first,
		    x->seen[best].last);
		done = x->seen[best].last;
	}
}

static int handler(void *user, const char *section, const char *name,
    const char *value)
{
	struct load_ctx *x = user;
	char why[768];

	(void)section;
	if (x->err)
		return 1;
	if (x->name != NULL) {	/* a long line's, kept aside by reader() */
		name = x->name;
		value = x->value;
	}
	if (name[0] == '\0') {
		fail(x, "a value without a key: the line starts with '=' "
		    "(expected KEY=VALUE)");
		return 1;
	}
	switch (gd_conf_set_named(x->c, name, value, why, sizeof(why))) {
	case 0:
		note_repeat(x, name);
		x->c->set_at[gd_conf_key_index(name, NULL)] = x->line;
		break;
	case GD_CONF_UNKNOWN:
		fail(x, "%.*s: unknown key",
		    strlen(name) > 64 ? 64 : (int)strlen(name), name);
		break;
	case GD_CONF_FAMILY:
		fail(x, "%s: not a %s key", name,
		    x->c->family == GD_FAM_PUB ? "publisher (GDpub_*)" :
		    "subscriber (GDsub_*)");
		break;
	case GD_CONF_INVALID:
		if (strlen(value) > 80)	/* the start of it, and how long */
			fail(x, "%s: invalid value '%.64s...' (%zu bytes): %s",
			    name, value, strlen(value), why);
		else
			fail(x, "%s: invalid value '%s': %s", name, value, why);
		break;
	}
	return 1;
}

int gd_conf_load(struct gd_conf *c, const char *file)
{
	struct load_ctx x;
	int rc;

	memset(&x, 0, sizeof(x));
	x.c = c;
	x.file = file;
	if ((x.buf = malloc(CONF_LINE_MAX + 1)) == NULL ||
	    (x.seen = calloc(gd_conf_nkeys(), sizeof(*x.seen))) == NULL) {
		gd_err("%s: cannot read config file: out of memory", file);
		free(x.buf);
		return GD_EX_CONFIG;
	}
	x.fp = fopen(file, "r");
	if (x.fp == NULL) {
		gd_err("%s: cannot read config file: %s", file, strerror(errno));
		free(x.buf);
		free(x.seen);
		return GD_EX_CONFIG;
	}
	/* reading stops at the first error found here; inih goes on past a
	 * syntax error, and returns the first one's line */
	rc = ini_parse_stream(reader, &x, handler, &x);
	if (ferror(x.fp) && !x.err) {
		gd_err("%s: cannot read config file: %s", file, strerror(errno));
		fclose(x.fp);
		free(x.buf);
		free(x.seen);
		return GD_EX_CONFIG;
	}
	fclose(x.fp);
	free(x.buf);
	if (x.err && rc == 0) {
		gd_err("%s:%s", file, x.msg);
		free(x.seen);
		return x.err;
	}
	if (rc != 0) {
		gd_err("%s:%d: syntax error: expected key=value", file, rc);
		free(x.seen);
		return GD_EX_CONFIG;
	}
	warn_repeats(&x);
	free(x.seen);
	free(c->path);
	c->path = strdup(file);
	return 0;
}
