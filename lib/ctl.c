/* Control socket: the line-based libuv server of gdpub and gdsub. What it
 * shares with the blocking client of gdack and gdinspect (ctl_client.c):
 * paths, request arguments, peer uid, the probe of a served socket, is
 * ctlproto.c. See ctl.h for the protocol. */
#define _GNU_SOURCE	/* struct ucred */
#include "ctl.h"
#include "hash.h"
#include "log.h"
#include "parse.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* ---- server ---- */

static void client_closed(uv_handle_t *h)
{
	struct gd_ctl_client *cl = h->data;
	gd_dbuf_free(&cl->out);
	if (cl->req_free != NULL)
		cl->req_free(cl->req);
	free(cl);
}

static void client_close(struct gd_ctl_client *cl)
{
	if (cl->closing)
		return;
	cl->closing = 1;
	if (cl->pprev) {
		*cl->pprev = cl->next;
		if (cl->next)
			cl->next->pprev = cl->pprev;
		cl->pprev = NULL;
	}
	uv_close((uv_handle_t *)&cl->h, client_closed);
	if (cl->srv->open && cl->srv->on_gone)
		cl->srv->on_gone(cl->srv->user);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct gd_ctl_client *cl = h->data;
	(void)hint;
	b->base = cl->in + cl->inlen;
	b->len = sizeof(cl->in) - cl->inlen;
}

static void client_flush(struct gd_ctl_client *cl);

/* A reply that passed the cap (or ran out of memory) is replaced whole
 * by one error line. */
static void reply_check(struct gd_ctl_client *cl, const char *line)
{
	struct gd_ctl_srv *s = cl->srv;
	int e = cl->reply_err;

	if (e == GD_DBUF_OK)
		return;
	gd_dbuf_free(&cl->out);
	cl->reply_err = GD_DBUF_OK;
	if (e == GD_DBUF_TOOBIG)
		gd_ctl_printf(cl, "error reply larger than %zu bytes, the "
		    "control socket's limit: ask for fewer rows (gdinspect "
		    "--limit N)\n", s->reply_max);
	else
		gd_ctl_printf(cl, "error out of memory for the reply\n");
	gd_warn("control request '%.64s': reply not sent: %s",
	    line, e == GD_DBUF_TOOBIG ? "larger than the limit" :
	    "out of memory");
}

/* One request line: its reply starts in an empty buffer (what earlier
 * requests queued goes out first), so the cap is per reply. */
static int run_request(struct gd_ctl_client *cl, char *line, size_t len)
{
	struct gd_ctl_srv *s = cl->srv;
	int rc;

	client_flush(cl);
	if (cl->closing)
		return -1;
	cl->reply_err = GD_DBUF_OK;
	rc = s->cb(s->user, cl, line, len);
	reply_check(cl, line);
	return rc;
}

/* A piece of a request's raw body (gd_ctl_raw_cb): the bytes taken, or
 * -1 to close the client. */
static int64_t run_raw(struct gd_ctl_client *cl, const char *buf, size_t n)
{
	int64_t took;

	client_flush(cl);
	if (cl->closing)
		return -1;
	cl->reply_err = GD_DBUF_OK;
	took = cl->raw_cb(cl->srv->user, cl, buf, n);
	reply_check(cl, "(a request's body)");
	if (took < 0 || (uint64_t)took > n ||
	    ((uint64_t)n == cl->raw_left && (uint64_t)took != n))
		return -1;
	cl->raw_left -= (uint64_t)took;
	return took;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
	struct gd_ctl_client *cl = st->data;
	struct gd_ctl_srv *s = cl->srv;
	size_t off = 0;
	char *nl;

	(void)b;
	if (nread == UV_EOF && (cl->nwrites > 0 || gd_dbuf_len(&cl->out) > 0)) {
		/* "printf 'pending\n' | socat ..." half-closes at once: the
		 * reply still goes out in full, then the connection closes */
		cl->eof = 1;
		uv_read_stop(st);
		return;
	}
	if (nread < 0) {
		client_close(cl);
		return;
	}
	cl->inlen += (size_t)nread;
	while (!cl->closing) {
		size_t len;
		if (cl->raw_left > 0) {
			/* a request's body: what is here of it, in one piece */
			size_t n = cl->inlen - off;
			int64_t took;
			if (n > cl->raw_left)
				n = (size_t)cl->raw_left;
			if (n == 0)
				break;
			if ((took = run_raw(cl, cl->in + off, n)) < 0) {
				gd_ctl_flush(s);
				client_close(cl);
				return;
			}
			off += (size_t)took;
			if ((size_t)took < n)
				break;	/* the rest of an item is to come */
			continue;
		}
		if ((nl = memchr(cl->in + off, '\n', cl->inlen - off)) == NULL)
			break;
		len = (size_t)(nl - (cl->in + off));
		*nl = '\0';
		if (len > GD_CTL_LINE || run_request(cl, cl->in + off, len) != 0) {
			if (len > GD_CTL_LINE)
				gd_ctl_printf(cl, "error request line longer than %d bytes\n",
				    GD_CTL_LINE);
			gd_ctl_flush(s);
			client_close(cl);
			return;
		}
		off += len + 1;
	}
	if (off > 0) {
		memmove(cl->in, cl->in + off, cl->inlen - off);
		cl->inlen -= off;
	}
	if (cl->inlen == sizeof(cl->in)) {
		gd_ctl_printf(cl, "error request line longer than %d bytes\n",
		    GD_CTL_LINE);
		gd_ctl_flush(s);
		client_close(cl);
	}
}

/* The socket's mode keeps other users out; this also holds when --ctl
 * put it somewhere they can reach. Root may connect, as it could read
 * our memory anyway. */
static int peer_allowed(struct gd_ctl_client *cl)
{
	uv_os_fd_t fd;
	uid_t uid;
	long pid;

	if (uv_fileno((uv_handle_t *)&cl->h, &fd) != 0 ||
	    gd_ctl_peer_uid(fd, &uid, &pid) != 0) {
		gd_warn("refused a control connection: cannot tell who it is from: %s",
		    strerror(errno));
		gd_ctl_printf(cl, "error permission denied: cannot tell who you are\n");
	} else if (uid != geteuid() && uid != 0) {
		char who[48];
		if (geteuid() == 0)
			snprintf(who, sizeof(who), "root");
		else
			snprintf(who, sizeof(who), "uid %u and root",
			    (unsigned)geteuid());
		gd_warn("refused a control connection from uid %u (pid %ld): only "
		    "%s may connect", (unsigned)uid, pid, who);
		gd_ctl_printf(cl, "error permission denied: uid %u may not use "
		    "this socket, only %s\n", (unsigned)uid, who);
	} else {
		return 1;
	}
	gd_ctl_flush(cl->srv);
	client_close(cl);
	return 0;
}

static void on_conn(uv_stream_t *server, int status)
{
	struct gd_ctl_srv *s = server->data;
	struct gd_ctl_client *cl;

	if (status < 0)
		return;
	cl = calloc(1, sizeof(*cl));
	if (cl == NULL)
		return;
	uv_pipe_init(s->loop, &cl->h, 0);
	cl->h.data = cl;
	cl->srv = s;
	gd_dbuf_init_sized(&cl->out, 4096, s->reply_max);
	if (uv_accept(server, (uv_stream_t *)&cl->h) != 0) {
		uv_close((uv_handle_t *)&cl->h, client_closed);
		return;
	}
	cl->next = s->clients;
	if (cl->next)
		cl->next->pprev = &cl->next;
	cl->pprev = &s->clients;
	s->clients = cl;
	if (!peer_allowed(cl))
		return;
	uv_read_start((uv_stream_t *)&cl->h, on_alloc, on_read);
}

/* Something is at path already. Only a socket of ours that refuses the
 * connection (its program is gone) is removed: a live one, another
 * user's, or one we cannot even try (EACCES: someone else's in a
 * directory we may write) is left alone, said, and is an exit code. */
static int clear_stale(const char *path, const struct stat *st)
{
	struct stat again;
	char who[64], me[64];
	int fd, e;

	if (!S_ISSOCK(st->st_mode)) {
		gd_err("cannot use control socket %s: a file that is not a socket is in the way",
		    path);
		return GD_EX_UNAVAILABLE;
	}
	fd = gd_ctl_connect(path, 0, 0);
	e = errno;
	if (fd >= 0 || e == EAGAIN) {	/* EAGAIN: served, its backlog full */
		if (fd >= 0)
			close(fd);
		gd_err("cannot use control socket %s: another program is serving it (give --ctl or a different config)",
		    path);
		return GD_EX_UNAVAILABLE;
	}
	if (e != ECONNREFUSED) {
		gd_err("cannot use control socket %s: cannot tell whether a "
		    "program serves it: %s (give --ctl or a different config)",
		    path, strerror(e));
		return GD_EX_UNAVAILABLE;
	}
	if (st->st_uid != geteuid()) {
		gd_err("cannot use control socket %s: nothing serves it, but it "
		    "belongs to %s, not to you, %s: not removing it (give --ctl "
		    "or a different config)", path,
		    gd_uid_name(st->st_uid, who, sizeof(who)),
		    gd_uid_name(geteuid(), me, sizeof(me)));
		return GD_EX_UNAVAILABLE;
	}
	/* the one we probed, not one put there since */
	if (lstat(path, &again) == 0 && again.st_ino == st->st_ino &&
	    again.st_dev == st->st_dev)
		unlink(path);	/* stale: its program is gone */
	return 0;
}

int gd_ctl_listen(struct gd_ctl_srv *s, uv_loop_t *loop, const char *path,
    gd_ctl_line_cb cb, void *user)
{
	struct stat st;
	int rc;

	*s = (struct gd_ctl_srv){ .loop = loop, .cb = cb, .user = user,
	    .reply_max = GD_CTL_REPLY_MAX };
	snprintf(s->path, sizeof(s->path), "%s", path);
	if (lstat(path, &st) == 0 && (rc = clear_stale(path, &st)) != 0)
		return rc;
	uv_pipe_init(loop, &s->h, 0);
	s->h.data = s;
	if ((rc = uv_pipe_bind(&s->h, path)) != 0 ||
	    (rc = chmod(path, 0600) != 0 ? uv_translate_sys_error(errno) : 0) != 0 ||
	    (rc = uv_listen((uv_stream_t *)&s->h, 64, on_conn)) != 0) {
		gd_err("cannot listen on control socket %s: %s", path,
		    uv_strerror(rc));
		uv_close((uv_handle_t *)&s->h, NULL);
		return GD_EX_UNAVAILABLE;
	}
	s->open = 1;
	return 0;
}

void gd_ctl_close(struct gd_ctl_srv *s)
{
	if (!s->open)
		return;
	s->open = 0;
	while (s->clients)
		client_close(s->clients);
	uv_close((uv_handle_t *)&s->h, NULL);
	unlink(s->path);
}

int gd_ctl_reply(struct gd_ctl_client *cl, const void *buf, size_t len)
{
	int rc;

	if (cl->reply_err != GD_DBUF_OK)
		return -1;
	if ((rc = gd_dbuf_add(&cl->out, buf, len)) != GD_DBUF_OK) {
		cl->reply_err = rc;
		return -1;
	}
	return 0;
}

int gd_ctl_printf(struct gd_ctl_client *cl, const char *fmt, ...)
{
	va_list ap;
	int rc;

	if (cl->reply_err != GD_DBUF_OK)
		return -1;
	va_start(ap, fmt);
	rc = gd_dbuf_vaddf(&cl->out, fmt, ap);
	va_end(ap);
	if (rc != GD_DBUF_OK) {
		cl->reply_err = rc;
		return -1;
	}
	return 0;
}

struct reply {
	uv_write_t req;
	char *buf;		/* the client's output buffer, handed over */
};

static void on_written(uv_write_t *req, int status)
{
	struct reply *r = (struct reply *)req;
	struct gd_ctl_client *cl = req->handle->data;

	free(r->buf);
	free(r);
	cl->nwrites--;
	if (cl->eof && !cl->closing && cl->nwrites == 0 &&
	    (gd_dbuf_len(&cl->out) == 0 || status != 0))
		client_close(cl);
}

/* Hand what is queued to libuv; the buffer goes with the write, no
 * copy: a big pending table is held once, not twice. */
static void client_flush(struct gd_ctl_client *cl)
{
	struct reply *r;
	size_t len;
	uv_buf_t b;

	if (gd_dbuf_len(&cl->out) == 0 || cl->closing)
		return;
	if ((r = malloc(sizeof(*r))) == NULL) {
		client_close(cl);
		return;
	}
	r->buf = gd_dbuf_take(&cl->out, &len);
	b = uv_buf_init(r->buf, (unsigned)len);
	if (uv_write(&r->req, (uv_stream_t *)&cl->h, &b, 1, on_written) != 0) {
		free(r->buf);
		free(r);
		client_close(cl);
		return;
	}
	cl->nwrites++;
}

void gd_ctl_flush(struct gd_ctl_srv *s)
{
	struct gd_ctl_client *cl, *next;

	for (cl = s->clients; cl; cl = next) {
		next = cl->next;	/* a failed write unlinks cl */
		client_flush(cl);
	}
}

int gd_ctl_call(gd_ctl_line_cb cb, void *user, const char *line,
    struct gd_dbuf *out)
{
	struct gd_ctl_client *cl = calloc(1, sizeof(*cl));
	char req[GD_CTL_LINE + 1];
	size_t len = strlen(line);
	int rc = -1;

	if (cl == NULL || len > GD_CTL_LINE) {
		free(cl);
		return -1;
	}
	memcpy(req, line, len + 1);	/* the callback may cut it up */
	gd_dbuf_init_sized(&cl->out, 4096, GD_CTL_REPLY_MAX);
	cl->reply_err = GD_DBUF_OK;
	(void)cb(user, cl, req, len);
	if (cl->reply_err == GD_DBUF_OK) {
		*out = cl->out;		/* the caller's now */
		rc = 0;
	} else {
		gd_dbuf_free(&cl->out);
	}
	if (cl->req_free != NULL)
		cl->req_free(cl->req);
	free(cl);
	return rc;
}

int gd_ctl_dispatch(const struct gd_ctl_table *t, void *user,
    struct gd_ctl_client *cl, const char *line)
{
	size_t i, wlen = strcspn(line, " ");
	char end = line[wlen];

	if (wlen == 5 && memcmp(line, "hello", 5) == 0) {
		/* a bare hello is a client of version 2; "hello N" is one of
		 * version N, answered with the lower of N and ours */
		int64_t v = GD_CTL_PROTO_MIN;
		if (end != '\0' && gd_parse_i64(line + 6, 0, INT32_MAX, &v) != 0) {
			gd_ctl_printf(cl, "error bad version in '%.64s'\n", line);
			return 0;
		}
		if (v > GD_CTL_PROTO)
			v = GD_CTL_PROTO;
		if (v < GD_CTL_PROTO_MIN)
			v = GD_CTL_PROTO_MIN;
		gd_ctl_printf(cl, "hello %s %d\n", t->prog, (int)v);
		return 0;
	}
	for (i = 0; i < t->n; i++) {
		const struct gd_ctl_req *r = &t->req[i];
		if (strlen(r->name) != wlen || memcmp(line, r->name, wlen) != 0)
			continue;
		if (end == '\0' ? r->args == GD_CTL_ARGS :
		    r->args == GD_CTL_NOARGS)
			break;
		return r->fn(user, cl, line, end == '\0' ? "" : line + wlen + 1);
	}
	gd_ctl_printf(cl, "error unknown request '%.64s'\n", line);
	return 0;
}
