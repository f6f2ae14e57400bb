/* gdpub as a member of a multisend cluster (GDpub_cluster, SPEC §8): keys
 * are @CLUSTER/ID, told to subscribers as the origin of the welcome; a
 * secondary holds each block (lib/cluster.c decides) until the pre-acks
 * of the subscribers that got it from another member drop it, or its
 * tentative timeout passes and it is forwarded; a pre-ack for a block this
 * member sent counts as that subscriber's acknowledgement. A secondary
 * forwards only while a GD subscriber is connected whose gdsub has sent
 * the pre-acks it missed (see synced). Status lines:
 * PREACK ID when a block is dropped on a pre-ack, FORWARD ID when a held
 * block goes out (its ACK or NACK follows). */
#include "pub_int.h"
#include "clock.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>

static void dropped(struct pub *p, const struct gd_cheld *h)
{
	gd_trace(2, "block %" PRIu64 " dropped: pre-acknowledged", h->id);
	pub_status_word(p, "PREACK", h->id);
	pub_release(p, h->owner);
}

/* A held block's life ends here: never pending, so deliver counts its
 * NACK beside those of the pending blocks. */
static void nack_held(struct pub *p, const struct gd_cheld *h)
{
	pub_status_word(p, "NACK", h->id);
	gd_deliver_nack_held(&p->dv);
	pub_release(p, h->owner);
}

static void forward(struct pub *p, const struct gd_cheld *h)
{
	struct gd_chunk *c = gd_input_chunk(&p->in, h->owner);

	pub_status_word(p, "FORWARD", h->id);
	pub_input_send(p, c, h->id, c->data + h->off, h->len, gd_clock_real_ns());
	gd_chunk_unref(&p->in, c);	/* the hold's reference */
}

/* A GD subscriber connected whose gdsub has told this member every
 * pre-acknowledgement it missed while away (an empty PREACK frame ends
 * them): forwarding before that would send blocks its pipeline already
 * acknowledged, and forwarding to nobody only runs down their timeout. */
static int synced(const struct pub *p)
{
	unsigned i;

	for (i = 0; i < GD_MAX_SUBS; i++)
		if (p->slot_conn[i] != NULL && p->slot_conn[i]->cl_synced)
			return 1;
	return 0;
}

/* No subscriber to forward to: a held block past its tentative timeout
 * by GDpub_timeout is NACKed, as it would have been had it been forwarded
 * to nobody (and gdpub can end). */
static void nack_unserved(struct pub *p)
{
	uint64_t limit = (uint64_t)(p->conf->timeout * 1e9), n = 0, first = 0;
	uint64_t due;
	struct gd_cheld h;

	while ((due = gd_cluster_next_due(&p->cl)) != 0 &&
	    due + limit <= p->now && gd_cluster_pop(&p->cl, &h)) {
		if (n++ == 0)
			first = h.id;
		nack_held(p, &h);
	}
	if (n == 0)
		return;
	gd_err("NACKing %" PRIu64 " held block%s from %" PRIu64 ": no GD "
	    "subscriber told this member its pre-acknowledgements within "
	    "GDpub_timeout (%g s) after GDpub_tentativePreAckTimeout", n,
	    n == 1 ? "" : "s", first, p->conf->timeout);
	pub_kick(p);
	pub_maybe_done(p);
}

/* Every preAckTimerInterval: forward the held blocks past their
 * tentative timeout, forget the pre-acks past the confirmed one. */
static void on_cl_timer(uv_timer_t *t)
{
	struct pub *p = t->data;
	struct gd_cheld h;
	uint64_t n = 0, first = 0;

	p->now = gd_clock_mono_ns();
	gd_cluster_expire(&p->cl, p->now);
	if (!synced(p)) {
		if (gd_cluster_next_due(&p->cl) != 0 &&
		    gd_cluster_next_due(&p->cl) <= p->now && !p->cl_waiting) {
			gd_info("holding the blocks past "
			    "GDpub_tentativePreAckTimeout: no GD subscriber has "
			    "told this member its pre-acknowledgements yet (NACKed "
			    "if none has within GDpub_timeout, %g s)",
			    p->conf->timeout);
			p->cl_waiting = 1;
		}
		nack_unserved(p);
		return;
	}
	p->cl_waiting = 0;
	while (gd_cluster_due(&p->cl, p->now, &h)) {
		if (n++ == 0)
			first = h.id;
		forward(p, &h);
	}
	if (n == 0)
		return;
	gd_info("forwarding %" PRIu64 " held block%s from %" PRIu64 ": no "
	    "pre-acknowledgement within GDpub_tentativePreAckTimeout (%g s)",
	    n, n == 1 ? "" : "s", first, p->conf->tentative_timeout);
	pub_arm_timer(p);
	pub_kick(p);
	pub_maybe_done(p);
}

int pub_cluster_start(struct pub *p)
{
	const struct gd_conf *conf = p->conf;
	double ms = conf->preack_interval * 1000;
	uint64_t every = ms < 1 ? 1 : (uint64_t)(ms + 0.5);
	int rc;

	p->cluster = 1;
	p->secondary = conf->role == GD_ROLE_SECONDARY;
	snprintf(p->cname, sizeof(p->cname), "@%s", conf->cluster);
	p->korigin = p->cname;
	if (gd_cluster_init(&p->cl, p->needed, (uint64_t)(conf->tentative_timeout
	    * 1e9), (uint64_t)(conf->confirmed_timeout * 1e9),
	    (uint32_t)conf->max_pending, GD_CLUSTER_MAX_PREACKS) != 0) {
		gd_err("cannot join cluster %s: out of memory", conf->cluster);
		return GD_EX_FAIL;
	}
	if ((rc = uv_timer_init(&p->loop, &p->cl_timer)) != 0) {
		gd_err("cannot set up the event loop: %s", uv_strerror(rc));
		return GD_EX_FAIL;
	}
	p->cl_timer.data = p;
	uv_timer_start(&p->cl_timer, on_cl_timer, every, every);
	gd_trace(1, "cluster %s, %s, pre-ack timer every %g s, tentative "
	    "timeout %g s, confirmed timeout %g s", conf->cluster,
	    p->secondary ? "secondary" : "primary", conf->preack_interval,
	    conf->tentative_timeout, conf->confirmed_timeout);
	return 0;
}

void pub_cluster_close(struct pub *p)
{
	if (p->cluster && !uv_is_closing((uv_handle_t *)&p->cl_timer))
		uv_close((uv_handle_t *)&p->cl_timer, NULL);
}

void pub_cluster_free(struct pub *p)
{
	struct gd_cheld h;

	if (!p->cluster)
		return;
	while (gd_cluster_pop(&p->cl, &h))
		pub_release(p, h.owner);
	gd_cluster_free(&p->cl);
}

int pub_cluster_block(struct pub *p, struct gd_chunk *c, uint64_t id,
    const uint8_t *pl, size_t plen)
{
	char idtxt[24];

	switch (gd_cluster_block(&p->cl, id, p->secondary, c->idx,
	    (uint32_t)(pl - c->data), (uint32_t)plen, p->now)) {
	case GD_CL_SEND:
		return 0;
	case GD_CL_HOLD:
		gd_chunk_ref(c);	/* the payload stays until forwarded */
		return 1;
	case GD_CL_DROP:
		gd_trace(2, "block %" PRIu64 " dropped on arrival: "
		    "pre-acknowledged before", id);
		pub_status_word(p, "PREACK", id);
		return 1;
	case GD_CL_DUP:
		snprintf(idtxt, sizeof(idtxt), "%" PRIu64, id);
		pub_reject(p, idtxt, "invalid event block ID: %s is already "
		    "held for a pre-acknowledgement", idtxt);
		return 1;
	}
	gd_err("out of memory for the held blocks; stopping input");
	pub_drop_input(p);
	return 1;
}

void pub_cluster_preacks(struct pub *p, struct sconn *c,
    const struct gd_frame *f)
{
	uint32_t i, n = f->len / GD_PREACK_SIZE;
	uint32_t s;
	struct gd_cheld h;

	if (c->slot < 0 || !p->cluster)
		return;		/* not a GD subscriber, or not a member */
	if (n == 0) {
		if (!c->cl_synced)
			gd_trace(1, "subscriber %s: its pre-acknowledgements "
			    "from before it connected are in", c->addr);
		c->cl_synced = 1;
		return;
	}
	for (i = 0; i < n; i++) {
		uint64_t id = gd_get64(f->body + (size_t)GD_PREACK_SIZE * i);
		if ((s = gd_deliver_find(&p->dv, id)) != GD_NONE) {
			/* sent by this member too: the subscriber has it */
			c->acks++;
			gd_deliver_ack(&p->dv, (unsigned)c->slot, id,
			    gd_deliver_seq(&p->dv, gd_deliver_at(&p->dv, s)),
			    p->now);
			continue;
		}
		switch (gd_cluster_preack(&p->cl, (unsigned)c->slot, id,
		    p->now, &h)) {
		case GD_PA_DROP:
			dropped(p, &h);
			break;
		case GD_PA_NOMEM:
			gd_err("out of memory remembering the pre-acknowledgement "
			    "of %s/%" PRIu64 "; that block will be held and "
			    "forwarded if it arrives", p->cname, id);
			break;
		}
	}
	gd_deliver_acks_done(&p->dv, p->now);
	pub_kick(p);
}

void pub_cluster_nack_held(struct pub *p)
{
	struct gd_cheld h;

	if (!p->cluster)
		return;
	if (gd_cluster_held(&p->cl) > 0)
		gd_err("reporting the %u held blocks as NACK too",
		    gd_cluster_held(&p->cl));
	while (gd_cluster_pop(&p->cl, &h))
		nack_held(p, &h);
}
