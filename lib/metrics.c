/* The Prometheus exporter's HTTP on the loop (see metrics.h): accept,
 * read one request head, answer, shut the writing side, read to the
 * peer's end (so that a request body it still sends does not turn our
 * close into a reset that loses the answer), close. */
#include "metrics.h"
#include "log.h"
#include "parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

enum { MC_READING, MC_WRITING, MC_DRAINING, MC_CLOSING };

struct gd_metrics_conn {
	uv_tcp_t h;
	uv_timer_t timer;
	uv_write_t wr;
	uv_shutdown_t sh;
	struct gd_metrics *m;
	struct gd_metrics_conn *next, **pprev;
	int state;
	int handles;		/* of h and timer, not yet closed */
	char *in;		/* the request head, GD_METRICS_HEAD_MAX bytes;
				 * NULL for a connection refused at once */
	size_t len;
	char *out;		/* the answer, while it is written */
	char drain[512];	/* what the peer sends after its request */
};

static void conn_freed(uv_handle_t *h)
{
	struct gd_metrics_conn *c = h->data;

	if (--c->handles > 0)
		return;
	free(c->in);
	free(c->out);
	free(c);
}

static void conn_close(struct gd_metrics_conn *c)
{
	if (c->state == MC_CLOSING)
		return;
	c->state = MC_CLOSING;
	if (c->pprev) {
		*c->pprev = c->next;
		if (c->next)
			c->next->pprev = c->pprev;
		c->pprev = NULL;
		c->m->nconns--;
	}
	uv_close((uv_handle_t *)&c->timer, conn_freed);
	uv_close((uv_handle_t *)&c->h, conn_freed);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct gd_metrics_conn *c = h->data;

	(void)hint;
	if (c->state == MC_READING)
		*b = uv_buf_init(c->in + c->len,
		    (unsigned)(GD_METRICS_HEAD_MAX - c->len));
	else
		*b = uv_buf_init(c->drain, sizeof(c->drain));
}

static void on_shut(uv_shutdown_t *req, int status)
{
	(void)req;
	(void)status;	/* the peer's end, or the timer, closes it */
}

static void on_drain(uv_stream_t *st, ssize_t n, const uv_buf_t *b);

static void on_written(uv_write_t *req, int status)
{
	struct gd_metrics_conn *c = req->data;

	free(c->out);
	c->out = NULL;
	if (c->state != MC_WRITING)
		return;
	if (status != 0 || uv_shutdown(&c->sh, (uv_stream_t *)&c->h,
	    on_shut) != 0 || uv_read_start((uv_stream_t *)&c->h, on_alloc,
	    on_drain) != 0) {
		conn_close(c);
		return;
	}
	c->state = MC_DRAINING;
}

static void on_drain(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	(void)b;
	if (n < 0)
		conn_close(st->data);	/* the peer's end: done */
}

static const char *reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	}
	return "Error";
}

/* Answer code with body (a line of text unless 200), headers only for
 * HEAD, then close once written and the peer is done. */
static void answer(struct gd_metrics_conn *c, int code, int head_only,
    const char *body, size_t blen)
{
	struct gd_dbuf o;
	size_t len;
	uv_buf_t b;
	int rc;

	gd_dbuf_init_sized(&o, 512 + blen, 1024 + blen);
	rc = gd_dbuf_addf(&o, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n%s\r\n", code,
	    reason(code), code == 200 ?
	    "text/plain; version=0.0.4; charset=utf-8" :
	    "text/plain; charset=utf-8", blen,
	    code == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (rc == GD_DBUF_OK && !head_only)
		rc = gd_dbuf_add(&o, body, blen);
	if (rc != GD_DBUF_OK) {
		gd_dbuf_free(&o);
		conn_close(c);
		return;
	}
	if (code == 200)
		c->m->n_ok++;
	else
		c->m->n_refused++;
	c->out = gd_dbuf_take(&o, &len);
	b = uv_buf_init(c->out, (unsigned)len);
	c->state = MC_WRITING;
	c->wr.data = c;
	uv_read_stop((uv_stream_t *)&c->h);
	if (uv_write(&c->wr, (uv_stream_t *)&c->h, &b, 1, on_written) != 0)
		conn_close(c);
}

static void answer_text(struct gd_metrics_conn *c, int code, const char *msg)
{
	answer(c, code, 0, msg, strlen(msg));
}

int gd_metrics_request(const char *head, size_t len, int *head_only)
{
	const char *eol = memchr(head, '\n', len), *m, *t, *v, *q;
	size_t ll, ml, tl, vl;

	*head_only = 0;
	ll = eol ? (size_t)(eol - head) : len;
	if (ll > 0 && head[ll - 1] == '\r')
		ll--;
	/* METHOD SP TARGET SP VERSION, each part non-empty */
	m = head;
	if ((t = memchr(m, ' ', ll)) == NULL)
		return 400;
	ml = (size_t)(t - m);
	t++;
	if ((v = memchr(t, ' ', ll - (size_t)(t - head))) == NULL)
		return 400;
	tl = (size_t)(v - t);
	v++;
	vl = ll - (size_t)(v - head);
	if (ml == 0 || tl == 0 || vl == 0 || t[0] != '/' ||
	    memchr(v, ' ', vl) != NULL)
		return 400;
	if (vl != 8 || memcmp(v, "HTTP/1.", 7) != 0 || v[7] < '0' ||
	    v[7] > '9')
		return vl >= 5 && memcmp(v, "HTTP/", 5) == 0 ? 505 : 400;
	if ((q = memchr(t, '?', tl)) != NULL)
		tl = (size_t)(q - t);
	if (tl != 8 || memcmp(t, "/metrics", 8) != 0)
		return 404;
	if (ml == 4 && memcmp(m, "HEAD", 4) == 0)
		*head_only = 1;
	else if (ml != 3 || memcmp(m, "GET", 3) != 0)
		return 405;
	return 200;
}

/* The request head is whole: its first line says what is asked. */
static void serve(struct gd_metrics_conn *c)
{
	struct gd_dbuf body;
	int head, code = gd_metrics_request(c->in, c->len, &head);

	switch (code) {
	case 200:
		break;
	case 404: {
		const char *e = memchr(c->in, '\n', c->len);
		size_t n = e ? (size_t)(e - c->in) : c->len;
		if (n > 0 && c->in[n - 1] == '\r')
			n--;
		gd_trace(1, "metrics: %.*s: 404", (int)(n > 80 ? 80 : n), c->in);
		answer_text(c, 404, "not found: only /metrics is served here\n");
		return;
	}
	case 405:
		gd_trace(1, "metrics: a method other than GET or HEAD: 405");
		answer_text(c, 405, "method not allowed: GET or HEAD\n");
		return;
	case 505:
		answer_text(c, 505, "HTTP version not supported: HTTP/1.0 or "
		    "HTTP/1.1\n");
		return;
	default:
		gd_trace(1, "metrics: a request that is not HTTP: 400");
		answer_text(c, 400, "bad request: expected GET /metrics "
		    "HTTP/1.1\n");
		return;
	}
	gd_dbuf_init_sized(&body, 16384, GD_METRICS_BODY_MAX);
	if (c->m->render(c->m->user, &body) != 0) {
		gd_warn("metrics: cannot render the exposition (too large or "
		    "out of memory): 500");
		answer_text(c, 500, "the metrics could not be rendered\n");
	} else {
		answer(c, 200, head, gd_dbuf_ptr(&body) ? gd_dbuf_ptr(&body) :
		    "", gd_dbuf_len(&body));
	}
	gd_dbuf_free(&body);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct gd_metrics_conn *c = st->data;
	size_t from;

	(void)b;
	if (n < 0) {
		conn_close(c);	/* gone before its request was whole */
		return;
	}
	from = c->len > 3 ? c->len - 3 : 0;
	c->len += (size_t)n;
	for (size_t i = from; i < c->len; i++) {
		/* the head ends at an empty line, CRLF or bare LF */
		if (c->in[i] == '\n' && ((i >= 1 && c->in[i - 1] == '\n') ||
		    (i >= 3 && memcmp(c->in + i - 3, "\r\n\r\n", 4) == 0))) {
			serve(c);
			return;
		}
	}
	if (c->len == GD_METRICS_HEAD_MAX) {
		gd_trace(1, "metrics: a request head of more than %d bytes: 431",
		    GD_METRICS_HEAD_MAX);
		answer_text(c, 431, "request head too large\n");
	}
}

static void on_timeout(uv_timer_t *t)
{
	struct gd_metrics_conn *c = t->data;

	if (c->state == MC_READING) {
		gd_trace(1, "metrics: no whole request within %d s: 408",
		    GD_METRICS_TIMEOUT_MS / 1000);
		answer_text(c, 408, "request timeout\n");
		uv_timer_start(&c->timer, on_timeout, GD_METRICS_TIMEOUT_MS, 0);
		return;
	}
	conn_close(c);	/* an answer not taken, or a peer that never ends */
}

static void on_conn(uv_stream_t *srv, int status)
{
	struct gd_metrics *m = srv->data;
	struct gd_metrics_conn *c;
	int full = m->nconns >= GD_METRICS_CONNS;

	if (status < 0 || (c = calloc(1, sizeof(*c))) == NULL)
		return;
	c->m = m;
	c->h.data = c->timer.data = c;
	c->handles = 2;
	c->state = MC_READING;
	uv_tcp_init(m->loop, &c->h);
	uv_timer_init(m->loop, &c->timer);
	c->next = m->conns;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &m->conns;
	m->conns = c;
	m->nconns++;
	if (uv_accept(srv, (uv_stream_t *)&c->h) != 0) {
		conn_close(c);
		return;
	}
	uv_timer_start(&c->timer, on_timeout, GD_METRICS_TIMEOUT_MS, 0);
	if (full) {
		/* told at once; the ones past twice the bound not even that */
		if (m->nconns > 2 * GD_METRICS_CONNS)
			conn_close(c);
		else
			answer_text(c, 503, "too many connections\n");
		return;
	}
	if ((c->in = malloc(GD_METRICS_HEAD_MAX)) == NULL ||
	    uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read) != 0)
		conn_close(c);
}

int gd_metrics_listen(struct gd_metrics *m, uv_loop_t *loop,
    const char *hostport, gd_metrics_render_fn render, void *user,
    char *why, size_t whysz)
{
	struct sockaddr_storage ss;
	char host[256];
	int port, rc;

	memset(m, 0, sizeof(*m));
	m->loop = loop;
	m->render = render;
	m->user = user;
	snprintf(m->where, sizeof(m->where), "%s", hostport);
	if (gd_parse_hostport(hostport, host, sizeof(host), &port) != 0 ||
	    (uv_ip4_addr(host, port, (struct sockaddr_in *)&ss) != 0 &&
	    uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss) != 0)) {
		snprintf(why, whysz, "cannot serve metrics on '%.200s': expected "
		    "ADDR:PORT with a numeric address ([ADDR]:PORT for IPv6) "
		    "and PORT from 1 to 65535", hostport);
		return -1;
	}
	if ((rc = uv_tcp_init(loop, &m->h)) != 0) {
		snprintf(why, whysz, "cannot serve metrics on %s: %s", m->where,
		    uv_strerror(rc));
		return -1;
	}
	m->h.data = m;
	if ((rc = uv_tcp_bind(&m->h, (struct sockaddr *)&ss, 0)) != 0 ||
	    (rc = uv_listen((uv_stream_t *)&m->h, 64, on_conn)) != 0) {
		snprintf(why, whysz, "cannot serve metrics on %s: %s", m->where,
		    uv_strerror(rc));
		uv_close((uv_handle_t *)&m->h, NULL);
		return -1;
	}
	m->open = 1;
	return 0;
}

void gd_metrics_close(struct gd_metrics *m)
{
	if (!m->open)
		return;
	m->open = 0;
	while (m->conns)
		conn_close(m->conns);
	uv_close((uv_handle_t *)&m->h, NULL);
}
