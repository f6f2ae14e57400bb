/* The fds a service manager passes (see activate.h). */
#define _GNU_SOURCE	/* SO_DOMAIN */
#include "activate.h"
#include "log.h"
#include "parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static const char takes[] = "gdpub takes one listening TCP socket "
    "(ListenStream=PORT) and one FIFO (ListenFIFO=PATH)";

/* The i-th name of LISTEN_FDNAMES ("a:b:c") into buf: "fd N" alone when
 * there are no names, "fd N (NAME)" else. */
static void describe(char *buf, size_t sz, int fd, const char *names, int i)
{
	const char *s = names, *e;

	for (; s != NULL && i > 0; i--)
		s = (s = strchr(s, ':')) != NULL ? s + 1 : NULL;
	if (s == NULL || *s == '\0' || *s == ':') {
		snprintf(buf, sz, "fd %d", fd);
		return;
	}
	e = strchr(s, ':');
	snprintf(buf, sz, "fd %d (%.*s)", fd, (int)(e ? e - s : (long)strlen(s)),
	    s);
}

/* One passed fd: the listener or the FIFO in a, else -1 with why. */
static int classify(struct gd_act *a, int fd, const char *what, char *why,
    size_t whysz)
{
	struct stat st;
	int v, dom = 0, type = 0, acc = 0, fl;
	socklen_t len = sizeof(v);

	if (fstat(fd, &st) != 0) {
		snprintf(why, whysz, "%s is not open: %s", what, strerror(errno));
		return -1;
	}
	if (S_ISFIFO(st.st_mode)) {
		fl = fcntl(fd, F_GETFL);
		if (fl >= 0 && (fl & O_ACCMODE) == O_WRONLY) {
			snprintf(why, whysz, "%s is a FIFO open for writing only; "
			    "gdpub reads its input from it", what);
			return -1;
		}
		if (a->fifo_fd >= 0) {
			snprintf(why, whysz, "%s is a second FIFO (the first is "
			    "%s); %s", what, a->fifo_what, takes);
			return -1;
		}
		a->fifo_fd = fd;
		snprintf(a->fifo_what, sizeof(a->fifo_what), "%s", what);
		return 0;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(why, whysz, "%s is %s, neither a socket nor a FIFO; %s",
		    what, S_ISREG(st.st_mode) ? "a regular file" :
		    S_ISCHR(st.st_mode) ? "a character device" :
		    S_ISDIR(st.st_mode) ? "a directory" : "a special file",
		    takes);
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) == 0)
		dom = v;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) == 0)
		type = v;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0)
		acc = v;
	if (dom != AF_INET && dom != AF_INET6) {
		snprintf(why, whysz, "%s is a %s socket; gdpub serves its "
		    "subscribers over TCP: %s", what, dom == AF_UNIX ? "unix" :
		    "non-IP", takes);
		return -1;
	}
	if (type != SOCK_STREAM) {
		snprintf(why, whysz, "%s is a %s socket (ListenDatagram=?); %s",
		    what, type == SOCK_DGRAM ? "datagram" : "non-stream", takes);
		return -1;
	}
	if (!acc) {
		snprintf(why, whysz, "%s is a connected TCP socket, not a "
		    "listening one (Accept=yes passes one per connection: gdpub "
		    "needs Accept=no)", what);
		return -1;
	}
	if (a->listen_fd >= 0) {
		snprintf(why, whysz, "%s is a second listening socket (the first "
		    "is %s); gdpub listens on one: give the socket unit one "
		    "ListenStream=", what, a->listen_what);
		return -1;
	}
	{
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		const void *ip;

		if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
			snprintf(why, whysz, "%s: cannot read its address: %s",
			    what, strerror(errno));
			return -1;
		}
		if (ss.ss_family == AF_INET) {
			ip = &((struct sockaddr_in *)&ss)->sin_addr;
			a->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		} else {
			ip = &((struct sockaddr_in6 *)&ss)->sin6_addr;
			a->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		}
		if (inet_ntop(ss.ss_family, ip, a->addr, sizeof(a->addr)) == NULL)
			snprintf(a->addr, sizeof(a->addr), "?");
	}
	a->listen_fd = fd;
	snprintf(a->listen_what, sizeof(a->listen_what), "%s", what);
	return 0;
}

int gd_act_parse(struct gd_act *a, const char *pid, const char *fds,
    const char *names, long self, int first, char *why, size_t whysz,
    char *note, size_t notesz)
{
	uint64_t for_pid = 0;
	int64_t n = 0;
	int i;

	memset(a, 0, sizeof(*a));
	a->listen_fd = a->fifo_fd = -1;
	if (notesz > 0)
		note[0] = '\0';
	if (fds == NULL)
		return 0;
	if (pid == NULL || gd_parse_u64(pid, &for_pid) != 0 ||
	    for_pid != (uint64_t)self) {
		/* sd_listen_fds ignores them too; but a shell between the
		 * service manager and gdpub is the usual reason, and the port
		 * held for it is then "in use": say why */
		if (pid == NULL)
			snprintf(note, notesz, "LISTEN_FDS=%.20s is set without "
			    "LISTEN_PID: the file descriptors it counts are not "
			    "taken", fds);
		else
			snprintf(note, notesz, "LISTEN_FDS=%.20s is for pid "
			    "%.20s, not this gdpub (pid %ld): the file descriptors "
			    "it counts are not taken (a shell between the service "
			    "manager and gdpub? start gdpub with exec)", fds, pid,
			    self);
		return 0;
	}
	if (gd_parse_i64(fds, 0, GD_ACT_MAX_FDS, &n) != 0) {
		snprintf(why, whysz, "LISTEN_FDS='%.40s' is not a count of file "
		    "descriptors from 0 to %d", fds, GD_ACT_MAX_FDS);
		return -1;
	}
	if (names != NULL) {
		int k = 1;
		size_t seg = 0;
		for (const char *s = names; *s; s++) {
			if (*s == ':') {
				k++;
				seg = 0;
			} else if (++seg > GD_ACT_NAME_MAX) {
				snprintf(why, whysz, "LISTEN_FDNAMES has a name "
				    "longer than %d bytes", GD_ACT_NAME_MAX);
				return -1;
			}
		}
		if (n > 0 && k != n) {
			snprintf(why, whysz, "LISTEN_FDNAMES names %d file "
			    "descriptor%s and LISTEN_FDS says %d", k,
			    gd_plural(k), (int)n);
			return -1;
		}
	}
	a->n = (int)n;
	for (i = 0; i < a->n; i++) {
		char what[GD_ACT_NAME_MAX + 32];
		int fd = first + i;
		describe(what, sizeof(what), fd, names, i);
		if (classify(a, fd, what, why, whysz) != 0)
			return -1;
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	return 0;
}

int gd_act_take(struct gd_act *a)
{
	char why[1024], note[512];
	int rc;

	rc = gd_act_parse(a, getenv("LISTEN_PID"), getenv("LISTEN_FDS"),
	    getenv("LISTEN_FDNAMES"), (long)getpid(), GD_ACT_FIRST_FD, why,
	    sizeof(why), note, sizeof(note));
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (rc != 0) {
		gd_err("socket activation: %s", why);
		return GD_EX_CONFIG;
	}
	if (note[0] != '\0')
		gd_warn("socket activation: %s", note);
	return 0;
}
