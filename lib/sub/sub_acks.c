/* What gdsub sends its publishers: the acknowledgements (gdack's
 * requests, one key each, checked against the delivery rules of
 * receive.c, a queue per publisher, and the ack frames that carry the
 * queue in the prepare phase), and the control frames of sub_net.c
 * (hello, proof, confirm, bye). */
#include "sub_int.h"
#include "grow.h"
#include "idmap.h"
#include "key.h"
#include "log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* 0, or -1 when out of memory or full: then the block stays unacknowledged at
 * its publisher, which resends it (acknowledged again then) or NACKs it. */
int sub_ack_queue(struct sub_pub *pc, uint64_t id, uint64_t seq)
{
	/* each is of a block held unacknowledged in the publisher's dedup
	 * table, which holds no more */
	if (GD_GROW(pc->ackq, pc->capqueued, pc->nqueued + 1,
	    GD_IDMAP_MAX_SLOTS) != 0) {
		char why[64];
		gd_err("cannot queue the acknowledgement of %s/%" PRIu64
		    " (%s); its publisher will resend it", pc->origin, id,
		    gd_grow_why(pc->nqueued, GD_IDMAP_MAX_SLOTS, why,
		    sizeof(why)));
		return -1;
	}
	pc->ackq[pc->nqueued].id = id;
	pc->ackq[pc->nqueued++].seq = seq;
	return 0;
}

/* blocks written on stdout and not yet acknowledged, all publishers */
uint64_t sub_unacked(const struct sub *s)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < s->npc; i++)
		n += s->pc[i].rv.unacked;
	return n;
}

/* What receive.c needs to know of the engine for an acknowledgement. */
static int ack_how(const struct sub *s, const struct sub_pub *pc)
{
	return (pc->state == SUB_PS_ENDED ? GD_RK_ENDED : 0) |
	    (s->conf->gd ? 0 : GD_RK_NOGD) |
	    (pc->ack_status == GD_ACK_OFF ? GD_RK_OFF : 0) |
	    (gd_recv_refused(pc->ack_status) ? GD_RK_REFUSED : 0) |
	    (gd_recv_stale(&pc->rv, pc->epoch) ? GD_RK_OTHER_RUN : 0);
}

/* The publisher whose origin (or address) begins the key, and the key's
 * id and flags after it, without looking for the key's last '/' first:
 * what sub_pub_find would answer for what gd_key_parse gives (the first
 * publisher with that origin or address), or NULL (then they decide). */
static struct sub_pub *key_pub(struct sub *s, const char *key, size_t len,
    uint64_t *id, int *flags)
{
	size_t i;

	if (len == 0 || key[0] == '@')
		return NULL;	/* a cluster's key: sub_cluster_find */
	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		size_t n = pc->origin_len;
		if ((n < len && memcmp(pc->origin, key, n) == 0 &&
		    gd_key_parse_at(key, len, n, id, flags) == 0) ||
		    ((n = pc->addr_len) < len && memcmp(pc->addr, key, n) == 0 &&
		    gd_key_parse_at(key, len, n, id, flags) == 0))
			return pc;
	}
	return NULL;
}

/* NULL when the block id of pc is acknowledged, else why not */
const char *sub_ack_id(struct sub *s, struct sub_pub *pc, uint64_t id)
{
	uint64_t seq = 0;	/* 0: no copy of the current block */

	switch (gd_recv_ack(&pc->rv, id, ack_how(s, pc), &seq)) {
	case GD_RA_SEND:
		if (sub_ack_queue(pc, id, seq) != 0)
			return "out of memory; the publisher will resend the block";
		if (pc->cl >= 0)	/* and to the other members */
			sub_cluster_acked(s, pc, id, seq);
		return NULL;
	case GD_RA_OK:
		if (pc->cl >= 0)
			sub_cluster_acked(s, pc, id, seq);
		return NULL;
	case GD_RA_UNKNOWN:
		return "unknown key: no such block is waiting for acknowledgement";
	case GD_RA_NOT_WRITTEN:
		return "the block was not written on stdout";
	case GD_RA_NOGD:
		return "gdsub runs with --no-gd";
	case GD_RA_OTHER_RUN:
		return "the stream holds blocks of an earlier run of this "
		    "publisher, not of the one running now";
	case GD_RA_REFUSED:
		return "the publisher refused this gdsub's acknowledgement connection";
	default:
		return "the publisher ended its stream before this acknowledgement";
	}
}

/* NULL when acknowledged, else why not */
const char *sub_ack_key(struct sub *s, const char *key, size_t len)
{
	struct sub_pub *pc;
	size_t olen;
	uint64_t id;
	int flags;

	if ((pc = key_pub(s, key, len, &id, &flags)) != NULL) {
		if (flags & GD_FL_SNAPSHOT)
			return NULL;
	} else if (gd_key_parse(key, len, &olen, &id, &flags) != 0) {
		return "malformed key (expected HOST:PORT/ID)";
	} else if (flags & GD_FL_SNAPSHOT) {
		return NULL;	/* snapshot blocks need no acknowledgement */
	} else if ((pc = key[0] == '@' ? sub_cluster_find(s, key, olen, id) :
	    sub_pub_find(s, key, olen)) == NULL) {
		return "not a publisher of this gdsub";
	}
	return sub_ack_id(s, pc, id);
}

/* An ack frame on its way: the request, then the frame (and after the
 * last of a batch, what the first stage read). */
struct ack_write {
	uv_write_t req;
	struct sub_pub *pc;
	size_t n;		/* acknowledgements in the frame */
};

static void lost_acks(struct sub_pub *pc, size_t n, int err)
{
	gd_err("cannot send %zu acknowledgement%s to %s: %s; the publisher "
	    "will resend %s blocks", n, gd_plural((double)n), pc->addr,
	    err == UV_ENOMEM ? "out of memory" : uv_strerror(err),
	    n == 1 ? "that" : "those");
}

static void ack_written(uv_write_t *req, int status)
{
	struct ack_write *w = (struct ack_write *)req;

	/* cancelled at teardown: the exit message counts them */
	if (status < 0 && w->n > 0 &&
	    !(status == UV_ECANCELED && w->pc->s->done))
		lost_acks(w->pc, w->n, status);
	free(w);
}

/* One ack frame of n acknowledgements from ackq[off] (none when n is 0),
 * then with cons the consumption report, in one write; 0 or a libuv
 * error. */
static int send_frame(struct sub_pub *pc, size_t off, size_t n, int cons)
{
	size_t len = (n > 0 ? GD_WIRE_HDR + GD_ACK_SIZE * n : 0) +
	    (cons ? GD_WIRE_HDR + 8 : 0);
	struct ack_write *w;
	uint8_t *d;
	uv_buf_t b;
	size_t k;
	int rc;

	w = malloc(sizeof(*w) + len);
	if (w == NULL)
		return UV_ENOMEM;
	w->pc = pc;
	w->n = n;
	d = (uint8_t *)(w + 1);
	if (n > 0) {
		gd_wire_hdr(d, GD_F_ACK, 0, (uint32_t)(GD_ACK_SIZE * n));
		for (k = 0; k < n; k++)
			gd_wire_ack_put(d + GD_WIRE_HDR + GD_ACK_SIZE * k,
			    pc->ackq[off + k].id, pc->ackq[off + k].seq);
	}
	if (cons)
		(void)gd_wire_u64(d + len - GD_WIRE_HDR - 8, GD_F_CONSUMED,
		    pc->cons_seq);
	b = uv_buf_init((char *)d, (unsigned)len);
	if ((rc = sub_tls_write(pc, &w->req, &b, ack_written)) != 0)
		free(w);
	return rc;
}

/* Many acknowledgements per frame, many frames per write, and what the
 * first stage read after the last: one report a batch, none a block.
 * What cannot be sent is reported and dropped: the publisher resends
 * those blocks, and their copies are acknowledged again (GD_RV_REACK). */
void sub_acks_flush(struct sub *s)
{
	size_t i;

	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		int cons = pc->cons_due && pc->cons_ok;
		size_t off = 0;
		if ((pc->nqueued == 0 && !cons) || pc->state != SUB_PS_ACTIVE)
			continue;
		while (off < pc->nqueued || cons) {
			size_t n = pc->nqueued - off;
			int rc, last;
			if (n > GD_ACKS_PER_FRAME)
				n = GD_ACKS_PER_FRAME;
			last = cons && off + n == pc->nqueued;
			if ((rc = send_frame(pc, off, n, last)) != 0) {
				if (pc->nqueued > off)
					lost_acks(pc, pc->nqueued - off, rc);
				break;
			}
			if (last)
				cons = pc->cons_due = 0;
			off += n;
		}
		if (off > 0)
			gd_trace(2, "sent %zu acknowledgements to %s", off,
			    pc->addr);
		pc->nqueued = 0;
	}
}

/* ---- control frames ---- */

static void free_write(uv_write_t *w, int status)
{
	(void)status;
	free(w);	/* the frame follows the request in the same block */
}

/* A small control frame (BYE, or CONFIRM with its u64); a failure shows
 * as the connection's loss. */
void sub_send_small(struct sub_pub *pc, uint8_t type, int has_arg,
    uint64_t arg)
{
	uv_write_t *w = malloc(sizeof(*w) + GD_WIRE_HDR + 8);
	uv_buf_t b;
	size_t n;

	if (w == NULL)
		return;
	n = has_arg ? gd_wire_u64((uint8_t *)(w + 1), type, arg) :
	    gd_wire_empty((uint8_t *)(w + 1), type);
	b = uv_buf_init((char *)(w + 1), (unsigned)n);
	if (sub_tls_write(pc, w, &b, free_write) != 0)
		free(w);
}

static int send_ctrl(struct sub_pub *pc,
    size_t (*make)(uint8_t *dst, const void *arg), const void *arg)
{
	uv_write_t *w = malloc(sizeof(*w) + GD_WIRE_HDR + GD_CTRL_MAX);
	uv_buf_t b;
	int rc;

	if (w == NULL)
		return UV_ENOMEM;
	b = uv_buf_init((char *)(w + 1), (unsigned)make((uint8_t *)(w + 1), arg));
	if ((rc = sub_tls_write(pc, w, &b, free_write)) != 0)
		free(w);
	return rc;
}

static size_t make_hello(uint8_t *dst, const void *h)
{
	return gd_wire_hello(dst, h);
}

static size_t make_proof(uint8_t *dst, const void *mac)
{
	return gd_wire_proof(dst, mac);
}

/* The HELLO, and with a key its hash for the session keys (seal.h). */
int sub_send_hello(struct sub_pub *pc, const struct gd_hello *h)
{
	uint8_t d[GD_WIRE_HDR + GD_CTRL_MAX];
	size_t n;

	if (pc->s->key.len > 0) {
		n = gd_wire_hello(d, h);
		if (gd_seal_hello_hash(d + GD_WIRE_HDR, n - GD_WIRE_HDR,
		    pc->hh) != 0)
			return UV_ENOMEM;
	}
	return send_ctrl(pc, make_hello, h);
}

int sub_send_proof(struct sub_pub *pc, const uint8_t mac[GD_AUTH_MAC])
{
	return send_ctrl(pc, make_proof, mac);
}
