/* Control socket, client side, blocking (gdinspect, gdack, gdsub's
 * takeover): what a client adds to the shared protocol (ctlproto.h) —
 * the refusal of another user's socket or program, the connect, the
 * hello and its version check, and the escaping of what a peer says
 * before it reaches a terminal. */
#ifndef GD_CTL_CLIENT_H
#define GD_CTL_CLIENT_H

#include "ctlproto.h"

/* Refuse to talk to another user's program: the socket at path must be
 * ours, its directory ours or root's, and (fd >= 0) the program serving
 * the connected fd must run as our uid. Returns 0, or prints why and
 * returns GD_EX_UNAVAILABLE. A path that does not exist passes. */
int gd_ctl_trust(const char *path, int fd);

/* How a client's way in failed. */
enum gd_ctl_fail {
	GD_CTL_OK,
	GD_CTL_NOCONN,		/* the connect failed: err */
	GD_CTL_UNTRUSTED,	/* another user's socket or program: said */
	GD_CTL_NOANSWER,	/* hello unanswered: err, 0 closed, ETIMEDOUT */
	GD_CTL_REFUSED,		/* answered "error ...": answer */
	GD_CTL_GARBLED,		/* not "hello PROGRAM VERSION": answer */
	GD_CTL_VERSION,		/* a protocol version it cannot speak: prog,
				 * ver */
};

/* Who answered, or what went wrong. */
struct gd_ctl_peer {
	char prog[32];		/* gdpub or gdsub */
	int ver;		/* the protocol version it speaks with us
				 * (GD_CTL_PROTO_MIN .. GD_CTL_PROTO) */
	uid_t uid;		/* who serves the socket */
	long pid;		/* -1 if unknown */
	int err;		/* errno of a failed step */
	double timeout;		/* what a timed-out step waited */
	char answer[4 * 80 + 1];	/* an answer not understood, escaped */
};

/* Say hello on the connected rd->fd, after checking who serves it
 * (gd_ctl_trust): "hello GD_CTL_PROTO", and to a server of version 2,
 * which does not know that, "hello"; read the answer, each wait bounded
 * by rd->timeout.
 * GD_CTL_OK, or a failure (p says which); the fd stays the caller's. */
int gd_ctl_hello(const char *path, struct gd_lreader *rd,
    struct gd_ctl_peer *p);
/* Connect (waiting up to wait seconds while nothing listens, rd->timeout
 * while the program does not accept) and say hello (gd_ctl_hello: the
 * socket and its program checked first). GD_CTL_OK with rd->fd open and its reader reset, or a
 * failure with rd->fd -1. */
int gd_ctl_open(const char *path, double wait, struct gd_lreader *rd,
    struct gd_ctl_peer *p);
/* The message for a failure of gd_ctl_open or gd_ctl_hello (none for
 * GD_CTL_UNTRUSTED: said already); returns GD_EX_UNAVAILABLE. */
int gd_ctl_say(const char *path, int fail, const struct gd_ctl_peer *p);

/* src (len bytes) with every byte that is not printable ASCII as \xHH
 * and the backslash as \\; with utf8, bytes from 0x80 stay as they are
 * (names in a table). At most sz - 1 bytes and a NUL in dst, cut at a
 * whole escape; returns the length written. */
size_t gd_ctl_escape(char *dst, size_t sz, const char *src, size_t len,
    int utf8);

#endif
