/* The publisher's delivery rules (see deliver.h). */
#include "deliver.h"

#include <string.h>

/* The pass mark: the oldest of the connected GD slots' last acknowledged
 * first copies; with none connected nobody owes any block. */
static void mark(struct gd_deliver *d)
{
	uint64_t m = UINT64_MAX;
	uint32_t l = d->live;

	while (l != 0) {
		unsigned b = (unsigned)__builtin_ctz(l);
		l &= l - 1;
		if (d->hi[b] < m)
			m = d->hi[b];
	}
	gd_pending_pass(&d->pend, m);
}

static unsigned nlive(const struct gd_deliver *d)
{
	return (unsigned)__builtin_popcount(d->live);
}

/* The first stages of the connected GD slots that have not acknowledged
 * e all read it (their gdsubs report it). */
static int read_by_stages(const struct gd_deliver *d, const struct gd_pend *e)
{
	uint64_t seq = gd_pending_seq(&d->pend, e);
	uint32_t l = d->live & ~e->acked;

	if (l == 0 || nlive(d) < d->needed)
		return 0;
	while (l != 0) {
		unsigned b = (unsigned)__builtin_ctz(l);
		l &= l - 1;
		if (!(d->reports >> b & 1) || d->cons[b] < seq)
			return 0;
	}
	return 1;
}

/* ... and none of those slots acknowledged a first copy in the last
 * quarter of the timeout: the stage dropped e, or holds it. */
static int held_by_stages(const struct gd_deliver *d, const struct gd_pend *e,
    uint64_t now)
{
	uint64_t quarter = d->pend.timeout_ns / 4;
	uint32_t l = d->live & ~e->acked;

	if (!read_by_stages(d, e))
		return 0;
	while (l != 0) {
		unsigned b = (unsigned)__builtin_ctz(l);
		l &= l - 1;
		if (now - d->t_ack[b] < quarter)
			return 0;
	}
	return 1;
}

/* Every connected GD slot's first stage read every block published. */
static int all_read(const struct gd_deliver *d)
{
	uint32_t l = d->live;

	if (d->next_seq <= 1 || nlive(d) < d->needed)
		return 0;
	while (l != 0) {
		unsigned b = (unsigned)__builtin_ctz(l);
		l &= l - 1;
		if (!(d->reports >> b & 1) || d->cons[b] + 1 < d->next_seq)
			return 0;
	}
	return 1;
}

/* The oldest block a connected pipeline owes: its send, 0 when none. */
static uint64_t oldest_owed(const struct gd_deliver *d)
{
	return d->pend.pcur == GD_NONE ? 0 :
	    d->pend.e[d->pend.pcur].sent_ns;
}

int gd_deliver_init(struct gd_deliver *d, unsigned needed,
    uint64_t timeout_ns, unsigned resend, uint32_t max_pending,
    uint32_t window, uint64_t now, const struct gd_deliver_ops *ops,
    void *ctx)
{
	int rc;

	memset(d, 0, sizeof(*d));
	d->ops = ops;
	d->ctx = ctx;
	d->needed = needed;
	d->resend = resend;
	d->next_seq = 1;
	gd_window_init(&d->win, timeout_ns, max_pending, window, now);
	rc = gd_pending_init(&d->pend, timeout_ns,
	    max_pending < 65536 ? max_pending : 65536);
	if (rc == 0)
		mark(d);
	return rc;
}

void gd_deliver_free(struct gd_deliver *d)
{
	gd_pending_free(&d->pend);
}

static void resolve(struct gd_deliver *d, uint32_t slot, int acked,
    uint64_t now)
{
	struct gd_pend *e = gd_pending_at(&d->pend, slot);

	if (acked) {
		gd_hist_add(&d->lat, (now - e->sent_ns) / 1000);
		d->n_ack++;
	} else {
		d->n_nack++;
	}
	d->ops->resolved(d->ctx, e, acked, now);
	gd_pending_remove(&d->pend, slot);
}

void gd_deliver_nack_held(struct gd_deliver *d)
{
	d->n_nack++;
}

int gd_deliver_publish(struct gd_deliver *d, uint64_t id, int fresh,
    uint32_t owner, uint32_t off, uint32_t len, uint64_t now, uint64_t *seq)
{
	if (d->needed > 0) {
		if (!fresh && gd_pending_find(&d->pend, id) != GD_NONE)
			return GD_DV_PENDING;
		if (owner > GD_PEND_MAX_OWNER || gd_pending_add(&d->pend, id,
		    d->next_seq, off, len, owner, now) == GD_NONE)
			return GD_DV_NOMEM;
	}
	*seq = d->next_seq++;
	d->n_pub++;
	return GD_DV_OK;
}

int gd_deliver_restore(struct gd_deliver *d, uint64_t id, uint64_t seq,
    uint32_t owner, uint32_t off, uint32_t len, uint64_t now)
{
	if (owner > GD_PEND_MAX_OWNER || gd_pending_add(&d->pend, id, seq, off,
	    len, owner, now) == GD_NONE)
		return GD_DV_NOMEM;
	d->n_resent++;
	d->n_restored++;
	return GD_DV_OK;
}

int gd_deliver_ack(struct gd_deliver *d, unsigned bit, uint64_t id,
    uint64_t seq, uint64_t now)
{
	/* an ack of an earlier block with this id (resolved before the id
	 * was published again) does not count for this one */
	uint32_t s = gd_pending_find_seq(&d->pend, id, seq);
	struct gd_pend *e;

	if (!d->b_open) {
		d->b_open = 1;
		d->b_inflight = gd_deliver_inflight(d);
	}
	if (s == GD_NONE) {
		d->n_late++;
		return -1;
	}
	e = gd_pending_at(&d->pend, s);
	/* a first copy came through the pipeline after all that was sent to
	 * it before; a copy sent again may be acknowledged at once */
	if (gd_pend_resends(e) == 0 && bit < GD_DV_SLOTS) {
		if (e->ord > d->hi[bit])
			d->hi[bit] = e->ord;
		if (now - e->sent_ns > d->b_delay && now > e->sent_ns)
			d->b_delay = now - e->sent_ns;
		d->t_ack[bit] = now;
		d->b_firsts++;
	}
	if (gd_pending_ack(&d->pend, s, bit) < d->needed)
		return 0;
	if (!gd_pending_passed(&d->pend, e))
		d->b_unpassed++;
	resolve(d, s, 1, now);
	return 1;
}

void gd_deliver_acks_done(struct gd_deliver *d, uint64_t now)
{
	struct gd_window_acks a = { 0, 0, 0, 0, 0 };
	uint32_t inflight;

	mark(d);
	if (!d->b_open)
		return;
	/* out of the window: acknowledged, or passed over by this batch */
	inflight = gd_deliver_inflight(d);
	a.n = d->b_inflight > inflight ? d->b_inflight - inflight : 0;
	a.passed = a.n > d->b_unpassed ? a.n - d->b_unpassed : 0;
	a.inflight = d->b_inflight;
	a.firsts = d->b_firsts;
	a.delay_ns = d->b_delay;
	if (a.n > 0 || a.firsts > 0)
		gd_window_acked(&d->win, now, &a);
	d->b_open = 0;
	d->b_unpassed = d->b_firsts = 0;
	d->b_delay = 0;
}

void gd_deliver_consumed(struct gd_deliver *d, unsigned bit, uint64_t seq,
    uint64_t now)
{
	if (bit >= GD_DV_SLOTS || !(d->live >> bit & 1) || d->needed == 0)
		return;
	d->reports |= (uint32_t)1 << bit;
	if (seq > d->cons[bit])
		d->cons[bit] = seq;
	if (all_read(d))
		gd_window_probe(&d->win, now, oldest_owed(d),
		    gd_deliver_inflight(d));
}

void gd_deliver_slot_up(struct gd_deliver *d, unsigned bit, int takeover)
{
	uint32_t m;

	if (bit >= GD_DV_SLOTS)
		return;
	m = (uint32_t)1 << bit;
	if (takeover) {
		gd_pending_clear_bit(&d->pend, bit);
		d->hi[bit] = 0;
	}
	/* what this connection's stage reads it says anew */
	d->reports &= ~m;
	d->cons[bit] = 0;
	/* the blocks sent so far went to fewer than numSubs, or to the
	 * subscriber this one took over from */
	if ((!(d->live & m) && nlive(d) + 1 >= d->needed) || takeover)
		d->full_ord = d->pend.ords;
	d->live |= m;
	mark(d);
}

void gd_deliver_slot_down(struct gd_deliver *d, unsigned bit)
{
	if (bit >= GD_DV_SLOTS)
		return;
	d->live &= ~((uint32_t)1 << bit);
	d->reports &= ~((uint32_t)1 << bit);
	mark(d);
}

void gd_deliver_expire(struct gd_deliver *d, uint64_t now)
{
	uint32_t s;

	while ((s = gd_pending_expired(&d->pend, now)) != GD_NONE) {
		struct gd_pend *e = gd_pending_at(&d->pend, s);
		/* congestion only when a connected pipeline owed it and all
		 * numSubs were there to be measured since it was sent */
		int absent = nlive(d) < d->needed || e->ord < d->full_ord;
		int passed = gd_pending_passed(&d->pend, e);
		int held = !absent && !passed && held_by_stages(d, e, now);
		if (held)
			gd_window_held(&d->win, now);
		else if (!absent && !passed)
			gd_window_expired(&d->win, now);
		if (gd_pend_resends(e) < d->resend) {
			gd_pend_resent(e);
			d->n_resent++;
			/* the sequence index is kept so dedup knows the copy */
			d->ops->resend(d->ctx, e, gd_pending_seq(&d->pend, e));
			gd_pending_touch(&d->pend, s, now);
		} else {
			if (absent)
				d->n_nack_absent++;
			else if (passed)
				d->n_nack_passed++;
			else if (held)
				d->n_nack_held++;
			else
				d->n_nack_slow++;
			resolve(d, s, 0, now);
		}
	}
}

void gd_deliver_tick(struct gd_deliver *d, uint64_t now)
{
	if (d->needed == 0)
		return;
	/* the oldest block a connected pipeline still owes */
	gd_window_check(&d->win, now, oldest_owed(d), gd_deliver_inflight(d),
	    d->pend.pcur != GD_NONE &&
	    read_by_stages(d, &d->pend.e[d->pend.pcur]));
	if (all_read(d))
		gd_window_probe(&d->win, now, oldest_owed(d),
		    gd_deliver_inflight(d));
}

uint64_t gd_deliver_floor(struct gd_deliver *d)
{
	return d->needed > 0 ? gd_pending_floor(&d->pend, d->next_seq) :
	    d->next_seq;
}

void gd_deliver_nack_all(struct gd_deliver *d, uint64_t now)
{
	while (d->pend.head != GD_NONE)
		resolve(d, d->pend.head, 0, now);
}
