/* gdpub's handlers of a subscriber's wire frames, one per frame type
 * (hello, proof, ack, consumed, preack, confirm, bye), read by
 * pub_net.c's read loop. A handler checks the frame belongs in the
 * connection's state, hands what it carries on (a hello or a proof to
 * pub_hs.c, acks and consumption reports to the delivery rules, pre-acks
 * to pub_cluster.c, a confirmation to qos.c) and returns what the loop
 * does next: the connection's life (malformed, unsubscribed, closed)
 * stays pub_net.c's. */
#include "pub_int.h"

static int read_hello(struct pub *p, struct sconn *c,
    const struct gd_frame *f)
{
	struct gd_hello h;

	if (c->state != PUB_CS_HELLO || gd_wire_get_hello(f, &h) != 0)
		return PUB_FR_BAD;
	/* with keys, the session keys bind what it said */
	if ((h.flags & GD_HF_AUTH) && p->key.len > 0 &&
	    gd_seal_hello_hash(f->body, f->len, c->hh) != 0)
		return PUB_FR_BAD;
	return pub_hello_frame(p, c, &h) != 0 ? PUB_FR_CLOSED : PUB_FR_NEXT;
}

static int read_proof(struct pub *p, struct sconn *c,
    const struct gd_frame *f)
{
	if (c->state != PUB_CS_PROOF)
		return PUB_FR_BAD;
	return pub_proof_frame(p, c, f) != 0 ? PUB_FR_CLOSED : PUB_FR_NEXT;
}

static int read_acks(struct pub *p, struct sconn *c, const struct gd_frame *f)
{
	uint32_t i, n = f->len / GD_ACK_SIZE;

	if (c->state != PUB_CS_ACTIVE)
		return PUB_FR_BAD;
	if (c->slot < 0)
		return PUB_FR_NEXT;	/* not a GD subscriber: its acks do not count */
	for (i = 0; i < n; i++) {
		uint64_t id, seq;
		gd_wire_ack_at(f->body, i, &id, &seq);
		c->acks++;
		gd_deliver_ack(&p->dv, (unsigned)c->slot, id, seq, p->now);
	}
	gd_deliver_acks_done(&p->dv, p->now);
	pub_kick(p);	/* resolved, or passed over: room in the window */
	return PUB_FR_NEXT;
}

/* How far the first stage of its pipeline has read (sent with its acks):
 * the window tells a stage that drops or holds blocks from a slow one. */
static int read_consumed(struct pub *p, struct sconn *c,
    const struct gd_frame *f)
{
	if (c->state != PUB_CS_ACTIVE)
		return PUB_FR_BAD;
	if (c->slot < 0)
		return PUB_FR_NEXT;
	gd_deliver_consumed(&p->dv, (unsigned)c->slot, gd_get64(f->body),
	    p->now);
	pub_kick(p);	/* the window may have grown */
	return PUB_FR_NEXT;
}

static int read_preacks(struct pub *p, struct sconn *c,
    const struct gd_frame *f)
{
	if (c->state != PUB_CS_ACTIVE)
		return PUB_FR_BAD;
	pub_cluster_preacks(p, c, f);
	return PUB_FR_NEXT;
}

static int read_confirm(struct pub *p, struct sconn *c,
    const struct gd_frame *f)
{
	if (c->state != PUB_CS_ACTIVE || f->len != 8)
		return PUB_FR_BAD;
	if (c->qs != NULL && gd_qos_confirm(&p->qos, c->qs,
	    gd_get64(f->body), p->now))
		pub_pump(c);
	return PUB_FR_NEXT;
}

/* An explicit unsubscribe: removed whatever retryCount says (and, after
 * the end, the sign that the end arrived). */
static int read_bye(struct pub *p, struct sconn *c)
{
	c->bye = 1;
	if (c->qs != NULL) {
		gd_qos_remove(&p->qos, c->qs, p->now,
		    "unsubscribed (gdsub exited)");
		c->counted = 1;
	}
	return PUB_FR_BYE;
}

int pub_frame(struct pub *p, struct sconn *c, const struct gd_frame *f)
{
	switch (f->type) {
	case GD_F_HELLO: return read_hello(p, c, f);
	case GD_F_PROOF: return read_proof(p, c, f);
	case GD_F_ACK: return read_acks(p, c, f);
	case GD_F_PREACK: return read_preacks(p, c, f);
	case GD_F_CONFIRM: return read_confirm(p, c, f);
	case GD_F_CONSUMED: return read_consumed(p, c, f);
	case GD_F_BYE: return read_bye(p, c);
	}
	return PUB_FR_BAD;
}
