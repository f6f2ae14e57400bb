/* gdinspect: one request on the control socket, a table back. The reply
 * is "NAME ROWS", a header row and ROWS rows of TAB-separated fields; the
 * header gives the JSON field names, so new columns need no change here. */
#include "inspect.h"
#include "ctl.h"
#include "log.h"
#include "parse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_COLS 32

struct table {
	char **cells;		/* rows x ncols, row 0 the header */
	size_t nrows, ncols, cap;
};

static void table_free(struct table *t)
{
	size_t i;
	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

static int table_row(struct table *t, char *line)
{
	char *f[MAX_COLS];
	size_t n = 0, i;

	f[n++] = line;
	for (char *p = line; *p; p++)
		if (*p == '\t' && n < MAX_COLS) {
			*p = '\0';
			f[n++] = p + 1;
		}
	if (t->nrows == 0)
		t->ncols = n;
	else if (n != t->ncols)
		return -1;
	if ((t->nrows + 1) * t->ncols > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		char **nc;
		while (ncap < (t->nrows + 1) * t->ncols)
			ncap *= 2;
		if ((nc = realloc(t->cells, ncap * sizeof(*nc))) == NULL)
			return -1;
		t->cells = nc;
		t->cap = ncap;
	}
	for (i = 0; i < n; i++)
		if ((t->cells[t->nrows * t->ncols + i] = strdup(f[i])) == NULL)
			return -1;
	t->nrows++;
	return 0;
}

static int is_number(const char *s)
{
	double d;
	return s[0] != '\0' && s[0] != '+' && gd_parse_dur(s, -1e300, 1e300, &d) == 0;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void print_table(const struct table *t, int json)
{
	size_t r, c, w[MAX_COLS] = { 0 };

	if (json) {
		for (r = 1; r < t->nrows; r++) {
			fputc('{', stdout);
			for (c = 0; c < t->ncols; c++) {
				const char *v = t->cells[r * t->ncols + c];
				if (c)
					fputc(',', stdout);
				json_str(stdout, t->cells[c]);
				fputc(':', stdout);
				if (is_number(v))
					fputs(v, stdout);
				else
					json_str(stdout, v);
			}
			fputs("}\n", stdout);
		}
		return;
	}
	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++) {
			size_t l = strlen(t->cells[r * t->ncols + c]);
			if (l > w[c])
				w[c] = l;
		}
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *v = t->cells[r * t->ncols + c];
			int last = c + 1 == t->ncols;
			if (r == 0) {
				for (const char *p = v; *p; p++)
					fputc(*p >= 'a' && *p <= 'z' ? *p - 32 : *p, stdout);
				if (!last)
					printf("%*s", (int)(w[c] - strlen(v) + 2), "");
			} else if (is_number(v) && !last) {
				printf("%*s%s  ", (int)(w[c] - strlen(v)), "", v);
			} else {
				if (last)
					fputs(v, stdout);
				else
					printf("%-*s  ", (int)w[c], v);
			}
		}
		fputc('\n', stdout);
	}
}

static int query(const char *path, const char *cmd, int json)
{
	struct gd_lreader *rd;
	struct table t;
	char *line, name[32];
	size_t len;
	uint64_t rows, i;
	int fd, rc = 0;

	fd = gd_ctl_connect(path, 0);
	if (fd < 0) {
		gd_err("nothing answers at %s: %s (is gdpub or gdsub running?)",
		    path, strerror(errno));
		return GD_EX_UNAVAILABLE;
	}
	rd = calloc(1, sizeof(*rd));
	memset(&t, 0, sizeof(t));
	if (rd == NULL) {
		close(fd);
		return GD_EX_FAIL;
	}
	rd->fd = fd;
	if (gd_write_all(fd, cmd, strlen(cmd)) != 0 || gd_write_all(fd, "\n", 1) != 0 ||
	    gd_lreader_line(rd, &line, &len) != 1) {
		gd_err("no answer from %s: %s", path, strerror(errno));
		rc = GD_EX_UNAVAILABLE;
		goto out;
	}
	if (strncmp(line, "error ", 6) == 0) {
		gd_err("%s: %s", cmd, line + 6);
		rc = GD_EX_USAGE;
		goto out;
	}
	if (sscanf(line, "%31s %" SCNu64, name, &rows) != 2 || strcmp(name, cmd) != 0) {
		gd_err("unexpected answer from %s: %.80s", path, line);
		rc = GD_EX_UNAVAILABLE;
		goto out;
	}
	for (i = 0; i < rows + 1; i++) {
		if (gd_lreader_line(rd, &line, &len) != 1 || table_row(&t, line) != 0) {
			gd_err("truncated or malformed answer from %s", path);
			rc = GD_EX_UNAVAILABLE;
			goto out;
		}
	}
	print_table(&t, json);
	fflush(stdout);
out:
	table_free(&t);
	free(rd);
	close(fd);
	return rc;
}

int gd_inspect_run(const struct gd_conf *c, const struct gd_inspect_opts *o)
{
	char path[108];
	int rc = 0;

	if (o->ctl)
		snprintf(path, sizeof(path), "%s", o->ctl);
	else if (c->port > 0)
		rc = gd_ctl_path_pub(c, path, sizeof(path));
	else if (c->npubs > 0)
		rc = gd_ctl_path_sub(c, path, sizeof(path));
	else {
		gd_usage_err("no target: give -c FILE (a gdpub or gdsub config) or --ctl PATH");
		return GD_EX_USAGE;
	}
	if (!o->ctl && rc != 0)
		return rc;
	for (;;) {
		if (o->watch > 0 && isatty(1))
			fputs("\033[H\033[2J", stdout);
		rc = query(path, o->cmd, o->json);
		if (rc != 0 || o->watch <= 0)
			return rc;
		{
			struct timespec ts;
			ts.tv_sec = (time_t)o->watch;
			ts.tv_nsec = (long)((o->watch - (double)ts.tv_sec) * 1e9);
			nanosleep(&ts, NULL);
		}
	}
}
