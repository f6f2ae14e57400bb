/* Frame decoding and control-frame encoding; block encoding is inline in
 * wire.h because it sits on the publisher's hot path. */
#include "wire.h"

#include <stdlib.h>

const char *gd_ack_status_str(int st)
{
	switch (st) {
	case GD_ACK_OK: return "accepted";
	case GD_ACK_NONE: return "not requested";
	case GD_ACK_FULL: return "refused: the publisher already has numSubs GD subscribers";
	case GD_ACK_NAME: return "refused: a subscriber with this name is already connected";
	case GD_ACK_OFF: return "refused: the publisher runs with numSubs=0 (GD off)";
	case GD_ACK_AUTH_NEEDED: return "refused: the publisher requires authentication (GDpub_authKeyFile) and this subscriber has no key (GDsub_authKeyFile)";
	case GD_ACK_AUTH_FAILED: return "refused: authentication failed: the subscriber's key (GDsub_authKeyFile) differs from the publisher's (GDpub_authKeyFile)";
	case GD_ACK_AUTH_NOKEY: return "refused: this subscriber has a key (GDsub_authKeyFile) but the publisher has none (GDpub_authKeyFile): it cannot prove it";
	case GD_ACK_VERSION: return "refused: the publisher speaks another protocol version (a different gdkit version)";
	}
	return "refused";
}

int gd_wire_next(const uint8_t *buf, size_t len, uint32_t max_block,
    struct gd_frame *f, size_t *used)
{
	uint32_t blen;
	uint8_t type;

	if (len < GD_WIRE_HDR)
		return 0;
	blen = gd_get32(buf);
	type = buf[4];
	if (type == 0 || (type > GD_F_MAX && type != GD_F_PREACK) ||
	    buf[6] != 0 || buf[7] != 0)
		return -1;
	if (type == GD_F_BLOCK) {
		if (blen < 24 || blen - 24 > max_block)
			return -1;
	} else if (blen > GD_CTRL_MAX * 64) {
		return -1;	/* acks may batch many ids, others are small */
	} else if (type != GD_F_ACK && type != GD_F_PREACK &&
	    blen > GD_CTRL_MAX) {
		return -1;
	}
	if ((type == GD_F_ACK && blen % GD_ACK_SIZE != 0) ||
	    (type == GD_F_PREACK && blen % GD_PREACK_SIZE != 0))
		return -1;
	if ((type == GD_F_CHALLENGE && blen != GD_CHALLENGE_LEN) ||
	    (type == GD_F_PROOF && blen != GD_PROOF_LEN) ||
	    (type == GD_F_CONSUMED && blen != 8) ||
	    (type == GD_F_SEAL && blen != 4 && blen != 16))
		return -1;
	if (len - GD_WIRE_HDR < blen)
		return 0;
	f->type = type;
	f->flags = buf[5];
	f->len = blen;
	f->body = buf + GD_WIRE_HDR;
	*used = GD_WIRE_HDR + (size_t)blen;
	return 1;
}

int gd_wire_get_block(const struct gd_frame *f, struct gd_block *b)
{
	if (f->type != GD_F_BLOCK || f->len < 24)
		return -1;
	b->id = gd_get64(f->body);
	b->seq = gd_get64(f->body + 8);
	b->time_ns = gd_get64(f->body + 16);
	b->flags = f->flags;
	b->len = f->len - 24;
	b->data = f->body + 24;
	return 0;
}

static void get_str(char *dst, size_t sz, const uint8_t *p, size_t n)
{
	size_t i;
	if (n >= sz)
		n = sz - 1;
	for (i = 0; i < n; i++)	/* printable only: these strings reach logs */
		dst[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? (char)p[i] : '?';
	dst[n] = '\0';
}

int gd_wire_get_hello(const struct gd_frame *f, struct gd_hello *h)
{
	size_t nlen, i, qlen;
	const uint8_t *q;

	if (f->type != GD_F_HELLO || f->len < 2)
		return -1;
	memset(h, 0, sizeof(*h));
	h->version = (unsigned)f->body[0] | (unsigned)f->body[1] << 8;
	if (h->version != GD_WIRE_VERSION)
		return 0;
	if (f->len < GD_HELLO_NAME_AT || f->body[5] || f->body[6] ||
	    f->body[7])
		return -1;
	h->gd = f->body[2];
	h->want_data = f->body[3];
	h->flags = f->body[4];
	memcpy(h->nonce, f->body + 8, GD_AUTH_NONCE);
	h->run = gd_get64(f->body + GD_HELLO_FIXED);
	nlen = f->body[GD_HELLO_FIXED + 8];
	if (f->len < GD_HELLO_NAME_AT + nlen)
		return -1;
	get_str(h->name, sizeof(h->name), f->body + GD_HELLO_NAME_AT, nlen);
	q = f->body + GD_HELLO_NAME_AT + nlen;
	qlen = f->len - GD_HELLO_NAME_AT - nlen;
	if (qlen >= sizeof(h->qos))
		return -1;
	for (i = 0; i < qlen; i++)	/* newlines separate; the rest printable */
		h->qos[i] = q[i] == '\n' || (q[i] >= 0x20 && q[i] < 0x7f) ?
		    (char)q[i] : '?';
	h->qos[qlen] = '\0';
	return 0;
}

int gd_wire_get_welcome(const struct gd_frame *f, struct gd_welcome *w)
{
	if (f->type != GD_F_WELCOME || f->len < 24)
		return -1;
	w->version = (unsigned)f->body[0] | (unsigned)f->body[1] << 8;
	w->ack_status = f->body[2];
	w->flags = f->body[3];
	w->num_subs = gd_get32(f->body + 4);
	w->max_block = gd_get32(f->body + 8);
	w->timeout_ms = gd_get32(f->body + 12);
	w->epoch = gd_get64(f->body + 16);
	get_str(w->origin, sizeof(w->origin), f->body + 24, f->len - 24);
	return 0;
}

size_t gd_wire_hello(uint8_t *dst, const struct gd_hello *h)
{
	size_t n = strnlen(h->name, 255);
	size_t q = strnlen(h->qos, sizeof(h->qos) - 1);
	uint8_t *b = dst + GD_WIRE_HDR;
	b[0] = (uint8_t)h->version;
	b[1] = (uint8_t)(h->version >> 8);
	b[2] = (uint8_t)h->gd;
	b[3] = (uint8_t)h->want_data;
	b[4] = (uint8_t)h->flags;
	b[5] = b[6] = b[7] = 0;
	memcpy(b + 8, h->nonce, GD_AUTH_NONCE);
	gd_put64(b + GD_HELLO_FIXED, h->run);
	b[GD_HELLO_FIXED + 8] = (uint8_t)n;
	memcpy(b + GD_HELLO_NAME_AT, h->name, n);
	memcpy(b + GD_HELLO_NAME_AT + n, h->qos, q);
	gd_wire_hdr(dst, GD_F_HELLO, 0, (uint32_t)(GD_HELLO_NAME_AT + n + q));
	return GD_WIRE_HDR + GD_HELLO_NAME_AT + n + q;
}

size_t gd_wire_welcome(uint8_t *dst, const struct gd_welcome *w)
{
	size_t n = strnlen(w->origin, sizeof(w->origin) - 1);
	uint8_t *b = dst + GD_WIRE_HDR;
	b[0] = (uint8_t)w->version;
	b[1] = (uint8_t)(w->version >> 8);
	b[2] = (uint8_t)w->ack_status;
	b[3] = (uint8_t)w->flags;
	gd_put32(b + 4, w->num_subs);
	gd_put32(b + 8, w->max_block);
	gd_put32(b + 12, w->timeout_ms);
	gd_put64(b + 16, w->epoch);
	memcpy(b + 24, w->origin, n);
	gd_wire_hdr(dst, GD_F_WELCOME, 0, (uint32_t)(24 + n));
	return GD_WIRE_HDR + 24 + n;
}

size_t gd_wire_u64(uint8_t *dst, uint8_t type, uint64_t v)
{
	gd_wire_hdr(dst, type, 0, 8);
	gd_put64(dst + GD_WIRE_HDR, v);
	return GD_WIRE_HDR + 8;
}

size_t gd_wire_empty(uint8_t *dst, uint8_t type)
{
	gd_wire_hdr(dst, type, 0, 0);
	return GD_WIRE_HDR;
}

size_t gd_wire_challenge(uint8_t *dst, const uint8_t ns[GD_AUTH_NONCE],
    const uint8_t proof[GD_AUTH_MAC])
{
	gd_wire_hdr(dst, GD_F_CHALLENGE, 0, GD_CHALLENGE_LEN);
	memcpy(dst + GD_WIRE_HDR, ns, GD_AUTH_NONCE);
	memcpy(dst + GD_WIRE_HDR + GD_AUTH_NONCE, proof, GD_AUTH_MAC);
	return GD_WIRE_HDR + GD_CHALLENGE_LEN;
}

size_t gd_wire_proof(uint8_t *dst, const uint8_t proof[GD_AUTH_MAC])
{
	gd_wire_hdr(dst, GD_F_PROOF, 0, GD_PROOF_LEN);
	memcpy(dst + GD_WIRE_HDR, proof, GD_AUTH_MAC);
	return GD_WIRE_HDR + GD_PROOF_LEN;
}

size_t gd_wire_text(uint8_t *dst, uint8_t type, const char *text)
{
	size_t n = strnlen(text, GD_CTRL_MAX);

	memcpy(dst + GD_WIRE_HDR, text, n);
	gd_wire_hdr(dst, type, 0, (uint32_t)n);
	return GD_WIRE_HDR + n;
}

void gd_wire_get_text(const struct gd_frame *f, char *dst, size_t sz)
{
	get_str(dst, sz, f->body, f->len);
}

int gd_rbuf_init(struct gd_rbuf *r, size_t first, size_t max)
{
	if (first > max)
		first = max;
	gd_dbuf_init_sized(&r->d, first, max);
	r->off = 0;
	/* first - 1: the dbuf keeps a byte for its NUL */
	return first > 1 && gd_dbuf_grow(&r->d, first - 1) != GD_DBUF_OK ?
	    -1 : 0;
}

void gd_rbuf_free(struct gd_rbuf *r)
{
	gd_dbuf_free(&r->d);
	r->off = 0;
}

void gd_rbuf_compact(struct gd_rbuf *r)
{
	gd_dbuf_consume(&r->d, r->off);
	r->off = 0;
}

int gd_rbuf_expect(struct gd_rbuf *r, size_t total)
{
	if (total <= gd_rbuf_avail(r) + gd_dbuf_room(&r->d))
		return GD_DBUF_OK;
	gd_rbuf_compact(r);
	return gd_dbuf_grow_exact(&r->d, total - gd_rbuf_avail(r));
}

uint8_t *gd_rbuf_take(struct gd_rbuf *r, size_t first)
{
	struct gd_dbuf n;
	size_t len, rest = gd_rbuf_avail(r);
	uint8_t *mem;

	gd_dbuf_init_sized(&n, first, r->d.max);
	if (gd_dbuf_add(&n, gd_rbuf_head(r), rest) != GD_DBUF_OK)
		return NULL;
	mem = (uint8_t *)gd_dbuf_take(&r->d, &len);
	r->d = n;
	r->off = 0;
	return mem;
}

int gd_rbuf_space(struct gd_rbuf *r, size_t min, uint8_t **p, size_t *n)
{
	int rc;

	if (gd_dbuf_room(&r->d) < min) {
		gd_rbuf_compact(r);
		if ((rc = gd_dbuf_reserve(&r->d, min)) != GD_DBUF_OK)
			return rc;
	}
	*p = (uint8_t *)gd_dbuf_end(&r->d);
	*n = gd_dbuf_room(&r->d);
	return GD_DBUF_OK;
}
