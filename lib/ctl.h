/* The local control socket of gdpub and gdsub, where gdack and gdinspect
 * reach them. Paths derive from the config so every program started with
 * the same file finds the same socket; sockets are mode 0600 inside a 0700
 * directory, and both ends check who is at the other one: the server
 * serves only its own uid and root, a client talks only to a socket (and
 * a server) of its own uid. The protocol is text lines, each at most
 * GD_CTL_LINE bytes (a longer request is answered "error ..." and the
 * connection closed):
 *
 *   hello                 -> "hello PROGRAM GD_CTL_PROTO"
 *   ack N, then N keys    -> "ack OK FAILED", then FAILED lines KEY<TAB>REASON
 *   pending [sort=S] [limit=N] | subs | stats
 *                         -> "NAME ROWS", a header row of NAME:TYPE fields
 *                            (TYPE n number, s string), then ROWS rows (TSV)
 *   takeover NAME         -> (gdsub) "takeover ok", then it finishes at once
 *                            when NAME is its own name: a new gdsub of the
 *                            same config takes the socket over
 *   anything else         -> "error REASON" (the connection stays usable)
 *
 * Version 2 added the types in the header and the pending arguments.
 */
#ifndef GD_CTL_H
#define GD_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "conf.h"
#include "dbuf.h"
#include "wire.h"
#include "fileio.h"	/* gd_write_all */

#define GD_CTL_PROTO 2
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

/* Server side, on a libuv loop. */
struct gd_ctl_client;
/* Called for each complete line (without its newline). Return 0, or -1 to
 * close the client. */
typedef int (*gd_ctl_line_cb)(void *user, struct gd_ctl_client *cl,
    char *line, size_t len);

struct gd_ctl_client {
	uv_pipe_t h;
	struct gd_ctl_srv *srv;
	struct gd_ctl_client *next, **pprev;
	char in[GD_CTL_LINE * 4];
	size_t inlen;
	struct gd_dbuf out;	/* reply bytes not yet written: one reply,
				 * at most srv->reply_max bytes */
	int reply_err;		/* GD_DBUF_* of the reply being built */
	/* request state, owned by the line callback */
	uint64_t left, ok, failed;
	char *fail;
	size_t faillen, failcap;
	int closing;
	int eof;		/* the client is done sending: close once replied */
	unsigned nwrites;	/* replies handed to libuv, not yet written */
};

struct gd_ctl_srv {
	uv_pipe_t h;
	uv_loop_t *loop;
	char path[108];
	gd_ctl_line_cb cb;
	void (*on_gone)(void *user);	/* a client disconnected */
	void *user;
	struct gd_ctl_client *clients;
	size_t reply_max;	/* GD_CTL_REPLY_MAX unless changed after listen */
	int open;
};

int gd_ctl_listen(struct gd_ctl_srv *s, uv_loop_t *loop, const char *path,
    gd_ctl_line_cb cb, void *user);
void gd_ctl_close(struct gd_ctl_srv *s);
/* Queue reply bytes; they go out at the next gd_ctl_flush. -1 once the
 * reply has passed srv->reply_max (or memory ran out): the rest of it is
 * dropped and the request is answered with an error line instead. */
int gd_ctl_reply(struct gd_ctl_client *cl, const void *buf, size_t len);
int gd_ctl_printf(struct gd_ctl_client *cl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gd_ctl_flush(struct gd_ctl_srv *s);

/* The uid (and pid, -1 if unknown) of the process at the other end of a
 * unix socket; -1 with errno on failure. */
int gd_ctl_peer_uid(int fd, uid_t *uid, long *pid);

/* Client side, blocking (gdack, gdinspect: ctl_client.c). Connect, retrying for up to
 * wait_s seconds; returns the fd or -1 with errno set. */
int gd_ctl_connect(const char *path, double wait_s);
/* Refuse to talk to another user's program: the socket at path must be
 * ours, its directory ours or root's, and (fd >= 0) the program serving
 * the connected fd must run as our uid. Returns 0, or prints why and
 * returns GD_EX_UNAVAILABLE. A path that does not exist passes. */
int gd_ctl_trust(const char *path, int fd);

struct gd_lreader {
	int fd;
	char buf[65536];
	size_t off, len;
};
/* Next line (newline stripped, NUL-terminated in place): 1, 0 at EOF,
 * -1 on error or a line longer than the buffer. */
int gd_lreader_line(struct gd_lreader *r, char **line, size_t *len);

#endif
