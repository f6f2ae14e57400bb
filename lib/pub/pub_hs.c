/* gdpub's side of the handshake (wire protocol 4, see wire.h): a HELLO
 * welcomed at once, challenged (both sides have a key, GDpub_authKeyFile)
 * or refused (version, key on one side only, a wrong proof, a bad QoS);
 * on plain TCP the seals of what follows (seal.h: CRC32C, or with keys
 * a MAC under session keys from both nonces and the HELLO);
 * admission to a GD slot and the snapshot with the welcome; connections
 * that do not finish it within GD_HANDSHAKE_MS are swept. */
#include "pub_int.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		pub_conn_close(c, NULL);
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
	if (p->tags)
		w.flags |= GD_WF_TAGS;
	/* its reports of what the first stage read steer the window */
	w.flags |= GD_WF_CONSUMED;
	snprintf(w.origin, sizeof(w.origin), "%s", p->korigin);
	b->len = gd_wire_welcome(b->data, &w);
	for (i = 0; c->want_data && i < p->snap.n; i++) {
		const struct gd_snap_ent *s = gd_snapshot_at(&p->snap, i);
		struct gd_block blk = { s->id, s->seq, s->time_ns,
			GD_FL_SNAPSHOT, s->len, s->data };
		b->len += gd_wire_block(b->data + b->len, &blk);
		b->nblk++;
	}
	pub_conn_send(c, b);
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
		/* on a takeover, the slot's acks so far were a departed
		 * subscriber's */
		gd_deliver_slot_up(&p->dv, (unsigned)c->slot, takeover);
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
	c->state = PUB_CS_REFUSED;
	if (b != NULL) {
		b->len = gd_wire_text(b->data, GD_F_REFUSE, why);
		pub_conn_write(c, b, 0, b->len, 0);
		gd_bcast_unref(b);
	}
	pub_conn_shutdown(c);
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
	pub_tcp_flush(p);
	c->want_data = h->want_data != 0 && p->sink == &pub_tcp_sink;
	if (c->want_data) {
		c->qs = gd_qos_subscribe(&p->qos, c->name, h->run, &q, p->now);
		if (c->qs == NULL) {
			gd_err("out of memory subscribing %s (%s)", c->name,
			    c->addr);
			pub_conn_close(c, NULL);
			return;
		}
		c->queued = q.ordered || p->conf->sq_max >= 0;
	}
	send_welcome(p, c);
	if (c->state == PUB_CS_CLOSING)
		return;
	c->state = PUB_CS_ACTIVE;
	c->hello_ns = p->now;
	if (c->want_data)
		p->ndata++;
	if (!p->ready && gd_slots_ready(&p->slots))
		pub_ready(p);
	if (p->finished)	/* late subscriber: tell it at once */
		pub_send_end(c);
}

/* Refuse the connection: a welcome saying why (st), then the close once
 * it is written (or at the handshake deadline, if the peer never reads).
 * Returns -1: read nothing more from it. */
static int refuse(struct pub *p, struct sconn *c, int st)
{
	c->ack_status = st;
	c->want_data = 0;
	c->state = PUB_CS_REFUSED;
	send_welcome(p, c);
	if (c->state == PUB_CS_CLOSING)
		return -1;
	uv_read_stop((uv_stream_t *)&c->h);
	pub_conn_shutdown(c);
	return -1;
}

const char *pub_conn_who(const struct sconn *c)
{
	return c->name[0] ? c->name : "?";
}

/* A HELLO: welcome it at once, challenge it (both sides have a key), or
 * refuse it. 0, or -1 when the connection is closing. */
int pub_hello_frame(struct pub *p, struct sconn *c, const struct gd_hello *h)
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
	/* without keys every byte from here on is sealed, a refusal too */
	if (!theirs && c->tls == NULL && gd_seal_start(&c->tx, GD_SEAL_CRC,
	    NULL) != 0) {
		gd_err("out of memory greeting subscriber %s (%s); closing its "
		    "connection", pub_conn_who(c), c->addr);
		pub_conn_close(c, NULL);
		return -1;
	}
	if (ours != theirs) {
		p->n_auth_refused++;
		if (ours)
			gd_err("refused subscriber %s (%s): it has no "
			    "authentication key, and this gdpub requires one "
			    "(GDpub_authKeyFile)", pub_conn_who(c), c->addr);
		else
			gd_err("refused subscriber %s (%s): it has an "
			    "authentication key, but this gdpub has none "
			    "(GDpub_authKeyFile is not set)", pub_conn_who(c), c->addr);
		return refuse(p, c, ours ? GD_ACK_AUTH_NEEDED :
		    GD_ACK_AUTH_NOKEY);
	}
	if (!ours) {
		on_hello(p, c, h);
		return c->state == PUB_CS_CLOSING ||
	    c->state == PUB_CS_REFUSED ? -1 : 0;
	}
	memcpy(c->nc, h->nonce, GD_AUTH_NONCE);
	/* the hello waits for the proof (freed with the connection) */
	if ((c->hs_hello = malloc(sizeof(*h))) == NULL) {
		gd_err("out of memory authenticating subscriber %s (%s); closing "
		    "its connection", pub_conn_who(c), c->addr);
		pub_conn_close(c, NULL);
		return -1;
	}
	*c->hs_hello = *h;
	if (gd_auth_nonce(c->ns) != 0 ||
	    gd_auth_proof(&p->key, GD_AUTH_PUB, c->nc, c->ns, mac) != 0 ||
	    (b = gd_bcast_new(GD_WIRE_HDR + GD_CHALLENGE_LEN)) == NULL) {
		gd_err("cannot authenticate subscriber %s (%s): no random "
		    "bytes or memory; closing its connection", pub_conn_who(c), c->addr);
		pub_conn_close(c, NULL);
		return -1;
	}
	b->len = gd_wire_challenge(b->data, c->ns, mac);
	pub_conn_write(c, b, 0, b->len, 0);
	gd_bcast_unref(b);
	if (c->state == PUB_CS_CLOSING)
		return -1;
	c->state = PUB_CS_PROOF;
	/* all that follows the challenge is sealed, both ways */
	if (c->tls == NULL && gd_seal_start_macs(&c->tx, &c->rx, &p->key,
	    GD_AUTH_PUB, c->nc, c->ns, c->hh) != 0) {
		gd_err("cannot authenticate subscriber %s (%s): no session "
		    "keys (out of memory?); closing its connection",
		    pub_conn_who(c), c->addr);
		pub_conn_close(c, NULL);
		return -1;
	}
	return 0;
}

/* The subscriber's PROOF: the key's, for this connection's nonces, or a
 * refusal. */
int pub_proof_frame(struct pub *p, struct sconn *c, const struct gd_frame *f)
{
	struct gd_hello h;

	if (!gd_auth_verify(&p->key, GD_AUTH_SUB, c->nc, c->ns, f->body)) {
		p->n_auth_refused++;
		gd_err("refused subscriber %s (%s): authentication failed: its "
		    "key differs from this gdpub's (GDpub_authKeyFile)", pub_conn_who(c),
		    c->addr);
		return refuse(p, c, GD_ACK_AUTH_FAILED);
	}
	h = *c->hs_hello;
	free(c->hs_hello);
	c->hs_hello = NULL;
	gd_trace(1, "subscriber %s (%s) proved the key", pub_conn_who(c), c->addr);
	on_hello(p, c, &h);
	return c->state == PUB_CS_CLOSING ||
	    c->state == PUB_CS_REFUSED ? -1 : 0;
}

void pub_hs_sweep(struct pub *p, uint64_t now)
{
	struct sconn *c, *n;

	for (c = p->conns; c; c = n) {
		n = c->next;
		if (c->state == PUB_CS_ACTIVE || c->state == PUB_CS_CLOSING ||
		    now - c->accept_ns < (uint64_t)GD_HANDSHAKE_MS * 1000000)
			continue;
		if (c->state != PUB_CS_REFUSED) {
			p->n_hs_timeout++;
			gd_warn("closed connection from %s: no handshake within "
			    "%d seconds", c->addr, GD_HANDSHAKE_MS / 1000);
		}
		pub_conn_close(c, NULL);
	}
}

