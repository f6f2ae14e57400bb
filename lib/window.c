/* The publisher's adaptive in-flight window (see window.h). */
#include "window.h"

static void cut(struct gd_window *w, double to, uint64_t now)
{
	if (w->fixed)
		return;
	if (to < w->w)
		w->w = to < 1 ? 1 : to;
	w->last_cut = now;
}

void gd_window_init(struct gd_window *w, uint64_t timeout_ns, uint32_t max,
    uint32_t fixed, uint64_t now)
{
	w->max = max ? max : 1;
	w->fixed = fixed > 0;
	if (fixed > 0)
		w->w = fixed < w->max ? fixed : w->max;
	else
		w->w = GD_WINDOW_INIT < w->max ? GD_WINDOW_INIT : w->max;
	w->timeout_ns = timeout_ns;
	w->target_ns = timeout_ns / 8;
	w->r_start = now;
	w->r_acks = 0;
	w->r_delay = 0;
	w->r_inflight = 0;
	w->r_gap = 0;
	w->last_cut = 0;
	w->rate = 0;
	w->delay = 0;
	w->last_ack = 0;
	w->probe_at = 0;
	w->held = 0;
}

/* End the round: move toward rate x target. */
static void round_end(struct gd_window *w, uint64_t now, uint32_t inflight)
{
	double want, el = (double)(now - w->r_start);
	/* the blocks acknowledged waited too long: the queues ahead of the
	 * pipelines are longer than the rate can drain within the target */
	int late = w->r_delay > 2 * w->target_ns;

	w->rate = (double)w->r_acks * 1e9 / el;
	w->delay = w->r_delay;
	want = w->rate * ((double)w->target_ns / 1e9);
	/* a round in which the window was not the limit says nothing about
	 * how far the pipelines could go: no growth from it */
	if (want > w->w && 2 * (double)w->r_inflight < w->w)
		want = w->w;
	if (late && want > w->w)
		want = w->w;
	if (want > 2 * w->w)
		want = 2 * w->w;
	if (want < w->w / 2 && !late)
		want = w->w / 2;
	/* the pipeline acknowledged nothing of a run of r_gap blocks it
	 * passed over: with fewer in flight it would acknowledge nothing */
	if (!late && want < 2 * (double)w->r_gap)
		want = 2 * (double)w->r_gap;
	if (want > w->max)
		want = w->max;
	if (want < 1)
		want = 1;
	if (!w->fixed)
		w->w = want;
	if (late)
		w->last_cut = now;
	w->r_start = now;
	w->r_acks = 0;
	w->r_delay = 0;
	w->r_gap = 0;
	w->r_inflight = inflight;
}

void gd_window_acked(struct gd_window *w, uint64_t now,
    const struct gd_window_acks *a)
{
	uint64_t el;

	if (a->firsts > 0) {
		w->last_ack = now;
		w->held = 0;
	}
	w->r_acks += a->n;
	if (a->inflight > w->r_inflight)
		w->r_inflight = a->inflight;
	if (a->delay_ns > w->r_delay)
		w->r_delay = a->delay_ns;
	if (a->passed > w->r_gap)
		w->r_gap = a->passed;
	el = now - w->r_start;
	if (el < GD_WINDOW_ROUND_NS || (w->r_acks < GD_WINDOW_ROUND_ACKS &&
	    el < w->target_ns && w->r_delay <= 2 * w->target_ns))
		return;
	round_end(w, now, a->inflight > a->n ? a->inflight - a->n : 0);
}

void gd_window_expired(struct gd_window *w, uint64_t now)
{
	/* a wave of expiries from one burst counts once */
	if (now - w->last_cut >= GD_WINDOW_ROUND_NS)
		cut(w, w->w / 2, now);
}

void gd_window_held(struct gd_window *w, uint64_t now)
{
	(void)now;
	w->held = 1;
}

/* No first copy acknowledged for this long: silence, not a slow ACK. */
static int quiet(const struct gd_window *w, uint64_t now, uint64_t span)
{
	return now - w->last_ack >= span;
}

void gd_window_check(struct gd_window *w, uint64_t now, uint64_t oldest_ns,
    uint32_t inflight, int oldest_read)
{
	/* acknowledgements that stopped before the round could end (the
	 * window is full of blocks the pipelines have not reached) */
	if (w->r_acks > 0 && now - w->r_start >= GD_WINDOW_ROUND_NS) {
		if (inflight > w->r_inflight)
			w->r_inflight = inflight;
		round_end(w, now, inflight);
	}
	/* a stage read the oldest and nothing at all came back since: no
	 * queue to shorten, the probe decides */
	if (oldest_read && quiet(w, now, 2 * w->target_ns))
		return;
	if (oldest_ns != 0 && now > oldest_ns &&
	    now - oldest_ns > 2 * w->target_ns &&
	    now - w->last_cut >= w->target_ns)
		cut(w, w->w / 2, now);
}

int gd_window_probe(struct gd_window *w, uint64_t now, uint64_t oldest_ns,
    uint32_t inflight)
{
	uint64_t p = w->timeout_ns / 4, since = w->last_ack;

	if (w->fixed || inflight < gd_window_size(w) || w->w >= w->max)
		return 0;
	if (p > GD_WINDOW_PROBE_NS)
		p = GD_WINDOW_PROBE_NS;
	if (w->held)
		p = GD_WINDOW_ROUND_NS;
	if (oldest_ns > since)
		since = oldest_ns;
	if (w->probe_at > since)
		since = w->probe_at;
	if (now < since || now - since < p)
		return 0;
	w->w = 2 * w->w < w->max ? 2 * w->w : w->max;
	w->probe_at = now;
	/* a new measure: the rounds before the probe saw a smaller window */
	w->r_start = now;
	w->r_acks = 0;
	w->r_delay = 0;
	w->r_gap = 0;
	w->r_inflight = inflight;
	return 1;
}
