/* Control socket, client side (gdinspect, gdack, gdsub's takeover): the
 * one way in — refuse another user's socket or program, connect, say
 * hello, check the protocol version — and the escaping of a peer's words.
 * The connect and the reader of reply lines are ctlproto.c, shared with
 * the server (ctl.c). */
#include "ctl_client.h"
#include "fileio.h"
#include "log.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
			    "are %s", path, gd_uid_name(st.st_uid, a, sizeof(a)),
			    gd_uid_name(me, b, sizeof(b)));
			return GD_EX_UNAVAILABLE;
		}
		snprintf(dir, sizeof(dir), "%s", path);
		d = dirname(dir);	/* "." for a bare name, not dir */
		if (stat(d, &st) == 0 && st.st_uid != me && st.st_uid != 0) {
			gd_err("refusing control socket %s: its directory %s belongs "
			    "to %s, neither to you, %s, nor to root", path, d,
			    gd_uid_name(st.st_uid, a, sizeof(a)),
			    gd_uid_name(me, b, sizeof(b)));
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
			    gd_uid_name(uid, a, sizeof(a)), gd_uid_name(me, b, sizeof(b)));
			return GD_EX_UNAVAILABLE;
		}
	}
	return 0;
}

size_t gd_ctl_escape(char *dst, size_t sz, const char *src, size_t len,
    int utf8)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, n = 0;

	if (sz == 0)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)src[i];
		if ((c >= 0x20 && c < 0x7f && c != '\\') || (utf8 && c >= 0x80)) {
			if (n + 1 >= sz)
				break;
			dst[n++] = (char)c;
		} else if (c == '\\') {
			if (n + 2 >= sz)
				break;
			dst[n++] = '\\';
			dst[n++] = '\\';
		} else {
			if (n + 4 >= sz)
				break;
			dst[n++] = '\\';
			dst[n++] = 'x';
			dst[n++] = hex[c >> 4];
			dst[n++] = hex[c & 15];
		}
	}
	dst[n] = '\0';
	return n;
}

/* keep an answer not understood for the message, escaped, cut at 80 */
static int answered(struct gd_ctl_peer *p, int fail, const char *line,
    size_t len)
{
	gd_ctl_escape(p->answer, sizeof(p->answer), line, len < 80 ? len : 80,
	    0);
	return fail;
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define HELLO_WORDS "hello " STR(GD_CTL_PROTO)
#define HELLO HELLO_WORDS "\n"

int gd_ctl_hello(const char *path, struct gd_lreader *rd,
    struct gd_ctl_peer *p)
{
	char *line, prog[32];
	size_t len;
	int ver, n = 0;

	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->timeout = rd->timeout;
	if (gd_ctl_trust(path, rd->fd) != 0)
		return GD_CTL_UNTRUSTED;
	(void)gd_ctl_peer_uid(rd->fd, &p->uid, &p->pid);
	rd->off = rd->len = 0;
	errno = 0;
	/* "hello 3": a server of version 2 does not know it, and says so;
	 * then the bare hello of version 2 */
	if (gd_write_all(rd->fd, HELLO, sizeof(HELLO) - 1) != 0 ||
	    gd_lreader_line(rd, &line, &len) != 1 ||
	    (strcmp(line, "error unknown request '" HELLO_WORDS "'") == 0 &&
	    (gd_write_all(rd->fd, "hello\n", 6) != 0 ||
	    gd_lreader_line(rd, &line, &len) != 1))) {
		p->err = errno;
		return GD_CTL_NOANSWER;
	}
	if (strncmp(line, "error ", 6) == 0)
		return answered(p, GD_CTL_REFUSED, line + 6, len - 6);
	/* "hello PROGRAM VERSION", nothing more */
	if (sscanf(line, "hello %31s %d%n", prog, &ver, &n) != 2 ||
	    (size_t)n != len || strlen(line) != len)
		return answered(p, GD_CTL_GARBLED, line, len);
	gd_ctl_escape(p->prog, sizeof(p->prog), prog, strlen(prog), 0);
	p->ver = ver;
	return ver >= GD_CTL_PROTO_MIN && ver <= GD_CTL_PROTO ? GD_CTL_OK :
	    GD_CTL_VERSION;
}

int gd_ctl_open(const char *path, double wait, struct gd_lreader *rd,
    struct gd_ctl_peer *p)
{
	int fail;

	memset(p, 0, sizeof(*p));
	p->pid = -1;
	if ((rd->fd = gd_ctl_connect(path, wait, rd->timeout)) < 0) {
		p->err = errno;
		p->timeout = rd->timeout;
		return GD_CTL_NOCONN;
	}
	if ((fail = gd_ctl_hello(path, rd, p)) != GD_CTL_OK) {
		close(rd->fd);
		rd->fd = -1;
	}
	return fail;
}

int gd_ctl_say(const char *path, int fail, const struct gd_ctl_peer *p)
{
	switch (fail) {
	case GD_CTL_NOCONN:
	case GD_CTL_NOANSWER:
		/* EAGAIN: it does not take connections; ETIMEDOUT: it took
		 * one and says nothing */
		if (p->err == EAGAIN || p->err == ETIMEDOUT)
			gd_err("no answer from %s within %g second%s: is its "
			    "program stopped or stuck?", path, p->timeout,
			    gd_plural(p->timeout));
		else if (fail == GD_CTL_NOCONN)
			gd_err("nothing answers at %s: %s", path, strerror(p->err));
		else
			gd_err("no answer from %s: %s", path, p->err ?
			    strerror(p->err) : "connection closed");
		break;
	case GD_CTL_REFUSED:
		gd_err("%s refused the connection: %s", path, p->answer);
		break;
	case GD_CTL_GARBLED:
		gd_err("unexpected answer from %s: %s", path, p->answer);
		break;
	case GD_CTL_VERSION:
		gd_err("%s at %s speaks control protocol %d, this %s %d to %d: "
		    "use programs of the same gdkit version", p->prog, path,
		    p->ver, gd_prog(), GD_CTL_PROTO_MIN, GD_CTL_PROTO);
		break;
	}
	return GD_EX_UNAVAILABLE;
}
