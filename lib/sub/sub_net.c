/* gdsub's connections to its publishers, their whole life: resolve,
 * connect and retry each one, say hello, read (the loop that cuts frames;
 * each frame's handler is sub_frames.c's, the TLS byte path sub_tls.c's),
 * and what a handler's answer or a read's failure makes of the connection:
 * lost, failed (an attempt, or with the key or TLS refused no more
 * attempts), ended (our BYE), closed. A handshake that fails or does not
 * end within SUB_HANDSHAKE_MS is a failed attempt, counted against
 * maxRetries. */
#include "sub_int.h"
#include "clock.h"
#include "log.h"
#include "parse.h"
#include "qos.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define SUB_HANDSHAKE_MS (2 * GD_HANDSHAKE_MS)

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

/* A cluster member unreachable past maxRetries: while another member of
 * its cluster serves it, gdsub keeps trying it (quietly) instead of
 * exiting; once every other member has ended its stream, so has the
 * cluster, and this one counts as ended. 1 when it now counts as ended. */
static int cluster_gone(struct sub_pub *pc)
{
	struct sub *s = pc->s;

	switch (sub_cluster_cover(s, pc)) {
	case SUB_CL_SERVED:
		if (!pc->cl_warned)
			gd_warn("publisher %s is unreachable; another member of "
			    "cluster %s serves it: trying it again every %g s",
			    pc->addr, pc->origin + 1, s->conf->retry_int);
		pc->cl_warned = 1;
		return 0;
	case SUB_CL_ENDED:
		gd_warn("giving up on publisher %s after %d attempts: the other "
		    "members of cluster %s have ended their streams", pc->addr,
		    pc->attempts, pc->origin + 1);
		pc->cl_warned = 0;
		pc->state = SUB_PS_ENDED;
		s->nended++;
		if (s->nended == s->npc && !s->stream_in)
			sub_begin_close(s, NULL);
		sub_in_kick(s);
		return 1;
	}
	pc->cl_warned = 0;
	return 0;
}

static void attempt_failed(struct sub_pub *pc, const char *why)
{
	struct sub *s = pc->s;
	int64_t max = s->conf->max_retries;

	pc->attempts++;
	/* with -i the gdpub that writes the stream is usually started in
	 * the same pipeline, and may not listen yet: a first refusal is no
	 * news unless it is also the last attempt */
	if (s->stream_in && pc->attempts == 1 && max != 0 && max != 1 &&
	    strcmp(why, uv_strerror(UV_ECONNREFUSED)) == 0) {
		gd_trace(1, "cannot connect to %s: %s (attempt 1; with -i the "
		    "publisher may not listen yet)", pc->addr, why);
		schedule_retry(pc);
		return;
	}
	if (max < 0) {
		gd_err("cannot connect to %s: %s (attempt %d)", pc->addr, why,
		    pc->attempts);
	} else {
		if (max == 0)
			max = 1;
		if (pc->attempts <= max || !pc->cl_warned)
			gd_err("cannot connect to %s: %s (attempt %d of %" PRId64
			    ")", pc->addr, why, pc->attempts, max);
		if (pc->attempts >= max && cluster_gone(pc))
			return;
		if (pc->attempts >= max && !pc->cl_warned) {
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
	gd_tls_free(pc->tls);	/* each connection has its own */
	pc->tls = NULL;
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

static void pc_shut(uv_shutdown_t *req, int status);

/* Say BYE and close once it is written: at the end of the publisher's
 * stream (a publisher waits for it before it exits, pub.c), and at a
 * clean exit (it unsubscribes at once, whatever its retryCount). */
static void pc_bye(struct sub_pub *pc)
{
	if (!pc->h_open || uv_is_closing((uv_handle_t *)&pc->h))
		return;
	pc->reading = 0;
	uv_read_stop((uv_stream_t *)&pc->h);
	sub_send_small(pc, GD_F_BYE, 0, 0);
	if (pc->tls != NULL) {	/* our close_notify, after the BYE */
		gd_tls_close(pc->tls);
		(void)sub_tls_out(pc, NULL, NULL);
	}
	pc->sreq.data = pc;
	if (uv_shutdown(&pc->sreq, (uv_stream_t *)&pc->h, pc_shut) != 0)
		pc_close(pc);
}

/* The handshake failed: close, and count the attempt (the retry timer,
 * which was its deadline, goes back to retrying). */
static void handshake_failed(struct sub_pub *pc, const char *why)
{
	uv_timer_stop(&pc->retry);
	pc->state = SUB_PS_CONNECTING;	/* pc_closed: attempt_failed runs here */
	pc_close(pc);
	attempt_failed(pc, why);
}

/* Authentication failed, on either side: both keys were read at start,
 * so every further attempt would fail alike (SPEC §9: 77, no retries). */
static void auth_failed(struct sub_pub *pc, const char *why)
{
	uv_timer_stop(&pc->retry);
	pc->state = SUB_PS_CONNECTING;	/* pc_closed: no retry from there */
	pc_close(pc);
	gd_err("cannot connect to %s: %s; giving up at once: retrying cannot "
	    "help", pc->addr, why);
	sub_finish(pc->s, GD_EX_NOPERM);
}

static void hs_timeout(uv_timer_t *t)
{
	struct sub_pub *pc = t->data;
	char why[128];

	if (pc->state != SUB_PS_WELCOME)
		return;
	snprintf(why, sizeof(why), "no welcome from the publisher within %d "
	    "seconds", SUB_HANDSHAKE_MS / 1000);
	handshake_failed(pc, why);
}

static void pc_lost(struct sub_pub *pc, const char *why)
{
	char msg[400];

	if (pc->s->done) {	/* we unsubscribed: the publisher closes */
		pc_close(pc);
		return;
	}
	if (pc->state == SUB_PS_WELCOME) {
		/* a refusal that this version cannot read, or none: the
		 * publisher's log says which */
		snprintf(msg, sizeof(msg), "%s before its welcome (an older "
		    "gdkit, GDpub_maxConnections reached or a handshake timeout: "
		    "see the publisher's log)", why);
		handshake_failed(pc, msg);
		return;
	}
	if (pc->state == SUB_PS_ACTIVE) {
		gd_err("lost connection to publisher %s: %s; reconnecting",
		    pc->addr, why);
		pc->attempts = 0;
	}
	if (pc->state != SUB_PS_ENDED)
		pc->state = SUB_PS_IDLE;
	pc_close(pc);
}

/* A block frame whose start has come: its announced length (within the
 * limit) allocated at once, rather than doubled up to while it arrives,
 * which would hold up to twice a large block. */
static int expect_frame(struct sub_pub *pc)
{
	const uint8_t *h = gd_rbuf_head(&pc->rb);
	uint64_t total;

	if (gd_rbuf_avail(&pc->rb) < GD_WIRE_HDR || h[4] != GD_F_BLOCK)
		return GD_DBUF_OK;
	total = GD_WIRE_HDR + (uint64_t)gd_get32(h);
	if (total <= SUB_GIVE_MIN || total > (uint64_t)GD_BLOCK_HDR +
	    sub_frame_limit(pc->s, pc))
		return GD_DBUF_OK;	/* small, or refused when parsed */
	if (gd_seal_on(&pc->rx))	/* the seal after it comes in too */
		total += GD_SEAL_FRAME_MAX;
	return gd_rbuf_expect(&pc->rb, (size_t)total);
}

static void pc_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct sub_pub *pc = h->data;
	uint8_t *p;
	size_t n;
	int rc;

	(void)hint;
	if (pc->tls != NULL) {	/* decrypted into rb by pc_read */
		b->base = (char *)pc->cin;
		b->len = SUB_CIN_SIZE;
		return;
	}
	if ((rc = expect_frame(pc)) != 0 ||
	    (rc = gd_rbuf_space(&pc->rb, SUB_READ_MIN, &p, &n)) != 0) {
		gd_err("cannot read from publisher %s (receive buffer: %s)",
		    pc->addr, gd_dbuf_strerror(rc));
		b->base = NULL;
		b->len = 0;
		return;
	}
	b->base = (char *)p;
	b->len = n;
}

static void pc_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);
static void greet(struct sub_pub *pc);

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

/* TLS failed: before the publisher's welcome it refused us, or we it,
 * and every further attempt would fail alike (77, as for the key); after
 * it the stream broke, and gdsub connects again. */
static void tls_failed(struct sub_pub *pc, const char *why)
{
	char msg[GD_TLS_ERR_MAX + 200];

	if (pc->state == SUB_PS_ACTIVE) {
		snprintf(msg, sizeof(msg), "TLS: %s", why);
		pc_lost(pc, msg);
		return;
	}
	snprintf(msg, sizeof(msg), "TLS handshake failed: %s%s", why,
	    gd_tls_peer_refused(pc->tls) ? " (the publisher refused it: see "
	    "its log)" : "");
	auth_failed(pc, msg);
}

/* nread bytes of ciphertext in pc->cin, decrypted (sub_tls.c); once
 * TLS's handshake is done, our HELLO. 0, or -1 when the connection is
 * going. */
static int tls_in(struct sub_pub *pc, size_t nread)
{
	const char *why = NULL;

	switch (sub_tls_in(pc, nread, &why)) {
	case SUB_TLS_LOST:
		pc_lost(pc, why);
		return -1;
	case SUB_TLS_FAILED:
		tls_failed(pc, why);
		return -1;
	}
	if (!pc->greeted && gd_tls_done(pc->tls)) {
		char d[400];
		gd_tls_describe(pc->tls, d, sizeof(d));
		gd_trace(1, "publisher %s: %s", pc->addr, d);
		greet(pc);
		if (pc->s->done || pc->state != SUB_PS_WELCOME)
			return -1;
	}
	return 0;
}

/* A seal did not verify: bytes damaged on the way (CRC), or forged or
 * altered (MAC). Nothing under it was acted on (its blocks not written,
 * so never acknowledged: the publisher resends them); the connection is
 * lost, and gdsub connects again. */
static void seal_failed(struct sub_pub *pc)
{
	pc->s->n_seal_failed++;
	pc_lost(pc, pc->rx.mode == GD_SEAL_MAC ? "frames failed "
	    "authentication (their seal does not verify under the session key: "
	    "forged or altered on the way); nothing they said counts" :
	    "frames failed their CRC32C check (damaged on the way); nothing "
	    "they said counts");
}

/* A publisher of an earlier version seals nothing: its WELCOME, which
 * refuses us, is read as it comes (sub_frames.c says why). */
static void old_welcome(struct sub_pub *pc)
{
	struct gd_frame f;
	struct gd_welcome w;
	size_t used;

	if (pc->state != SUB_PS_WELCOME || pc->rx.mode != GD_SEAL_CRC ||
	    gd_seal_busy(&pc->rx) || gd_wire_next(gd_rbuf_head(&pc->rb),
	    gd_rbuf_avail(&pc->rb), 0, &f, &used) != 1 ||
	    f.type != GD_F_WELCOME || gd_wire_get_welcome(&f, &w) != 0 ||
	    w.version >= GD_WIRE_VERSION)
		return;
	gd_seal_free(&pc->rx);
}

/* The publisher ended its stream: our BYE, and the run ends once every
 * publisher has. */
static void pc_ended(struct sub_pub *pc)
{
	struct sub *s = pc->s;

	pc->state = SUB_PS_ENDED;
	s->nended++;
	pc_bye(pc);
	if (s->nended == s->npc && !s->stream_in)
		sub_begin_close(s, NULL);
	sub_in_kick(s);
}

static void pc_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct sub_pub *pc = st->data;
	struct sub *s = pc->s;
	struct gd_frame f;
	uint32_t limit = sub_frame_limit(s, pc), size;
	int rc;
	const char *why = NULL;

	(void)buf;
	if (nread < 0 && pc->tls != NULL && !gd_tls_done(pc->tls) &&
	    !s->done) {
		handshake_failed(pc, nread == UV_EOF ? "the publisher closed "
		    "the connection during the TLS handshake (see its log)" :
		    uv_strerror((int)nread));
		return;
	}
	if (nread < 0) {
		pc_lost(pc, nread == UV_EOF ? "connection closed by the publisher" :
		    uv_strerror((int)nread));
		return;
	}
	s->bytes_in += (uint64_t)nread;
	if (pc->tls != NULL) {
		if (tls_in(pc, (size_t)nread) != 0)
			return;
	} else
		gd_rbuf_commit(&pc->rb, (size_t)nread);
	old_welcome(pc);
	while ((rc = gd_seal_next(&pc->rx, &pc->rb,
	    limit = sub_frame_limit(s, pc), &f)) == 1) {
		s->cur_rb = &pc->rb;
		rc = sub_frame(s, pc, &f, &why);
		s->cur_rb = NULL;
		switch (rc) {
		case SUB_FR_NEXT:
			continue;
		case SUB_FR_END:
			pc_ended(pc);
			return;
		case SUB_FR_FAILED:
			handshake_failed(pc, why);
			return;
		case SUB_FR_DENIED:
			auth_failed(pc, why);
			return;
		case SUB_FR_STOP:
			return;
		}
		rc = -1;	/* SUB_FR_BAD */
		break;
	}
	if (rc == GD_SEAL_BAD) {
		seal_failed(pc);
		return;
	}
	if (rc < 0 && (size = sub_frame_too_large(pc, limit)) > 0) {
		gd_err("publisher %s sent a block of %" PRIu32 " bytes, over "
		    "the limit of %" PRIu32 " bytes (GDsub_maxBlockSize, "
		    "--max-block-size); not read further", pc->addr, size,
		    limit);
		sub_finish(s, GD_EX_DATAERR);
		return;
	}
	if (rc < 0) {
		gd_err("publisher %s sent a malformed frame; reconnecting", pc->addr);
		pc->state = SUB_PS_IDLE;
		pc_close(pc);
		return;
	}
	if (pc->tls_eof) {
		pc->tls_eof = 0;
		pc_lost(pc, "connection closed by the publisher");
		return;
	}
	gd_rbuf_compact(&pc->rb);
	sub_out_check(s);
}

/* Our HELLO (over TLS once its handshake is done). */
static void greet(struct sub_pub *pc)
{
	struct sub *s = pc->s;
	struct gd_hello h;
	int rc;

	pc->greeted = 1;
	memset(&h, 0, sizeof(h));
	h.version = GD_WIRE_VERSION;
	h.gd = s->conf->gd ? 1 : 0;
	h.want_data = !s->stream_in;
	h.flags = s->key.len > 0 ? GD_HF_AUTH : 0;
	h.run = s->run;
	pc->pub_proved = 0;
	if (gd_auth_nonce(pc->nc) != 0) {
		gd_err("cannot greet publisher %s: no random bytes for the nonce",
		    pc->addr);
		sub_finish(s, GD_EX_FAIL);
		return;
	}
	memcpy(h.nonce, pc->nc, GD_AUTH_NONCE);
	/* plain TCP without a key: every byte both ways is sealed with a
	 * CRC, from our HELLO on (with a key, from the CHALLENGE on) */
	if (pc->tls == NULL && s->key.len == 0 &&
	    (gd_seal_start(&pc->tx, GD_SEAL_CRC, NULL) != 0 ||
	    gd_seal_start(&pc->rx, GD_SEAL_CRC, NULL) != 0)) {
		gd_err("out of memory greeting publisher %s", pc->addr);
		sub_finish(s, GD_EX_FAIL);
		return;
	}
	snprintf(h.name, sizeof(h.name), "%s", s->name);
	{
		struct gd_qos_params q = { s->conf->reliability == GD_REL_ORDERED,
			s->conf->retry_count };
		gd_qos_format(&q, h.qos, sizeof(h.qos));
	}
	if ((rc = sub_send_hello(pc, &h)) == UV_ENOMEM) {
		gd_err("out of memory greeting publisher %s", pc->addr);
		sub_finish(s, GD_EX_FAIL);
		return;
	}
	if (rc != 0) {
		pc->state = SUB_PS_CONNECTING;	/* an attempt that failed */
		pc_close(pc);
		attempt_failed(pc, uv_strerror(rc));
		return;
	}
}

static void on_connect(uv_connect_t *req, int status)
{
	struct sub_pub *pc = req->data;
	struct sub *s = pc->s;
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
	gd_rbuf_clear(&pc->rb);
	gd_seal_free(&pc->tx);
	gd_seal_free(&pc->rx);
	pc->confirm_due = 0;
	pc->greeted = 0;
	pc->tls_eof = 0;
	if (s->tls == NULL)
		greet(pc);
	else if ((pc->tls = gd_tls_new(s->tls, pc->hp.host)) == NULL ||
	    (rc = sub_tls_out(pc, NULL, NULL)) != 0) {
		/* the ClientHello, made by gd_tls_new */
		gd_err("out of memory greeting publisher %s", pc->addr);
		sub_finish(s, GD_EX_FAIL);
		return;
	}
	if (s->done || pc->state != SUB_PS_WELCOME)
		return;
	/* the handshake's deadline, TLS's included */
	(void)uv_timer_start(&pc->retry, hs_timeout, SUB_HANDSHAKE_MS, 0);
	pc->reading = 1;
	if (!s->out_paused)
		pc_read_start(pc);
}

/* A fresh TCP connection to the address resolved for pc. */
static void connect_to(struct sub_pub *pc, const struct sockaddr *sa)
{
	struct sub *s = pc->s;
	int rc;

	if ((rc = uv_tcp_init(&s->loop, &pc->h)) != 0) {
		attempt_failed(pc, uv_strerror(rc));
		return;
	}
	pc->h.data = pc;
	pc->h_open = 1;
	pc->state = SUB_PS_CONNECTING;
	pc->creq.data = pc;
	rc = uv_tcp_connect(&pc->creq, &pc->h, sa, on_connect);
	if (rc != 0) {
		pc_close(pc);
		attempt_failed(pc, uv_strerror(rc));
	}
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct sub_pub *pc = req->data;
	struct sub *s = pc->s;

	if (s->done) {
		uv_freeaddrinfo(res);
		return;
	}
	if (status < 0) {
		attempt_failed(pc, uv_strerror(status));
		return;
	}
	/* kept for the next attempts (GDsub_locatorCacheTimeout) */
	if (res->ai_addrlen <= sizeof(pc->addr_cache)) {
		memcpy(&pc->addr_cache, res->ai_addr, res->ai_addrlen);
		pc->addr_time = gd_clock_mono_ns() / 1000000 + 1;
	}
	connect_to(pc, res->ai_addr);
	uv_freeaddrinfo(res);
}

/* IceStorm's connectionCached and locatorCacheTimeout, on the side that
 * connects: with connectionCached=1 an attempt reuses the address
 * resolved before while it is younger than locatorCacheTimeout (-1:
 * forever, 0: never); connectionCached=0 resolves the host name again for
 * every attempt. Each attempt is a new TCP connection either way. */
static int addr_cached(struct sub_pub *pc)
{
	const struct gd_conf *c = pc->s->conf;
	uint64_t age;

	if (pc->addr_time == 0 || !c->conn_cached || c->locator_timeout == 0)
		return 0;
	age = gd_clock_mono_ns() / 1000000 + 1 - pc->addr_time;
	return c->locator_timeout < 0 || (double)age < c->locator_timeout * 1000;
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
	if (addr_cached(pc)) {
		gd_trace(2, "publisher %s: reusing the address resolved %.3fs "
		    "ago", pc->addr, (double)(gd_clock_mono_ns() / 1000000 + 1 -
		    pc->addr_time) / 1000);
		connect_to(pc, (const struct sockaddr *)&pc->addr_cache);
		return;
	}
	gd_trace(2, "publisher %s: resolving %s", pc->addr, pc->hp.host);
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
	if (!hard && pc->state == SUB_PS_ACTIVE)
		pc_bye(pc);
	else if (hard || pc->state != SUB_PS_ENDED)
		pc_close(pc);
	/* (ended: pc_bye is closing it, once its BYE is written) */
}

void sub_net_confirm(struct sub *s)
{
	size_t i;

	if (s->done || gd_out_backlog(&s->out) > 0)
		return;
	for (i = 0; i < s->npc; i++) {
		struct sub_pub *pc = &s->pc[i];
		if (!pc->confirm_due || pc->state != SUB_PS_ACTIVE)
			continue;
		pc->confirm_due = 0;
		sub_send_small(pc, GD_F_CONFIRM, 1, pc->confirm_seq);
	}
}
