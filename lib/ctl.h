/* The local control socket of gdpub and gdsub, where gdack and gdinspect
 * reach them. Paths derive from the config so every program started with
 * the same file finds the same socket; sockets are mode 0600 inside a 0700
 * directory, and both ends check who is at the other one: the server
 * serves only its own uid and root, a client talks only to a socket (and
 * a server) of its own uid. The protocol is text lines, each at most
 * GD_CTL_LINE bytes (a longer request is answered "error ..." and the
 * connection closed), but for the binary body of ackbin:
 *
 *   hello [VERSION]       -> "hello PROGRAM V": V the lower of VERSION
 *                            (2 when not given) and GD_CTL_PROTO
 *   ack N, then N keys    -> "ack OK FAILED", then FAILED lines KEY<TAB>REASON
 *   ackbin LEN, then LEN bytes of a binary batch (ackbin.h)
 *                         -> (gdsub, version 3) as "ack N"
 *   pending [sort=S] [limit=N] | subs | stats
 *                         -> "NAME ROWS", a header row of NAME:TYPE fields
 *                            (TYPE n number, s string), then ROWS rows (TSV)
 *   bye                   -> (gdsub) no reply, the connection closed: a
 *                            gdack says so before it closes at its clean
 *                            end, so that a gdack killed is told apart
 *   takeover NAME         -> (gdsub) "takeover ok", then it finishes at once
 *                            when NAME is its own name: a new gdsub of the
 *                            same config takes the socket over
 *   anything else         -> "error REASON" (the connection stays usable)
 *
 * Version 2 added the types in the header and the pending arguments;
 * version 3 "hello VERSION" and ackbin.
 */
#ifndef GD_CTL_H
#define GD_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ctlproto.h"
#include "conf.h"
#include "dbuf.h"
#include "wire.h"
#include "fileio.h"	/* gd_write_all */

/* Server side, on a libuv loop. */
struct gd_ctl_client;
/* Called for each complete line (without its newline). Return 0, or -1 to
 * close the client. */
typedef int (*gd_ctl_line_cb)(void *user, struct gd_ctl_client *cl,
    char *line, size_t len);
/* Called with the bytes of a request's body that is not lines (gdsub's
 * ackbin), as they arrive, at most cl->raw_left of them: returns how many
 * it took (it may leave a part item for the next call, but must take all
 * when n is cl->raw_left), or -1 to close the client. */
typedef int64_t (*gd_ctl_raw_cb)(void *user, struct gd_ctl_client *cl,
    const char *buf, size_t n);

struct gd_ctl_client {
	uv_pipe_t h;
	struct gd_ctl_srv *srv;
	struct gd_ctl_client *next, **pprev;
	char in[GD_CTL_LINE * 4];
	size_t inlen;
	struct gd_dbuf out;	/* reply bytes not yet written: one reply,
				 * at most srv->reply_max bytes */
	int reply_err;		/* GD_DBUF_* of the reply being built */
	/* what a request of the engine's keeps between lines (gdsub's ack
	 * batch), freed by req_free with the client */
	void *req;
	void (*req_free)(void *req);
	/* a body of raw bytes after a request line: a request sets both,
	 * ctl.c counts raw_left down to 0, then reads lines again */
	uint64_t raw_left;
	gd_ctl_raw_cb raw_cb;
	int kind;		/* what the engine took the client for (gdsub:
				 * a gdack, which says bye at its clean end) */
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

/* A request by its first word, as each engine lists the ones it answers.
 * args says what may follow the word: nothing (GD_CTL_NOARGS), one space
 * and the arguments (GD_CTL_ARGS), or either (GD_CTL_OPTARGS). */
enum gd_ctl_args { GD_CTL_NOARGS, GD_CTL_ARGS, GD_CTL_OPTARGS };
struct gd_ctl_req {
	const char *name;
	int args;		/* enum gd_ctl_args */
	/* line: the whole request; args: what follows the word's space, ""
	 * when nothing does. Return 0, or -1 to close the client. */
	int (*fn)(void *user, struct gd_ctl_client *cl, const char *line,
	    const char *args);
};
/* What a program answers: its name, for "hello", and its requests. */
struct gd_ctl_table {
	const char *prog;	/* gdpub, gdsub */
	const struct gd_ctl_req *req;
	size_t n;
};
/* Answer "hello [VERSION]" (every program alike: "hello PROG V"), or
 * run the request of t that line names; a line that names none, or
 * gives a request arguments it does not take (or none it must have), is
 * answered "error unknown request '...'". The handler's return, else 0. */
int gd_ctl_dispatch(const struct gd_ctl_table *t, void *user,
    struct gd_ctl_client *cl, const char *line);

/* Run the request line through cb, the engine's own line callback, as if
 * a client had sent it, within this turn of the loop (the /metrics
 * exporter asks the engine what gdinspect would): its reply into out,
 * which the caller frees. 0, or -1 when the reply passed
 * GD_CTL_REPLY_MAX or memory ran out. */
int gd_ctl_call(gd_ctl_line_cb cb, void *user, const char *line,
    struct gd_dbuf *out);

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

#endif
