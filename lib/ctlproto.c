/* What the control socket's server (ctl.c) and its client (ctl_client.c)
 * share: the socket paths and the subscriber identity they derive from,
 * the arguments of a request, table cells, who is at the other end of a
 * socket, the connect that also probes whether a socket is served, and
 * the reader of reply lines. Both sides sit on this file and neither
 * calls the other. See ctl.h for the protocol. */
#define _GNU_SOURCE	/* struct ucred */
#include "ctlproto.h"
#include "clock.h"
#include "hash.h"
#include "log.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* A derived identity, built piece by piece: its first bytes (as many as
 * fit), its whole length and the hash of the whole. */
struct ident {
	char buf[GD_SUB_NAME_MAX + 1];
	size_t len;		/* of the whole */
	uint64_t h;
};

static void ident_add(struct ident *d, const char *s)
{
	size_t n = strlen(s);

	if (d->len < GD_SUB_NAME_MAX)
		snprintf(d->buf + d->len, sizeof(d->buf) - d->len, "%s", s);
	d->len += n;
	d->h = gd_fnv1a_more(d->h, s, n);
}

void gd_sub_identity(const struct gd_conf *c, char *buf, size_t sz)
{
	char host[256], rp[PATH_MAX], hp[GD_HOST_MAX + 16];
	struct ident d = { "", 0, GD_FNV1A_INIT };
	size_t i, keep = GD_SUB_NAME_MAX - 17;	/* "~" and 16 hex digits */

	if (c->name != NULL) {
		snprintf(buf, sz, "%s", c->name);
		return;
	}
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	ident_add(&d, host);
	ident_add(&d, ":");
	if (c->path != NULL) {
		if (realpath(c->path, rp) == NULL)
			snprintf(rp, sizeof(rp), "%s", c->path);
		ident_add(&d, rp);
	}
	for (i = 0; c->path == NULL && i < c->npubs; i++) {
		if (i > 0)
			ident_add(&d, ",");
		gd_fmt_hostport(hp, sizeof(hp), c->pubs[i].host, c->pubs[i].port);
		ident_add(&d, hp);
	}
	/* a deep config path, or many publishers, make a name longer than
	 * the handshake carries (GD_SUB_NAME_MAX); cut there, two configs in
	 * one deep directory would share it, so a long one keeps its start
	 * and ends with a hash of the whole */
	if (d.len > GD_SUB_NAME_MAX) {
		while (keep > 0 && (d.buf[keep] & 0xC0) == 0x80)
			keep--;	/* not inside a UTF-8 character */
		snprintf(d.buf + keep, sizeof(d.buf) - keep, "~%016llx",
		    (unsigned long long)d.h);
	}
	snprintf(buf, sz, "%s", d.buf);
}

const char *gd_uid_name(uid_t uid, char *buf, size_t sz)
{
	struct passwd *pw = getpwuid(uid);
	if (pw != NULL && pw->pw_name != NULL)
		snprintf(buf, sz, "%.32s (uid %u)", pw->pw_name, (unsigned)uid);
	else
		snprintf(buf, sz, "uid %u", (unsigned)uid);
	return buf;
}

/* dir, created 0700 if absent: 0 when it is a directory of ours with
 * mode 0700; 1 when another user owns what is there (*owner), for the
 * caller to look elsewhere; else an exit code, said. */
static int own_dir(const char *dir, uid_t *owner)
{
	struct stat st;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		gd_err("cannot create control socket directory %s: %s", dir,
		    strerror(errno));
		return GD_EX_UNAVAILABLE;
	}
	if (lstat(dir, &st) != 0) {
		gd_err("cannot use control socket directory %s: %s", dir,
		    strerror(errno));
		return GD_EX_UNAVAILABLE;
	}
	if (st.st_uid != geteuid()) {
		*owner = st.st_uid;
		return 1;
	}
	if (!S_ISDIR(st.st_mode) || (st.st_mode & 077) != 0) {
		gd_err("refusing control socket directory %s: it must be a "
		    "directory of yours with mode 0700", dir);
		return GD_EX_UNAVAILABLE;
	}
	return 0;
}

/* Where sockets go when the usual directory was taken by another user
 * (anyone may create /tmp/gdkit-UID first): ~/.gdkit/HOST, per host as
 * a home directory may be shared. Every program computes the same. */
static int fallback_dir(char *buf, size_t sz, const char *squatted,
    uid_t owner)
{
	const char *home = getenv("HOME");
	struct passwd *pw;
	char host[64], who[64], me[64], other[64];
	uid_t o2;
	int n, rc, i;

	if ((home == NULL || *home != '/') &&
	    (pw = getpwuid(geteuid())) != NULL)
		home = pw->pw_dir;
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	gd_uid_name(owner, who, sizeof(who));
	gd_uid_name(geteuid(), me, sizeof(me));
	if (home == NULL || *home != '/') {
		gd_err("cannot use control socket directory %s: it belongs to "
		    "%s, not to you, %s, and there is no home directory to use "
		    "instead (give --ctl)", squatted, who, me);
		return GD_EX_UNAVAILABLE;
	}
	/* ~/.gdkit, then ~/.gdkit/HOST in it: each ours, mode 0700 */
	for (i = 0; i < 2; i++) {
		n = snprintf(buf, sz, "%s/.gdkit%s%s", home, i ? "/" : "",
		    i ? host : "");
		if (n < 0 || (size_t)n >= sz) {
			gd_err("control socket directory name too long under %s; "
			    "use --ctl", home);
			return GD_EX_USAGE;
		}
		if ((rc = own_dir(buf, &o2)) == 1)
			gd_err("cannot use control socket directory %s: it belongs "
			    "to %s, not to you, %s; nor %s, which belongs to %s "
			    "(give --ctl)", squatted, who, me, buf,
			    gd_uid_name(o2, other, sizeof(other)));
		if (rc != 0)
			return rc == 1 ? GD_EX_UNAVAILABLE : rc;
	}
	gd_warn("control socket directory %s belongs to %s, not to you, %s: "
	    "using %s instead", squatted, who, me, buf);
	return 0;
}

/* $XDG_RUNTIME_DIR/gdkit or /tmp/gdkit-UID, created 0700, ours alone;
 * ~/.gdkit/HOST when another user holds that name */
static int ctl_dir(char *buf, size_t sz)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	uid_t owner;
	int n, rc;

	if (x != NULL && *x == '/')
		n = snprintf(buf, sz, "%s/gdkit", x);
	else
		n = snprintf(buf, sz, "/tmp/gdkit-%u", (unsigned)geteuid());
	if (n < 0 || (size_t)n >= sz) {
		gd_err("control socket directory name too long");
		return GD_EX_USAGE;
	}
	if ((rc = own_dir(buf, &owner)) == 1) {
		char squatted[PATH_MAX];
		snprintf(squatted, sizeof(squatted), "%s", buf);
		return fallback_dir(buf, sz, squatted, owner);
	}
	return rc;
}

static int set_path(char *buf, size_t sz, const char *given, const char *fmt,
    const char *arg)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int rc, n;

	if (given != NULL) {
		if (strlen(given) >= sizeof(dir) || strlen(given) >= sz) {
			gd_err("control socket path too long (at most %zu bytes): %s",
			    sizeof(dir) - 1, given);
			return GD_EX_USAGE;
		}
		snprintf(buf, sz, "%s", given);
		return 0;
	}
	if ((rc = ctl_dir(dir, sizeof(dir))) != 0)
		return rc;
	n = snprintf(buf, sz, "%s/", dir);
	if (n > 0 && (size_t)n < sz)
		n += snprintf(buf + n, sz - (size_t)n, fmt, arg);
	if (n < 0 || (size_t)n >= sz || (size_t)n >= sizeof(dir)) {
		gd_err("control socket path too long in %s; use --ctl", dir);
		return GD_EX_USAGE;
	}
	return 0;
}

int gd_ctl_path_pub(const struct gd_conf *c, char *buf, size_t sz)
{
	char port[16];
	snprintf(port, sizeof(port), "%d", (int)c->port);
	return set_path(buf, sz, c->pub_ctl, "pub-%s.sock", port);
}

int gd_ctl_path_sub(const struct gd_conf *c, char *buf, size_t sz)
{
	char name[1024], h[20];
	gd_sub_identity(c, name, sizeof(name));
	snprintf(h, sizeof(h), "%016llx", (unsigned long long)gd_fnv1a(name, strlen(name)));
	return set_path(buf, sz, c->sub_ctl, "sub-%s.sock", h);
}

/* ---- requests ---- */

static const char *const sort_names[] = { "age", "expires", "id", "acks" };

int gd_ctl_sort_parse(const char *name)
{
	size_t i;
	for (i = 0; i < sizeof(sort_names) / sizeof(sort_names[0]); i++)
		if (strcmp(name, sort_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *gd_ctl_sort_name(int sort)
{
	if (sort < 0 || (size_t)sort >= sizeof(sort_names) / sizeof(sort_names[0]))
		return "?";
	return sort_names[sort];
}

int gd_ctl_pending_args(const char *args, struct gd_ctl_pending_req *r,
    char *why, size_t whysz)
{
	char word[GD_CTL_LINE + 1];
	const char *p = args;

	r->sort = GD_SORT_AGE;
	r->limit = 0;
	while (*p) {
		size_t n = strcspn(p, " ");
		if (n == 0) {
			p++;
			continue;
		}
		if (n >= sizeof(word))
			n = sizeof(word) - 1;
		memcpy(word, p, n);
		word[n] = '\0';
		p += n;
		if (strncmp(word, "sort=", 5) == 0) {
			if ((r->sort = gd_ctl_sort_parse(word + 5)) < 0) {
				snprintf(why, whysz, "unknown sort '%.32s' (age, expires, id or acks)",
				    word + 5);
				return -1;
			}
		} else if (strncmp(word, "limit=", 6) == 0) {
			if (gd_parse_u64(word + 6, &r->limit) != 0) {
				snprintf(why, whysz, "bad limit '%.32s' (a row count, 0 for all)",
				    word + 6);
				return -1;
			}
		} else {
			snprintf(why, whysz, "unknown argument '%.32s' (sort=KEY or limit=N)",
			    word);
			return -1;
		}
	}
	return 0;
}

void gd_ctl_cell(char *dst, size_t sz, const char *src)
{
	size_t i;

	if (sz == 0)
		return;
	if (src == NULL || *src == '\0') {
		snprintf(dst, sz, "-");
		return;
	}
	for (i = 0; i + 1 < sz && src[i]; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
	dst[i] = '\0';
}

/* ---- who is at the other end ---- */

int gd_ctl_peer_uid(int fd, uid_t *uid, long *pid)
{
#ifdef SO_PEERCRED
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
		return -1;
	*uid = cr.uid;
	*pid = (long)cr.pid;
	return 0;
#else
	gid_t gid;
	*pid = -1;
	return getpeereid(fd, uid, &gid);
#endif
}

/* ---- client connection, and the probe of a served socket ---- */

int gd_ctl_connect(const char *path, double wait_s, double busy_s)
{
	struct sockaddr_un sa;
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	double t0;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	t0 = gd_clock_mono_s();
	for (;;) {
		double spent;
		int e;
		/* non-blocking: a server that does not accept (stopped, or
		 * busy) with a full backlog gives EAGAIN instead of a connect
		 * that waits without end */
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			int fl = fcntl(fd, F_GETFL);
			if (fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0)
				return fd;
		}
		e = errno;
		close(fd);
		spent = gd_clock_mono_s() - t0;
		if (e == EAGAIN ? spent >= (busy_s > wait_s ? busy_s : wait_s) :
		    (spent >= wait_s || (e != ENOENT && e != ECONNREFUSED))) {
			errno = e;
			return -1;
		}
		nanosleep(&nap, NULL);
	}
}

/* ---- reply lines ---- */

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
		if (r->timeout > 0) {
			struct pollfd pfd = { r->fd, POLLIN, 0 };
			int ms = r->timeout >= 86400 ? 86400000 :
			    (int)(r->timeout * 1000) + 1;
			int k = poll(&pfd, 1, ms);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				return -1;
			if (k == 0) {
				errno = ETIMEDOUT;
				return -1;
			}
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
