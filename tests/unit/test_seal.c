/* seal.c: GMAC and CRC seals against known answers, and what a receiver
 * makes of a good seal, a flipped bit, a seal replayed, reordered or
 * dropped, a seal under the other direction's key; spans cut at their
 * bound; gd_seal_next acting on no frame before its seal. */
#include "seal.h"
#include "stream.h"
#include "unit.h"

#include <stdlib.h>

static void hex(const uint8_t *p, size_t n, char *out)
{
	size_t i;
	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static struct gd_auth_key test_key(void)
{
	struct gd_auth_key k;

	memset(&k, 0, sizeof(k));
	memcpy(k.k, "0123456789abcdef0123", 20);
	k.len = 20;
	return k;
}

TEST(gmac_known_answers)
{
	struct gd_seal s = { 0 };
	uint8_t key[GD_SEAL_KEY] = { 0 }, d[GD_SEAL_FRAME_MAX], span[300];
	char got[2 * GD_SEAL_TAG + 1];
	size_t i;

	/* GCM test case 13: key 0, IV 0, nothing: the number 0 is IV 0 */
	ASSERT_EQ(gd_seal_start(&s, GD_SEAL_MAC, key), 0);
	ASSERT_EQ(gd_seal_make(&s, NULL, 0, d), GD_WIRE_HDR + GD_SEAL_TAG);
	hex(d + GD_WIRE_HDR, GD_SEAL_TAG, got);
	ASSERT_STR(got, "530f8afbc74536b9a963b4f1c4cb738b");
	ASSERT_EQ(d[4], GD_F_SEAL);
	ASSERT_EQ(gd_get32(d), GD_SEAL_TAG);
	ASSERT_U64(s.seq, 1);
	/* key 0..31, the number 5, "abc" x 100 as additional data (checked
	 * against Python's cryptography AESGCM) */
	for (i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	for (i = 0; i < 300; i++)
		span[i] = (uint8_t)"abc"[i % 3];
	ASSERT_EQ(gd_seal_start(&s, GD_SEAL_MAC, key), 0);
	s.seq = 5;
	ASSERT(gd_seal_make(&s, span, sizeof(span), d) > 0);
	hex(d + GD_WIRE_HDR, GD_SEAL_TAG, got);
	ASSERT_STR(got, "18973fc507e3beb0d8203df2dd322966");
	gd_seal_free(&s);
	ASSERT_EQ(s.mode, GD_SEAL_OFF);
	ASSERT(s.ctx == NULL);
}

TEST(crc_known_answer)
{
	struct gd_seal s = { 0 };
	uint8_t d[GD_SEAL_FRAME_MAX];
	char got[2 * GD_SEAL_FRAME_MAX + 1];

	ASSERT_EQ(gd_crc32c(0, "123456789", 9), 0xe3069283);
	ASSERT_EQ(gd_seal_start(&s, GD_SEAL_CRC, NULL), 0);
	ASSERT_EQ(gd_seal_make(&s, (const uint8_t *)"hello", 5, d),
	    GD_WIRE_HDR + GD_SEAL_CRC_LEN);
	hex(d, GD_WIRE_HDR + GD_SEAL_CRC_LEN, got);
	ASSERT_STR(got, "040000000d0000009d685863");	/* as gdwire.py */
	gd_seal_free(&s);
}

/* A sender and a receiver of direction P2S, keyed as gdpub and gdsub. */
static void pair(int mode, struct gd_seal *tx, struct gd_seal *rx)
{
	struct gd_auth_key k = test_key();
	uint8_t nc[GD_AUTH_NONCE], ns[GD_AUTH_NONCE], hh[32];
	struct gd_seal ptx = { 0 }, prx = { 0 }, stx = { 0 }, srx = { 0 };

	memset(nc, 1, sizeof(nc));
	memset(ns, 2, sizeof(ns));
	ASSERT_EQ(gd_seal_hello_hash((const uint8_t *)"hello", 5, hh), 0);
	if (mode == GD_SEAL_CRC) {
		ASSERT_EQ(gd_seal_start(tx, GD_SEAL_CRC, NULL), 0);
		ASSERT_EQ(gd_seal_start(rx, GD_SEAL_CRC, NULL), 0);
		return;
	}
	ASSERT_EQ(gd_seal_start_macs(&ptx, &prx, &k, GD_AUTH_PUB, nc, ns, hh), 0);
	ASSERT_EQ(gd_seal_start_macs(&stx, &srx, &k, GD_AUTH_SUB, nc, ns, hh), 0);
	*tx = ptx;	/* the publisher's writes, the subscriber's check */
	*rx = srx;
	gd_seal_free(&prx);
	gd_seal_free(&stx);
}

static int check(struct gd_seal *rx, const uint8_t *span, size_t len,
    const uint8_t *seal, size_t sl)
{
	struct gd_frame f;
	size_t used;

	if (gd_wire_next(seal, sl, 0, &f, &used) != 1)
		return -1;
	return gd_seal_check(rx, span, len, &f);
}

static void seals_in_order(int mode)
{
	struct gd_seal tx = { 0 }, rx = { 0 };
	uint8_t a[64], b[64], sa[GD_SEAL_FRAME_MAX], sb[GD_SEAL_FRAME_MAX],
	    sc[GD_SEAL_FRAME_MAX];
	size_t la, lb, lc;

	pair(mode, &tx, &rx);
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	la = gd_seal_make(&tx, a, sizeof(a), sa);
	lb = gd_seal_make(&tx, b, sizeof(b), sb);
	lc = gd_seal_make(&tx, a, sizeof(a), sc);
	ASSERT(la > 0 && lb > 0 && lc > 0);
	/* good, in order */
	ASSERT_EQ(check(&rx, a, sizeof(a), sa, la), 1);
	/* replayed: the first span and its seal again */
	ASSERT_EQ(check(&rx, a, sizeof(a), sa, la), 0);
	/* a flipped bit in the span */
	b[7] ^= 0x10;
	ASSERT_EQ(check(&rx, b, sizeof(b), sb, lb), 0);
	b[7] ^= 0x10;
	/* ... or in the seal */
	sb[GD_WIRE_HDR] ^= 1;
	ASSERT_EQ(check(&rx, b, sizeof(b), sb, lb), 0);
	sb[GD_WIRE_HDR] ^= 1;
	/* reordered: the third before the second (same bytes as the first:
	 * only its number tells) */
	ASSERT_EQ(check(&rx, a, sizeof(a), sc, lc), 0);
	ASSERT_EQ(check(&rx, b, sizeof(b), sb, lb), 1);
	ASSERT_EQ(check(&rx, a, sizeof(a), sc, lc), 1);
	ASSERT_U64(rx.seq, 3);
	gd_seal_free(&tx);
	gd_seal_free(&rx);
}

TEST(mac_good_flipped_replayed_reordered)
{
	seals_in_order(GD_SEAL_MAC);
}

TEST(crc_good_flipped_replayed_reordered)
{
	seals_in_order(GD_SEAL_CRC);
}

TEST(mac_dropped_span_fails_the_next)
{
	struct gd_seal tx = { 0 }, rx = { 0 };
	uint8_t a[10] = "0123456789", s1[GD_SEAL_FRAME_MAX],
	    s2[GD_SEAL_FRAME_MAX];
	size_t l2;

	pair(GD_SEAL_MAC, &tx, &rx);
	ASSERT(gd_seal_make(&tx, a, sizeof(a), s1) > 0);	/* lost */
	l2 = gd_seal_make(&tx, a, sizeof(a), s2);
	ASSERT_EQ(check(&rx, a, sizeof(a), s2, l2), 0);
	gd_seal_free(&tx);
	gd_seal_free(&rx);
}

TEST(mac_wrong_direction_or_key_fails)
{
	struct gd_auth_key k = test_key(), k2 = test_key();
	uint8_t nc[GD_AUTH_NONCE] = { 1 }, ns[GD_AUTH_NONCE] = { 2 }, hh[32] = { 3 },
	    hh2[32] = { 4 }, a[16] = "sixteen bytes..", s[GD_SEAL_FRAME_MAX];
	struct gd_seal ptx = { 0 }, prx = { 0 }, stx = { 0 }, srx = { 0 };
	size_t l;

	ASSERT_EQ(gd_seal_start_macs(&ptx, &prx, &k, GD_AUTH_PUB, nc, ns, hh), 0);
	ASSERT_EQ(gd_seal_start_macs(&stx, &srx, &k, GD_AUTH_SUB, nc, ns, hh), 0);
	/* the publisher's own seal reflected back to it */
	l = gd_seal_make(&ptx, a, sizeof(a), s);
	ASSERT_EQ(check(&prx, a, sizeof(a), s, l), 0);
	/* the subscriber's seal checks at the publisher */
	l = gd_seal_make(&stx, a, sizeof(a), s);
	ASSERT_EQ(check(&prx, a, sizeof(a), s, l), 1);
	/* another HELLO, another key */
	ASSERT_EQ(gd_seal_start_macs(&stx, &srx, &k, GD_AUTH_SUB, nc, ns, hh2), 0);
	l = gd_seal_make(&stx, a, sizeof(a), s);
	ASSERT_EQ(check(&prx, a, sizeof(a), s, l), 0);
	/* another pre-shared key */
	k2.k[0] ^= 1;
	ASSERT_EQ(gd_seal_start_macs(&stx, &srx, &k2, GD_AUTH_SUB, nc, ns, hh), 0);
	prx.seq = stx.seq = 0;
	ASSERT_EQ(gd_seal_start_macs(&ptx, &prx, &k, GD_AUTH_PUB, nc, ns, hh), 0);
	l = gd_seal_make(&stx, a, sizeof(a), s);
	ASSERT_EQ(check(&prx, a, sizeof(a), s, l), 0);
	/* a CRC seal where a MAC is due */
	l = GD_WIRE_HDR + GD_SEAL_CRC_LEN;
	gd_wire_hdr(s, GD_F_SEAL, 0, GD_SEAL_CRC_LEN);
	ASSERT_EQ(check(&prx, a, sizeof(a), s, l), 0);
	gd_seal_free(&ptx);
	gd_seal_free(&prx);
	gd_seal_free(&stx);
	gd_seal_free(&srx);
}

/* n frames of body size sz each at d: their total size */
static size_t frames(uint8_t *d, size_t n, size_t sz)
{
	size_t i;
	for (i = 0; i < n; i++) {
		gd_wire_hdr(d + i * (GD_WIRE_HDR + sz), GD_F_FLOOR, 0,
		    (uint32_t)sz);
		memset(d + i * (GD_WIRE_HDR + sz) + GD_WIRE_HDR, 0, sz);
	}
	return n * (GD_WIRE_HDR + sz);
}

TEST(cut_at_frame_boundaries)
{
	size_t big = GD_SEAL_SPAN + 100, len, c;
	uint8_t *d = malloc(3 * big);

	ASSERT(d != NULL);
	if (d == NULL)
		return;
	/* small: whole */
	ASSERT_EQ(gd_seal_cut(d, frames(d, 3, 8)), 3 * 16);
	/* 1000-byte frames past the span: whole frames up to it */
	len = frames(d, 600, 1000 - GD_WIRE_HDR);
	c = gd_seal_cut(d, len);
	ASSERT_EQ(c, (GD_SEAL_SPAN / 1000) * 1000);
	/* one frame larger than the span: alone */
	gd_wire_hdr(d, GD_F_BLOCK, 0, (uint32_t)(big - GD_WIRE_HDR));
	gd_wire_hdr(d + big, GD_F_FLOOR, 0, 8);
	ASSERT_EQ(gd_seal_cut(d, big + 16), big);
	free(d);
}

TEST(next_acts_only_after_the_seal)
{
	struct gd_seal tx = { 0 }, rx = { 0 };
	struct gd_rbuf r;
	struct gd_frame f;
	uint8_t w[256], *p;
	size_t n = 0, room;

	pair(GD_SEAL_MAC, &tx, &rx);
	ASSERT_EQ(gd_rbuf_init(&r, 4096, 65536), 0);
	n += gd_wire_u64(w + n, GD_F_FLOOR, 7);
	n += gd_wire_u64(w + n, GD_F_FLOOR, 8);
	n += gd_seal_make(&tx, w, n, w + n);
	/* all but the seal's last byte: nothing to act on */
	ASSERT_EQ(gd_rbuf_space(&r, 1024, &p, &room), GD_DBUF_OK);
	memcpy(p, w, n - 1);
	gd_rbuf_commit(&r, n - 1);
	ASSERT_EQ(gd_seal_next(&rx, &r, 0, &f), 0);
	ASSERT(gd_seal_busy(&rx));
	ASSERT_EQ(gd_seal_next(&rx, &r, 0, &f), 0);
	/* the last byte: both frames, then nothing */
	ASSERT_EQ(gd_rbuf_space(&r, 1024, &p, &room), GD_DBUF_OK);
	p[0] = w[n - 1];
	gd_rbuf_commit(&r, 1);
	ASSERT_EQ(gd_seal_next(&rx, &r, 0, &f), 1);
	ASSERT_U64(gd_get64(f.body), 7);
	ASSERT_EQ(gd_seal_next(&rx, &r, 0, &f), 1);
	ASSERT_U64(gd_get64(f.body), 8);
	ASSERT_EQ(gd_seal_next(&rx, &r, 0, &f), 0);
	ASSERT(!gd_seal_busy(&rx));
	ASSERT_EQ(gd_rbuf_avail(&r), 0);
	/* a frame altered on the way: GD_SEAL_BAD, nothing handed out */
	n = gd_wire_u64(w, GD_F_FLOOR, 9);
	n += gd_seal_make(&tx, w, n, w + n);
	w[GD_WIRE_HDR] ^= 1;
	ASSERT_EQ(gd_rbuf_space(&r, 1024, &p, &room), GD_DBUF_OK);
	memcpy(p, w, n);
	gd_rbuf_commit(&r, n);
	ASSERT_EQ(gd_seal_next(&rx, &r, 0, &f), GD_SEAL_BAD);
	gd_rbuf_free(&r);
	gd_seal_free(&tx);
	gd_seal_free(&rx);
}

TEST(next_refuses_a_span_over_its_bound)
{
	struct gd_seal rx = { 0 };
	struct gd_rbuf r;
	struct gd_frame f;
	uint8_t *p;
	size_t room, i, n = GD_SEAL_SPAN / 16 + 1;

	ASSERT_EQ(gd_seal_start(&rx, GD_SEAL_CRC, NULL), 0);
	ASSERT_EQ(gd_rbuf_init(&r, 4096, 2 * GD_SEAL_SPAN), 0);
	ASSERT_EQ(gd_rbuf_space(&r, n * 16, &p, &room), GD_DBUF_OK);
	for (i = 0; i < n; i++)
		gd_wire_u64(p + 16 * i, GD_F_FLOOR, i);
	gd_rbuf_commit(&r, n * 16);
	ASSERT_EQ(gd_seal_next(&rx, &r, 0, &f), -1);
	ASSERT_EQ(rx.bad_at, GD_SEAL_SPAN);
	gd_rbuf_free(&r);
	gd_seal_free(&rx);
}

TEST(next_with_seals_off_reads_frames_as_they_come)
{
	struct gd_seal rx = { 0 };
	struct gd_rbuf r;
	struct gd_frame f;
	uint8_t *p;
	size_t room;

	ASSERT_EQ(gd_rbuf_init(&r, 4096, 65536), 0);
	ASSERT_EQ(gd_rbuf_space(&r, 64, &p, &room), GD_DBUF_OK);
	gd_rbuf_commit(&r, gd_wire_u64(p, GD_F_FLOOR, 3));
	ASSERT_EQ(gd_seal_next(&rx, &r, 0, &f), 1);
	ASSERT_U64(gd_get64(f.body), 3);
	ASSERT_EQ(gd_seal_next(&rx, &r, 0, &f), 0);
	gd_rbuf_free(&r);
}

/* A span in two parts (a large block's head, then its payload where it
 * was read) seals as the same bytes in one piece, in both modes, with the
 * number counted once. */
TEST(two_parts_seal_as_one)
{
	struct gd_seal a = { 0 }, b = { 0 };
	uint8_t key[GD_SEAL_KEY] = { 7 }, span[1000], d1[GD_SEAL_FRAME_MAX],
	    d2[GD_SEAL_FRAME_MAX];
	size_t i, n1, n2;
	int mode;

	for (i = 0; i < sizeof(span); i++)
		span[i] = (uint8_t)(i * 31 + 5);
	for (mode = GD_SEAL_CRC; mode <= GD_SEAL_MAC; mode++) {
		ASSERT_EQ(gd_seal_start(&a, mode, key), 0);
		ASSERT_EQ(gd_seal_start(&b, mode, key), 0);
		a.seq = b.seq = 9;
		n1 = gd_seal_make(&a, span, sizeof(span), d1);
		n2 = gd_seal_make2(&b, span, 37, span + 37, sizeof(span) - 37,
		    d2);
		ASSERT(n1 > 0);
		ASSERT_EQ(n1, n2);
		ASSERT_EQ(memcmp(d1, d2, n1), 0);
		ASSERT_U64(b.seq, 10);
		/* another split, another number: another seal */
		n2 = gd_seal_make2(&b, span, sizeof(span) - 1,
		    span + sizeof(span) - 1, 1, d2);
		ASSERT(memcmp(d1, d2, n1) != 0);
		gd_seal_free(&a);
		gd_seal_free(&b);
	}
}

int main(void)
{
	RUN(gmac_known_answers);
	RUN(crc_known_answer);
	RUN(mac_good_flipped_replayed_reordered);
	RUN(crc_good_flipped_replayed_reordered);
	RUN(mac_dropped_span_fails_the_next);
	RUN(mac_wrong_direction_or_key_fails);
	RUN(cut_at_frame_boundaries);
	RUN(next_acts_only_after_the_seal);
	RUN(next_refuses_a_span_over_its_bound);
	RUN(next_with_seals_off_reads_frames_as_they_come);
	RUN(two_parts_seal_as_one);
	return UNIT_DONE();
}
