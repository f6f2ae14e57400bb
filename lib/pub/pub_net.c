/* gdpub's connections' life: listening (a given port, or -p 0 and the
 * kernel's choice), accepting subscribers up to GDpub_maxConnections or
 * refusing them (too many, the wrong language, TLS failed), the read loop
 * (each frame's handler is pub_frames.c's, the TLS byte path pub_tls.c's,
 * the handshake pub_hs.c's; before it is done only HELLO and PROOF are
 * read, so a connection costs no more than its receive buffer), and
 * closing them. The TCP sink that writes to them is pub_send.c. */
#include "pub_int.h"
#include "clock.h"
#include "log.h"
#include "parse.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- connections ---- */

static void conn_closed(uv_handle_t *h)
{
	struct sconn *c = h->data;
	c->p->nconns--;
	gd_rbuf_free(&c->rb);
	gd_tls_free(c->tls);
	gd_seal_free(&c->tx);
	gd_seal_free(&c->rx);
	free(c->cin);
	free(c->hs_hello);
	free(c);
}

void pub_conn_close(struct sconn *c, const char *why)
{
	struct pub *p = c->p;

	if (c->state == PUB_CS_CLOSING)
		return;
	if (c->state == PUB_CS_ACTIVE && c->want_data)
		p->ndata--;
	c->state = PUB_CS_CLOSING;
	if (c->qs != NULL) {
		/* a connection lost mid-stream is a delivery failure */
		if (!c->counted && !p->finished &&
		    gd_qos_failure(&p->qos, c->qs, gd_clock_mono_ns(),
		    why ? why : "connection closed by gdpub") == GD_QS_REMOVED)
			gd_warn("subscriber %s (%s) removed: %s", c->name,
			    c->addr, c->qs->why);
		gd_qos_detach(&p->qos, c->qs);
		c->qs = NULL;
	}
	pub_queue_free(c);
	if (c->slot >= 0) {
		p->slot_conn[c->slot] = NULL;
		gd_slots_leave(&p->slots, c->slot);
		p->ngd--;
		/* what it owed is no longer in the window */
		gd_deliver_slot_down(&p->dv, (unsigned)c->slot);
		pub_kick(p);
	}
	/* a GD subscriber leaving mid-stream is why blocks will be NACKed;
	 * not when nothing is pending and no input is left (its last acks
	 * and its goodbye may come in one read, before gdpub has seen that
	 * it is done) */
	if (why && c->slot >= 0 && !p->finished &&
	    (gd_deliver_pending_count(&p->dv) > 0 || !p->eof ||
	    pub_input_left(p)))
		gd_warn("GD subscriber %s (%s) disconnected: %s; %u of %u "
		    "connected, %u blocks pending", c->name, c->addr, why,
		    p->ngd, p->needed, gd_deliver_pending_count(&p->dv));
	else if (why)
		gd_trace(1, "subscriber %s (%s) disconnected: %s",
		    c->name[0] ? c->name : "?", c->addr, why);
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	uv_close((uv_handle_t *)&c->h, conn_closed);
	pub_backlog_recheck(p);
	pub_end_closed(p, c, c->bye);
}

static void conn_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct sconn *c = h->data;
	uint8_t *ptr = NULL;
	size_t n = 0;
	int rc;

	(void)hint;
	if (c->tls != NULL)
		ptr = c->cin, n = PUB_CIN_SIZE;	/* decrypted into rb */
	else if ((rc = gd_rbuf_space(&c->rb, PUB_READ_MIN, &ptr, &n)) != 0) {
		gd_err("cannot read from %s (receive buffer: %s)",
		    c->addr, gd_dbuf_strerror(rc));
		ptr = NULL, n = 0;	/* libuv reports UV_ENOBUFS */
	}
	*b = uv_buf_init((char *)ptr, (unsigned)n);
}

/* A frame that is bad, or out of place (type: its type, 0 when it could
 * not be read as a frame). Before a hello, the peer may not be a gdsub
 * at all (a port scanner, a browser): say so rather than name it "?". */
static void malformed(struct sconn *c, unsigned type)
{
	if (c->state < PUB_CS_ACTIVE && type == 0)
		gd_err("connection from %s sent bytes that are not a gdkit wire "
		    "frame (not a gdsub?); closing it", c->addr);
	else if (c->state < PUB_CS_ACTIVE)
		gd_err("connection from %s sent a frame of type %u before its "
		    "handshake was done; closing it", c->addr, type);
	else
		gd_err("subscriber %s (%s) sent a malformed frame%s; closing "
		    "its connection", c->name[0] ? c->name : "?", c->addr,
		    type ? " (out of place)" : "");
	pub_conn_close(c, NULL);
}

/* One frame from a subscriber, to its handler (pub_frames.c): 0, or -1
 * when the connection was closed. */
static int on_frame(struct pub *p, struct sconn *c, const struct gd_frame *f)
{
	switch (pub_frame(p, c, f)) {
	case PUB_FR_NEXT:
		return 0;
	case PUB_FR_BYE:
		pub_conn_close(c, "unsubscribed");
		return -1;
	case PUB_FR_BAD:
		malformed(c, f->type);
		return -1;
	}
	return -1;	/* PUB_FR_CLOSED */
}

/* A seal did not verify: bytes damaged on the way (CRC), or forged or
 * altered (MAC). Nothing of its span was acted on; the connection goes
 * (its blocks are resent or NACKed as for any lost subscriber). */
static void seal_failed(struct sconn *c)
{
	struct gd_frame f;
	size_t used;

	/* a PROOF under it that is wrong says more: the keys differ (a
	 * gdsub with another key stops at our CHALLENGE; this is no gdsub) */
	if (c->state == PUB_CS_PROOF && gd_wire_next(gd_rbuf_head(&c->rb),
	    c->rx.scanned, 0, &f, &used) == 1 && f.type == GD_F_PROOF &&
	    !gd_auth_verify(&c->p->key, GD_AUTH_SUB, c->nc, c->ns, f.body)) {
		(void)pub_proof_frame(c->p, c, &f);
		return;
	}
	c->p->n_seal_failed++;
	if (c->rx.mode == GD_SEAL_MAC)
		gd_err("subscriber %s (%s): frames failed authentication (their "
		    "seal does not verify under the session key: forged or "
		    "altered on the way); closing its connection, nothing they "
		    "said counts", pub_conn_who(c), c->addr);
	else
		gd_err("subscriber %s (%s): frames failed their CRC32C check "
		    "(damaged on the way); closing its connection, nothing "
		    "they said counts", pub_conn_who(c), c->addr);
	pub_conn_close(c, NULL);
}

/* Before its HELLO is read: a subscriber of this version without a key
 * seals everything, its HELLO too, and that HELLO is acted on only once
 * its seal verified. Any other HELLO is read as it comes (and refused, or
 * challenged: the session keys then bind it). */
static void hello_seal(struct sconn *c)
{
	struct gd_frame f;
	struct gd_hello h;
	size_t used;

	if (c->state != PUB_CS_HELLO || c->tls != NULL || gd_seal_on(&c->rx) ||
	    gd_wire_next(gd_rbuf_head(&c->rb), gd_rbuf_avail(&c->rb), 0, &f,
	    &used) != 1 || f.type != GD_F_HELLO ||
	    gd_wire_get_hello(&f, &h) != 0 || h.version != GD_WIRE_VERSION ||
	    (h.flags & GD_HF_AUTH))
		return;
	(void)gd_seal_start(&c->rx, GD_SEAL_CRC, NULL);	/* no cipher: no
							 * failure */
}

/* The connection is refused before a word of gdkit: what was said is
 * out (an alert, a plain REFUSE), the close follows. */
static void refuse_early(struct sconn *c)
{
	c->state = PUB_CS_REFUSED;
	uv_read_stop((uv_stream_t *)&c->h);
	pub_conn_shutdown(c);
}

/* A TLS handshake failed, or the TLS stream broke, with why. */
static void tls_failed(struct sconn *c, const char *why)
{
	struct pub *p = c->p;

	if (c->state == PUB_CS_TLS) {
		p->n_tls_refused++;
		gd_err("TLS handshake with %s failed: %s%s; closing the "
		    "connection", c->addr, why, gd_tls_peer_refused(c->tls) ?
		    " (the subscriber refused this gdpub's certificate: see "
		    "its log)" : "");
	} else {
		/* after the handshake: a lost connection like any other */
		char msg[GD_TLS_ERR_MAX + 8];
		snprintf(msg, sizeof(msg), "TLS: %s", why);
		gd_err("subscriber %s (%s) broke the TLS stream: %s; closing "
		    "its connection", pub_conn_who(c), c->addr, why);
		pub_conn_close(c, msg);
		return;
	}
	/* the alert OpenSSL made tells the subscriber why */
	if (pub_conn_tls_out(c) == 0)
		refuse_early(c);
}

/* A plain gdkit frame at a TLS listener: refused in plain words, which a
 * gdsub without GDsub_tlsCA can read (n bytes of it in c->cin: a gdsub
 * of this version without a key reads only what a CRC32C seals). */
static void plain_at_tls(struct sconn *c, size_t n)
{
	static const char why[] = "this publisher speaks TLS only "
	    "(GDpub_tlsCert): give gdsub GDsub_tlsCA (--tls-ca) with the CA "
	    "of its certificate";
	uint8_t *d = malloc(GD_WIRE_HDR + sizeof(why) + GD_SEAL_FRAME_MAX);
	struct gd_frame f;
	struct gd_hello h;
	size_t used, len;

	c->p->n_tls_refused++;
	gd_err("refused connection from %s: it speaks plain gdkit, and this "
	    "gdpub requires TLS (GDpub_tlsCert); a gdsub needs GDsub_tlsCA",
	    c->addr);
	if (d == NULL) {
		pub_conn_close(c, NULL);
		return;
	}
	len = gd_wire_text(d, GD_F_REFUSE, why);
	if (gd_wire_next(c->cin, n, 0, &f, &used) == 1 &&
	    gd_wire_get_hello(&f, &h) == 0 && h.version == GD_WIRE_VERSION &&
	    !(h.flags & GD_HF_AUTH) &&
	    gd_seal_start(&c->tx, GD_SEAL_CRC, NULL) == 0)
		len += gd_seal_make(&c->tx, d, len, d + len);
	if (pub_conn_raw(c, d, len) == 0)
		refuse_early(c);
}

/* A TLS client at a plain listener: a TLS alert, which its handshake
 * reports at once, rather than silence. */
static void tls_at_plain(struct sconn *c)
{
	uint8_t *d = malloc(8);

	c->p->n_tls_refused++;
	gd_err("refused connection from %s: it speaks TLS, and this gdpub "
	    "has no certificate (GDpub_tlsCert, GDpub_tlsKey)", c->addr);
	if (d == NULL) {
		pub_conn_close(c, NULL);
		return;
	}
	if (pub_conn_raw(c, d, gd_tls_plain_alert(d)) == 0)
		refuse_early(c);
}

/* nread bytes of ciphertext in c->cin, decrypted (pub_tls.c), what the
 * handshake answers written; once TLS's handshake is done, the HELLO is
 * awaited. 0, or -1 when the connection is going. */
static int tls_in(struct pub *p, struct sconn *c, size_t nread)
{
	const char *why = NULL;

	switch (pub_tls_in(c, nread, &why)) {
	case PUB_TLS_PLAIN:
		plain_at_tls(c, nread);
		return -1;
	case PUB_TLS_RBUF:
		gd_err("cannot read from %s (receive buffer: %s); "
		    "closing its connection", c->addr, why);
		pub_conn_close(c, why);
		return -1;
	case PUB_TLS_FAILED:
		tls_failed(c, why);
		return -1;
	}
	if (pub_conn_tls_out(c) != 0)
		return -1;
	if (c->state == PUB_CS_TLS && gd_tls_done(c->tls)) {
		char d[400];
		gd_tls_describe(c->tls, d, sizeof(d));
		gd_trace(1, "connection from %s: %s", c->addr, d);
		c->state = PUB_CS_HELLO;
	}
	(void)p;
	return 0;
}

static void conn_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct sconn *c = st->data;
	struct pub *p = c->p;
	struct gd_frame f;
	int rc;

	(void)buf;
	if (nread < 0) {
		/* a gdsub that refuses us says so by an alert first (see
		 * tls_failed): this is a probe, a health check */
		if (c->state == PUB_CS_TLS)
			gd_trace(1, "connection from %s closed during the TLS "
			    "handshake", c->addr);
		/* a subscriber that found our proof wrong leaves without its own */
		if (c->state == PUB_CS_PROOF) {
			p->n_auth_refused++;
			gd_err("refused subscriber %s (%s): it closed the "
			    "connection without proving the key (its "
			    "GDsub_authKeyFile differs from GDpub_authKeyFile?)",
			    pub_conn_who(c), c->addr);
		}
		pub_conn_close(c, nread == UV_EOF ? "connection closed" :
		    uv_strerror((int)nread));
		pub_maybe_done(p);
		return;
	}
	if (c->state == PUB_CS_REFUSED)
		return;		/* nothing it says counts */
	p->now = gd_clock_mono_ns();
	if (c->tls != NULL) {
		if (tls_in(p, c, (size_t)nread) != 0) {
			pub_maybe_done(p);
			return;
		}
	} else if (c->state == PUB_CS_HELLO && gd_rbuf_avail(&c->rb) == 0 &&
	    gd_tls_looks_like_hello(gd_rbuf_end(&c->rb), (size_t)nread)) {
		tls_at_plain(c);
		pub_maybe_done(p);
		return;
	} else
		gd_rbuf_commit(&c->rb, (size_t)nread);
	hello_seal(c);
	while ((rc = gd_seal_next(&c->rx, &c->rb, 0, &f)) == 1) {
		if (on_frame(p, c, &f) != 0) {
			pub_maybe_done(p);
			return;
		}
	}
	if (rc == GD_SEAL_BAD) {
		seal_failed(c);
		pub_maybe_done(p);
		return;
	}
	/* before its handshake a peer gets to send HELLO, PROOF and SEAL,
	 * which are small: the header of any other frame is enough to close
	 * it */
	if (rc == 0 && c->state < PUB_CS_ACTIVE) {
		const uint8_t *h = gd_rbuf_head(&c->rb) + c->rx.scanned;
		if (gd_rbuf_avail(&c->rb) - c->rx.scanned >= GD_WIRE_HDR &&
		    h[4] != GD_F_HELLO && h[4] != GD_F_PROOF &&
		    h[4] != GD_F_SEAL)
			rc = -1;
	}
	if (rc < 0) {
		malformed(c, 0);
		pub_maybe_done(p);
		return;
	}
	if (c->tls_eof) {
		pub_conn_close(c, "connection closed");
		pub_maybe_done(p);
		return;
	}
	gd_rbuf_compact(&c->rb);
	pub_arm_timer(p);
	pub_maybe_done(p);
}

static void peer_name(uv_tcp_t *h, char *addr, size_t sz)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss), port = 0;
	char host[64] = "?";

	if (uv_tcp_getpeername(h, (struct sockaddr *)&ss, &len) != 0)
		return;
	if (ss.ss_family == AF_INET) {
		uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof(host));
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	} else {
		uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof(host));
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	gd_fmt_hostport(addr, sz, host, port);
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

/* GDpub_maxConnections reached: accept (so that the peer sees its
 * connection closed rather than a backlog) and close at once. One line a
 * second at most says so, with the count. */
static void refuse_accept(struct pub *p, uv_stream_t *server)
{
	uv_tcp_t *t = malloc(sizeof(*t));
	char addr[80] = "?";

	p->n_conn_refused++;
	if (t == NULL || uv_tcp_init(&p->loop, t) != 0) {
		free(t);
		return;
	}
	if (uv_accept(server, (uv_stream_t *)t) == 0)
		peer_name(t, addr, sizeof(addr));
	uv_close((uv_handle_t *)t, free_handle);
	if (p->conn_refused_logged == 0 ||
	    p->now - p->conn_refused_logged >= 1000000000) {
		p->conn_refused_logged = p->now;
		gd_warn("refused connection from %s: %u connections already "
		    "(GDpub_maxConnections=%" PRId64 "); %" PRIu64 " refused so "
		    "far", addr, p->nconns, p->conf->max_conns,
		    p->n_conn_refused);
	}
}

static void on_accept(uv_stream_t *server, int status)
{
	struct pub *p = server->data;
	struct sconn *c;
	int rc;

	if (status < 0) {
		gd_err("cannot accept a connection: %s", uv_strerror(status));
		return;
	}
	p->now = gd_clock_mono_ns();
	if (p->nconns >= (uint64_t)p->conf->max_conns) {
		refuse_accept(p, server);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL || gd_rbuf_init(&c->rb, 65536, PUB_RB_MAX) != 0 ||
	    uv_tcp_init(&p->loop, &c->h) != 0) {
		gd_err("cannot accept a connection: out of memory");
		if (c != NULL)
			gd_rbuf_free(&c->rb);
		free(c);
		return;
	}
	c->p = p;
	p->nconns++;
	c->slot = -1;
	c->state = PUB_CS_HELLO;
	if (p->tls != NULL) {
		c->state = PUB_CS_TLS;
		if ((c->tls = gd_tls_new(p->tls, NULL)) == NULL ||
		    (c->cin = malloc(PUB_CIN_SIZE)) == NULL) {
			gd_err("cannot accept a connection: out of memory");
			uv_close((uv_handle_t *)&c->h, conn_closed);
			return;
		}
	}
	c->accept_ns = p->now;
	c->h.data = c;
	if ((rc = uv_accept(server, (uv_stream_t *)&c->h)) != 0) {
		gd_err("cannot accept a connection: %s", uv_strerror(rc));
		uv_close((uv_handle_t *)&c->h, conn_closed);
		return;
	}
	uv_tcp_nodelay(&c->h, 1);
	peer_name(&c->h, c->addr, sizeof(c->addr));
	c->next = p->conns;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &p->conns;
	p->conns = c;
	if ((rc = uv_read_start((uv_stream_t *)&c->h, conn_alloc, conn_read)) != 0) {
		gd_err("cannot read from %s: %s", c->addr, uv_strerror(rc));
		pub_conn_close(c, NULL);
	}
}

/* ---- listening ---- */

/* The host written into keys: GDpub_host, else the bind address, or the
 * host name for a wildcard bind. */
static int key_host(struct pub *p, const char *bind, char *host, size_t sz)
{
	if (p->conf->host)
		snprintf(host, sz, "%s", p->conf->host);
	else if (strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0) {
		if (gethostname(host, sz) != 0)
			snprintf(host, sz, "localhost");
		host[sz - 1] = '\0';
	} else
		snprintf(host, sz, "%s", bind);
	if (!gd_valid_host(host)) {
		gd_err("cannot use %s '%s' in block keys: expected %s; "
		    "set --host or GDpub_host", strcmp(bind, host) ?
		    "host name" : "bind address", host, GD_VALID_HOST_WHAT);
		return GD_EX_CONFIG;
	}
	return 0;
}

/* The port actually bound (the kernel's choice for -p 0). */
static int bound_port(uv_tcp_t *srv)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);

	if (uv_tcp_getsockname(srv, (struct sockaddr *)&ss, &len) != 0)
		return 0;
	return ntohs(ss.ss_family == AF_INET ?
	    ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* The socket the service manager passed (socket activation): it listens
 * already, and keeps listening while gdpub restarts, so no subscriber's
 * connection is refused in between; the host in keys follows its
 * address as it would --bind's. */
static int listen_passed(struct pub *p)
{
	struct sockaddr_storage ss;
	char bind[64] = "?", host[GD_HOST_MAX];
	int rc, len = sizeof(ss);

	if ((rc = uv_tcp_init(&p->loop, &p->srv)) == 0 &&
	    (rc = uv_tcp_open(&p->srv, p->opt.listen_fd)) == 0 &&
	    (rc = uv_tcp_getsockname(&p->srv, (struct sockaddr *)&ss,
	    &len)) == 0) {
		p->srv.data = p;
		uv_ip_name((struct sockaddr *)&ss, bind, sizeof(bind));
		rc = uv_listen((uv_stream_t *)&p->srv, 128, on_accept);
	}
	if (rc != 0) {
		gd_err("cannot serve on the socket the service manager passed "
		    "(fd %d): %s", p->opt.listen_fd, uv_strerror(rc));
		return GD_EX_UNAVAILABLE;
	}
	if ((rc = key_host(p, bind, host, sizeof(host))) != 0)
		return rc;
	p->port = bound_port(&p->srv);
	gd_fmt_hostport(p->origin, sizeof(p->origin), host, p->port);
	p->origin_len = strlen(p->origin);
	return 0;
}

int pub_listen(struct pub *p)
{
	struct addrinfo hints, *res = NULL;
	char port[16], host[GD_HOST_MAX];
	const char *bind = p->conf->bind ? p->conf->bind : "127.0.0.1";
	int rc;

	if (p->opt.listen_fd > 0)
		return listen_passed(p);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%d", (int)p->conf->port);
	if ((rc = key_host(p, bind, host, sizeof(host))) != 0)
		return rc;
	if ((rc = getaddrinfo(bind, port, &hints, &res)) != 0) {
		gd_err("cannot listen on %s port %s: %s", bind, port,
		    gai_strerror(rc));
		return GD_EX_UNAVAILABLE;
	}
	if ((rc = uv_tcp_init(&p->loop, &p->srv)) == 0) {
		p->srv.data = p;
		rc = uv_tcp_bind(&p->srv, res->ai_addr, 0);
		if (rc == 0)
			rc = uv_listen((uv_stream_t *)&p->srv, 128, on_accept);
	}
	freeaddrinfo(res);
	if (rc != 0) {
		gd_err("cannot listen on %s port %s: %s", bind, port,
		    uv_strerror(rc));
		return GD_EX_UNAVAILABLE;
	}
	p->port = bound_port(&p->srv);
	gd_fmt_hostport(p->origin, sizeof(p->origin), host, p->port);
	p->origin_len = strlen(p->origin);
	return 0;
}

