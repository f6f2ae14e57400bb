/* gdsub and multisend clusters (SPEC §8): a publisher whose welcome names
 * the origin @CLUSTER is a member of that cluster; the members' blocks are
 * deduplicated by @CLUSTER/ID across members (which give the same block
 * the same ID but each their own sequence index); the acknowledgement of
 * @CLUSTER/ID goes to the member whose copy was written, and to every
 * other member as a pre-acknowledgement (a GD_F_PREACK frame of IDs), so
 * that a secondary drops its held copy and a member that sent a copy too
 * counts it as acknowledged.
 *
 * A re-published ID is a new block here too (receive.h): an ID names one
 * block of the cluster at a time, its generation, and a member moves on
 * to the next generation when it re-publishes the ID. The written copy's
 * member does so with a higher sequence index; any other member once its
 * copy of the current generation arrived or it was pre-acknowledged (bit
 * `seen`): after that it has resolved its copy, so whatever it sends under
 * the ID again is new, unless it is the copy that arrived last sent again
 * after a reconnection (aseq) or a copy below the member's floor. A copy
 * that was already on its way when the pre-acknowledgement was sent, or
 * that never arrived before and is resent after a reconnection, is taken
 * for a new block too: written twice rather than acknowledged unwritten
 * (telling them apart needs the member to say when it read the
 * pre-acknowledgement).
 *
 * Each cluster remembers the last SUB_CLUSTER_KEYS IDs it saw (40 bytes
 * each, 40 MiB at most, plus the hash): the written copy (member, sequence
 * index), whether it was acknowledged, which members are past it, and how
 * many copies of earlier generations are still in the pipeline (their
 * acknowledgements come first: keys carry no generation). The oldest is
 * forgotten first; a copy that arrives after that goes through its
 * member's own dedup only. Within one member, receive.c's rules apply as
 * for any publisher. The first 64 members of a cluster have a bit; a
 * later one's copies are always taken for the current generation's.
 *
 * With GDsub_state a new cluster starts from the IDs the state file says
 * an earlier gdsub wrote and had acknowledged (the last GD_STATE_CIDS of
 * each member run): every member but the one whose copy was written is
 * pre-acknowledged for them as it connects, and a copy that arrives
 * before that is taken for a copy. */
#include "sub_int.h"
#include "cluster.h"
#include "grow.h"
#include "idmap.h"
#include "log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SUB_CLUSTER_KEYS (1u << 20)

struct sub_cent {
	uint64_t id;		/* first: the idmap key */
	uint64_t wseq;		/* the written copy's sequence index (of
				 * member NOBODY: its run's epoch) */
	uint64_t seen;		/* members past this generation (cbit) */
	uint64_t aseq;		/* the last other member's copy that arrived */
	uint16_t amember;	/* ... and that member (valid when aseq) */
	uint16_t member;	/* index in s->pc of the copy written */
	uint16_t owriter;	/* the member of the earlier copies */
	uint8_t acked;		/* gdack acknowledged the written copy */
	uint8_t older;		/* earlier generations' copies unacknowledged */
};

_Static_assert(sizeof(struct sub_cent) == 40, "documented as 40 bytes");
_Static_assert(GD_MAX_PUBS < UINT16_MAX, "members fit in 16 bits");
/* sub_cent.member of an ID restored from the state file: a copy of an
 * earlier gdsub's, written and acknowledged, of no member known now */
#define NOBODY UINT16_MAX

struct sub_cluster {
	char name[300];		/* "@NAME", as in keys */
	size_t len;
	struct sub_cent *e;	/* ring: appended until full, then the
				 * oldest (head) is replaced */
	size_t cap;
	uint32_t n, head;
	struct gd_idmap map;
	unsigned nmembers;	/* members so far: the next one's bit */
};

static int queue_preack(struct sub *s, struct sub_pub *pc, uint64_t id);
static struct sub_cent *lookup(struct sub_cluster *c, uint64_t id);
static int add(struct sub_cluster *c, uint64_t id, const struct sub_pub *pc,
    uint32_t m, uint64_t seq);

/* A new cluster remembers what the state file says an earlier gdsub
 * wrote and had acknowledged: every member that connects is
 * pre-acknowledged for those IDs (a secondary drops its held copy), and
 * a member's copy that arrives before it was is taken for a copy. */
static void restore(struct sub *s, struct sub_cluster *c,
    const struct sub_pub *pc)
{
	const struct gd_state *st = s->state;
	uint32_t i, k;
	size_t n = 0;

	if (st == NULL || s->conf->dedup == GD_DEDUP_NONE)
		return;
	for (i = 0; i < st->nruns; i++) {
		const struct gd_srun *run = st->runs[i];
		if (run->olen != c->len || memcmp(run->origin, c->name, c->len))
			continue;
		for (k = 0; k < run->ncid; k++) {
			uint64_t id = gd_srun_cid(run, k);
			struct sub_cent *e;
			if (lookup(c, id) != NULL)
				continue;
			if (add(c, id, pc, NOBODY, 0) != 0) {
				gd_err("out of memory: the blocks of cluster %s "
				    "that an earlier gdsub wrote are not all "
				    "recognised", c->name + 1);
				return;
			}
			e = lookup(c, id);
			e->acked = 1;
			e->seen = 0;
			e->wseq = run->epoch;	/* its writer: no pre-ack */
			n++;
		}
	}
	if (n > 0)
		gd_trace(1, "cluster %s: %zu blocks acknowledged before, from "
		    "the state file", c->name + 1, n);
}

/* A member (re)connected: it missed the pre-acknowledgements sent while it
 * was away, so it gets one for every acknowledged ID the cluster
 * remembers that another member's copy answered (once per connection). */
static void catch_up(struct sub *s, struct sub_pub *pc)
{
	struct sub_cluster *c = &s->cls[pc->cl];
	uint32_t i, m = (uint32_t)(pc - s->pc);

	for (i = 0; i < c->n; i++)
		if (c->e[i].acked && c->e[i].member != m &&
		    !(c->e[i].member == NOBODY && c->e[i].wseq == pc->epoch) &&
		    queue_preack(s, pc, c->e[i].id))
			c->e[i].seen |= pc->cbit;
	if (pc->npq > 0)
		gd_trace(1, "publisher %s: %zu pre-acknowledgements from before "
		    "it connected", pc->addr, pc->npq);
}

/* A member's bit in sub_cent.seen, kept across its reconnections. */
static void member_bit(struct sub_cluster *c, struct sub_pub *pc)
{
	pc->cbit = c->nmembers < 64 ? (uint64_t)1 << c->nmembers : 0;
	c->nmembers++;
}

/* At each welcome: is this publisher a member of a cluster? */
void sub_cluster_join(struct sub *s, struct sub_pub *pc)
{
	struct sub_cluster *c;
	size_t i;

	int was = pc->cl;

	pc->cl = -1;
	pc->npq = 0;
	pc->pq_sync = 0;
	if (pc->origin[0] != '@')
		return;
	/* after the catch-up: a secondary forwards nothing before it */
	pc->pq_sync = s->conf->gd && pc->ack_status == GD_ACK_OK;
	for (i = 0; i < s->ncls; i++)
		if (s->cls[i].len == pc->origin_len &&
		    memcmp(s->cls[i].name, pc->origin, pc->origin_len) == 0) {
			pc->cl = (int)i;
			if (was != pc->cl)
				member_bit(&s->cls[i], pc);
			catch_up(s, pc);
			return;
		}
	if (s->cls == NULL &&
	    (s->cls = calloc(s->npc, sizeof(*s->cls))) == NULL)
		goto nomem;
	c = &s->cls[s->ncls];
	if (gd_idmap_init(&c->map, 1024) != 0)
		goto nomem;
	memcpy(c->name, pc->origin, pc->origin_len + 1);
	c->len = pc->origin_len;
	pc->cl = (int)s->ncls++;
	member_bit(c, pc);
	gd_trace(1, "publisher %s is a member of cluster %s", pc->addr,
	    pc->origin + 1);
	restore(s, c, pc);
	catch_up(s, pc);
	return;
nomem:
	gd_err("out of memory: blocks of publisher %s are not deduplicated "
	    "across the members of cluster %s", pc->addr, pc->origin + 1);
}

void sub_cluster_free(struct sub *s)
{
	size_t i;

	for (i = 0; i < s->ncls; i++) {
		free(s->cls[i].e);
		gd_idmap_free(&s->cls[i].map);
	}
	free(s->cls);
	for (i = 0; i < s->npc; i++)
		free(s->pc[i].pq);
}

static struct sub_cent *lookup(struct sub_cluster *c, uint64_t id)
{
	uint32_t slot = gd_idmap_get(&c->map, id, c->e, sizeof(*c->e));

	return slot == GD_NONE ? NULL : &c->e[slot];
}

/* Remember that member m's copy of id (index seq) is the one written;
 * 0 or -1. */
static int add(struct sub_cluster *c, uint64_t id, const struct sub_pub *pc,
    uint32_t m, uint64_t seq)
{
	uint32_t slot;

	if (c->n == c->cap && c->cap < SUB_CLUSTER_KEYS &&
	    GD_GROW(c->e, c->cap, c->cap + 1, SUB_CLUSTER_KEYS) != 0)
		return -1;
	if (c->n < c->cap) {
		slot = c->n++;
	} else {	/* full: the oldest makes room */
		slot = c->head;
		c->head = (c->head + 1) % c->cap;
		gd_idmap_del(&c->map, c->e[slot].id, c->e, sizeof(*c->e));
	}
	memset(&c->e[slot], 0, sizeof(c->e[slot]));
	c->e[slot].id = id;
	c->e[slot].member = (uint16_t)m;
	c->e[slot].wseq = seq;
	c->e[slot].seen = pc->cbit;
	if (gd_idmap_put(&c->map, id, slot, c->e, sizeof(*c->e)) != 0) {
		c->e[slot].id = 0;	/* unreachable: not in the map */
		return -1;
	}
	return 0;
}

/* 1 when queued: pc will have resolved its copy of id once it reads it */
static int queue_preack(struct sub *s, struct sub_pub *pc, uint64_t id)
{
	if (!s->conf->gd || pc->state != SUB_PS_ACTIVE ||
	    pc->ack_status != GD_ACK_OK)
		return 0;	/* a member not listening now: it never
				 * sent the block, or will resend it */
	/* a member remembers no more pre-acks than that: more in one turn
	 * would be forgotten there before they were used */
	if (GD_GROW(pc->pq, pc->cappq, pc->npq + 1,
	    GD_CLUSTER_MAX_PREACKS) != 0) {
		char why[64];
		gd_err("cannot queue the pre-acknowledgement of %s/%" PRIu64
		    " for %s (%s); a secondary there forwards it after its "
		    "tentative timeout", pc->origin, id, pc->addr,
		    gd_grow_why(pc->npq, GD_CLUSTER_MAX_PREACKS, why,
		    sizeof(why)));
		return 0;
	}
	pc->pq[pc->npq++] = id;
	return 1;
}

/* Member m publishes the next generation of e's ID with copy seq. 0, or
 * -1 when the earlier copies in the pipeline cannot all be told apart. */
static int next_generation(struct sub_cent *e, const struct sub_pub *pc,
    uint32_t m, uint64_t seq)
{
	if (!e->acked && e->member != m) {
		/* the written copy is still in the pipeline, and its
		 * acknowledgement belongs to its member */
		if (e->older == UINT8_MAX ||
		    (e->older > 0 && e->owriter != e->member))
			return -1;
		e->owriter = e->member;
		e->older++;
	}
	e->member = (uint16_t)m;
	e->wseq = seq;
	e->seen = pc->cbit;
	e->aseq = 0;
	e->acked = 0;
	return 0;
}

/* 1 when block b of member pc is another member's copy of a block
 * already written (dropped here) or cannot be taken (said on stderr),
 * 0 when pc's own rules decide. */
int sub_cluster_block(struct sub *s, struct sub_pub *pc,
    const struct gd_block *b)
{
	struct sub_cluster *c = &s->cls[pc->cl];
	uint32_t m = (uint32_t)(pc - s->pc);
	struct sub_cent *e;

	if (s->conf->dedup == GD_DEDUP_NONE)
		return 0;	/* at-least-once: every copy goes out */
	if ((e = lookup(c, b->id)) == NULL) {
		if (add(c, b->id, pc, m, b->seq) != 0)
			gd_err("out of memory: %s/%" PRIu64 " is not "
			    "deduplicated across the cluster's members",
			    c->name, b->id);
		return 0;
	}
	if (e->member == m) {
		/* a higher index: the member re-published the ID */
		if (b->seq > e->wseq)
			(void)next_generation(e, pc, m, b->seq);
		return 0;
	}
	/* the copy that arrived before, sent again (a reconnection), or one
	 * its member has resolved: a copy, whatever the bits say */
	if ((e->aseq == b->seq && e->amember == m) || b->seq < pc->rv.floor)
		goto copy;
	if (e->seen & pc->cbit) {
		if (next_generation(e, pc, m, b->seq) == 0)
			return 0;
		gd_err("block %s/%" PRIu64 " from %s re-publishes an ID whose "
		    "earlier blocks from two other members are still in the "
		    "pipeline unacknowledged; not written, not acknowledged",
		    c->name, b->id, pc->addr);
		s->n_unwritable++;
		return 1;
	}
	e->seen |= pc->cbit;
	e->aseq = b->seq;
	e->amember = (uint16_t)m;
copy:
	pc->rv.n_recv++;
	pc->rv.n_dup++;
	if (e->acked)	/* this member waits for it: acknowledge its copy */
		queue_preack(s, pc, b->id);
	return 1;
}

/* The member whose copy of @CLUSTER/ID was written (or one whose rules
 * know the ID), or NULL when no publisher is a member of that cluster. */
struct sub_pub *sub_cluster_find(struct sub *s, const char *origin,
    size_t len, uint64_t id)
{
	struct sub_pub *first = NULL;
	struct sub_cent *e;
	size_t i;
	int k = -1;

	for (i = 0; i < s->ncls; i++)
		if (s->cls[i].len == len &&
		    memcmp(s->cls[i].name, origin, len) == 0)
			k = (int)i;
	if (k < 0)
		return NULL;
	if ((e = lookup(&s->cls[k], id)) != NULL && e->member != NOBODY) {
		if (e->older == 0)
			return &s->pc[e->member];
		/* the oldest copy in the pipeline is acknowledged first,
		 * whatever its member answers */
		e->older--;
		return &s->pc[e->owriter];
	}
	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		if (pc->cl != k)
			continue;
		if (first == NULL)
			first = pc;
		if (gd_dedup_find(&pc->rv.dd, id) != GD_NONE)
			return pc;
	}
	return first;
}

/* gdack acknowledged @CLUSTER/ID, the copy of member pc with index seq
 * (0: an earlier block's copy, nothing sent): when that is the current
 * generation's written copy, the other members get a pre-acknowledgement. */
void sub_cluster_acked(struct sub *s, struct sub_pub *pc, uint64_t id,
    uint64_t seq)
{
	struct sub_cent *e = lookup(&s->cls[pc->cl], id);
	size_t i;

	if (seq == 0)
		return;
	if (e != NULL) {
		if (e->member != (uint32_t)(pc - s->pc) || e->wseq != seq)
			return;	/* an earlier generation's copy */
		e->acked = 1;
	}
	for (i = 0; i < s->npc; i++)
		if (&s->pc[i] != pc && s->pc[i].cl == pc->cl &&
		    queue_preack(s, &s->pc[i], id) && e != NULL)
			e->seen |= s->pc[i].cbit;
}

struct preack_write {
	uv_write_t req;
	struct sub_pub *pc;
	size_t n;
};

static void preack_written(uv_write_t *req, int status)
{
	struct preack_write *w = (struct preack_write *)req;

	if (status < 0 && !(status == UV_ECANCELED && w->pc->s->done))
		gd_warn("cannot send %zu pre-acknowledgement%s to %s: %s; its "
		    "held copies are forwarded after its tentative timeout",
		    w->n, gd_plural((double)w->n), w->pc->addr,
		    uv_strerror(status));
	free(w);
}

int sub_cluster_cover(const struct sub *s, const struct sub_pub *pc)
{
	size_t i;
	int others = 0;

	if (pc->cl < 0)
		return SUB_CL_NONE;	/* never connected: not known a member */
	for (i = 0; i < s->npc; i++) {
		const struct sub_pub *o = &s->pc[i];
		if (o == pc || o->cl != pc->cl)
			continue;
		if (o->state == SUB_PS_ACTIVE)
			return SUB_CL_SERVED;
		if (o->state != SUB_PS_ENDED)
			return SUB_CL_NONE;	/* gone too, for now */
		others++;
	}
	return others > 0 ? SUB_CL_ENDED : SUB_CL_NONE;
}

/* A PREACK frame of n IDs from pq (none: the end of the catch-up). */
static int send_preacks(struct sub_pub *pc, const uint64_t *ids, size_t n)
{
	struct preack_write *w;
	uint8_t *d;
	uv_buf_t b;
	size_t k;

	w = malloc(sizeof(*w) + GD_WIRE_HDR + GD_PREACK_SIZE * n);
	if (w == NULL) {
		gd_warn("out of memory sending pre-acknowledgements to %s",
		    pc->addr);
		return -1;
	}
	w->pc = pc;
	w->n = n;
	d = (uint8_t *)(w + 1);
	gd_wire_hdr(d, GD_F_PREACK, 0, (uint32_t)(GD_PREACK_SIZE * n));
	for (k = 0; k < n; k++)
		gd_put64(d + GD_WIRE_HDR + GD_PREACK_SIZE * k, ids[k]);
	b = uv_buf_init((char *)d, (unsigned)(GD_WIRE_HDR + GD_PREACK_SIZE * n));
	if (sub_tls_write(pc, &w->req, &b, preack_written) != 0) {
		free(w);
		return -1;
	}
	return 0;
}

/* Many IDs per frame, in the prepare phase with the acknowledgements. */
void sub_cluster_flush(struct sub *s)
{
	size_t i, off, n;

	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		if (pc->npq == 0 && !pc->pq_sync)
			continue;
		for (off = 0; pc->state == SUB_PS_ACTIVE && off < pc->npq;
		    off += n) {
			n = pc->npq - off;
			if (n > GD_CTRL_MAX * 64 / GD_PREACK_SIZE)
				n = GD_CTRL_MAX * 64 / GD_PREACK_SIZE;
			if (send_preacks(pc, pc->pq + off, n) != 0)
				break;
		}
		/* an empty frame: every pre-ack of the catch-up is ahead of
		 * it on the connection (a secondary waits for it) */
		if (pc->pq_sync && pc->state == SUB_PS_ACTIVE &&
		    (off >= pc->npq) && send_preacks(pc, NULL, 0) == 0)
			pc->pq_sync = 0;
		if (off > 0)
			gd_trace(2, "sent %zu pre-acknowledgements to %s", off,
			    pc->addr);
		pc->npq = 0;
	}
}
