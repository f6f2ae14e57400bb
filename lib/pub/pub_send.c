/* gdpub's TCP sink (see pub_net.c for the connections): blocks encoded
 * once into a shared batch buffer (BCAST_SIZE) that every data connection
 * writes, on plain TCP each write followed by the connection's seal; a connection with its own queue (reliability=ordered, or
 * GDpub_sendQueueSizeMax) is pumped from it, with the QoS rules of qos.c
 * (send timeout, drop policy, discard while offline); the floor and end
 * frames; QoS transitions logged at -vv. */
#include "pub_int.h"
#include "clock.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BCAST_SIZE (256 * 1024)	/* a pooled batch, header and data */
#define BCAST_KEEP 4	/* pooled batches kept once every backlog drained */

static void pub_conn_shut(uv_shutdown_t *req, int status);

struct bwrite {
	uv_write_t req;
	struct gd_bcast *b;	/* what is written, or (TLS, raw) NULL */
	uint8_t *own;		/* ... its ciphertext, freed when written */
	struct sconn *c;
	uint32_t nblk;
	int raw;		/* no blocks, no QoS: handshake, alert */
	/* plain TCP: the seal after the batch (seal.h), or after each piece
	 * of a batch over GD_SEAL_SPAN (in seals then) */
	uint8_t seal[GD_SEAL_FRAME_MAX];
	uint8_t *seals;
};

static void bwrite_free(struct bwrite *w)
{
	if (w->b != NULL)
		gd_bcast_unref(w->b);
	free(w->own);
	free(w->seals);
	free(w);
}

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
void pub_backlog_recheck(struct pub *p)
{
	struct sconn *c;

	if (!p->paused_backlog)
		return;
	for (c = p->conns; c; c = c->next)
		if (c->state != PUB_CS_CLOSING && conn_backlog(c) > PUB_BACKLOG_LOW)
			return;
	p->paused_backlog = 0;
	pub_kick(p);
}

void pub_send_init(struct pub *p)
{
	gd_bpool_init(&p->bpool, BCAST_SIZE - sizeof(struct gd_bcast),
	    BCAST_KEEP);
}

/* A burst is over once no connection has a backlog: the batches it
 * freed go back to the system (bcast.h), all but a few. */
static void trim_when_drained(struct pub *p)
{
	struct sconn *c;

	for (c = p->conns; c; c = c->next)
		if (c->state != PUB_CS_CLOSING && conn_backlog(c) > 0)
			return;
	gd_bpool_trim(&p->bpool);
}

static void on_bwritten(uv_write_t *req, int status)
{
	struct bwrite *w = (struct bwrite *)req;
	struct sconn *c = w->c;
	struct pub *p = c->p;

	c->nwrites--;
	if (status == 0 && c->state != PUB_CS_CLOSING && c->qs != NULL &&
	    !w->raw) {
		gd_qos_written(&p->qos, c->qs, w->nblk, c->nwrites > 0 ||
		    c->qh != NULL, gd_clock_mono_ns());
		if (c->queued)
			pub_pump(c);
	}
	bwrite_free(w);
	pub_backlog_recheck(p);
	if (p->bpool.nfree > p->bpool.keep && conn_backlog(c) == 0)
		trim_when_drained(p);
}

/* w's buffers to the socket: 0 or a libuv error (w then freed). */
static int bwrite_bufs(struct sconn *c, struct bwrite *w, const uv_buf_t *b,
    unsigned n)
{
	int rc = uv_write(&w->req, (uv_stream_t *)&c->h, b, n, on_bwritten);

	if (rc != 0) {
		bwrite_free(w);
		return rc;
	}
	c->nwrites++;
	return 0;
}

static int bwrite_start(struct sconn *c, struct bwrite *w, uint8_t *d,
    size_t len)
{
	uv_buf_t buf = uv_buf_init((char *)d, (unsigned)len);

	return bwrite_bufs(c, w, &buf, 1);
}

/* Bytes [off, off + len) of b: one piece, or two when they reach a large
 * block's payload (ext). */
static unsigned pieces(const struct gd_bcast *b, size_t off, size_t len,
    uv_buf_t buf[2])
{
	size_t h = b->ext != NULL ? b->hdr : b->len, k;
	unsigned n = 0;

	if (off < h) {
		k = len < h - off ? len : h - off;
		buf[n++] = uv_buf_init((char *)b->data + off, (unsigned)k);
		off += k;
		len -= k;
	}
	if (len > 0)
		buf[n++] = uv_buf_init((char *)(uintptr_t)(b->ext + (off - h)),
		    (unsigned)len);
	return n;
}

/* A large block's frame, its head and its payload (ext) apart, followed
 * by one seal over both. 0 or a libuv error (w then freed). */
static int bwrite_sealed2(struct sconn *c, struct bwrite *w, uv_buf_t two[2])
{
	uv_buf_t b[3] = { two[0], two[1] };
	size_t sl = gd_seal_make2(&c->tx, (const uint8_t *)two[0].base,
	    two[0].len, (const uint8_t *)two[1].base, two[1].len, w->seal);

	if (sl == 0) {
		bwrite_free(w);
		return UV_EPROTO;	/* the cipher failed */
	}
	b[2] = uv_buf_init((char *)w->seal, (unsigned)sl);
	return bwrite_bufs(c, w, b, 3);
}

/* The bytes d[0..len), each piece followed by its seal (seal.h): one
 * piece for a batch, several for a welcome with a large snapshot. 0 or a
 * libuv error (w then freed). */
static int bwrite_sealed(struct sconn *c, struct bwrite *w, uint8_t *d,
    size_t len)
{
	uv_buf_t two[2], *b = two;
	size_t n = 0, pos, k, cut, sl;
	uint8_t *sd;
	int rc;

	for (pos = 0; pos < len; pos += gd_seal_cut(d + pos, len - pos))
		n++;
	if (n > 1 && ((w->seals = malloc(n * GD_SEAL_FRAME_MAX)) == NULL ||
	    (b = malloc(2 * n * sizeof(*b))) == NULL)) {
		bwrite_free(w);
		return UV_ENOMEM;
	}
	for (pos = 0, k = 0; k < n; k++, pos += cut) {
		cut = gd_seal_cut(d + pos, len - pos);
		sd = n > 1 ? w->seals + k * GD_SEAL_FRAME_MAX : w->seal;
		if ((sl = gd_seal_make(&c->tx, d + pos, cut, sd)) == 0)
			break;
		b[2 * k] = uv_buf_init((char *)d + pos, (unsigned)cut);
		b[2 * k + 1] = uv_buf_init((char *)sd, (unsigned)sl);
	}
	if (k < n) {
		if (b != two)
			free(b);
		bwrite_free(w);
		return UV_EPROTO;	/* the cipher failed */
	}
	rc = bwrite_bufs(c, w, b, (unsigned)(2 * n));
	if (b != two)
		free(b);
	return rc;
}

int pub_conn_raw(struct sconn *c, uint8_t *own, size_t len)
{
	struct bwrite *w = calloc(1, sizeof(*w));
	int rc;

	if (w == NULL) {
		free(own);
		rc = UV_ENOMEM;
	} else {
		w->own = own;
		w->c = c;
		w->raw = 1;
		rc = bwrite_start(c, w, own, len);
	}
	if (rc != 0) {
		gd_err("cannot send to %s: %s; closing its connection", c->addr,
		    uv_strerror(rc));
		pub_conn_close(c, uv_strerror(rc));
		return -1;
	}
	return 0;
}

int pub_conn_tls_out(struct sconn *c)
{
	uint8_t *d;
	size_t n;

	if (c->tls == NULL || gd_tls_pending(c->tls) == 0)
		return 0;
	if ((d = gd_tls_take(c->tls, &n)) == NULL) {
		gd_err("cannot send to %s: out of memory; closing its "
		    "connection", c->addr);
		pub_conn_close(c, "out of memory");
		return -1;
	}
	return pub_conn_raw(c, d, n);
}

void pub_conn_shutdown(struct sconn *c)
{
	if (c->state == PUB_CS_CLOSING)
		return;
	if (c->tls != NULL) {
		gd_tls_close(c->tls);
		if (pub_conn_tls_out(c) != 0)
			return;
	}
	c->sreq.data = c;
	if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->h, pub_conn_shut) != 0)
		pub_conn_close(c, NULL);
}

/* A connection that cannot take its share of the stream is closed: its
 * pending blocks then resolve as for any lost subscriber. */
void pub_conn_write(struct sconn *c, struct gd_bcast *b, size_t off,
    size_t len, uint32_t nblk)
{
	struct bwrite *w = calloc(1, sizeof(*w));
	int rc = UV_ENOMEM;
	size_t clen;
	uv_buf_t bufs[2];
	unsigned nb = pieces(b, off, len, bufs);

	if (w != NULL) {
		w->c = c;
		w->nblk = nblk;
		if (c->tls == NULL) {
			w->b = b;
			gd_bcast_ref(b);
			if (!gd_seal_on(&c->tx))
				rc = bwrite_bufs(c, w, bufs, nb);
			else if (nb > 1)
				rc = bwrite_sealed2(c, w, bufs);
			else
				rc = bwrite_sealed(c, w, (uint8_t *)bufs[0].base,
				    bufs[0].len);
		} else if (gd_tls_write(c->tls, (const uint8_t *)bufs[0].base,
		    bufs[0].len) != 0 || (nb > 1 && gd_tls_write(c->tls,
		    (const uint8_t *)bufs[1].base, bufs[1].len) != 0)) {
			/* the batch as a whole, in as few records as TLS
			 * allows: one encryption and one write per batch */
			free(w);
			gd_err("cannot send to subscriber %s (%s): %s; closing "
			    "its connection", pub_conn_who(c), c->addr,
			    gd_tls_error(c->tls));
			pub_conn_close(c, gd_tls_error(c->tls));
			return;
		} else if ((w->own = gd_tls_take(c->tls, &clen)) == NULL)
			free(w);
		else
			rc = bwrite_start(c, w, w->own, clen);
	}
	if (rc != 0) {
		gd_err("cannot send to subscriber %s (%s): %s; closing its "
		    "connection", c->name[0] ? c->name : "?", c->addr,
		    uv_strerror(rc));
		pub_conn_close(c, uv_strerror(rc));
		return;
	}
	if (c->qs != NULL)
		gd_qos_write_began(c->qs, gd_clock_mono_ns());
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

void pub_queue_free(struct sconn *c)
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
void pub_pump(struct sconn *c)
{
	uint64_t now = gd_clock_mono_ns();

	if (c->state == PUB_CS_CLOSING)
		return;
	if (!c->qs->q.ordered) {
		if (c->nwrites > 0)
			return;
		while (c->qh != NULL && c->state != PUB_CS_CLOSING) {
			struct cseg *g = c->qh;
			if (g->len > 0)
				pub_conn_write(c, g->b, g->off, g->len, g->nblk);
			if (c->state == PUB_CS_CLOSING)
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
				pub_conn_write(c, g->b, g->off, n, (uint32_t)blk);
			if (c->state == PUB_CS_CLOSING)
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
	if (c->shut_wanted && c->qh == NULL && c->state != PUB_CS_CLOSING) {
		c->shut_wanted = 0;
		pub_conn_shutdown(c);
	}
}

/* Batch b (its blocks counted) for connection c: written at once, or
 * through its own queue, whose limit may remove the subscription or drop
 * its oldest blocks. */
void pub_conn_send(struct sconn *c, struct gd_bcast *b)
{
	struct pub *p = c->p;
	uint64_t now = gd_clock_mono_ns();
	struct cseg *g;
	int64_t k;

	if (c->qs == NULL) {
		pub_conn_write(c, b, 0, b->len, b->nblk);
		return;
	}
	k = gd_qos_enqueue(&p->qos, c->qs, b->nblk, now);
	if (k < 0) {
		gd_err("subscriber %s (%s) removed: %s", c->name, c->addr,
		    c->qs->why);
		c->counted = 1;
		pub_conn_close(c, "send queue full");
		return;
	}
	if (!c->queued) {
		pub_conn_write(c, b, 0, b->len, b->nblk);
		return;
	}
	if ((g = malloc(sizeof(*g))) == NULL) {
		gd_err("out of memory queueing blocks for subscriber %s (%s); "
		    "closing its connection", c->name, c->addr);
		pub_conn_close(c, "out of memory");
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
	pub_pump(c);
}

/* A send blocked past GDpub_sendTimeout (or an ordered block unconfirmed
 * that long) is a delivery failure: the connection goes, with everything
 * queued for it. */
void pub_send_tick(struct pub *p, uint64_t now)
{
	struct sconn *c, *n;
	char why[96];

	for (c = p->conns; c; c = n) {
		n = c->next;
		if (c->state == PUB_CS_CLOSING || c->qs == NULL ||
		    !gd_qos_send_late(&p->qos, c->qs, now))
			continue;
		snprintf(why, sizeof(why), "a send blocked for more than "
		    "GDpub_sendTimeout=%gs", p->conf->send_timeout);
		pub_conn_close(c, why);
	}
}

void pub_tcp_flush(struct pub *p)
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
			if (c->state != PUB_CS_ACTIVE || !c->want_data)
				continue;
			/* offline (QoS): its blocks are discarded; floors and
			 * the end still go */
			if (c->qs != NULL && b->nblk > 0 && c->qs->state !=
			    GD_QS_ONLINE && !gd_qos_accepts(&p->qos, c->qs,
			    b->nblk, gd_clock_mono_ns()))
				continue;
			pub_conn_send(c, b);
		}
	if (b->nblk > 0)
		gd_qos_published(&p->qos, b->nblk, gd_clock_mono_ns());
	gd_bcast_unref(b);
	for (c = p->conns; c; c = c->next)
		if (c->state != PUB_CS_CLOSING && conn_backlog(c) > PUB_BACKLOG_HIGH)
			p->paused_backlog = 1;
}

/* Room for need bytes in the current batch; NULL when out of memory (the
 * block then reaches no subscriber now: with GD it is NACKed or resent at
 * its deadline, as for any loss). */
static uint8_t *room(struct pub *p, size_t need)
{
	if (p->cur == NULL || p->cur->cap - p->cur->len < need) {
		pub_tcp_flush(p);
		p->cur = need > BCAST_SIZE - sizeof(struct gd_bcast) ?
		    gd_bcast_new(need) : gd_bpool_get(&p->bpool);
		if (p->cur == NULL) {
			gd_err("out of memory for the send buffer");
			return NULL;
		}
	}
	return p->cur->data + p->cur->len;
}

static void ext_done(void *ctx, void *ref)
{
	struct pub *p = ctx;

	gd_chunk_unref(&p->in, ref);
}

/* A large block whose payload is in an input chunk: a batch of its own
 * that writes the payload from the chunk, held until the last writer is
 * done, rather than a copy (which held twice the block). 0, or -1 to
 * copy it after all. */
static int tcp_block_ext(struct pub *p, const struct gd_block *b)
{
	struct gd_bcast *x;

	if (b->len < PUB_EXT_MIN || p->blk_chunk == NULL)
		return -1;
	pub_tcp_flush(p);
	if ((x = gd_bcast_new(GD_BLOCK_HDR)) == NULL)
		return -1;
	gd_wire_block_hdr(x->data, b);
	x->hdr = GD_BLOCK_HDR;
	x->len = GD_BLOCK_HDR + (size_t)b->len;
	x->nblk = 1;
	x->ext = b->data;
	x->ext_done = ext_done;
	x->ext_ctx = p;
	x->ext_ref = p->blk_chunk;
	gd_chunk_ref(p->blk_chunk);
	p->cur = x;
	pub_tcp_flush(p);
	return 0;
}

static void tcp_block(struct pub *p, const struct gd_block *b)
{
	uint8_t *d;

	if (tcp_block_ext(p, b) == 0)
		return;
	d = room(p, GD_BLOCK_HDR + (size_t)b->len);

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

void pub_send_end(struct sconn *c)
{
	struct gd_bcast *b = gd_bcast_new(GD_WIRE_HDR);

	if (b == NULL)
		return;
	b->len = gd_wire_empty(b->data, GD_F_END);
	pub_conn_send(c, b);
	gd_bcast_unref(b);
	c->end_sent = 1;
	c->end_late = c->p->ending;
}

static void tcp_end(struct pub *p)
{
	uint8_t *d;

	pub_tcp_flush(p);	/* the end in a batch of its own: offline
			 * subscribers discard blocks, not the end */
	d = room(p, GD_WIRE_HDR);

	if (d != NULL)
		p->cur->len += gd_wire_empty(d, GD_F_END);
	pub_tcp_flush(p);
}

/* After the sink's end (the blocks' connections had it in their
 * stream): connections that carry only acknowledgements (gdsub -i) learn
 * of the end too, so they do not try to reconnect to a publisher that is
 * gone; and every connection told is one whose BYE gdpub waits for. */
void pub_send_end_all(struct pub *p)
{
	struct sconn *c, *n;

	for (c = p->conns; c; c = n) {
		n = c->next;
		if (c->state != PUB_CS_ACTIVE)
			continue;
		if (!c->want_data)
			pub_send_end(c);
		c->end_sent = 1;
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

static void pub_conn_shut(uv_shutdown_t *req, int status)
{
	(void)status;
	pub_conn_close(req->data, NULL);
}

void pub_send_close(struct pub *p)
{
	struct sconn *c, *n;

	uv_close((uv_handle_t *)&p->srv, NULL);
	for (c = p->conns; c; c = n) {
		n = c->next;
		if (c->state == PUB_CS_CLOSING)
			continue;
		if (c->qh != NULL) {	/* after what its own queue holds */
			c->shut_wanted = 1;
			continue;
		}
		pub_conn_shutdown(c);
	}
}

const struct pub_sink pub_tcp_sink = {
	tcp_block, tcp_floor, tcp_end, pub_tcp_flush, tcp_readers, tcp_full,
	pub_tcp_flush
};

