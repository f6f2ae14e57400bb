/* gdsub's handlers of a publisher's wire frames, one per frame type
 * (welcome, challenge, refuse, block, floor, end), read by sub_net.c's
 * read loop. A handler checks the frame belongs in the connection's state,
 * hands what it carries on (blocks and floors to sub_block.c, a welcome to
 * sub_hs.c) and returns what the loop does next: the connection's life
 * (lost, failed, ended) stays sub_net.c's. */
#include "sub_int.h"
#include "log.h"

#include <inttypes.h>

uint32_t sub_frame_limit(const struct sub *s, const struct sub_pub *pc)
{
	uint32_t limit = (uint32_t)s->conf->sub_max_block;

	if (pc->max_block && pc->max_block < limit)
		limit = pc->max_block;
	return limit;
}

static int read_block(struct sub *s, struct sub_pub *pc,
    const struct gd_frame *f)
{
	struct gd_block b;
	struct sub_origin o = { pc->origin, pc->origin_len, pc->epoch };

	if (pc->state != SUB_PS_ACTIVE)
		return SUB_FR_BAD;
	gd_wire_get_block(f, &b);
	if (s->conf->reliability == GD_REL_ORDERED) {
		pc->confirm_due = 1;
		pc->confirm_seq = b.seq;
	}
	sub_on_block(s, pc, &b, &o);
	return s->done ? SUB_FR_STOP : SUB_FR_NEXT;
}

/* The publisher's CHALLENGE: check its proof, send ours; on plain TCP
 * all that follows it is sealed both ways, our PROOF included. */
static int read_challenge(struct sub *s, struct sub_pub *pc,
    const struct gd_frame *f, const char **why)
{
	uint8_t mac[GD_AUTH_MAC];
	int rc;

	if (pc->state != SUB_PS_WELCOME || s->key.len == 0 || pc->pub_proved)
		return SUB_FR_BAD;
	if (!gd_auth_verify(&s->key, GD_AUTH_PUB, pc->nc, f->body,
	    f->body + GD_AUTH_NONCE)) {
		*why = "authentication failed: the publisher did not prove the "
		    "key (its GDpub_authKeyFile differs from GDsub_authKeyFile)";
		return SUB_FR_DENIED;
	}
	if (gd_auth_proof(&s->key, GD_AUTH_SUB, pc->nc, f->body, mac) != 0 ||
	    (pc->tls == NULL && gd_seal_start_macs(&pc->tx, &pc->rx, &s->key,
	    GD_AUTH_SUB, pc->nc, f->body, pc->hh) != 0)) {
		*why = "cannot compute the proof of the key or the session keys";
		return SUB_FR_FAILED;
	}
	if ((rc = sub_send_proof(pc, mac)) != 0) {
		*why = uv_strerror(rc);
		return SUB_FR_FAILED;
	}
	pc->pub_proved = 1;
	return SUB_FR_NEXT;
}

static int read_welcome(struct sub *s, struct sub_pub *pc,
    const struct gd_frame *f, const char **why)
{
	struct gd_welcome w;

	if (pc->state != SUB_PS_WELCOME || gd_wire_get_welcome(f, &w) != 0)
		return SUB_FR_BAD;
	if (w.version != GD_WIRE_VERSION) {
		gd_err("publisher %s speaks protocol version %u, this gdsub %d "
		    "(a different gdkit version)", pc->addr, w.version,
		    GD_WIRE_VERSION);
		sub_finish(s, GD_EX_UNAVAILABLE);
		return SUB_FR_STOP;
	}
	/* a subscriber of our name still holds the slot there: most often
	 * the gdsub this one replaced (a restart, a takeover), whose close
	 * the publisher has not read yet. A later attempt takes the slot;
	 * staying, this connection would get blocks it cannot acknowledge
	 * until the end */
	if (s->conf->gd && w.ack_status == GD_ACK_NAME) {
		*why = gd_ack_status_str((int)w.ack_status);
		return SUB_FR_FAILED;
	}
	if (gd_ack_refused_conn((int)w.ack_status)) {
		*why = gd_ack_status_str((int)w.ack_status);
		return gd_ack_auth_refused((int)w.ack_status) ? SUB_FR_DENIED :
		    SUB_FR_FAILED;
	}
	/* a publisher that welcomes without proving the key could be anyone */
	if (s->key.len > 0 && !pc->pub_proved) {
		*why = "authentication failed: the publisher did not prove the "
		    "key of GDsub_authKeyFile (it has no GDpub_authKeyFile?)";
		return SUB_FR_DENIED;
	}
	uv_timer_stop(&pc->retry);	/* the handshake's deadline */
	sub_hs_welcome(s, pc, &w);
	return SUB_FR_NEXT;
}

static int read_refuse(struct sub *s, struct sub_pub *pc,
    const struct gd_frame *f)
{
	char why[512];

	if (pc->state != SUB_PS_WELCOME)
		return SUB_FR_BAD;
	gd_wire_get_text(f, why, sizeof(why));
	gd_err("publisher %s refused the subscription: %s", pc->addr, why);
	sub_finish(s, GD_EX_CONFIG);
	return SUB_FR_STOP;
}

static int read_floor(struct sub *s, struct sub_pub *pc,
    const struct gd_frame *f)
{
	struct sub_origin o = { pc->origin, pc->origin_len, pc->epoch };

	if (f->len != 8)
		return SUB_FR_BAD;
	sub_on_floor(s, pc, gd_get64(f->body), &o);
	return s->done ? SUB_FR_STOP : SUB_FR_NEXT;
}

int sub_frame(struct sub *s, struct sub_pub *pc, const struct gd_frame *f,
    const char **why)
{
	switch (f->type) {
	case GD_F_BLOCK: return read_block(s, pc, f);
	case GD_F_CHALLENGE: return read_challenge(s, pc, f, why);
	case GD_F_WELCOME: return read_welcome(s, pc, f, why);
	case GD_F_REFUSE: return read_refuse(s, pc, f);
	case GD_F_FLOOR: return read_floor(s, pc, f);
	case GD_F_END:
		gd_trace(1, "publisher %s ended its stream", pc->addr);
		return SUB_FR_END;
	}
	return SUB_FR_BAD;
}

/* Not malformed but too large (over our limit, within what the publisher
 * said it sends): reconnecting would only get it again. Over the
 * publisher's own limit it cannot be a block of its: the stream is
 * damaged. */
uint32_t sub_frame_too_large(const struct sub_pub *pc, uint32_t limit)
{
	const uint8_t *h = gd_rbuf_head(&pc->rb) + pc->rx.bad_at;
	uint32_t body, size;

	if (gd_rbuf_avail(&pc->rb) - pc->rx.bad_at < GD_WIRE_HDR ||
	    h[4] != GD_F_BLOCK)
		return 0;
	body = gd_get32(h);
	if (body < GD_BLOCK_HDR - GD_WIRE_HDR)
		return 0;
	size = body - (GD_BLOCK_HDR - GD_WIRE_HDR);
	return size > limit && (pc->max_block == 0 || size <= pc->max_block) ?
	    size : 0;
}
