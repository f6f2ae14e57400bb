/* gdinspect: one request on the control socket, a table back. The reply
 * is "NAME ROWS", a header row and ROWS rows of TAB-separated fields; the
 * header gives the JSON field names and their types (NAME:n a number,
 * NAME:s a string), so new columns need no change here and a subscriber
 * named "42" stays a string. */
#include "inspect.h"
#include "ctl_client.h"
#include "dbuf.h"
#include "fileio.h"
#include "log.h"
#include "parse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* columns a reply may have: gdpub's stats has 37 at a cluster member; a
 * row past this keeps the rest in its last cell */
#define MAX_COLS 64

/* The reply's rows, held as they came: every cell NUL-terminated in
 * text, found by its offset (text moves as it grows). Both are capped by
 * what one reply may be (GD_CTL_REPLY_MAX): a cell takes at least two of
 * its bytes. */
struct table {
	struct gd_dbuf text;	/* the cells of every row, row 0 the header */
	struct gd_dbuf cells;	/* size_t offsets into text, rows x ncols */
	size_t nrows, ncols;
	char type[MAX_COLS];	/* 'n' number, 's' string */
};

static void table_init(struct table *t)
{
	memset(t, 0, sizeof(*t));
	gd_dbuf_init_sized(&t->text, 4096, GD_CTL_REPLY_MAX);
	gd_dbuf_init_sized(&t->cells, 4096,
	    GD_CTL_REPLY_MAX / 2 * sizeof(size_t));
}

static void table_free(struct table *t)
{
	gd_dbuf_free(&t->text);
	gd_dbuf_free(&t->cells);
}

static const char *cell(const struct table *t, size_t r, size_t c)
{
	size_t off;

	memcpy(&off, gd_dbuf_ptr(&t->cells) + (r * t->ncols + c) * sizeof(off),
	    sizeof(off));
	return gd_dbuf_ptr(&t->text) + off;
}

/* split a row at its TABs, in place */
static size_t split(char *line, char **f)
{
	size_t n = 0;

	f[n++] = line;
	for (char *p = line; *p; p++)
		if (*p == '\t' && n < MAX_COLS) {
			*p = '\0';
			f[n++] = p + 1;
		}
	return n;
}

/* A control byte a peer sent (an escape sequence would reach the
 * terminal) as \xHH; the rest, UTF-8 names included, as it came. */
static int is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* the cell s and its NUL into text, control bytes escaped */
static int add_clean(struct gd_dbuf *text, const char *s)
{
	char esc[5];
	int rc = GD_DBUF_OK;

	for (;;) {
		size_t n = 0;
		while (s[n] != '\0' && !is_ctl((unsigned char)s[n]))
			n++;
		if ((rc = gd_dbuf_add(text, s, n)) != GD_DBUF_OK)
			return rc;
		if (s[n] == '\0')
			return gd_dbuf_add(text, "", 1);
		snprintf(esc, sizeof(esc), "\\x%02x", (unsigned char)s[n]);
		if ((rc = gd_dbuf_add(text, esc, 4)) != GD_DBUF_OK)
			return rc;
		s += n + 1;
	}
}

/* a line of len bytes to f, control bytes escaped */
static void put_clean(FILE *f, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (is_ctl((unsigned char)s[i]))
			fprintf(f, "\\x%02x", (unsigned char)s[i]);
		else
			fputc(s[i], f);
}

/* Add a row (split in place); -1 if its width is not the header's or
 * the table would pass its cap. */
static int table_row(struct table *t, char *line)
{
	char *f[MAX_COLS];
	size_t n, i, base = gd_dbuf_len(&t->text);

	n = split(line, f);
	if (t->nrows == 0) {
		t->ncols = n;
		for (i = 0; i < n; i++) {
			char *colon = strrchr(f[i], ':');
			t->type[i] = 's';	/* untyped: a string, never a guess */
			if (colon != NULL && colon[1] != '\0' && colon[2] == '\0') {
				t->type[i] = colon[1] == 'n' ? 'n' : 's';
				*colon = '\0';
			}
		}
	} else if (n != t->ncols) {
		return -1;
	}
	for (i = 0; i < n; i++) {
		size_t off = gd_dbuf_len(&t->text);
		if (add_clean(&t->text, f[i]) != GD_DBUF_OK ||
		    gd_dbuf_add(&t->cells, &off, sizeof(off)) != GD_DBUF_OK) {
			/* leave the table as it was: whole rows only */
			gd_dbuf_truncate(&t->text, base);
			gd_dbuf_truncate(&t->cells, t->nrows * t->ncols *
			    sizeof(size_t));
			return -1;
		}
	}
	t->nrows++;
	return 0;
}

/* a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int json_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return 0;
	if (*s == '.') {
		if (!(*++s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* one row as a JSON object, typed by the header t holds */
static void json_row(const struct table *t, char *const *f)
{
	size_t c;

	fputc('{', stdout);
	for (c = 0; c < t->ncols; c++) {
		if (c)
			fputc(',', stdout);
		json_str(stdout, cell(t, 0, c));
		fputc(':', stdout);
		/* a number column says "-" when there is no value */
		if (t->type[c] == 'n' && strcmp(f[c], "-") == 0)
			fputs("null", stdout);
		else if (t->type[c] == 'n' && json_number(f[c]))
			fputs(f[c], stdout);
		else
			json_str(stdout, f[c]);
	}
	fputs("}\n", stdout);
}

/* Spaces, n of them. The run is sized by its literal, so no terminating
 * NUL is ever written as padding. */
static void pad(size_t n)
{
	static const char run[] = "                                                                ";
	static const size_t nrun = sizeof(run) - 1;

	while (n > 0) {
		size_t k = n < nrun ? n : nrun;
		fwrite(run, 1, k, stdout);
		n -= k;
	}
}

/* Aligned columns: numbers to the right, strings to the left, the last
 * column as it is; two spaces between. fwrite, not printf, per cell: a
 * million pending blocks are nine million cells. */
static void print_table(const struct table *t)
{
	size_t r, c, w[MAX_COLS] = { 0 };

	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++) {
			size_t l = strlen(cell(t, r, c));
			if (l > w[c])
				w[c] = l;
		}
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *v = cell(t, r, c);
			size_t l = strlen(v);
			int last = c + 1 == t->ncols;
			if (r == 0) {
				for (const char *p = v; *p; p++)
					fputc(*p >= 'a' && *p <= 'z' ? *p - 32 : *p, stdout);
			} else {
				if (t->type[c] == 'n' && !last)
					pad(w[c] - l);
				fwrite(v, 1, l, stdout);
			}
			if (last)
				break;
			pad(r > 0 && t->type[c] == 'n' ? 2 : w[c] - l + 2);
		}
		fputc('\n', stdout);
	}
}

/* Connect and check who serves the socket and which protocol it speaks;
 * the fd, or -1 with *rc set. whose: what the path was derived from, for
 * the message when nothing answers, or NULL for a path given as --ctl. */
static int open_ctl(const char *path, const char *whose,
    struct gd_lreader *rd, int *rc)
{
	struct gd_ctl_peer peer;
	int fail;

	/* another user's socket is refused before any connect */
	if ((*rc = gd_ctl_trust(path, -1)) != 0)
		return -1;
	fail = gd_ctl_open(path, 0, rd, &peer);
	*rc = fail == GD_CTL_OK ? 0 : GD_EX_UNAVAILABLE;
	if (fail == GD_CTL_NOCONN && peer.err != EAGAIN) {
		if (whose != NULL)
			gd_err("nothing answers at %s, the control socket of %s: "
			    "%s (is it running, as this user?)", path, whose,
			    strerror(peer.err));
		else
			gd_err("nothing answers at %s: %s (is gdpub or gdsub running?)",
			    path, strerror(peer.err));
	} else if (fail != GD_CTL_OK) {
		gd_ctl_say(path, fail, &peer);
	}
	return rd->fd;
}

/* A reply line that did not come (errno): why, and the exit code. */
static int no_answer(const char *path, const struct gd_lreader *rd)
{
	struct gd_ctl_peer p;

	memset(&p, 0, sizeof(p));
	p.err = errno;
	p.timeout = rd->timeout;
	return gd_ctl_say(path, GD_CTL_NOANSWER, &p);
}

/* Connect, send req and read the first line of its reply, "CMD ROWS":
 * the fd, with the row count in *rows, or -1 with *rc set once said why
 * (an "error" reply is err_rc). */
static int request(const char *path, const char *whose, const char *cmd,
    const char *req, int err_rc, struct gd_lreader *rd, uint64_t *rows,
    int *rc)
{
	char *line, name[32], said[4 * 80 + 1];
	size_t len;
	int fd;

	if ((fd = open_ctl(path, whose, rd, rc)) < 0)
		return -1;
	errno = 0;
	*rc = GD_EX_UNAVAILABLE;
	if (gd_write_all(fd, req, strlen(req)) != 0 || gd_write_all(fd, "\n", 1) != 0 ||
	    gd_lreader_line(rd, &line, &len) != 1)
		no_answer(path, rd);
	else if (strncmp(line, "error ", 6) == 0) {
		gd_ctl_escape(said, sizeof(said), line + 6, len - 6, 1);
		gd_err("%s: %s", cmd, said);
		*rc = err_rc;
	} else if (sscanf(line, "%31s %" SCNu64, name, rows) != 2 ||
	    strcmp(name, cmd) != 0) {
		gd_ctl_escape(said, sizeof(said), line, len < 80 ? len : 80, 0);
		gd_err("unexpected answer from %s: %s", path, said);
	} else {
		*rc = 0;
		return fd;
	}
	close(fd);
	return -1;
}

static int query(const char *path, const char *whose, const char *cmd,
    const char *req, int json, double timeout)
{
	struct gd_lreader *rd;
	struct table t;
	char *line;
	size_t len;
	uint64_t rows, i;
	int fd, rc = 0;

	rd = calloc(1, sizeof(*rd));
	table_init(&t);
	if (rd == NULL) {
		gd_err("out of memory");
		return GD_EX_FAIL;
	}
	rd->timeout = timeout;
	if ((fd = request(path, whose, cmd, req, GD_EX_USAGE, rd, &rows,
	    &rc)) < 0) {
		table_free(&t);
		free(rd);
		return rc;
	}
	/* JSON rows go out as they come: a million pending blocks need no
	 * table; text needs every row first for the column widths */
	for (i = 0; i < rows + 1; i++) {
		char *f[MAX_COLS];
		int got = gd_lreader_line(rd, &line, &len);
		if (got != 1 || (json && i > 0 ? split(line, f) != t.ncols :
		    table_row(&t, line) != 0)) {
			fflush(stdout);
			if (got < 0 && errno == ETIMEDOUT)
				no_answer(path, rd);
			else
				gd_err("truncated or malformed answer from %s", path);
			rc = GD_EX_UNAVAILABLE;
			goto out;
		}
		if (json && i > 0)
			json_row(&t, f);
	}
	if (!json)
		print_table(&t);
	fflush(stdout);
out:
	table_free(&t);
	free(rd);
	close(fd);
	return rc;
}

/* The exposition the program renders itself (the "metrics" request, the
 * same text its --metrics serves), on stdout or in out: written to
 * out.tmp, then renamed over it, so that a collector reading it
 * (node_exporter's textfile collector) never sees half a file. */
static int prometheus(const char *path, const char *whose, const char *out,
    double timeout)
{
	struct gd_lreader *rd = calloc(1, sizeof(*rd));
	char tmp[4200], *line;
	size_t len;
	uint64_t n, i;
	FILE *f = stdout;
	int fd = -1, rc = 0;

	if (rd == NULL) {
		gd_err("out of memory");
		return GD_EX_FAIL;
	}
	rd->timeout = timeout;
	if ((fd = request(path, whose, "metrics", "metrics", GD_EX_UNAVAILABLE,
	    rd, &n, &rc)) < 0) {
		free(rd);
		return rc;
	}
	if (out != NULL) {
		snprintf(tmp, sizeof(tmp), "%s.tmp", out);
		if ((f = fopen(tmp, "w")) == NULL) {
			gd_err("cannot write '%s': %s", tmp, strerror(errno));
			rc = GD_EX_IOERR;
			goto done;
		}
	}
	for (i = 0; i < n && rc == 0; i++) {
		int got = gd_lreader_line(rd, &line, &len);
		if (got != 1) {
			if (got < 0 && errno == ETIMEDOUT)
				no_answer(path, rd);
			else
				gd_err("truncated answer from %s", path);
			rc = GD_EX_UNAVAILABLE;
			break;
		}
		put_clean(f, line, len);
		fputc('\n', f);
	}
	if (out == NULL) {
		fflush(stdout);
		goto done;
	}
	if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
		gd_err("cannot write '%s': %s", tmp, strerror(errno));
		rc = rc ? rc : GD_EX_IOERR;
	}
	fclose(f);
	if (rc == 0 && rename(tmp, out) != 0) {
		gd_err("cannot rename '%s' to '%s': %s", tmp, out,
		    strerror(errno));
		rc = GD_EX_IOERR;
	}
	if (rc != 0)
		unlink(tmp);
done:
	close(fd);
	free(rd);
	return rc;
}

int gd_inspect_sort(const char *name)
{
	return gd_ctl_sort_parse(name);
}

int gd_inspect_run(const struct gd_conf *c, const struct gd_inspect_opts *o)
{
	char path[108], req[128], whose[1100], *w = whose;
	int rc = 0;

	if (o->ctl) {
		snprintf(path, sizeof(path), "%s", o->ctl);
		w = NULL;
	} else if (c->port > 0) {
		rc = gd_ctl_path_pub(c, path, sizeof(path));
		snprintf(whose, sizeof(whose), "the gdpub on port %d",
		    (int)c->port);
	} else if (c->npubs > 0 || c->name != NULL) {
		char id[1024];
		rc = gd_ctl_path_sub(c, path, sizeof(path));
		gd_sub_identity(c, id, sizeof(id));
		snprintf(whose, sizeof(whose), "the gdsub named '%s'", id);
	} else {
		gd_usage_err("no target: give -c FILE (a gdpub or gdsub config), -p PORT (a gdpub), -P HOST:PORT or --name NAME (a gdsub) or --ctl PATH");
		return GD_EX_USAGE;
	}
	if (!o->ctl && rc != 0)
		return rc;
	snprintf(req, sizeof(req), "%s", o->cmd);
	if (strcmp(o->cmd, "pending") == 0 && (o->sort >= 0 || o->limit > 0))
		snprintf(req, sizeof(req), "pending sort=%s limit=%" PRIu64,
		    gd_ctl_sort_name(o->sort < 0 ? GD_SORT_AGE : o->sort), o->limit);
	for (;;) {
		if (o->watch > 0 && isatty(1) && !(o->prom && o->output))
			fputs("\033[H\033[2J", stdout);
		rc = o->prom ? prometheus(path, w, o->output, o->timeout) :
		    query(path, w, o->cmd, req, o->json, o->timeout);
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
