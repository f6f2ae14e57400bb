/* Control socket: path derivation, request arguments, and the line-based
 * libuv server of gdpub and gdsub. The blocking client of gdack and
 * gdinspect is ctl_client.c. See ctl.h for the protocol. */
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

/* $XDG_RUNTIME_DIR/gdkit or /tmp/gdkit-UID, created 0700, ours alone */
static int ctl_dir(char *buf, size_t sz)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	int n;

	if (x != NULL && *x == '/')
		n = snprintf(buf, sz, "%s/gdkit", x);
	else
		n = snprintf(buf, sz, "/tmp/gdkit-%u", (unsigned)geteuid());
	if (n < 0 || (size_t)n >= sz) {
		gd_err("control socket directory name too long");
		return GD_EX_USAGE;
	}
	if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
		gd_err("cannot create control socket directory %s: %s", buf,
		    strerror(errno));
		return GD_EX_UNAVAILABLE;
	}
	if (lstat(buf, &st) != 0) {
		gd_err("cannot use control socket directory %s: %s", buf,
		    strerror(errno));
		return GD_EX_UNAVAILABLE;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		gd_err("refusing control socket directory %s: it must be a "
		    "directory of yours with mode 0700", buf);
		return GD_EX_UNAVAILABLE;
	}
	return 0;
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

/* ---- server ---- */

static void client_closed(uv_handle_t *h)
{
	struct gd_ctl_client *cl = h->data;
	gd_dbuf_free(&cl->out);
	free(cl->fail);
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

/* One request line: its reply starts in an empty buffer (what earlier
 * requests queued goes out first), so the cap is per reply, and a reply
 * that passed it is replaced whole by one error line. */
static int run_request(struct gd_ctl_client *cl, char *line, size_t len)
{
	struct gd_ctl_srv *s = cl->srv;
	int rc;

	client_flush(cl);
	if (cl->closing)
		return -1;
	cl->reply_err = GD_DBUF_OK;
	rc = s->cb(s->user, cl, line, len);
	if (cl->reply_err != GD_DBUF_OK) {
		int e = cl->reply_err;
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
	return rc;
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
	while (!cl->closing &&
	    (nl = memchr(cl->in + off, '\n', cl->inlen - off)) != NULL) {
		size_t len = (size_t)(nl - (cl->in + off));
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

int gd_ctl_listen(struct gd_ctl_srv *s, uv_loop_t *loop, const char *path,
    gd_ctl_line_cb cb, void *user)
{
	struct stat st;
	int rc, fd;

	memset(s, 0, sizeof(*s));
	s->loop = loop;
	s->cb = cb;
	s->user = user;
	s->reply_max = GD_CTL_REPLY_MAX;
	snprintf(s->path, sizeof(s->path), "%s", path);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			gd_err("cannot use control socket %s: a file that is not a socket is in the way",
			    path);
			return GD_EX_UNAVAILABLE;
		}
		fd = gd_ctl_connect(path, 0);
		if (fd >= 0) {
			close(fd);
			gd_err("cannot use control socket %s: another program is serving it (give --ctl or a different config)",
			    path);
			return GD_EX_UNAVAILABLE;
		}
		unlink(path);	/* stale: its program is gone */
	}
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
