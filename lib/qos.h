/* Per-subscription QoS at the publisher: IceStorm's subscriber QoS (SPEC
 * §3, §8). A subscription is named by GDsub_name and outlives its
 * connections: a gdsub of the same run that reconnects continues it.
 * It is subscribed, then online; a delivery failure (connection lost, a
 * send blocked past GDpub_sendTimeout) with retries left puts it offline
 * for GDpub_discardInterval, during which what is published is discarded
 * for it, until a block published after the interval puts it back online;
 * retryCount + 1 consecutive failures (a delivery resets the count), an
 * explicit unsubscribe, a new gdsub run under the name (the subscriber no
 * longer knows the subscription) or a full send queue under
 * RemoveSubscriber remove it. With reliability=ordered one block is in
 * flight until the subscriber confirms it. Pure: no I/O, the clock is
 * the caller's, every transition goes through ops. */
#ifndef GD_QOS_H
#define GD_QOS_H

#include <stddef.h>
#include <stdint.h>

#include "slots.h"

#define GD_QOS_REMOVED_KEPT 64	/* removed subscriptions still shown */
#define GD_QOS_LINE_MAX 160	/* one NAME=VALUE line of a hello */

enum gd_qstate { GD_QS_SUBSCRIBED, GD_QS_ONLINE, GD_QS_OFFLINE,
	GD_QS_REMOVED };

/* What a subscriber asks for (its hello). */
struct gd_qos_params {
	int ordered;		/* GDsub_reliability=ordered */
	int64_t retry_count;	/* GDsub_retryCount; -1 never removed */
};

/* The publisher's side (GDpub_*). */
struct gd_qos_conf {
	uint64_t discard_ns;	/* GDpub_discardInterval */
	uint64_t send_timeout_ns;	/* GDpub_sendTimeout; 0 off */
	int64_t queue_max;	/* GDpub_sendQueueSizeMax; -1 no limit */
	int drop_events;	/* GDpub_sendQueueSizeMaxPolicy=DropEvents */
};

struct gd_qsub {
	struct gd_qsub *next;
	char name[GD_SLOT_NAME];
	uint64_t run;		/* the gdsub run that holds it */
	struct gd_qos_params q;
	int state;		/* enum gd_qstate */
	int attached;		/* a connection serves it */
	uint64_t since;		/* last transition */
	uint64_t until;		/* offline until */
	unsigned failures;	/* consecutive */
	uint64_t queued;	/* blocks handed to its connection, not written */
	uint64_t discarded;	/* blocks published while it was offline */
	uint64_t dropped;	/* DropEvents: oldest queued blocks dropped */
	uint64_t busy_since;	/* a send waits since then; 0: none */
	int awaiting;		/* ordered: a block waits for its confirm */
	uint64_t await_seq;
	char why[128];		/* the last failure, or why it was removed */
};

struct gd_qos_ops {
	/* s changed state (from: the old one); s->why says why */
	void (*transition)(void *ctx, const struct gd_qsub *s, int from,
	    uint64_t now);
};

struct gd_qos {
	struct gd_qos_conf c;
	struct gd_qsub *subs;	/* newest first */
	unsigned nremoved;
	unsigned ndetached;	/* live subscriptions without a connection */
	const struct gd_qos_ops *ops;
	void *ctx;
};

void gd_qos_init(struct gd_qos *Q, const struct gd_qos_conf *c,
    const struct gd_qos_ops *ops, void *ctx);
void gd_qos_free(struct gd_qos *Q);

/* The QoS lines of a hello ("NAME=VALUE" separated by newlines): every
 * name and value checked as GDsub_NAME would be; names the publisher does
 * not apply (connectionCached, locatorCacheTimeout) are checked and
 * ignored. 0, or -1 with why filled. */
int gd_qos_parse(const char *text, struct gd_qos_params *q, char *why,
    size_t whysz);
/* The lines a gdsub sends; returns their length (cut at sz - 1). */
size_t gd_qos_format(const struct gd_qos_params *q, char *buf, size_t sz);
/* "reliability=ordered,retryCount=2": one cell for gdinspect. */
void gd_qos_describe(const struct gd_qos_params *q, char *buf, size_t sz);

/* A connection subscribes under name for the gdsub run: the live
 * subscription of that run continues, one of another run is removed
 * first; NULL when out of memory. The result is attached. */
struct gd_qsub *gd_qos_subscribe(struct gd_qos *Q, const char *name,
    uint64_t run, const struct gd_qos_params *q, uint64_t now);
/* Its connection is gone (after the failure or removal it caused, if any). */
void gd_qos_detach(struct gd_qos *Q, struct gd_qsub *s);
/* A delivery failure: the new state (offline, or removed once retries are
 * spent). Ignored (state returned) unless subscribed or online. */
int gd_qos_failure(struct gd_qos *Q, struct gd_qsub *s, uint64_t now,
    const char *why);
/* A hard failure: removed at once. */
void gd_qos_remove(struct gd_qos *Q, struct gd_qsub *s, uint64_t now,
    const char *why);

/* Blocks published now go to it (1) or are discarded for it (0, counted
 * as n blocks); an offline subscription past its interval is online again. */
int gd_qos_accepts(struct gd_qos *Q, struct gd_qsub *s, uint64_t n,
    uint64_t now);
/* Blocks are published: a subscription whose gdsub is not connected
 * (IceStorm: its proxy fails) and that would take them has a delivery
 * failure, unless it is offline (then the n blocks are discarded for it)
 * or removed. O(subscriptions) when some
 * are detached, nothing otherwise. */
void gd_qos_published(struct gd_qos *Q, uint64_t n, uint64_t now);
/* n blocks were handed to its connection: 0, -1 when the queue limit
 * removed it (RemoveSubscriber), or the number of oldest queued blocks to
 * drop (DropEvents; the caller reports them with gd_qos_dropped). */
int64_t gd_qos_enqueue(struct gd_qos *Q, struct gd_qsub *s, uint64_t n,
    uint64_t now);
void gd_qos_dropped(struct gd_qsub *s, uint64_t n);
/* A write began (the connection was idle), or n blocks were written (a
 * delivery: the failure count resets); busy: more waits to be written. */
void gd_qos_write_began(struct gd_qsub *s, uint64_t now);
void gd_qos_written(struct gd_qos *Q, struct gd_qsub *s, uint64_t n,
    int busy, uint64_t now);

/* reliability=ordered: may the next block go out? */
static inline int gd_qos_may_send(const struct gd_qsub *s)
{
	return !s->q.ordered || !s->awaiting;
}
/* Block seq went out (ordered: it waits for its confirm). */
void gd_qos_sent_block(struct gd_qsub *s, uint64_t seq, uint64_t now);
/* The subscriber confirmed seq: 1 when the next block may go. */
int gd_qos_confirm(struct gd_qos *Q, struct gd_qsub *s, uint64_t seq,
    uint64_t now);

/* A send (or an ordered block's confirm) has waited past
 * GDpub_sendTimeout: the caller reports a failure. */
int gd_qos_send_late(const struct gd_qos *Q, const struct gd_qsub *s,
    uint64_t now);

/* "subscribed", "online", "offline until T" (T formatted by the caller
 * from s->until) or "removed: why", without T. */
const char *gd_qos_state_name(int state);

#endif
