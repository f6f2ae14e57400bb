/* gdpub's network side: listening (a given port, or -p 0 and the kernel's
 * choice), accepting subscribers up to GDpub_maxConnections, the handshake
 * (authenticated with GDpub_authKeyFile, within GD_HANDSHAKE_MS) that
 * admits a GD subscriber to a slot and replays the snapshot, their
 * acknowledgements handed to the delivery rules, and the TCP sink: blocks
 * encoded once into a shared batch buffer that every data connection
 * writes. Before its handshake is done a connection can cost no more than
 * its receive buffer: only HELLO and PROOF are read. */
#include "pub_int.h"
#include "log.h"
#include "parse.h"

#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BCAST_SIZE (256 * 1024)

struct bwrite {
	uv_write_t req;
	struct gd_bcast *b;
	struct sconn *c;
	uint32_t nblk;
};

static void conn_close(struct sconn *c, const char *why);
static void conn_shut(uv_shutdown_t *req, int status);
static void pump(struct sconn *c);

/* ---- QoS transitions (qos.c decides, this logs) ---- */

static void on_qos_transition(void *ctx, const struct gd_qsub *s, int from,
    uint64_t now)
{
	struct pub *p = ctx;

	(void)from;
	switch (s->state) {
	case GD_QS_SUBSCRIBED:
		gd_trace(2, "subscription %s: subscribed", s->name);
		break;
	case GD_QS_ONLINE:
		gd_trace(2, "subscription %s: online", s->name);
		break;
	case GD_QS_OFFLINE:
		gd_trace(2, "subscription %s: offline for %gs (failure %u of "
		    "%s): %s", s->name, p->conf->discard_interval, s->failures,
		    s->q.retry_count < 0 ? "unlimited" : "retryCount + 1",
		    s->why);
		break;
	case GD_QS_REMOVED:
		gd_trace(2, "subscription %s: removed: %s", s->name, s->why);
		break;
	}
	(void)now;
}

const struct gd_qos_ops pub_qos_ops = { on_qos_transition };

/* ---- writing ---- */

static size_t conn_backlog(struct sconn *c)
{
	return uv_stream_get_write_queue_size((uv_stream_t *)&c->h) +
	    (size_t)c->qbytes;
}

/* Input waits while a connection is far behind; it goes on once every
 * connection is below the low mark (or gone). */
static void backlog_recheck(struct pub *p)
{
	struct sconn *c;

	if (!p->paused_backlog)
		return;
	for (c = p->conns; c; c = c->next)
		if (!c->closing && conn_backlog(c) > PUB_BACKLOG_LOW)
			return;
	p->paused_backlog = 0;
	pub_kick(p);
}

static void on_bwritten(uv_write_t *req, int status)
{
	struct bwrite *w = (struct bwrite *)req;
	struct sconn *c = w->c;
	struct pub *p = c->p;

	c->nwrites--;
	if (status == 0 && !c->closing && c->qs != NULL) {
		gd_qos_written(&p->qos, c->qs, w->nblk, c->nwrites > 0 ||
		    c->qh != NULL, uv_now(&p->loop) * 1000000);
		if (c->queued)
			pump(c);
	}
	gd_bcast_unref(w->b);
	free(w);
	backlog_recheck(p);
}

/* A connection that cannot take its share of the stream is closed: its
 * pending blocks then resolve as for any lost subscriber. */
static void conn_write(struct sconn *c, struct gd_bcast *b, size_t off,
    size_t len, uint32_t nblk)
{
	struct bwrite *w = malloc(sizeof(*w));
	uv_buf_t buf;
	int rc = UV_ENOMEM;

	if (w != NULL) {
		w->b = b;
		w->c = c;
		w->nblk = nblk;
		gd_bcast_ref(b);
		buf = uv_buf_init((char *)b->data + off, (unsigned)len);
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
		conn_close(c, uv_strerror(rc));
		return;
	}
	c->nwrites++;
	if (c->qs != NULL)
		gd_qos_write_began(c->qs, uv_now(&c->p->loop) * 1000000);
}

static void seg_pop(struct sconn *c)
{
	struct cseg *g = c->qh;

	c->qh = g->next;
	if (c->qh == NULL)
		c->qt = NULL;
	gd_bcast_unref(g->b);
	free(g);
}

static void queue_free(struct sconn *c)
{
	while (c->qh)
		seg_pop(c);
	c->qblk = c->qbytes = 0;
}

/* GDpub_sendQueueSizeMaxPolicy=DropEvents: the oldest blocks still in
 * gdpub's queue go (those the socket has begun to take cannot); floors
 * go with them, the next one says as much. */
static uint64_t drop_oldest(struct sconn *c, uint64_t k)
{
	uint64_t n = 0;

	while (k > 0 && c->qblk > 0 && c->qh != NULL) {
		struct cseg *g = c->qh;
		const uint8_t *d = g->b->data + g->off;
		size_t flen;
		if (g->len == 0) {
			seg_pop(c);
			continue;
		}
		flen = GD_WIRE_HDR + gd_get32(d);
		if (d[4] == GD_F_BLOCK) {
			g->nblk--;
			c->qblk--;
			k--;
			n++;
		} else if (d[4] != GD_F_FLOOR) {
			break;	/* welcome, end: never dropped */
		}
		g->off += flen;
		g->len -= flen;
		c->qbytes -= flen;
		if (g->len == 0)
			seg_pop(c);
	}
	return n;
}

/* Hand what its own queue holds to the socket: all of it once the last
 * writes are done, or with reliability=ordered up to the next block, which
 * then waits for the subscriber's confirm. */
static void pump(struct sconn *c)
{
	struct pub *p = c->p;
	uint64_t now = uv_now(&p->loop) * 1000000;

	if (c->closing)
		return;
	if (!c->qs->q.ordered) {
		if (c->nwrites > 0)
			return;
		while (c->qh != NULL && !c->closing) {
			struct cseg *g = c->qh;
			if (g->len > 0)
				conn_write(c, g->b, g->off, g->len, g->nblk);
			if (c->closing)
				return;
			seg_pop(c);
		}
		c->qblk = c->qbytes = 0;
	} else {
		while (c->qh != NULL && gd_qos_may_send(c->qs)) {
			struct cseg *g = c->qh;
			const uint8_t *d = g->b->data;
			size_t pos = g->off, end = g->off + g->len, n;
			int blk = 0;
			uint64_t seq = 0;
			while (pos < end && !blk) {
				size_t flen = GD_WIRE_HDR + gd_get32(d + pos);
				if (d[pos + 4] == GD_F_BLOCK) {
					blk = 1;
					seq = gd_get64(d + pos + GD_WIRE_HDR + 8);
				}
				pos += flen;
			}
			n = pos - g->off;
			if (n > 0)
				conn_write(c, g->b, g->off, n, (uint32_t)blk);
			if (c->closing)
				return;
			g->off = pos;
			g->len -= n;
			c->qbytes -= n;
			if (blk) {
				g->nblk--;
				c->qblk--;
				gd_qos_sent_block(c->qs, seq, now);
			}
			if (g->len == 0)
				seg_pop(c);
		}
	}
	if (c->shut_wanted && c->qh == NULL && !c->closing) {
		c->shut_wanted = 0;
		c->sreq.data = c;
		if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->h,
		    conn_shut) != 0)
			conn_close(c, NULL);
	}
}

/* Batch b (its blocks counted) for connection c: written at once, or
 * through its own queue, whose limit may remove the subscription or drop
 * its oldest blocks. */
static void conn_send(struct sconn *c, struct gd_bcast *b)
{
	struct pub *p = c->p;
	uint64_t now = uv_now(&p->loop) * 1000000;
	struct cseg *g;
	int64_t k;

	if (c->qs == NULL) {
		conn_write(c, b, 0, b->len, b->nblk);
		return;
	}
	k = gd_qos_enqueue(&p->qos, c->qs, b->nblk, now);
	if (k < 0) {
		gd_err("subscriber %s (%s) removed: %s", c->name, c->addr,
		    c->qs->why);
		c->counted = 1;
		conn_close(c, "send queue full");
		return;
	}
	if (!c->queued) {
		conn_write(c, b, 0, b->len, b->nblk);
		return;
	}
	if ((g = malloc(sizeof(*g))) == NULL) {
		gd_err("out of memory queueing blocks for subscriber %s (%s); "
		    "closing its connection", c->name, c->addr);
		conn_close(c, "out of memory");
		return;
	}
	gd_bcast_ref(b);
	g->b = b;
	g->off = 0;
	g->len = b->len;
	g->nblk = b->nblk;
	g->next = NULL;
	if (c->qt)
		c->qt->next = g;
	else
		c->qh = g;
	c->qt = g;
	c->qblk += b->nblk;
	c->qbytes += b->len;
	if (k > 0) {
		uint64_t n = drop_oldest(c, (uint64_t)k);
		gd_qos_dropped(c->qs, n);
		if (n > 0)
			gd_trace(2, "subscriber %s: %" PRIu64 " oldest queued "
			    "block%s dropped (DropEvents)", c->name, n,
			    gd_plural((double)n));
	}
	pump(c);
}

/* A send blocked past GDpub_sendTimeout (or an ordered block unconfirmed
 * that long) is a delivery failure: the connection goes, with everything
 * queued for it. */
void pub_net_tick(struct pub *p, uint64_t now)
{
	struct sconn *c, *n;
	char why[96];

	for (c = p->conns; c; c = n) {
		n = c->next;
		if (c->closing || c->qs == NULL ||
		    !gd_qos_send_late(&p->qos, c->qs, now))
			continue;
		snprintf(why, sizeof(why), "a send blocked for more than "
		    "GDpub_sendTimeout=%gs", p->conf->send_timeout);
		conn_close(c, why);
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
			if (!c->hello || !c->want_data || c->closing)
				continue;
			/* offline (QoS): its blocks are discarded; floors and
			 * the end still go */
			if (c->qs != NULL && b->nblk > 0 && c->qs->state !=
			    GD_QS_ONLINE && !gd_qos_accepts(&p->qos, c->qs,
			    b->nblk, uv_now(&p->loop) * 1000000))
				continue;
			conn_send(c, b);
		}
	if (b->nblk > 0)
		gd_qos_published(&p->qos, b->nblk, uv_now(&p->loop) * 1000000);
	gd_bcast_unref(b);
	for (c = p->conns; c; c = c->next)
		if (!c->closing && conn_backlog(c) > PUB_BACKLOG_HIGH)
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

	if (d != NULL) {
		p->cur->len += gd_wire_block(d, b);
		p->cur->nblk++;
	}
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
	conn_send(c, b);
	gd_bcast_unref(b);
}

static void tcp_end(struct pub *p)
{
	uint8_t *d;

	tcp_flush(p);	/* the end in a batch of its own: offline
			 * subscribers discard blocks, not the end */
	d = room(p, GD_WIRE_HDR);

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
		if (c->closing)
			continue;
		if (c->qh != NULL) {	/* after what its own queue holds */
			c->shut_wanted = 1;
			continue;
		}
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
	c->p->nconns--;
	gd_rbuf_free(&c->rb);
	free(c->hs_hello);
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
	if (c->qs != NULL) {
		/* a connection lost mid-stream is a delivery failure */
		if (!c->counted && !p->finished &&
		    gd_qos_failure(&p->qos, c->qs, uv_now(&p->loop) * 1000000,
		    why ? why : "connection closed by gdpub") == GD_QS_REMOVED)
			gd_warn("subscriber %s (%s) removed: %s", c->name,
			    c->addr, c->qs->why);
		gd_qos_detach(&p->qos, c->qs);
		c->qs = NULL;
	}
	queue_free(c);
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
	backlog_recheck(p);
}

/* The welcome, then (to a data connection) the snapshot, in one write. A
 * refusing welcome has c->ack_status saying why and no snapshot. */
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
	snprintf(w.origin, sizeof(w.origin), "%s", p->korigin);
	b->len = gd_wire_welcome(b->data, &w);
	for (i = 0; c->want_data && i < p->snap.n; i++) {
		const struct gd_snap_ent *s = gd_snapshot_at(&p->snap, i);
		struct gd_block blk = { s->id, s->seq, s->time_ns,
			GD_FL_SNAPSHOT, s->len, s->data };
		b->len += gd_wire_block(b->data + b->len, &blk);
		b->nblk++;
	}
	conn_send(c, b);
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

/* QoS it cannot apply: the subscriber is told why and the connection
 * ends once that is written; gdsub reports it and exits 78. */
static void refuse_qos(struct pub *p, struct sconn *c, const char *why)
{
	struct gd_bcast *b = gd_bcast_new(GD_WIRE_HDR + GD_CTRL_MAX);

	gd_err("refused subscriber %s (%s): %s", c->name, c->addr, why);
	c->refused = 1;
	if (b != NULL) {
		b->len = gd_wire_text(b->data, GD_F_REFUSE, why);
		conn_write(c, b, 0, b->len, 0);
		gd_bcast_unref(b);
	}
	if (c->closing)
		return;
	c->sreq.data = c;
	if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->h, conn_shut) != 0)
		conn_close(c, NULL);
	(void)p;
}

static void on_hello(struct pub *p, struct sconn *c, const struct gd_hello *h)
{
	struct gd_qos_params q;
	char why[300], msg[400];

	snprintf(c->name, sizeof(c->name), "%s", h->name);
	if (gd_qos_parse(h->qos, &q, why, sizeof(why)) != 0) {
		snprintf(msg, sizeof(msg), "bad QoS %s", why);
		refuse_qos(p, c, msg);
		return;
	}
	c->ack_status = admit(p, c, h);
	/* blocks batched so far go to the others; this one starts after */
	tcp_flush(p);
	c->want_data = h->want_data != 0 && p->sink == &pub_tcp_sink;
	if (c->want_data) {
		c->qs = gd_qos_subscribe(&p->qos, c->name, h->run, &q, p->now);
		if (c->qs == NULL) {
			gd_err("out of memory subscribing %s (%s)", c->name,
			    c->addr);
			conn_close(c, NULL);
			return;
		}
		c->queued = q.ordered || p->conf->sq_max >= 0;
	}
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

/* Refuse the connection: a welcome saying why (st), then the close once
 * it is written (or at the handshake deadline, if the peer never reads).
 * Returns -1: read nothing more from it. */
static int refuse(struct pub *p, struct sconn *c, int st)
{
	c->ack_status = st;
	c->want_data = 0;
	c->refused = 1;
	send_welcome(p, c);
	if (c->closing)
		return -1;
	uv_read_stop((uv_stream_t *)&c->h);
	c->sreq.data = c;
	if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->h, conn_shut) != 0)
		conn_close(c, NULL);
	return -1;
}

static const char *who(const struct sconn *c)
{
	return c->name[0] ? c->name : "?";
}

/* A HELLO: welcome it at once, challenge it (both sides have a key), or
 * refuse it. 0, or -1 when the connection is closing. */
static int hello_frame(struct pub *p, struct sconn *c, const struct gd_hello *h)
{
	int ours = p->key.len > 0, theirs = (h->flags & GD_HF_AUTH) != 0;
	uint8_t mac[GD_AUTH_MAC];
	struct gd_bcast *b;

	snprintf(c->name, sizeof(c->name), "%s", h->name);
	if (h->version != GD_WIRE_VERSION) {
		gd_err("refused subscriber %s: it speaks protocol version %u, "
		    "this gdpub %d (a different gdkit version)", c->addr,
		    h->version, GD_WIRE_VERSION);
		return refuse(p, c, GD_ACK_VERSION);
	}
	if (ours != theirs) {
		p->n_auth_refused++;
		if (ours)
			gd_err("refused subscriber %s (%s): it has no "
			    "authentication key, and this gdpub requires one "
			    "(GDpub_authKeyFile)", who(c), c->addr);
		else
			gd_err("refused subscriber %s (%s): it has an "
			    "authentication key, but this gdpub has none "
			    "(GDpub_authKeyFile is not set)", who(c), c->addr);
		return refuse(p, c, ours ? GD_ACK_AUTH_NEEDED :
		    GD_ACK_AUTH_NOKEY);
	}
	if (!ours) {
		on_hello(p, c, h);
		return c->closing || c->refused ? -1 : 0;
	}
	memcpy(c->nc, h->nonce, GD_AUTH_NONCE);
	/* the hello waits for the proof (freed with the connection) */
	if ((c->hs_hello = malloc(sizeof(*h))) == NULL) {
		gd_err("out of memory authenticating subscriber %s (%s); closing "
		    "its connection", who(c), c->addr);
		conn_close(c, NULL);
		return -1;
	}
	*c->hs_hello = *h;
	if (gd_auth_nonce(c->ns) != 0 ||
	    gd_auth_proof(&p->key, GD_AUTH_PUB, c->nc, c->ns, mac) != 0 ||
	    (b = gd_bcast_new(GD_WIRE_HDR + GD_CHALLENGE_LEN)) == NULL) {
		gd_err("cannot authenticate subscriber %s (%s): no random "
		    "bytes or memory; closing its connection", who(c), c->addr);
		conn_close(c, NULL);
		return -1;
	}
	b->len = gd_wire_challenge(b->data, c->ns, mac);
	conn_write(c, b, 0, b->len, 0);
	gd_bcast_unref(b);
	c->hs = 1;
	return c->closing ? -1 : 0;
}

/* The subscriber's PROOF: the key's, for this connection's nonces, or a
 * refusal. */
static int proof_frame(struct pub *p, struct sconn *c, const struct gd_frame *f)
{
	struct gd_hello h;

	if (!gd_auth_verify(&p->key, GD_AUTH_SUB, c->nc, c->ns, f->body)) {
		p->n_auth_refused++;
		gd_err("refused subscriber %s (%s): authentication failed: its "
		    "key differs from this gdpub's (GDpub_authKeyFile)", who(c),
		    c->addr);
		return refuse(p, c, GD_ACK_AUTH_FAILED);
	}
	h = *c->hs_hello;
	free(c->hs_hello);
	c->hs_hello = NULL;
	c->hs = 0;
	gd_trace(1, "subscriber %s (%s) proved the key", who(c), c->addr);
	on_hello(p, c, &h);
	return c->closing || c->refused ? -1 : 0;
}

void pub_net_sweep(struct pub *p, uint64_t now)
{
	struct sconn *c, *n;

	for (c = p->conns; c; c = n) {
		n = c->next;
		if (c->hello || c->closing ||
		    now - c->accept_ns < (uint64_t)GD_HANDSHAKE_MS * 1000000)
			continue;
		if (!c->refused) {
			p->n_hs_timeout++;
			gd_warn("closed connection from %s: no handshake within "
			    "%d seconds", c->addr, GD_HANDSHAKE_MS / 1000);
		}
		conn_close(c, NULL);
	}
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
static int on_frame(struct pub *p, struct sconn *c, const struct gd_frame *f)
{
	struct gd_hello h;

	switch (f->type) {
	case GD_F_HELLO:
		if (c->hello || c->hs || gd_wire_get_hello(f, &h) != 0)
			break;
		return hello_frame(p, c, &h);
	case GD_F_PROOF:
		if (!c->hs)
			break;
		return proof_frame(p, c, f);
	case GD_F_ACK:
		if (!c->hello)
			break;
		on_acks(p, c, f);
		return 0;
	case GD_F_PREACK:
		if (!c->hello)
			break;
		pub_cluster_preacks(p, c, f);
		return 0;
	case GD_F_CONFIRM:
		if (!c->hello || f->len != 8)
			break;
		if (c->qs != NULL && gd_qos_confirm(&p->qos, c->qs,
		    gd_get64(f->body), p->now))
			pump(c);
		return 0;
	case GD_F_BYE:
		/* an explicit unsubscribe: removed whatever retryCount says */
		if (c->qs != NULL) {
			gd_qos_remove(&p->qos, c->qs, p->now,
			    "unsubscribed (gdsub exited)");
			c->counted = 1;
		}
		conn_close(c, "unsubscribed");
		return -1;
	}
	gd_err("subscriber %s (%s) sent a malformed frame; closing its connection",
	    c->name[0] ? c->name : "?", c->addr);
	conn_close(c, NULL);
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
		/* a subscriber that found our proof wrong leaves without its own */
		if (c->hs) {
			p->n_auth_refused++;
			gd_err("refused subscriber %s (%s): it closed the "
			    "connection without proving the key (its "
			    "GDsub_authKeyFile differs from GDpub_authKeyFile?)",
			    who(c), c->addr);
		}
		conn_close(c, nread == UV_EOF ? "connection closed" :
		    uv_strerror((int)nread));
		pub_maybe_done(p);
		return;
	}
	if (c->refused)
		return;		/* nothing it says counts */
	c->rb.len += (size_t)nread;
	p->now = uv_hrtime();
	while ((rc = gd_wire_next(c->rb.buf + c->rb.off, c->rb.len - c->rb.off,
	    0, &f, &used)) == 1) {
		c->rb.off += used;
		if (on_frame(p, c, &f) != 0) {
			pub_maybe_done(p);
			return;
		}
	}
	/* before its handshake a peer gets to send HELLO and PROOF, which
	 * are small: the header of any other frame is enough to close it */
	if (rc == 0 && !c->hello && c->rb.len - c->rb.off >= GD_WIRE_HDR &&
	    c->rb.buf[c->rb.off + 4] != GD_F_HELLO &&
	    c->rb.buf[c->rb.off + 4] != GD_F_PROOF)
		rc = -1;
	if (rc < 0) {
		gd_err("subscriber %s (%s) sent a malformed frame; closing its connection",
		    c->name[0] ? c->name : "?", c->addr);
		conn_close(c, NULL);
		pub_maybe_done(p);
		return;
	}
	gd_rbuf_compact(&c->rb);
	pub_arm_timer(p);
	pub_maybe_done(p);
}

static void peer_name(uv_tcp_t *h, char *addr, size_t sz)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss), port = 0;
	char host[64] = "?";

	if (uv_tcp_getpeername(h, (struct sockaddr *)&ss, &len) != 0)
		return;
	if (ss.ss_family == AF_INET) {
		uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof(host));
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	} else {
		uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof(host));
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	gd_fmt_hostport(addr, sz, host, port);
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

/* GDpub_maxConnections reached: accept (so that the peer sees its
 * connection closed rather than a backlog) and close at once. One line a
 * second at most says so, with the count. */
static void refuse_accept(struct pub *p, uv_stream_t *server)
{
	uv_tcp_t *t = malloc(sizeof(*t));
	char addr[80] = "?";

	p->n_conn_refused++;
	if (t == NULL || uv_tcp_init(&p->loop, t) != 0) {
		free(t);
		return;
	}
	if (uv_accept(server, (uv_stream_t *)t) == 0)
		peer_name(t, addr, sizeof(addr));
	uv_close((uv_handle_t *)t, free_handle);
	if (p->conn_refused_logged == 0 ||
	    p->now - p->conn_refused_logged >= 1000000000) {
		p->conn_refused_logged = p->now;
		gd_warn("refused connection from %s: %u connections already "
		    "(GDpub_maxConnections=%" PRId64 "); %" PRIu64 " refused so "
		    "far", addr, p->nconns, p->conf->max_conns,
		    p->n_conn_refused);
	}
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
	p->now = uv_hrtime();
	if (p->nconns >= (uint64_t)p->conf->max_conns) {
		refuse_accept(p, server);
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
	p->nconns++;
	c->slot = -1;
	c->accept_ns = p->now;
	c->h.data = c;
	if ((rc = uv_accept(server, (uv_stream_t *)&c->h)) != 0) {
		gd_err("cannot accept a connection: %s", uv_strerror(rc));
		uv_close((uv_handle_t *)&c->h, conn_closed);
		return;
	}
	uv_tcp_nodelay(&c->h, 1);
	peer_name(&c->h, c->addr, sizeof(c->addr));
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
