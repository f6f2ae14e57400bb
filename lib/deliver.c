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
	return GD_DV_OK;
}

int gd_deliver_ack(struct gd_deliver *d, unsigned bit, uint64_t id,
    uint64_t seq, uint64_t now)
{
	uint32_t s = gd_pending_find(&d->pend, id);

	/* an ack of an earlier block with this id (resolved before the id
	 * was published again) does not count for this one */
	struct gd_pend *e;

	if (s == GD_NONE || gd_pending_seq(&d->pend,
	    (e = gd_pending_at(&d->pend, s))) != seq) {
		d->n_late++;
		return -1;
	}
	/* a first copy came through the pipeline after all that was sent to
	 * it before; a copy sent again may be acknowledged at once */
	if (gd_pend_resends(e) == 0 && bit < GD_DV_SLOTS) {
		if (e->ord > d->hi[bit])
			d->hi[bit] = e->ord;
		if (now - e->sent_ns > d->b_delay && now > e->sent_ns)
			d->b_delay = now - e->sent_ns;
	}
	if (gd_pending_ack(&d->pend, s, bit) < d->needed)
		return 0;
	resolve(d, s, 1, now);
	return 1;
}

void gd_deliver_acks_done(struct gd_deliver *d, uint32_t before,
    uint64_t now)
{
	uint32_t inflight = gd_deliver_inflight(d);

	mark(d);
	if (d->pend.count < before)
		gd_window_acked(&d->win, now, before - d->pend.count,
		    inflight + (before - d->pend.count), d->b_delay);
	d->b_delay = 0;
}

void gd_deliver_slot_up(struct gd_deliver *d, unsigned bit, int takeover)
{
	if (bit >= GD_DV_SLOTS)
		return;
	if (takeover) {
		gd_pending_clear_bit(&d->pend, bit);
		d->hi[bit] = 0;
	}
	d->live |= (uint32_t)1 << bit;
	mark(d);
}

void gd_deliver_slot_down(struct gd_deliver *d, unsigned bit)
{
	if (bit >= GD_DV_SLOTS)
		return;
	d->live &= ~((uint32_t)1 << bit);
	mark(d);
}

void gd_deliver_expire(struct gd_deliver *d, uint64_t now)
{
	uint32_t s;

	while ((s = gd_pending_expired(&d->pend, now)) != GD_NONE) {
		struct gd_pend *e = gd_pending_at(&d->pend, s);
		/* congestion only when a connected pipeline owed it and all
		 * numSubs are there to be measured */
		int absent = nlive(d) < d->needed;
		int passed = gd_pending_passed(&d->pend, e);
		if (!absent && !passed)
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
	gd_window_check(&d->win, now, d->pend.pcur == GD_NONE ? 0 :
	    gd_pending_at(&d->pend, d->pend.pcur)->sent_ns,
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
