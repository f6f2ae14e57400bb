/* gdsub's notifications to a service manager (notify.h): READY=1 once
 * the control socket listens and every publisher's connection is up,
 * STATUS= every few seconds, WATCHDOG=1 from the loop's own timer, and
 * STOPPING=1 when it drains. */
#include "sub_int.h"
#include "clock.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void on_ntick(uv_timer_t *t)
{
	struct sub *s = t->data;
	uint64_t now = gd_clock_mono_ns(), recv = 0, acked = 0;
	char msg[256];
	size_t i, up = 0;

	gd_notify_tick(&s->notify, now);
	if (!gd_notify_status_due(&s->notify, now))
		return;
	for (i = 0; i < s->npc; i++) {
		recv += s->pc[i].rv.n_recv;
		acked += s->pc[i].rv.n_acked;
		up += s->pc[i].state == SUB_PS_ACTIVE;
	}
	snprintf(msg, sizeof(msg), "STATUS=%zu of %zu publishers connected, "
	    "%" PRIu64 " received, %" PRIu64 " acknowledged, %" PRIu64
	    " unacknowledged", up, s->npc, recv, acked, sub_unacked(s));
	gd_notify_send(&s->notify, msg);
}

int sub_notify_start(struct sub *s)
{
	char why[512];
	uint64_t ms = 1000;
	int rc;

	if (gd_notify_open(&s->notify, getenv("NOTIFY_SOCKET"),
	    getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), (long)getpid(),
	    why, sizeof(why)) != 0)
		gd_warn("%s; the service manager is not told", why);
	if (s->notify.fd < 0)
		return 0;
	if (s->notify.wd_ns > 0 && s->notify.wd_ns / 2000000 < ms)
		ms = s->notify.wd_ns / 2000000 ? s->notify.wd_ns / 2000000 : 1;
	if ((rc = uv_timer_init(&s->loop, &s->ntick)) != 0 ||
	    (rc = uv_timer_start(&s->ntick, on_ntick, 0, ms)) != 0) {
		gd_err("cannot set up the event loop: %s", uv_strerror(rc));
		gd_notify_close(&s->notify);
		return GD_EX_FAIL;
	}
	s->ntick.data = s;
	uv_unref((uv_handle_t *)&s->ntick);	/* never keeps gdsub running */
	if (s->stream_in && !s->conf->gd)	/* no publisher to wait for */
		sub_notify_ready(s);
	return 0;
}

void sub_notify_ready(struct sub *s)
{
	size_t i;

	if (s->notified || s->notify.fd < 0)
		return;
	for (i = 0; i < s->npc && (!s->stream_in || s->conf->gd); i++)
		if (s->pc[i].state != SUB_PS_ACTIVE)
			return;
	s->notified = 1;
	gd_notify_send(&s->notify, "READY=1");
}

void sub_notify_stopping(struct sub *s)
{
	gd_notify_send(&s->notify, "STOPPING=1");
}

void sub_notify_close(struct sub *s)
{
	if (s->notify.fd < 0)
		return;
	gd_notify_close(&s->notify);
	uv_close((uv_handle_t *)&s->ntick, NULL);
}
