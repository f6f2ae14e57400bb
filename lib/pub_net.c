/* gdpub's network side: listening (a given port, or -p 0 and the kernel's
 * choice), accepting subscribers, the handshake that admits a GD
 * subscriber to a slot and replays the snapshot, their acknowledgements
 * handed to the delivery rules, and the TCP sink: blocks encoded once into
 * a shared batch buffer that every data connection writes. */
#include "pub_int.h"
#include "log.h"
#include "parse.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BCAST_SIZE (256 * 1024)

struct bwrite {
	uv_write_t req;
	struct gd_bcast *b;
	struct sconn *c;
};

/* ---- writing ---- */

static void on_bwritten(uv_write_t *req, int status)
{
	struct bwrite *w = (struct bwrite *)req;
	struct pub *p = w->c->p;
	struct sconn *c;

	(void)status;	/* a failed write: the read side reports the loss */
	gd_bcast_unref(w->b);
	free(w);
	if (!p->paused_backlog)
		return;
	for (c = p->conns; c; c = c->next)
		if (uv_stream_get_write_queue_size((uv_stream_t *)&c->h) >
		    PUB_BACKLOG_LOW)
			return;
	p->paused_backlog = 0;
	pub_kick(p);
}

static void conn_close(struct sconn *c, const char *why);

/* A connection that cannot take its share of the stream is closed: its
 * pending blocks then resolve as for any lost subscriber. */
static void conn_write(struct sconn *c, struct gd_bcast *b)
{
	struct bwrite *w = malloc(sizeof(*w));
	uv_buf_t buf;
	int rc = UV_ENOMEM;

	if (w != NULL) {
		w->b = b;
		w->c = c;
		gd_bcast_ref(b);
		buf = uv_buf_init((char *)b->data, (unsigned)b->len);
		if ((rc = uv_write(&w->req, (uv_stream_t *)&c->h, &buf, 1,
		    on_bwritten)) != 0) {
			gd_bcast_unref(b);
			free(w);
		}
	}
	if (rc != 0) {
		gd_err("cannot send to subscriber %s (%s): %s; closing its "
		    "connection", c->name[0] ? c->name : "?", c->addr,
		    uv_strerror(rc));
		conn_close(c, NULL);
	}
}

static void tcp_flush(struct pub *p)
{
	struct gd_bcast *b = p->cur;
	struct sconn *c, *n;

	if (b == NULL)
		return;
	p->cur = NULL;
	if (pub_journal_commit(p) != 0) {	/* not on disk: not sent */
		gd_bcast_unref(b);
		return;
	}
	if (b->len > 0)
		for (c = p->conns; c; c = n) {
			n = c->next;
			if (c->hello && c->want_data && !c->closing)
				conn_write(c, b);
		}
	gd_bcast_unref(b);
	for (c = p->conns; c; c = c->next)
		if (uv_stream_get_write_queue_size((uv_stream_t *)&c->h) >
		    PUB_BACKLOG_HIGH)
			p->paused_backlog = 1;
}

/* Room for need bytes in the current batch; NULL when out of memory (the
 * block then reaches no subscriber now: with GD it is NACKed or resent at
 * its deadline, as for any loss). */
static uint8_t *room(struct pub *p, size_t need)
{
	if (p->cur == NULL || p->cur->cap - p->cur->len < need) {
		tcp_flush(p);
		p->cur = gd_bcast_new(need > BCAST_SIZE ? need : BCAST_SIZE);
		if (p->cur == NULL) {
			gd_err("out of memory for the send buffer");
			return NULL;
		}
	}
	return p->cur->data + p->cur->len;
}

static void tcp_block(struct pub *p, const struct gd_block *b)
{
	uint8_t *d = room(p, GD_BLOCK_HDR + (size_t)b->len);

	if (d != NULL)
		p->cur->len += gd_wire_block(d, b);
}

static void tcp_floor(struct pub *p, uint64_t floor)
{
	uint8_t *d = room(p, GD_WIRE_HDR + 8);

	if (d != NULL)
		p->cur->len += gd_wire_u64(d, GD_F_FLOOR, floor);
}

static void send_end(struct sconn *c)
{
	struct gd_bcast *b = gd_bcast_new(GD_WIRE_HDR);

	if (b == NULL)
		return;
	b->len = gd_wire_empty(b->data, GD_F_END);
	conn_write(c, b);
	gd_bcast_unref(b);
}

static void tcp_end(struct pub *p)
{
	uint8_t *d = room(p, GD_WIRE_HDR);

	if (d != NULL)
		p->cur->len += gd_wire_empty(d, GD_F_END);
	tcp_flush(p);
}

/* Connections that carry only acknowledgements (gdsub -i) learn of the
 * end too, so they do not try to reconnect to a publisher that is gone. */
void pub_net_end(struct pub *p)
{
	struct sconn *c, *n;

	for (c = p->conns; c; c = n) {
		n = c->next;
		if (c->hello && !c->want_data && !c->closing)
			send_end(c);
	}
}

static int tcp_readers(struct pub *p)
{
	return p->ndata > 0;
}

static int tcp_full(struct pub *p)
{
	return p->paused_backlog;
}

static void conn_shut(uv_shutdown_t *req, int status)
{
	(void)status;
	conn_close(req->data, NULL);
}

void pub_net_close(struct pub *p)
{
	struct sconn *c, *n;

	uv_close((uv_handle_t *)&p->srv, NULL);
	for (c = p->conns; c; c = n) {
		n = c->next;
		c->sreq.data = c;
		if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->h, conn_shut) != 0)
			conn_close(c, NULL);
	}
}

const struct pub_sink pub_tcp_sink = {
	tcp_block, tcp_floor, tcp_end, tcp_flush, tcp_readers, tcp_full,
	tcp_flush
};

/* ---- connections ---- */

static void conn_closed(uv_handle_t *h)
{
	struct sconn *c = h->data;
	gd_rbuf_free(&c->rb);
	free(c);
}

static void conn_close(struct sconn *c, const char *why)
{
	struct pub *p = c->p;

	if (c->closing)
		return;
	c->closing = 1;
	if (c->hello && c->want_data)
		p->ndata--;
	if (c->slot >= 0) {
		p->slot_conn[c->slot] = NULL;
		gd_slots_leave(&p->slots, c->slot);
		p->ngd--;
	}
	/* a GD subscriber leaving mid-stream is why blocks will be NACKed */
	if (why && c->slot >= 0 && !p->finished)
		gd_warn("GD subscriber %s (%s) disconnected: %s; %u of %u "
		    "connected, %u blocks pending", c->name, c->addr, why,
		    p->ngd, p->needed, p->dv.pend.count);
	else if (why)
		gd_trace(1, "subscriber %s (%s) disconnected: %s",
		    c->name[0] ? c->name : "?", c->addr, why);
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	uv_close((uv_handle_t *)&c->h, conn_closed);
}

/* The welcome, then (to a data connection) the snapshot, in one write. */
static void send_welcome(struct pub *p, struct sconn *c)
{
	struct gd_welcome w;
	struct gd_bcast *b;
	size_t need = GD_WIRE_HDR + GD_CTRL_MAX;
	uint32_t i;

	for (i = 0; c->want_data && i < p->snap.n; i++)
		need += GD_BLOCK_HDR + gd_snapshot_at(&p->snap, i)->len;
	if ((b = gd_bcast_new(need)) == NULL) {
		gd_err("out of memory welcoming subscriber %s (%s)", c->name,
		    c->addr);
		conn_close(c, NULL);
		return;
	}
	memset(&w, 0, sizeof(w));
	w.version = GD_WIRE_VERSION;
	w.ack_status = (unsigned)c->ack_status;
	w.num_subs = p->needed;
	w.max_block = (uint32_t)p->conf->max_block;
	w.timeout_ms = (uint32_t)(p->conf->timeout * 1000);
	w.epoch = p->epoch;
	w.flags = p->sink == &pub_stream_sink ? GD_WF_STREAM : 0;
	snprintf(w.origin, sizeof(w.origin), "%s", p->origin);
	b->len = gd_wire_welcome(b->data, &w);
	for (i = 0; c->want_data && i < p->snap.n; i++) {
		const struct gd_snap_ent *s = gd_snapshot_at(&p->snap, i);
		struct gd_block blk = { s->id, s->seq, s->time_ns,
			GD_FL_SNAPSHOT, s->len, s->data };
		b->len += gd_wire_block(b->data + b->len, &blk);
	}
	conn_write(c, b);
	gd_bcast_unref(b);
}

/* Which kind of connection this is: a GD subscriber in a slot, a refused
 * one, or one that only receives. */
static int admit(struct pub *p, struct sconn *c, const struct gd_hello *h)
{
	int st = GD_ACK_NONE, takeover = 0;

	if (h->want_data && p->sink == &pub_stream_sink) {
		/* it would wait for blocks that never come: no GD slot, no READY */
		gd_err("subscriber %s (%s) asked for blocks over TCP, but this "
		    "gdpub writes them as a framed stream (-o); read the stream "
		    "with gdsub -i", c->name, c->addr);
		return st;
	}
	if (!h->gd)
		st = GD_ACK_NONE;
	else if ((st = gd_slots_admit(&p->slots, c->name, &c->slot,
	    &takeover)) == GD_ACK_OK) {
		/* the slot's acks so far were a departed subscriber's */
		if (takeover)
			gd_deliver_slot_reset(&p->dv, (unsigned)c->slot);
		p->slot_conn[c->slot] = c;
		p->ngd++;
		gd_trace(1, "subscriber %s (%s) connected: GD slot %d, %u of %u",
		    c->name, c->addr, c->slot, p->ngd, p->needed);
		return st;
	} else {
		c->slot = -1;
	}
	if (st == GD_ACK_FULL || st == GD_ACK_NAME)
		gd_err("refused acknowledgement connection from %s (%s): %s",
		    c->name, c->addr, st == GD_ACK_FULL ?
		    "numSubs GD subscribers are already connected" :
		    "a GD subscriber with this name is already connected");
	else
		gd_trace(1, "subscriber %s (%s) connected: %s", c->name,
		    c->addr, st == GD_ACK_OFF ? "GD off at this publisher" :
		    "receive only");
	return st;
}

static void on_hello(struct pub *p, struct sconn *c, const struct gd_hello *h)
{
	snprintf(c->name, sizeof(c->name), "%s", h->name);
	c->ack_status = admit(p, c, h);
	/* blocks batched so far go to the others; this one starts after */
	tcp_flush(p);
	c->want_data = h->want_data != 0 && p->sink == &pub_tcp_sink;
	send_welcome(p, c);
	if (c->closing)
		return;
	c->hello = 1;
	c->hello_ns = p->now;
	if (c->want_data)
		p->ndata++;
	if (!p->ready && gd_slots_ready(&p->slots))
		pub_ready(p);
	if (p->finished)	/* late subscriber: tell it at once */
		send_end(c);
}

static void on_acks(struct pub *p, struct sconn *c, const struct gd_frame *f)
{
	uint32_t i, n = f->len / GD_ACK_SIZE, before = p->dv.pend.count;

	if (c->slot < 0)
		return;		/* not a GD subscriber: its acks do not count */
	for (i = 0; i < n; i++) {
		uint64_t id, seq;
		gd_wire_ack_at(f->body, i, &id, &seq);
		c->acks++;
		gd_deliver_ack(&p->dv, (unsigned)c->slot, id, seq, p->now);
	}
	gd_deliver_acks_done(&p->dv, before, p->now);
	if (p->dv.pend.count < before)
		pub_kick(p);
}

static void conn_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct sconn *c = h->data;
	uint8_t *ptr = NULL;
	size_t n = 0;

	(void)hint;
	if (gd_rbuf_space(&c->rb, 16384, &ptr, &n) != 0)
		ptr = NULL, n = 0;	/* libuv reports UV_ENOBUFS */
	*b = uv_buf_init((char *)ptr, (unsigned)n);
}

/* One frame from a subscriber: 0, or -1 when the connection was closed. */
/* A frame that is bad, or out of place (type: its type, 0 when it could
 * not be read as a frame). Before a hello, the peer may not be a gdsub
 * at all (a port scanner, a browser): say so rather than name it "?". */
static void malformed(struct sconn *c, unsigned type)
{
	if (!c->hello && type == 0)
		gd_err("connection from %s sent bytes that are not a gdkit wire "
		    "frame (not a gdsub?); closing it", c->addr);
	else if (!c->hello)
		gd_err("connection from %s sent a frame of type %u before its "
		    "hello; closing it", c->addr, type);
	else
		gd_err("subscriber %s (%s) sent a malformed frame%s; closing "
		    "its connection", c->name[0] ? c->name : "?", c->addr,
		    type ? " (out of place)" : "");
	conn_close(c, NULL);
}

static int on_frame(struct pub *p, struct sconn *c, const struct gd_frame *f)
{
	struct gd_hello h;

	switch (f->type) {
	case GD_F_HELLO:
		if (c->hello)
			break;
		if (gd_wire_get_hello(f, &h) != 0 || h.version != GD_WIRE_VERSION) {
			gd_err("connection from %s: unsupported protocol version "
			    "%u (this gdpub speaks %d); closing it", c->addr,
			    f->len >= 2 ? h.version : 0, GD_WIRE_VERSION);
			conn_close(c, NULL);
			return -1;
		}
		on_hello(p, c, &h);
		return c->closing ? -1 : 0;
	case GD_F_ACK:
		if (!c->hello)
			break;
		on_acks(p, c, f);
		return 0;
	case GD_F_BYE:
		conn_close(c, "unsubscribed");
		return -1;
	}
	malformed(c, f->type);
	return -1;
}

static void conn_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct sconn *c = st->data;
	struct pub *p = c->p;
	struct gd_frame f;
	size_t used;
	int rc;

	(void)buf;
	if (nread < 0) {
		conn_close(c, nread == UV_EOF ? "connection closed" :
		    uv_strerror((int)nread));
		pub_check_done(p);
		return;
	}
	c->rb.len += (size_t)nread;
	p->now = uv_hrtime();
	while ((rc = gd_wire_next(c->rb.buf + c->rb.off, c->rb.len - c->rb.off,
	    0, &f, &used)) == 1) {
		c->rb.off += used;
		if (on_frame(p, c, &f) != 0) {
			pub_check_done(p);
			return;
		}
	}
	if (rc < 0) {
		malformed(c, 0);
		pub_check_done(p);
		return;
	}
	gd_rbuf_compact(&c->rb);
	pub_arm_timer(p);
	pub_check_done(p);
}

static void peer_name(struct sconn *c)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss), port = 0;
	char host[64] = "?";

	if (uv_tcp_getpeername(&c->h, (struct sockaddr *)&ss, &len) != 0)
		return;
	if (ss.ss_family == AF_INET) {
		uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof(host));
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	} else {
		uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof(host));
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	gd_fmt_hostport(c->addr, sizeof(c->addr), host, port);
}

static void on_accept(uv_stream_t *server, int status)
{
	struct pub *p = server->data;
	struct sconn *c;
	int rc;

	if (status < 0) {
		gd_err("cannot accept a connection: %s", uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL || gd_rbuf_init(&c->rb, 65536) != 0 ||
	    uv_tcp_init(&p->loop, &c->h) != 0) {
		gd_err("cannot accept a connection: out of memory");
		if (c != NULL)
			gd_rbuf_free(&c->rb);
		free(c);
		return;
	}
	c->p = p;
	c->slot = -1;
	c->h.data = c;
	if ((rc = uv_accept(server, (uv_stream_t *)&c->h)) != 0) {
		gd_err("cannot accept a connection: %s", uv_strerror(rc));
		uv_close((uv_handle_t *)&c->h, conn_closed);
		return;
	}
	uv_tcp_nodelay(&c->h, 1);
	peer_name(c);
	c->next = p->conns;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &p->conns;
	p->conns = c;
	if ((rc = uv_read_start((uv_stream_t *)&c->h, conn_alloc, conn_read)) != 0) {
		gd_err("cannot read from %s: %s", c->addr, uv_strerror(rc));
		conn_close(c, NULL);
	}
}

/* ---- listening ---- */

/* The host written into keys: GDpub_host, else the bind address, or the
 * host name for a wildcard bind. */
static int key_host(struct pub *p, const char *bind, char *host, size_t sz)
{
	if (p->conf->host)
		snprintf(host, sz, "%s", p->conf->host);
	else if (strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0) {
		if (gethostname(host, sz) != 0)
			snprintf(host, sz, "localhost");
		host[sz - 1] = '\0';
	} else
		snprintf(host, sz, "%s", bind);
	if (!gd_valid_host(host)) {
		gd_err("cannot use %s '%s' in block keys: expected %s; "
		    "set --host or GDpub_host", strcmp(bind, host) ?
		    "host name" : "bind address", host, GD_VALID_HOST_WHAT);
		return GD_EX_CONFIG;
	}
	return 0;
}

/* The port actually bound (the kernel's choice for -p 0). */
static int bound_port(uv_tcp_t *srv)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);

	if (uv_tcp_getsockname(srv, (struct sockaddr *)&ss, &len) != 0)
		return 0;
	return ntohs(ss.ss_family == AF_INET ?
	    ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port);
}

int pub_listen(struct pub *p)
{
	struct addrinfo hints, *res = NULL;
	char port[16], host[GD_HOST_MAX];
	const char *bind = p->conf->bind ? p->conf->bind : "127.0.0.1";
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%d", (int)p->conf->port);
	if ((rc = key_host(p, bind, host, sizeof(host))) != 0)
		return rc;
	if ((rc = getaddrinfo(bind, port, &hints, &res)) != 0) {
		gd_err("cannot listen on %s port %s: %s", bind, port,
		    gai_strerror(rc));
		return GD_EX_UNAVAILABLE;
	}
	if ((rc = uv_tcp_init(&p->loop, &p->srv)) == 0) {
		p->srv.data = p;
		rc = uv_tcp_bind(&p->srv, res->ai_addr, 0);
		if (rc == 0)
			rc = uv_listen((uv_stream_t *)&p->srv, 128, on_accept);
	}
	freeaddrinfo(res);
	if (rc != 0) {
		gd_err("cannot listen on %s port %s: %s", bind, port,
		    uv_strerror(rc));
		return GD_EX_UNAVAILABLE;
	}
	p->port = bound_port(&p->srv);
	gd_fmt_hostport(p->origin, sizeof(p->origin), host, p->port);
	p->origin_len = strlen(p->origin);
	return 0;
}
