/* The publisher's adaptive in-flight window (see window.h). */
#include "window.h"

static void halve(struct gd_window *w, uint64_t now)
{
	w->w /= 2;
	if (w->w < 1)
		w->w = 1;
	w->last_cut = now;
}

void gd_window_init(struct gd_window *w, uint64_t timeout_ns, uint32_t max,
    uint64_t now)
{
	w->max = max ? max : 1;
	w->w = GD_WINDOW_INIT < w->max ? GD_WINDOW_INIT : w->max;
	w->timeout_ns = timeout_ns;
	w->target_ns = timeout_ns / 4;
	w->r_start = now;
	w->r_acks = 0;
	w->r_inflight = 0;
	w->last_cut = 0;
	w->rate = 0;
}

/* End the round: move toward rate x target. */
static void round_end(struct gd_window *w, uint64_t now, uint32_t inflight)
{
	double want, el = (double)(now - w->r_start);

	w->rate = (double)w->r_acks * 1e9 / el;
	want = w->rate * ((double)w->target_ns / 1e9);
	/* a round in which the window was not the limit says nothing about
	 * how far the pipelines could go: no growth from it */
	if (want > w->w && 2 * (double)w->r_inflight < w->w)
		want = w->w;
	if (want > 2 * w->w)
		want = 2 * w->w;
	if (want < w->w / 2)
		want = w->w / 2;
	if (want > w->max)
		want = w->max;
	if (want < 1)
		want = 1;
	w->w = want;
	w->r_start = now;
	w->r_acks = 0;
	w->r_inflight = inflight;
}

void gd_window_acked(struct gd_window *w, uint64_t now, uint32_t n,
    uint32_t inflight)
{
	uint64_t el;

	w->r_acks += n;
	if (inflight > w->r_inflight)
		w->r_inflight = inflight;
	el = now - w->r_start;
	if (el < GD_WINDOW_ROUND_NS || (w->r_acks < GD_WINDOW_ROUND_ACKS &&
	    el < w->target_ns))
		return;
	round_end(w, now, inflight > n ? inflight - n : 0);
}

void gd_window_expired(struct gd_window *w, uint64_t now)
{
	/* a wave of expiries from one burst counts once */
	if (now - w->last_cut >= GD_WINDOW_ROUND_NS)
		halve(w, now);
}

void gd_window_check(struct gd_window *w, uint64_t now, uint64_t oldest_ns,
    uint32_t inflight)
{
	/* acknowledgements that stopped before the round could end (the
	 * window is full of blocks the pipelines have not reached) */
	if (w->r_acks > 0 && now - w->r_start >= GD_WINDOW_ROUND_NS) {
		if (inflight > w->r_inflight)
			w->r_inflight = inflight;
		round_end(w, now, inflight);
	}
	if (oldest_ns != 0 && now - oldest_ns > w->timeout_ns / 2 &&
	    now - w->last_cut >= w->target_ns)
		halve(w, now);
}
