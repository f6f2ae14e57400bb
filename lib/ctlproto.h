/* The control socket's protocol as both ends need it: its limits, the
 * socket paths, the arguments of a request, who is at the other end, the
 * connect (and probe), the reader of reply lines. The server (ctl.h) and
 * the client (ctl_client.h) each build on this header, not on each other;
 * the protocol itself is described in ctl.h. */
#ifndef GD_CTLPROTO_H
#define GD_CTLPROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"

/* The protocol's version: 3 added "hello VERSION" and gdack's binary
 * batches ("ackbin LEN", ackbin.h). A server answers a bare "hello" (a
 * client of version 2) with version 2, "hello N" with the lower of N and
 * its own; a client takes any version from GD_CTL_PROTO_MIN up. */
#define GD_CTL_PROTO 3
#define GD_CTL_PROTO_MIN 2
#define GD_CTL_LINE 1024
#define GD_CTL_MAX_KEYS (1u << 20)
/* The most bytes one reply may take. A request whose reply would be
 * larger (a pending table of a million blocks) is answered "error reply
 * larger than ..." instead, so a server never holds more than this per
 * client for a reply; gdinspect --limit asks for fewer rows. */
#define GD_CTL_REPLY_MAX ((size_t)64 << 20)

/* The subscriber's identity at its publishers: GDsub_name, else derived
 * from the host name and the config file (or the publisher list). */
void gd_sub_identity(const struct gd_conf *c, char *buf, size_t sz);
/* Socket paths; return 0, or print why and return an exit code. */
int gd_ctl_path_pub(const struct gd_conf *c, char *buf, size_t sz);
int gd_ctl_path_sub(const struct gd_conf *c, char *buf, size_t sz);

/* The arguments of a pending request: the order of the rows and how many. */
enum gd_ctl_sort { GD_SORT_AGE, GD_SORT_EXPIRES, GD_SORT_ID, GD_SORT_ACKS };
struct gd_ctl_pending_req {
	int sort;		/* enum gd_ctl_sort */
	uint64_t limit;		/* 0: every row */
};
/* The sort name (age, expires, id, acks) as enum gd_ctl_sort, or -1. */
int gd_ctl_sort_parse(const char *name);
const char *gd_ctl_sort_name(int sort);
/* Parse the words after "pending" (may be empty); 0, or -1 with the
 * reason in why. */
int gd_ctl_pending_args(const char *args, struct gd_ctl_pending_req *r,
    char *why, size_t whysz);
/* Copy src into a table cell: at most sz - 1 bytes, control characters
 * (TAB and newline would break the row) as '?', "-" when empty. */
void gd_ctl_cell(char *dst, size_t sz, const char *src);

/* The uid (and pid, -1 if unknown) of the process at the other end of a
 * unix socket; -1 with errno on failure. */
int gd_ctl_peer_uid(int fd, uid_t *uid, long *pid);

/* "nobody (uid 65534)", or "uid 1234" without a passwd entry; buf. */
const char *gd_uid_name(uid_t uid, char *buf, size_t sz);

/* Connect, retrying for up to wait_s seconds while nothing listens
 * (ENOENT, ECONNREFUSED) and up to busy_s (or wait_s, the longer) while
 * the server's backlog is full (EAGAIN: it does not accept, stopped or
 * busy); returns the fd, blocking, or -1 with errno set. The client's
 * way in, and with 0 and 0 the server's probe of whether a program still
 * serves a socket before it takes the path over. */
int gd_ctl_connect(const char *path, double wait_s, double busy_s);

struct gd_lreader {
	int fd;
	double timeout;		/* seconds each read may wait; 0: no end */
	char buf[65536];
	size_t off, len;
};
/* Next line (newline stripped, NUL-terminated in place): 1, 0 at EOF,
 * -1 on error (ETIMEDOUT: nothing came for r->timeout seconds) or a line
 * longer than the buffer. */
int gd_lreader_line(struct gd_lreader *r, char **line, size_t *len);

#endif
