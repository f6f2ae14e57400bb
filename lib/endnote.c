/* gdsub's end note (see endnote.h): "gdkit-endnote 1", then one
 * "noack ORIGIN" line per publisher that ran with numSubs=0. */
#include "endnote.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER "gdkit-endnote 1\n"
#define NOACK "noack "
#define NOTE_MAX 65536		/* a note is a few lines; more is not a note */

int gd_endnote_path(const char *ctl, char *buf, size_t sz)
{
	int n = snprintf(buf, sz, "%s%s", ctl, GD_ENDNOTE_SUFFIX);
	return n < 0 || (size_t)n >= sz ? -1 : 0;
}

/* Written aside and renamed, so that a reader sees all of it or none. */
int gd_endnote_save(const char *path, const struct gd_endnote_origin *o,
    size_t n)
{
	char tmp[PATH_MAX];
	FILE *f;
	size_t i;
	int fd, e;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd < 0)
		return -1;
	if ((f = fdopen(fd, "w")) == NULL) {
		e = errno;
		close(fd);
		goto fail;
	}
	fputs(HEADER, f);
	for (i = 0; i < n; i++)
		if (memchr(o[i].s, '\n', o[i].len) == NULL)
			fprintf(f, NOACK "%.*s\n", (int)o[i].len, o[i].s);
	e = ferror(f) ? EIO : 0;
	if (fclose(f) != 0 && e == 0)
		e = errno;
	if (e == 0 && rename(tmp, path) == 0)
		return 0;
	if (e == 0)
		e = errno;
fail:
	unlink(tmp);
	errno = e;
	return -1;
}

void gd_endnote_remove(const char *path)
{
	(void)unlink(path);
}

/* Ours: a regular file of our uid in a directory of ours or root's. */
static int trusted(const char *path, const struct stat *st)
{
	char dir[PATH_MAX];
	struct stat ds;

	if (!S_ISREG(st->st_mode) || st->st_uid != geteuid())
		return 0;
	snprintf(dir, sizeof(dir), "%s", path);
	return stat(dirname(dir), &ds) == 0 &&
	    (ds.st_uid == geteuid() || ds.st_uid == 0);
}

int gd_endnote_load(struct gd_endnote *n, const char *path)
{
	struct stat st;
	size_t got = 0;
	int fd;

	gd_endnote_free(n);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !trusted(path, &st) || st.st_size > NOTE_MAX ||
	    (n->buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return 0;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, n->buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	n->len = got;
	if (got < strlen(HEADER) || memcmp(n->buf, HEADER, strlen(HEADER)) != 0) {
		gd_endnote_free(n);
		return 0;
	}
	return 1;
}

int gd_endnote_has(const struct gd_endnote *n, const char *origin, size_t len)
{
	size_t off = n->len < strlen(HEADER) ? n->len : strlen(HEADER);
	size_t pre = strlen(NOACK);

	while (off < n->len) {
		const char *line = n->buf + off;
		const char *nl = memchr(line, '\n', n->len - off);
		size_t llen = nl ? (size_t)(nl - line) : n->len - off;
		if (llen == pre + len && memcmp(line, NOACK, pre) == 0 &&
		    memcmp(line + pre, origin, len) == 0)
			return 1;
		off += llen + 1;
	}
	return 0;
}

void gd_endnote_free(struct gd_endnote *n)
{
	free(n->buf);
	n->buf = NULL;
	n->len = 0;
}
