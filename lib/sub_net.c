/* gdsub's connections to its publishers: resolve, connect and retry each
 * one, say hello, read its wire frames (welcome, blocks, floor, end) and
 * notice when it restarted. Blocks go on to sub_on_block (sub.c). */
#include "sub_int.h"
#include "log.h"
#include "parse.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void free_write(uv_write_t *w, int status)
{
	(void)status;
	free(w);	/* the frame follows the request in the same block */
}

static void pc_retry_cb(uv_timer_t *t)
{
	sub_net_start(t->data);
}

static void schedule_retry(struct sub_pub *pc)
{
	pc->state = SUB_PS_IDLE;
	/* fails only on a closing timer, at teardown */
	(void)uv_timer_start(&pc->retry, pc_retry_cb,
	    (uint64_t)(pc->s->conf->retry_int * 1000), 0);
}

static void attempt_failed(struct sub_pub *pc, const char *why)
{
	struct sub *s = pc->s;
	int64_t max = s->conf->max_retries;

	pc->attempts++;
	if (max < 0) {
		gd_err("cannot connect to %s: %s (attempt %d)", pc->addr, why,
		    pc->attempts);
	} else {
		if (max == 0)
			max = 1;
		gd_err("cannot connect to %s: %s (attempt %d of %" PRId64 ")",
		    pc->addr, why, pc->attempts, max);
		if (pc->attempts >= max) {
			gd_err("giving up on publisher %s after %d attempt%s",
			    pc->addr, pc->attempts, gd_plural(pc->attempts));
			sub_finish(s, GD_EX_UNAVAILABLE);
			return;
		}
	}
	schedule_retry(pc);
}

static void pc_closed(uv_handle_t *h)
{
	struct sub_pub *pc = h->data;
	pc->h_open = 0;
	if (pc->s->done)
		return;
	if (pc->state == SUB_PS_CONNECTING)
		return;		/* attempt_failed already ran */
	if (pc->state != SUB_PS_ENDED)
		schedule_retry(pc);
}

static void pc_close(struct sub_pub *pc)
{
	if (!pc->h_open || uv_is_closing((uv_handle_t *)&pc->h))
		return;
	pc->reading = 0;
	uv_close((uv_handle_t *)&pc->h, pc_closed);
}

static void pc_lost(struct sub_pub *pc, const char *why)
{
	if (pc->state == SUB_PS_ACTIVE || pc->state == SUB_PS_WELCOME) {
		gd_err("lost connection to publisher %s: %s; reconnecting",
		    pc->addr, why);
		pc->attempts = 0;
	}
	if (pc->state != SUB_PS_ENDED)
		pc->state = SUB_PS_IDLE;
	pc_close(pc);
}

static void on_welcome(struct sub *s, struct sub_pub *pc,
    const struct gd_welcome *w)
{
	int first = pc->origin_len == 0;

	if (w->flags & GD_WF_STREAM && !s->stream_in) {
		gd_err("publisher %s writes its blocks as a framed stream "
		    "(gdpub -o), not over TCP; read that stream with gdsub -i",
		    pc->addr);
		sub_finish(s, GD_EX_UNAVAILABLE);
		return;
	}
	/* the publisher restarted: its ids start over, so what we remember
	 * of the old run would swallow new blocks. With -i the frames' epoch
	 * decides that (sub_input.c); only the acks kept while disconnected,
	 * for the old run's blocks, are dropped here. */
	if (!first && w->epoch != pc->epoch) {
		if (!s->stream_in) {
			sub_forget(s, pc);
		} else if (pc->nqueued > 0) {
			gd_warn("publisher %s restarted; %zu acknowledgements for "
			    "its earlier run are dropped", pc->addr, pc->nqueued);
			pc->nqueued = 0;
		}
	}
	if (!first && strcmp(pc->origin, w->origin) != 0)
		gd_warn("publisher %s now stamps its keys %s (was %s)",
		    pc->addr, w->origin, pc->origin);
	snprintf(pc->origin, sizeof(pc->origin), "%s", w->origin);
	pc->origin_len = strlen(pc->origin);
	pc->max_block = w->max_block;
	pc->epoch = w->epoch;
	pc->ack_status = (int)w->ack_status;
	pc->state = SUB_PS_ACTIVE;
	pc->attempts = 0;
	if (gd_recv_refused(pc->ack_status) && s->conf->gd)
		gd_err("publisher %s refused the acknowledgement connection: %s",
		    pc->addr, gd_ack_status_str(pc->ack_status) + 9);
	else if (pc->ack_status == GD_ACK_OFF && s->conf->gd && first)
		gd_warn("publisher %s runs with numSubs=0: its blocks need no "
		    "acknowledgement", pc->addr);
	gd_trace(1, "connected to publisher %s (%s), acknowledgements %s",
	    pc->addr, pc->origin, gd_ack_status_str(pc->ack_status));
	sub_in_kick(s);
}

static void pc_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct sub_pub *pc = h->data;
	uint8_t *p;
	size_t n;

	(void)hint;
	if (gd_rbuf_space(&pc->rb, 65536, &p, &n) != 0) {
		b->base = NULL;
		b->len = 0;
		return;
	}
	b->base = (char *)p;
	b->len = n;
}

static void pc_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);

/* stdout is behind: stop reading publishers until it drains */
void sub_net_pause(struct sub *s)
{
	size_t i;

	for (i = 0; i < s->npc; i++)
		if (s->pc[i].reading)
			uv_read_stop((uv_stream_t *)&s->pc[i].h);
	s->out_paused = 1;
}

static void pc_read_start(struct sub_pub *pc)
{
	int rc = uv_read_start((uv_stream_t *)&pc->h, pc_alloc, pc_read);

	if (rc != 0)
		pc_lost(pc, uv_strerror(rc));
}

void sub_net_resume(struct sub *s)
{
	size_t i;

	s->out_paused = 0;
	for (i = 0; i < s->npc; i++)
		if (s->pc[i].reading)
			pc_read_start(&s->pc[i]);
}

/* Our own limit, or the publisher's once it announced a lower one: a
 * frame's length is checked against it before the buffer grows for it. */
static uint32_t block_limit(const struct sub *s, const struct sub_pub *pc)
{
	uint32_t limit = (uint32_t)s->conf->sub_max_block;

	if (pc->max_block && pc->max_block < limit)
		limit = pc->max_block;
	return limit;
}

static void pc_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct sub_pub *pc = st->data;
	struct sub *s = pc->s;
	struct gd_frame f;
	size_t used;
	uint32_t limit = block_limit(s, pc);
	int rc;

	(void)buf;
	if (nread < 0) {
		pc_lost(pc, nread == UV_EOF ? "connection closed by the publisher" :
		    uv_strerror((int)nread));
		return;
	}
	pc->rb.len += (size_t)nread;
	while ((rc = gd_wire_next(pc->rb.buf + pc->rb.off,
	    pc->rb.len - pc->rb.off, limit = block_limit(s, pc), &f,
	    &used)) == 1) {
		pc->rb.off += used;
		if (f.type == GD_F_BLOCK && pc->state == SUB_PS_ACTIVE) {
			struct gd_block b;
			struct sub_origin o = { pc->origin, pc->origin_len,
				pc->epoch };
			gd_wire_get_block(&f, &b);
			sub_on_block(s, pc, &b, &o);
			if (s->done)
				return;
		} else if (f.type == GD_F_WELCOME && pc->state == SUB_PS_WELCOME) {
			struct gd_welcome w;
			if (gd_wire_get_welcome(&f, &w) != 0 ||
			    w.version != GD_WIRE_VERSION) {
				gd_err("publisher %s speaks an unsupported protocol version",
				    pc->addr);
				sub_finish(s, GD_EX_UNAVAILABLE);
				return;
			}
			on_welcome(s, pc, &w);
		} else if (f.type == GD_F_FLOOR && f.len == 8) {
			struct sub_origin o = { pc->origin, pc->origin_len,
				pc->epoch };
			sub_on_floor(s, pc, gd_get64(f.body), &o);
			if (s->done)
				return;
		} else if (f.type == GD_F_END) {
			gd_trace(1, "publisher %s ended its stream", pc->addr);
			pc->state = SUB_PS_ENDED;
			s->nended++;
			pc_close(pc);
			if (s->nended == s->npc && !s->stream_in)
				sub_begin_close(s, NULL);
			sub_in_kick(s);
			return;
		} else {
			rc = -1;
			break;
		}
	}
	if (rc < 0 && pc->rb.len - pc->rb.off >= GD_WIRE_HDR &&
	    pc->rb.buf[pc->rb.off + 4] == GD_F_BLOCK &&
	    gd_get32(pc->rb.buf + pc->rb.off) >= 24) {
		/* not malformed but too large: reconnecting would only get
		 * it again */
		gd_err("publisher %s sent a block of %" PRIu32 " bytes, over "
		    "the limit of %" PRIu32 " bytes (GDsub_maxBlockSize, "
		    "--max-block-size); not read further", pc->addr,
		    gd_get32(pc->rb.buf + pc->rb.off) - 24, limit);
		sub_finish(s, GD_EX_DATAERR);
		return;
	}
	if (rc < 0) {
		gd_err("publisher %s sent a malformed frame; reconnecting", pc->addr);
		pc->state = SUB_PS_IDLE;
		pc_close(pc);
		return;
	}
	gd_rbuf_compact(&pc->rb);
	sub_out_check(s);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct sub_pub *pc = req->data;
	struct sub *s = pc->s;
	struct gd_hello h;
	uv_buf_t b;
	uv_write_t *w;
	int rc;

	if (s->done)
		return;
	if (status < 0) {
		pc_close(pc);
		attempt_failed(pc, uv_strerror(status));
		return;
	}
	pc->state = SUB_PS_WELCOME;
	(void)uv_tcp_nodelay(&pc->h, 1);	/* latency only */
	memset(&h, 0, sizeof(h));
	h.version = GD_WIRE_VERSION;
	h.gd = s->conf->gd ? 1 : 0;
	h.want_data = !s->stream_in;
	snprintf(h.name, sizeof(h.name), "%s", s->name);
	w = malloc(sizeof(*w) + GD_WIRE_HDR + GD_CTRL_MAX);
	if (w == NULL) {
		gd_err("out of memory greeting publisher %s", pc->addr);
		sub_finish(s, GD_EX_FAIL);
		return;
	}
	b = uv_buf_init((char *)(w + 1),
	    (unsigned)gd_wire_hello((uint8_t *)(w + 1), &h));
	if ((rc = uv_write(w, (uv_stream_t *)&pc->h, &b, 1, free_write)) != 0) {
		free(w);
		pc->state = SUB_PS_CONNECTING;	/* an attempt that failed */
		pc_close(pc);
		attempt_failed(pc, uv_strerror(rc));
		return;
	}
	pc->rb.len = pc->rb.off = 0;
	pc->reading = 1;
	if (!s->out_paused)
		pc_read_start(pc);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct sub_pub *pc = req->data;
	struct sub *s = pc->s;
	int rc;

	if (s->done) {
		uv_freeaddrinfo(res);
		return;
	}
	if (status < 0) {
		attempt_failed(pc, uv_strerror(status));
		return;
	}
	if ((rc = uv_tcp_init(&s->loop, &pc->h)) != 0) {
		uv_freeaddrinfo(res);
		attempt_failed(pc, uv_strerror(rc));
		return;
	}
	pc->h.data = pc;
	pc->h_open = 1;
	pc->state = SUB_PS_CONNECTING;
	pc->creq.data = pc;
	rc = uv_tcp_connect(&pc->creq, &pc->h, res->ai_addr, on_connect);
	uv_freeaddrinfo(res);
	if (rc != 0) {
		pc_close(pc);
		attempt_failed(pc, uv_strerror(rc));
	}
}

void sub_net_start(struct sub_pub *pc)
{
	struct addrinfo hints;
	char port[16];
	int rc;

	if (pc->s->done)
		return;
	if (pc->h_open) {	/* the last attempt's handle is still closing */
		schedule_retry(pc);
		return;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%d", pc->hp.port);
	gd_trace(1, "connecting to publisher %s (attempt %d)", pc->addr,
	    pc->attempts + 1);
	pc->state = SUB_PS_RESOLVING;
	pc->gai.data = pc;
	rc = uv_getaddrinfo(&pc->s->loop, &pc->gai, on_resolved, pc->hp.host,
	    port, &hints);
	if (rc != 0)
		attempt_failed(pc, uv_strerror(rc));
}

static void pc_shut(uv_shutdown_t *req, int status)
{
	struct sub_pub *pc = req->data;
	(void)status;
	pc_close(pc);
}

/* Teardown: stop retrying; let the acknowledgements already written
 * reach the publisher before the connection closes, unless hard. */
void sub_net_shut(struct sub_pub *pc, int hard)
{
	uv_timer_stop(&pc->retry);
	uv_close((uv_handle_t *)&pc->retry, NULL);
	if (pc->state == SUB_PS_RESOLVING)
		uv_cancel((uv_req_t *)&pc->gai);
	if (pc->h_open && !uv_is_closing((uv_handle_t *)&pc->h)) {
		pc->sreq.data = pc;
		if (hard || pc->state != SUB_PS_ACTIVE || uv_shutdown(&pc->sreq,
		    (uv_stream_t *)&pc->h, pc_shut) != 0)
			pc_close(pc);
	}
}

/* The publisher whose keys carry this origin (or its configured
 * HOST:PORT), or NULL. */
struct sub_pub *sub_pub_find(struct sub *s, const char *o, size_t n)
{
	size_t i;
	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		if ((pc->origin_len == n && memcmp(pc->origin, o, n) == 0) ||
		    (pc->addr_len == n && memcmp(pc->addr, o, n) == 0))
			return pc;
	}
	return NULL;
}
