/* Control socket, client side (gdack, gdinspect): connect with a bounded
 * wait, refuse another user's socket or program, read reply lines and
 * write requests with blocking calls. The server is ctl.c. */
#include "ctl.h"
#include "log.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int gd_ctl_connect(const char *path, double wait_s)
{
	struct sockaddr_un sa;
	struct timespec t0, now, nap = { 0, 20 * 1000 * 1000 };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int e;
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		e = errno;
		close(fd);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) +
		    (double)(now.tv_nsec - t0.tv_nsec) / 1e9 >= wait_s ||
		    (e != ENOENT && e != ECONNREFUSED && e != EAGAIN)) {
			errno = e;
			return -1;
		}
		nanosleep(&nap, NULL);
	}
}

/* "nobody (uid 65534)" */
static const char *uid_name(uid_t uid, char *buf, size_t sz)
{
	struct passwd *pw = getpwuid(uid);
	if (pw != NULL && pw->pw_name != NULL)
		snprintf(buf, sz, "%.32s (uid %u)", pw->pw_name, (unsigned)uid);
	else
		snprintf(buf, sz, "uid %u", (unsigned)uid);
	return buf;
}

int gd_ctl_trust(const char *path, int fd)
{
	char dir[PATH_MAX], a[64], b[64];
	const char *d;
	struct stat st;
	uid_t me = geteuid(), uid;
	long pid;

	if (lstat(path, &st) == 0) {
		if (st.st_uid != me) {
			gd_err("refusing control socket %s: it belongs to %s and you "
			    "are %s", path, uid_name(st.st_uid, a, sizeof(a)),
			    uid_name(me, b, sizeof(b)));
			return GD_EX_UNAVAILABLE;
		}
		snprintf(dir, sizeof(dir), "%s", path);
		d = dirname(dir);	/* "." for a bare name, not dir */
		if (stat(d, &st) == 0 && st.st_uid != me && st.st_uid != 0) {
			gd_err("refusing control socket %s: its directory %s belongs "
			    "to %s, neither to you, %s, nor to root", path, d,
			    uid_name(st.st_uid, a, sizeof(a)), uid_name(me, b, sizeof(b)));
			return GD_EX_UNAVAILABLE;
		}
	}
	if (fd >= 0) {
		if (gd_ctl_peer_uid(fd, &uid, &pid) != 0) {
			gd_err("refusing control socket %s: cannot tell who serves it: %s",
			    path, strerror(errno));
			return GD_EX_UNAVAILABLE;
		}
		if (uid != me) {
			gd_err("refusing control socket %s: the program serving it "
			    "runs as %s and you are %s", path,
			    uid_name(uid, a, sizeof(a)), uid_name(me, b, sizeof(b)));
			return GD_EX_UNAVAILABLE;
		}
	}
	return 0;
}

int gd_lreader_line(struct gd_lreader *r, char **line, size_t *len)
{
	char *nl;

	for (;;) {
		nl = memchr(r->buf + r->off, '\n', r->len - r->off);
		if (nl != NULL) {
			*nl = '\0';
			*line = r->buf + r->off;
			*len = (size_t)(nl - *line);
			r->off += *len + 1;
			return 1;
		}
		if (r->off > 0) {
			memmove(r->buf, r->buf + r->off, r->len - r->off);
			r->len -= r->off;
			r->off = 0;
		}
		if (r->len == sizeof(r->buf)) {
			errno = EMSGSIZE;
			return -1;
		}
		ssize_t n = read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		r->len += (size_t)n;
	}
}
