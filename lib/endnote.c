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

static int append(struct gd_endnote *n, const char *p, size_t len)
{
	if (n->len + len > n->cap) {
		size_t ncap = n->cap ? n->cap * 2 : 256;
		char *nb;
		while (ncap < n->len + len)
			ncap *= 2;
		if ((nb = realloc(n->buf, ncap)) == NULL)
			return -1;
		n->buf = nb;
		n->cap = ncap;
	}
	memcpy(n->buf + n->len, p, len);
	n->len += len;
	return 0;
}

int gd_endnote_add(struct gd_endnote *n, const char *origin, size_t len)
{
	if (memchr(origin, '\n', len) != NULL)
		return 0;	/* not an origin: never listed */
	if ((n->len == 0 && append(n, HEADER, strlen(HEADER)) != 0) ||
	    append(n, NOACK, strlen(NOACK)) != 0 ||
	    append(n, origin, len) != 0 || append(n, "\n", 1) != 0)
		return -1;
	return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Written aside and renamed, so that a reader sees all of it or none. */
int gd_endnote_save(const struct gd_endnote *n, const char *path)
{
	char tmp[PATH_MAX];
	int fd, e;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd < 0)
		return -1;
	if (write_all(fd, n->buf, n->len) != 0) {
		e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		return -1;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
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
	char buf[4096];
	ssize_t r;
	int fd;

	n->len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !trusted(path, &st)) {
		close(fd);
		return 0;
	}
	while ((r = read(fd, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || n->len + (size_t)r > NOTE_MAX ||
		    append(n, buf, (size_t)r) != 0) {
			close(fd);
			n->len = 0;
			return 0;
		}
	}
	close(fd);
	if (n->len < strlen(HEADER) ||
	    memcmp(n->buf, HEADER, strlen(HEADER)) != 0) {
		n->len = 0;
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
	n->len = n->cap = 0;
}
