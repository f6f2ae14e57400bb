/* Per-subscription QoS rules (see qos.h): the subscriptions by name,
 * their state, failure count, queue and ordered flight. */
#include "qos.h"
#include "conf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gd_qos_init(struct gd_qos *Q, const struct gd_qos_conf *c,
    const struct gd_qos_ops *ops, void *ctx)
{
	memset(Q, 0, sizeof(*Q));
	Q->c = *c;
	Q->ops = ops;
	Q->ctx = ctx;
}

void gd_qos_free(struct gd_qos *Q)
{
	struct gd_qsub *s, *n;

	for (s = Q->subs; s; s = n) {
		n = s->next;
		free(s);
	}
	Q->subs = NULL;
}

int gd_qos_parse(const char *text, struct gd_qos_params *q, char *why,
    size_t whysz)
{
	struct gd_conf c;
	char line[GD_QOS_LINE_MAX];
	const char *p = text, *e, *eq;
	size_t n;
	int rc = 0;

	gd_conf_init(&c, GD_FAM_SUB);
	while (*p != '\0' && rc == 0) {
		e = strchr(p, '\n');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n > 0) {
			if (n >= sizeof(line)) {
				snprintf(why, whysz, "QoS line too long");
				rc = -1;
				break;
			}
			memcpy(line, p, n);
			line[n] = '\0';
			if ((eq = strchr(line, '=')) == NULL) {
				snprintf(why, whysz, "'%s': expected NAME=VALUE",
				    line);
				rc = -1;
			} else if (gd_conf_qos(&c, line, (size_t)(eq - line),
			    eq + 1, why, whysz) != 0) {
				/* name the setting before the reason */
				char r[160];
				snprintf(r, sizeof(r), "%s", why);
				snprintf(why, whysz, "'%s': %s", line, r);
				rc = -1;
			}
		}
		p += n;
		if (*p == '\n')
			p++;
	}
	q->ordered = c.reliability == GD_REL_ORDERED;
	q->retry_count = c.retry_count;
	gd_conf_free(&c);
	return rc;
}

size_t gd_qos_format(const struct gd_qos_params *q, char *buf, size_t sz)
{
	int n = snprintf(buf, sz, "reliability=%s\nretryCount=%" PRId64,
	    q->ordered ? "ordered" : "", q->retry_count);

	if (n < 0)
		return 0;
	return (size_t)n < sz ? (size_t)n : sz - 1;
}

/* For people: the empty reliability (the default, pipelined) is left
 * out, "reliability=," read as a value lost */
void gd_qos_describe(const struct gd_qos_params *q, char *buf, size_t sz)
{
	snprintf(buf, sz, "%sretryCount=%" PRId64,
	    q->ordered ? "reliability=ordered," : "", q->retry_count);
}

const char *gd_qos_state_name(int state)
{
	switch (state) {
	case GD_QS_SUBSCRIBED: return "subscribed";
	case GD_QS_ONLINE: return "online";
	case GD_QS_OFFLINE: return "offline";
	case GD_QS_REMOVED: return "removed";
	}
	return "?";
}

static void go(struct gd_qos *Q, struct gd_qsub *s, int to, uint64_t now)
{
	int from = s->state;

	s->state = to;
	s->since = now;
	if (Q->ops && Q->ops->transition)
		Q->ops->transition(Q->ctx, s, from, now);
}

/* Past GD_QOS_REMOVED_KEPT removed subscriptions, the oldest detached one
 * is forgotten. */
static void trim(struct gd_qos *Q)
{
	struct gd_qsub **pp, **last = NULL;

	if (Q->nremoved <= GD_QOS_REMOVED_KEPT)
		return;
	for (pp = &Q->subs; *pp; pp = &(*pp)->next)
		if ((*pp)->state == GD_QS_REMOVED && !(*pp)->attached)
			last = pp;
	if (last != NULL) {
		struct gd_qsub *s = *last;
		*last = s->next;
		free(s);
		Q->nremoved--;
	}
}

void gd_qos_remove(struct gd_qos *Q, struct gd_qsub *s, uint64_t now,
    const char *why)
{
	if (s->state == GD_QS_REMOVED)
		return;
	if (!s->attached)
		Q->ndetached--;
	snprintf(s->why, sizeof(s->why), "%s", why);
	s->awaiting = 0;
	Q->nremoved++;
	go(Q, s, GD_QS_REMOVED, now);
	trim(Q);
}

struct gd_qsub *gd_qos_subscribe(struct gd_qos *Q, const char *name,
    uint64_t run, const struct gd_qos_params *q, uint64_t now)
{
	struct gd_qsub *s;

	for (s = Q->subs; s; s = s->next) {
		if (s->state == GD_QS_REMOVED || s->attached ||
		    strncmp(s->name, name, GD_SLOT_NAME - 1) != 0)
			continue;
		if (s->run == run) {	/* the same gdsub, back */
			Q->ndetached--;
			s->attached = 1;
			s->q = *q;
			s->queued = 0;
			s->busy_since = 0;
			s->awaiting = 0;
			return s;
		}
		/* IceStorm's ObjectNotExist: the gdsub that held it is gone */
		gd_qos_remove(Q, s, now, "unknown to its subscriber: a new "
		    "gdsub run subscribed under this name");
		break;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->run = run;
	s->q = *q;
	s->attached = 1;
	s->state = -1;
	s->next = Q->subs;
	Q->subs = s;
	go(Q, s, GD_QS_SUBSCRIBED, now);
	return s;
}

void gd_qos_detach(struct gd_qos *Q, struct gd_qsub *s)
{
	if (s->attached && s->state != GD_QS_REMOVED)
		Q->ndetached++;
	s->attached = 0;
	s->queued = 0;
	s->busy_since = 0;
	s->awaiting = 0;
}

int gd_qos_failure(struct gd_qos *Q, struct gd_qsub *s, uint64_t now,
    const char *why)
{
	char r[sizeof(s->why)];

	if (s->state != GD_QS_SUBSCRIBED && s->state != GD_QS_ONLINE)
		return s->state;
	s->failures++;
	if (s->q.retry_count >= 0 &&
	    (int64_t)s->failures > s->q.retry_count) {
		snprintf(r, sizeof(r), "%u consecutive delivery failure%s "
		    "(retryCount %" PRId64 "), the last: %s", s->failures,
		    s->failures == 1 ? "" : "s", s->q.retry_count, why);
		gd_qos_remove(Q, s, now, r);
		return s->state;
	}
	/* what was queued for it is discarded with its connection */
	snprintf(s->why, sizeof(s->why), "%s", why);
	s->until = now + Q->c.discard_ns;
	s->awaiting = 0;
	s->busy_since = 0;
	go(Q, s, GD_QS_OFFLINE, now);
	return s->state;
}

int gd_qos_accepts(struct gd_qos *Q, struct gd_qsub *s, uint64_t n,
    uint64_t now)
{
	if (s->state == GD_QS_ONLINE || s->state == GD_QS_SUBSCRIBED)
		return 1;
	if (s->state == GD_QS_OFFLINE && now >= s->until) {
		go(Q, s, GD_QS_ONLINE, now);
		return 1;
	}
	s->discarded += n;
	return 0;
}

void gd_qos_published(struct gd_qos *Q, uint64_t n_blk, uint64_t now)
{
	struct gd_qsub *s, *n;

	if (Q->ndetached == 0)
		return;
	for (s = Q->subs; s; s = n) {
		n = s->next;	/* a removal may trim another */
		if (s->attached || s->state == GD_QS_REMOVED)
			continue;
		if (s->state == GD_QS_OFFLINE && now < s->until) {
			s->discarded += n_blk;
			continue;
		}
		if (s->state == GD_QS_OFFLINE)
			go(Q, s, GD_QS_ONLINE, now);
		gd_qos_failure(Q, s, now, "its gdsub is not connected");
	}
}

int64_t gd_qos_enqueue(struct gd_qos *Q, struct gd_qsub *s, uint64_t n,
    uint64_t now)
{
	char r[128];

	s->queued += n;
	if (Q->c.queue_max < 0 || s->queued <= (uint64_t)Q->c.queue_max)
		return 0;
	if (Q->c.drop_events)
		return (int64_t)(s->queued - (uint64_t)Q->c.queue_max);
	snprintf(r, sizeof(r), "send queue full: %" PRIu64 " blocks over "
	    "GDpub_sendQueueSizeMax=%" PRId64 " (RemoveSubscriber)", s->queued,
	    Q->c.queue_max);
	gd_qos_remove(Q, s, now, r);
	return -1;
}

void gd_qos_dropped(struct gd_qsub *s, uint64_t n)
{
	s->queued = s->queued > n ? s->queued - n : 0;
	s->dropped += n;
}

void gd_qos_write_began(struct gd_qsub *s, uint64_t now)
{
	if (s->busy_since == 0)
		s->busy_since = now ? now : 1;
}

void gd_qos_written(struct gd_qos *Q, struct gd_qsub *s, uint64_t n,
    int busy, uint64_t now)
{
	/* progress; an ordered block still owes its confirm */
	s->busy_since = busy || s->awaiting ? (now ? now : 1) : 0;
	if (n == 0)
		return;
	s->queued = s->queued > n ? s->queued - n : 0;
	s->failures = 0;	/* a delivery */
	if (s->state == GD_QS_SUBSCRIBED)
		go(Q, s, GD_QS_ONLINE, now);
}

void gd_qos_sent_block(struct gd_qsub *s, uint64_t seq, uint64_t now)
{
	if (!s->q.ordered)
		return;
	s->awaiting = 1;
	s->await_seq = seq;
	if (s->busy_since == 0)
		s->busy_since = now ? now : 1;
}

int gd_qos_confirm(struct gd_qos *Q, struct gd_qsub *s, uint64_t seq,
    uint64_t now)
{
	(void)Q;
	(void)now;
	if (!s->awaiting || seq < s->await_seq)
		return 0;	/* a confirm of an earlier block */
	s->awaiting = 0;
	s->busy_since = 0;
	return 1;
}

int gd_qos_send_late(const struct gd_qos *Q, const struct gd_qsub *s,
    uint64_t now)
{
	return Q->c.send_timeout_ns > 0 && s->busy_since != 0 &&
	    (s->state == GD_QS_ONLINE || s->state == GD_QS_SUBSCRIBED) &&
	    now > s->busy_since && now - s->busy_since > Q->c.send_timeout_ns;
}
