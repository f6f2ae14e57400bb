/* --metrics ADDR:PORT: the Prometheus exporter of gdpub and gdsub, a
 * small HTTP/1.x server on their libuv loop that answers GET (and HEAD)
 * /metrics with the text exposition the engine renders (prom.h), and
 * nothing else: any other path is 404, any other method 405, a request
 * that is not HTTP/1.x 400 or 505. Every exchange is bounded: a request
 * head of at most GD_METRICS_HEAD_MAX bytes (431 past it), the whole
 * exchange within GD_METRICS_TIMEOUT_MS (408 if the request has not come
 * by then), at most GD_METRICS_CONNS connections at once (503 beyond),
 * one request per connection (Connection: close). The body is rendered
 * when the request is complete, in one turn of the loop: one snapshot. */
#ifndef GD_METRICS_H
#define GD_METRICS_H

#include <stddef.h>
#include <uv.h>

#include "dbuf.h"

#define GD_METRICS_HEAD_MAX 8192
#define GD_METRICS_TIMEOUT_MS 10000
#define GD_METRICS_CONNS 16
#define GD_METRICS_BODY_MAX ((size_t)64 << 20)

/* Append the exposition to body: 0, or -1 (the exporter answers 500). */
typedef int (*gd_metrics_render_fn)(void *user, struct gd_dbuf *body);

struct gd_metrics_conn;

struct gd_metrics {
	uv_tcp_t h;
	uv_loop_t *loop;
	gd_metrics_render_fn render;
	void *user;
	struct gd_metrics_conn *conns;
	unsigned nconns;
	char where[300];	/* "ADDR:PORT", for messages */
	int open;
	/* what it answered, for tests and traces */
	unsigned long long n_ok, n_refused;
};

/* Listen on hostport ("ADDR:PORT", [ADDR] for IPv6): 0, or -1 with why
 * (a bad address, the port in use). */
int gd_metrics_listen(struct gd_metrics *m, uv_loop_t *loop,
    const char *hostport, gd_metrics_render_fn render, void *user,
    char *why, size_t whysz);
/* The answer to a request head of len bytes (up to its empty line, or
 * GD_METRICS_HEAD_MAX): 200 for GET or HEAD of /metrics (a query string
 * aside; *head_only set for HEAD), 404 for another path, 405 for another
 * method, 505 for an HTTP version other than 1.x, 400 for anything that
 * is not a request line. */
int gd_metrics_request(const char *head, size_t len, int *head_only);
/* Stop listening and close every connection (their handles close on
 * the loop). Harmless when not listening. */
void gd_metrics_close(struct gd_metrics *m);

#endif
