/* Unit tests of lib/wire.c: frame encoders and decoders round trip, the
 * frame splitter (gd_wire_next) asks for more bytes at every truncation
 * point and refuses malformed headers, and the receive buffer grows and
 * compacts. Prefixes are copied into exact-size heap buffers so the
 * sanitizer build catches any read past the bytes given. */
#include "wire.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXB 1048576u

static uint8_t buf[GD_WIRE_HDR + GD_CTRL_MAX + 64];

/* gd_wire_next on a private copy of the first n bytes of p */
static int next_copy(const uint8_t *p, size_t n, uint32_t max_block,
    struct gd_frame *f, size_t *used)
{
	uint8_t *c = malloc(n ? n : 1);
	int rc;
	if (n)
		memcpy(c, p, n);
	rc = gd_wire_next(c, n, max_block, f, used);
	free(c);
	return rc;
}

/* every strict prefix of a frame needs more bytes; the whole is 1 */
static int all_prefixes_need_more(const uint8_t *p, size_t n, uint32_t max_block)
{
	struct gd_frame f;
	size_t k, used;
	for (k = 0; k < n; k++)
		if (next_copy(p, k, max_block, &f, &used) != 0) {
			printf("  prefix %zu of %zu did not ask for more\n", k, n);
			return 0;
		}
	return 1;
}

TEST(header_layout)
{
	uint8_t h[8];
	gd_wire_hdr(h, GD_F_ACK, 0x5a, 0x01020304);
	ASSERT_EQ(h[0], 0x04);
	ASSERT_EQ(h[1], 0x03);
	ASSERT_EQ(h[2], 0x02);
	ASSERT_EQ(h[3], 0x01);
	ASSERT_EQ(h[4], GD_F_ACK);
	ASSERT_EQ(h[5], 0x5a);
	ASSERT_EQ(h[6], 0);
	ASSERT_EQ(h[7], 0);
	gd_put64(h, 0x0807060504030201ull);
	ASSERT_EQ(h[0], 1);
	ASSERT_EQ(h[7], 8);
	ASSERT_U64(gd_get64(h), 0x0807060504030201ull);
	ASSERT_U64(gd_get32(h + 4), 0x08070605u);
}

TEST(block_round_trip)
{
	static const char payload[] = "hello, world\n";
	struct gd_block b = { 0x0102030405060708ull, UINT64_MAX,
		1700000000123456789ull, GD_FL_RESENT | GD_FL_SNAPSHOT,
		(uint32_t)strlen(payload), (const uint8_t *)payload };
	struct gd_block o;
	struct gd_frame f;
	size_t n, used = 0;

	n = gd_wire_block(buf, &b);
	ASSERT_EQ(n, GD_BLOCK_HDR + strlen(payload));
	/* exact bytes of the header and the id */
	ASSERT_EQ(gd_get32(buf), 24 + strlen(payload));
	ASSERT_EQ(buf[4], GD_F_BLOCK);
	ASSERT_EQ(buf[5], GD_FL_RESENT | GD_FL_SNAPSHOT);
	ASSERT_EQ(buf[8], 0x08);
	ASSERT_EQ(buf[15], 0x01);
	ASSERT_EQ(next_copy(buf, n, MAXB, &f, &used), 1);
	ASSERT_EQ(gd_wire_next(buf, n, MAXB, &f, &used), 1);
	ASSERT_EQ(used, n);
	ASSERT_EQ(f.type, GD_F_BLOCK);
	ASSERT_EQ(f.len, 24 + strlen(payload));
	ASSERT(f.body == buf + GD_WIRE_HDR);
	ASSERT_EQ(gd_wire_get_block(&f, &o), 0);
	ASSERT_U64(o.id, b.id);
	ASSERT_U64(o.seq, b.seq);
	ASSERT_U64(o.time_ns, b.time_ns);
	ASSERT_EQ(o.flags, GD_FL_RESENT | GD_FL_SNAPSHOT);
	ASSERT_EQ(o.len, strlen(payload));
	ASSERT(memcmp(o.data, payload, o.len) == 0);
	ASSERT(all_prefixes_need_more(buf, n, MAXB));
}

TEST(block_empty_payload_and_flags)
{
	static const uint8_t flags[] = { 0, GD_FL_RESENT, GD_FL_SNAPSHOT,
		GD_FL_RESENT | GD_FL_SNAPSHOT };
	size_t i;

	for (i = 0; i < sizeof(flags); i++) {
		struct gd_block b = { i + 1, 0, 0, flags[i], 0, NULL }, o;
		struct gd_frame f;
		size_t n, used;

		memset(&o, 0xaa, sizeof(o));
		n = gd_wire_block(buf, &b);
		ASSERT_EQ(n, GD_BLOCK_HDR);
		ASSERT_EQ(gd_wire_next(buf, n, MAXB, &f, &used), 1);
		ASSERT_EQ(used, GD_BLOCK_HDR);
		ASSERT_EQ(gd_wire_get_block(&f, &o), 0);
		ASSERT_U64(o.id, i + 1);
		ASSERT_U64(o.seq, 0);
		ASSERT_U64(o.time_ns, 0);
		ASSERT_EQ(o.flags, flags[i]);
		ASSERT_EQ(o.len, 0);
		ASSERT(all_prefixes_need_more(buf, n, MAXB));
	}
	/* max_block 0 still allows an empty block */
	{
		struct gd_block b = { 1, 2, 3, 0, 0, NULL };
		struct gd_frame f;
		size_t used;
		size_t n = gd_wire_block(buf, &b);
		ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	}
}

TEST(block_payload_at_max)
{
	uint32_t max = 1000;
	uint8_t *big = malloc(GD_BLOCK_HDR + max + 1), *data = malloc(max + 1);
	struct gd_block b = { 7, 8, 9, 0, max, data }, o;
	struct gd_frame f;
	size_t n, used;
	uint32_t i;

	for (i = 0; i <= max; i++)
		data[i] = (uint8_t)(i * 31);
	n = gd_wire_block(big, &b);
	ASSERT_EQ(n, GD_BLOCK_HDR + max);
	ASSERT_EQ(next_copy(big, n, max, &f, &used), 1);
	ASSERT_EQ(gd_wire_next(big, n, max, &f, &used), 1);
	ASSERT_EQ(gd_wire_get_block(&f, &o), 0);
	ASSERT_EQ(o.len, max);
	ASSERT(memcmp(o.data, data, max) == 0);
	/* one byte more than max_block: refused from the header alone */
	b.len = max + 1;
	n = gd_wire_block(big, &b);
	ASSERT_EQ(gd_wire_next(big, n, max, &f, &used), -1);
	ASSERT_EQ(next_copy(big, GD_WIRE_HDR, max, &f, &used), -1);
	free(big);
	free(data);
}

TEST(hello_round_trip)
{
	struct gd_hello h, o;
	struct gd_frame f;
	size_t n, used, i;

	memset(&h, 0, sizeof(h));
	h.version = GD_WIRE_VERSION;
	h.gd = 1;
	h.flags = GD_HF_AUTH;
	for (i = 0; i < GD_AUTH_NONCE; i++)
		h.nonce[i] = (uint8_t)(0xa0 + i);
	h.run = 0x0102030405060708ull;
	strcpy(h.name, "sub-a");
	strcpy(h.qos, "reliability=ordered\nretryCount=2");
	n = gd_wire_hello(buf, &h);
	ASSERT_EQ(n, GD_WIRE_HDR + GD_HELLO_NAME_AT + 5 + 32);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(used, n);
	ASSERT_EQ(f.type, GD_F_HELLO);
	memset(&o, 0x55, sizeof(o));
	ASSERT_EQ(gd_wire_get_hello(&f, &o), 0);
	ASSERT_EQ(o.version, GD_WIRE_VERSION);
	ASSERT_EQ(o.gd, 1);
	ASSERT_EQ(o.want_data, 0);
	ASSERT_EQ(o.flags, GD_HF_AUTH);
	ASSERT(memcmp(o.nonce, h.nonce, GD_AUTH_NONCE) == 0);
	ASSERT_U64(o.run, 0x0102030405060708ull);
	ASSERT_STR(o.name, "sub-a");
	ASSERT_STR(o.qos, "reliability=ordered\nretryCount=2");
	ASSERT(all_prefixes_need_more(buf, n, 0));

	/* empty name, no QoS */
	h.gd = 0;
	h.want_data = 1;
	h.flags = 0;
	h.name[0] = '\0';
	h.qos[0] = '\0';
	n = gd_wire_hello(buf, &h);
	ASSERT_EQ(n, GD_WIRE_HDR + GD_HELLO_NAME_AT);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(gd_wire_get_hello(&f, &o), 0);
	ASSERT_EQ(o.gd, 0);
	ASSERT_EQ(o.want_data, 1);
	ASSERT_EQ(o.flags, 0);
	ASSERT_STR(o.name, "");
	ASSERT_STR(o.qos, "");

	/* another version: only the version is read, to be refused by name */
	h.version = 0x1234;
	n = gd_wire_hello(buf, &h);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(gd_wire_get_hello(&f, &o), 0);
	ASSERT_EQ(o.version, 0x1234);
	ASSERT_EQ(o.want_data, 0);
	h.version = GD_WIRE_VERSION;

	/* longest name: 255 bytes */
	h.version = GD_WIRE_VERSION;
	memset(h.name, 'n', sizeof(h.name));
	h.name[255] = '\0';
	n = gd_wire_hello(buf, &h);
	ASSERT_EQ(n, GD_WIRE_HDR + GD_HELLO_NAME_AT + 255);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(gd_wire_get_hello(&f, &o), 0);
	ASSERT_EQ(strlen(o.name), 255);
	ASSERT_STR(o.name, h.name);
}

TEST(hello_decoder_bounds)
{
	uint8_t body[1200];
	struct gd_frame f = { GD_F_HELLO, 0, 0, body };
	struct gd_hello o;

	memset(body, 0, sizeof(body));
	f.len = 1;
	ASSERT_EQ(gd_wire_get_hello(&f, &o), -1);
	f.type = GD_F_WELCOME;
	f.len = 20;
	ASSERT_EQ(gd_wire_get_hello(&f, &o), -1);
	/* version 2's hello (4 bytes and the name) reads as version 2 */
	f.type = GD_F_HELLO;
	body[0] = 2;
	f.len = 4;
	ASSERT_EQ(gd_wire_get_hello(&f, &o), 0);
	ASSERT_EQ(o.version, 2);
	/* a version 3 hello shorter than its fixed part, or reserved bytes
	 * set */
	body[0] = GD_WIRE_VERSION;
	f.len = GD_HELLO_NAME_AT - 1;	/* no name length */
	ASSERT_EQ(gd_wire_get_hello(&f, &o), -1);
	f.len = GD_HELLO_NAME_AT;
	body[6] = 1;
	ASSERT_EQ(gd_wire_get_hello(&f, &o), -1);
	body[6] = 0;
	body[GD_HELLO_NAME_AT - 1] = 10;	/* a name longer than the body */
	f.len = GD_HELLO_NAME_AT + 7;
	ASSERT_EQ(gd_wire_get_hello(&f, &o), -1);
	/* control bytes become '?' */
	body[GD_HELLO_NAME_AT - 1] = 3;
	body[GD_HELLO_NAME_AT] = '\n';
	body[GD_HELLO_NAME_AT + 1] = 0x7f;
	body[GD_HELLO_NAME_AT + 2] = 'x';
	memcpy(body + GD_HELLO_NAME_AT + 3, "a=1\nb\t", 6);
	f.len = GD_HELLO_NAME_AT + 9;
	ASSERT_EQ(gd_wire_get_hello(&f, &o), 0);
	ASSERT_STR(o.name, "??x");
	ASSERT_STR(o.qos, "a=1\nb?");
	/* QoS text over GD_QOS_MAX - 1 bytes */
	memset(body + GD_HELLO_NAME_AT + 3, 'q', GD_QOS_MAX);
	f.len = GD_HELLO_NAME_AT + 3 + GD_QOS_MAX;
	ASSERT_EQ(gd_wire_get_hello(&f, &o), -1);
}

TEST(text_frame)
{
	struct gd_frame f;
	size_t n, used;
	char t[64];

	n = gd_wire_text(buf, GD_F_REFUSE, "bad QoS\x01");
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(f.type, GD_F_REFUSE);
	gd_wire_get_text(&f, t, sizeof(t));
	ASSERT_STR(t, "bad QoS?");
	gd_wire_get_text(&f, t, 4);
	ASSERT_STR(t, "bad");
}

TEST(challenge_and_proof)
{
	uint8_t ns[GD_AUTH_NONCE], mac[GD_AUTH_MAC];
	struct gd_frame f;
	size_t n, used;

	memset(ns, 1, sizeof(ns));
	memset(mac, 2, sizeof(mac));
	n = gd_wire_challenge(buf, ns, mac);
	ASSERT_EQ(n, GD_WIRE_HDR + 64);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(f.type, GD_F_CHALLENGE);
	ASSERT(memcmp(f.body, ns, 32) == 0 && memcmp(f.body + 32, mac, 32) == 0);
	n = gd_wire_proof(buf, mac);
	ASSERT_EQ(n, GD_WIRE_HDR + 32);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(f.type, GD_F_PROOF);
	ASSERT(memcmp(f.body, mac, 32) == 0);
	/* exactly their sizes, refused from the header alone otherwise */
	gd_wire_hdr(buf, GD_F_PROOF, 0, 33);
	ASSERT_EQ(gd_wire_next(buf, GD_WIRE_HDR, 0, &f, &used), -1);
	gd_wire_hdr(buf, GD_F_CHALLENGE, 0, 63);
	ASSERT_EQ(gd_wire_next(buf, GD_WIRE_HDR, 0, &f, &used), -1);
}

TEST(welcome_round_trip)
{
	struct gd_welcome w, o;
	struct gd_frame f;
	size_t n, used;

	memset(&w, 0, sizeof(w));
	w.version = GD_WIRE_VERSION;
	w.ack_status = GD_ACK_FULL;
	w.num_subs = 64;
	w.max_block = 0xfffffff0u;
	w.timeout_ms = 10000;
	w.epoch = 0x1122334455667788ull;
	strcpy(w.origin, "[::1]:7001");
	n = gd_wire_welcome(buf, &w);
	ASSERT_EQ(n, GD_WIRE_HDR + 24 + 10);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(used, n);
	ASSERT_EQ(f.type, GD_F_WELCOME);
	memset(&o, 0x55, sizeof(o));
	ASSERT_EQ(gd_wire_get_welcome(&f, &o), 0);
	ASSERT_EQ(o.version, GD_WIRE_VERSION);
	ASSERT_EQ(o.ack_status, GD_ACK_FULL);
	ASSERT_EQ(o.num_subs, 64);
	ASSERT_U64(o.max_block, 0xfffffff0u);
	ASSERT_EQ(o.timeout_ms, 10000);
	ASSERT_U64(o.epoch, 0x1122334455667788ull);
	ASSERT_STR(o.origin, "[::1]:7001");
	ASSERT(all_prefixes_need_more(buf, n, 0));

	/* longest origin: 299 bytes */
	memset(w.origin, 'o', sizeof(w.origin));
	w.origin[299] = '\0';
	n = gd_wire_welcome(buf, &w);
	ASSERT_EQ(n, GD_WIRE_HDR + 24 + 299);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(gd_wire_get_welcome(&f, &o), 0);
	ASSERT_STR(o.origin, w.origin);

	/* too short, wrong type */
	f.len = 23;
	ASSERT_EQ(gd_wire_get_welcome(&f, &o), -1);
	f.len = 24;
	f.type = GD_F_HELLO;
	ASSERT_EQ(gd_wire_get_welcome(&f, &o), -1);
}

TEST(ack_status_strings)
{
	ASSERT_STR(gd_ack_status_str(GD_ACK_OK), "accepted");
	ASSERT_STR(gd_ack_status_str(GD_ACK_NONE), "not requested");
	ASSERT(strstr(gd_ack_status_str(GD_ACK_FULL), "numSubs") != NULL);
	ASSERT(strstr(gd_ack_status_str(GD_ACK_NAME), "name") != NULL);
	ASSERT(strstr(gd_ack_status_str(GD_ACK_OFF), "numSubs=0") != NULL);
	ASSERT_STR(gd_ack_status_str(99), "refused");
}

TEST(u64_and_empty_frames)
{
	struct gd_frame f;
	size_t n, used;

	n = gd_wire_u64(buf, GD_F_FLOOR, 0xdeadbeefcafef00dull);
	ASSERT_EQ(n, GD_WIRE_HDR + 8);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(used, n);
	ASSERT_EQ(f.type, GD_F_FLOOR);
	ASSERT_EQ(f.flags, 0);
	ASSERT_EQ(f.len, 8);
	ASSERT_U64(gd_get64(f.body), 0xdeadbeefcafef00dull);
	ASSERT(all_prefixes_need_more(buf, n, 0));

	/* the first stage's consumption report: one u64 */
	n = gd_wire_u64(buf, GD_F_CONSUMED, 77);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(f.type, GD_F_CONSUMED);
	ASSERT_U64(gd_get64(f.body), 77);

	/* an ack names (id, seq): one u64 alone is malformed */
	n = gd_wire_u64(buf, GD_F_ACK, 42);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), -1);

	n = gd_wire_empty(buf, GD_F_END);
	ASSERT_EQ(n, GD_WIRE_HDR);
	ASSERT_EQ(gd_wire_next(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(used, GD_WIRE_HDR);
	ASSERT_EQ(f.type, GD_F_END);
	ASSERT_EQ(f.len, 0);
	ASSERT(all_prefixes_need_more(buf, n, 0));

	n = gd_wire_empty(buf, GD_F_BYE);
	ASSERT_EQ(next_copy(buf, n, 0, &f, &used), 1);
	ASSERT_EQ(f.type, GD_F_BYE);
}

TEST(ack_frame_many_ids)
{
	uint8_t a[GD_WIRE_HDR + GD_ACK_SIZE * 5];
	struct gd_frame f;
	size_t used;
	unsigned i;

	gd_wire_hdr(a, GD_F_ACK, 0, GD_ACK_SIZE * 5);
	for (i = 0; i < 5; i++) {
		gd_put64(a + GD_WIRE_HDR + GD_ACK_SIZE * i, 1000 + i);
		gd_put64(a + GD_WIRE_HDR + GD_ACK_SIZE * i + 8, 7 + i);
	}
	ASSERT_EQ(next_copy(a, sizeof(a), 0, &f, &used), 1);
	ASSERT_EQ(gd_wire_next(a, sizeof(a), 0, &f, &used), 1);
	ASSERT_EQ(f.len, GD_ACK_SIZE * 5);
	for (i = 0; i < 5; i++) {
		uint64_t id, seq;
		gd_wire_ack_at(f.body, i, &id, &seq);
		ASSERT_U64(id, 1000 + i);
		ASSERT_U64(seq, 7 + i);
	}
	ASSERT(all_prefixes_need_more(a, sizeof(a), 0));
	/* an empty ack is well-formed */
	gd_wire_hdr(a, GD_F_ACK, 0, 0);
	ASSERT_EQ(next_copy(a, GD_WIRE_HDR, 0, &f, &used), 1);
	ASSERT_EQ(f.len, 0);
}

/* header only: what gd_wire_next says about a frame of this shape */
static int hdr_verdict(uint8_t type, uint32_t len, uint32_t max_block)
{
	uint8_t h[GD_WIRE_HDR];
	struct gd_frame f;
	size_t used;
	gd_wire_hdr(h, type, 0, len);
	return next_copy(h, sizeof(h), max_block, &f, &used);
}

TEST(malformed_headers)
{
	uint8_t h[GD_WIRE_HDR];
	struct gd_frame f;
	size_t used;
	unsigned t;

	/* unknown types, even with an empty body */
	ASSERT_EQ(hdr_verdict(0, 0, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_MAX + 1, 0, MAXB), -1);
	ASSERT_EQ(hdr_verdict(0xff, 8, MAXB), -1);
	for (t = GD_F_MAX + 1; t < 256; t++)
		if (t != GD_F_PREACK && hdr_verdict((uint8_t)t, 0, MAXB) != -1)
			FAILF("type %u accepted", t);
	/* every known type with an empty body is complete (blocks need 24) */
	for (t = 1; t <= GD_F_MAX; t++)
		ASSERT_EQ(hdr_verdict((uint8_t)t, 0, MAXB), t == GD_F_BLOCK ||
		    t == GD_F_CHALLENGE || t == GD_F_PROOF ||
		    t == GD_F_CONSUMED || t == GD_F_SEAL ? -1 : 1);
	/* a seal is a CRC32C (4 bytes) or a MAC (16) */
	ASSERT_EQ(hdr_verdict(GD_F_SEAL, 4, MAXB), 0);
	ASSERT_EQ(hdr_verdict(GD_F_SEAL, 16, MAXB), 0);
	ASSERT_EQ(hdr_verdict(GD_F_SEAL, 8, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_SEAL, 32, MAXB), -1);
	/* a consumption report is one u64 */
	ASSERT_EQ(hdr_verdict(GD_F_CONSUMED, 8, MAXB), 0);
	ASSERT_EQ(hdr_verdict(GD_F_CONSUMED, 7, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_CONSUMED, 16, MAXB), -1);
	/* reserved bytes */
	gd_wire_hdr(h, GD_F_END, 0, 0);
	h[6] = 1;
	ASSERT_EQ(next_copy(h, sizeof(h), MAXB, &f, &used), -1);
	h[6] = 0;
	h[7] = 0x80;
	ASSERT_EQ(next_copy(h, sizeof(h), MAXB, &f, &used), -1);
	h[7] = 0;
	ASSERT_EQ(next_copy(h, sizeof(h), MAXB, &f, &used), 1);
	/* the flags byte is free on any frame */
	h[5] = 0xff;
	ASSERT_EQ(next_copy(h, sizeof(h), MAXB, &f, &used), 1);
	ASSERT_EQ(f.flags, 0xff);
	/* block body below its 24-byte header, above max_block + 24 */
	ASSERT_EQ(hdr_verdict(GD_F_BLOCK, 23, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_BLOCK, 24, MAXB), 0);	/* body not here yet */
	ASSERT_EQ(hdr_verdict(GD_F_BLOCK, 25, MAXB), 0);
	ASSERT_EQ(hdr_verdict(GD_F_BLOCK, 24 + MAXB, MAXB), 0);
	ASSERT_EQ(hdr_verdict(GD_F_BLOCK, 24 + MAXB + 1, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_BLOCK, 25, 0), -1);
	ASSERT_EQ(hdr_verdict(GD_F_BLOCK, UINT32_MAX, UINT32_MAX - 24), 0);
	ASSERT_EQ(hdr_verdict(GD_F_BLOCK, UINT32_MAX, MAXB), -1);
	/* acks: whole (id, seq) pairs only */
	ASSERT_EQ(hdr_verdict(GD_F_ACK, 4, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_ACK, 8, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_ACK, 12, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_ACK, 24, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_ACK, 16, MAXB), 0);
	ASSERT_EQ(hdr_verdict(GD_F_ACK, 32, MAXB), 0);
	/* acks batch up to GD_CTRL_MAX * 64 bytes (GD_ACKS_PER_FRAME pairs);
	 * other control frames GD_CTRL_MAX */
	ASSERT_EQ(GD_ACKS_PER_FRAME * GD_ACK_SIZE, GD_CTRL_MAX * 64);
	ASSERT_EQ(hdr_verdict(GD_F_ACK, GD_CTRL_MAX * 64, MAXB), 0);
	ASSERT_EQ(hdr_verdict(GD_F_ACK, GD_CTRL_MAX * 64 + 16, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_ACK, UINT32_MAX - 15, MAXB), -1);
	/* pre-acks: whole u64 ids, batched up to GD_CTRL_MAX * 64 bytes */
	ASSERT_EQ(hdr_verdict(GD_F_PREACK, 0, MAXB), 1);
	ASSERT_EQ(hdr_verdict(GD_F_PREACK, 4, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_PREACK, 12, MAXB), -1);
	ASSERT_EQ(hdr_verdict(GD_F_PREACK, 8, MAXB), 0);
	ASSERT_EQ(hdr_verdict(GD_F_PREACK, GD_CTRL_MAX * 64, MAXB), 0);
	ASSERT_EQ(hdr_verdict(GD_F_PREACK, GD_CTRL_MAX * 64 + 8, MAXB), -1);
	for (t = 1; t <= GD_F_MAX; t++) {
		if (t == GD_F_BLOCK || t == GD_F_ACK || t == GD_F_CHALLENGE ||
		    t == GD_F_PROOF || t == GD_F_CONSUMED || t == GD_F_SEAL)
			continue;
		if (hdr_verdict((uint8_t)t, GD_CTRL_MAX, MAXB) != 0)
			FAILF("type %u body GD_CTRL_MAX refused", t);
		if (hdr_verdict((uint8_t)t, GD_CTRL_MAX + 1, MAXB) != -1)
			FAILF("type %u body GD_CTRL_MAX+1 accepted", t);
		if (hdr_verdict((uint8_t)t, UINT32_MAX, MAXB) != -1)
			FAILF("type %u body 4 GiB accepted", t);
	}
	/* a malformed header is refused even before its body arrives, but a
	 * partial header only ever asks for more */
	gd_wire_hdr(h, 0, 0, 0);
	ASSERT_EQ(next_copy(h, 7, MAXB, &f, &used), 0);
	ASSERT_EQ(next_copy(h, 0, MAXB, &f, &used), 0);
}

TEST(ack_at_bound_complete)
{
	size_t n = GD_WIRE_HDR + GD_CTRL_MAX * 64;
	uint8_t *a = calloc(1, n);
	struct gd_frame f;
	size_t used;

	gd_wire_hdr(a, GD_F_ACK, 0, GD_CTRL_MAX * 64);
	gd_put64(a + n - 8, 77);
	ASSERT_EQ(gd_wire_next(a, n - 1, 0, &f, &used), 0);
	ASSERT_EQ(gd_wire_next(a, n, 0, &f, &used), 1);
	ASSERT_EQ(used, n);
	ASSERT_U64(gd_get64(f.body + f.len - 8), 77);
	free(a);
}

TEST(control_frame_at_bound_complete)
{
	size_t n = GD_WIRE_HDR + GD_CTRL_MAX;
	uint8_t *a = calloc(1, n);
	struct gd_frame f;
	struct gd_welcome o;
	size_t used;

	gd_wire_hdr(a, GD_F_WELCOME, 0, GD_CTRL_MAX);
	memset(a + GD_WIRE_HDR + 24, 'z', GD_CTRL_MAX - 24);
	ASSERT_EQ(next_copy(a, n - 1, 0, &f, &used), 0);
	ASSERT_EQ(next_copy(a, n, 0, &f, &used), 1);
	ASSERT_EQ(gd_wire_next(a, n, 0, &f, &used), 1);
	ASSERT_EQ(gd_wire_get_welcome(&f, &o), 0);
	ASSERT_EQ(strlen(o.origin), sizeof(o.origin) - 1);	/* cut, terminated */
	free(a);
}

TEST(back_to_back)
{
	static uint8_t s[8192];
	static const char p1[] = "first", p2[] = "second block";
	struct gd_hello h = { .version = GD_WIRE_VERSION, .gd = 1, .want_data = 1,
	    .name = "me" };
	struct gd_welcome w;
	struct gd_block b1 = { 1, 10, 100, 0, 5, (const uint8_t *)p1 };
	struct gd_block b2 = { 2, 11, 101, GD_FL_RESENT, 12, (const uint8_t *)p2 };
	struct gd_block b3 = { 3, 12, 102, 0, 0, NULL };
	struct gd_block o;
	struct gd_frame f;
	static const uint8_t want[] = { GD_F_HELLO, GD_F_WELCOME, GD_F_BLOCK,
		GD_F_BLOCK, GD_F_BLOCK, GD_F_ACK, GD_F_FLOOR, GD_F_END };
	size_t n = 0, off = 0, used, i = 0, partial;
	int rc;

	memset(&w, 0, sizeof(w));
	w.version = GD_WIRE_VERSION;
	strcpy(w.origin, "o");
	n += gd_wire_hello(s + n, &h);
	n += gd_wire_welcome(s + n, &w);
	n += gd_wire_block(s + n, &b1);
	n += gd_wire_block(s + n, &b2);
	n += gd_wire_block(s + n, &b3);
	gd_wire_hdr(s + n, GD_F_ACK, 0, GD_ACK_SIZE);
	gd_wire_ack_put(s + n + GD_WIRE_HDR, 2, 11);
	n += GD_WIRE_HDR + GD_ACK_SIZE;
	n += gd_wire_u64(s + n, GD_F_FLOOR, 12);
	n += gd_wire_empty(s + n, GD_F_END);
	/* and half of another block */
	partial = n;
	n += gd_wire_block(s + n, &b2);
	n -= 10;

	while ((rc = gd_wire_next(s + off, n - off, MAXB, &f, &used)) == 1) {
		ASSERT(i < sizeof(want));
		if (i >= sizeof(want))
			break;
		ASSERT_EQ(f.type, want[i]);
		ASSERT(f.body == s + off + GD_WIRE_HDR);
		if (f.type == GD_F_BLOCK) {
			ASSERT_EQ(gd_wire_get_block(&f, &o), 0);
			ASSERT_U64(o.id, i - 1);
			ASSERT_U64(o.seq, 9 + (i - 1));
			if (o.id == 2) {
				ASSERT_EQ(o.flags, GD_FL_RESENT);
				ASSERT(memcmp(o.data, p2, 12) == 0);
			}
			if (o.id == 3)
				ASSERT_EQ(o.len, 0);
		}
		off += used;
		i++;
	}
	ASSERT_EQ(rc, 0);
	ASSERT_EQ(i, sizeof(want));
	ASSERT_EQ(off, partial);

	/* a malformed frame in the middle stops the walk with -1 */
	s[partial + 4] = 0;
	ASSERT_EQ(gd_wire_next(s + partial, n - partial, MAXB, &f, &used), -1);
}

TEST(rbuf_space_and_compact)
{
	struct gd_rbuf r;
	uint8_t *p;
	size_t n;
	unsigned i;

	/* 64 bytes at once (one kept for the dbuf's NUL), 1024 at most */
	ASSERT_EQ(gd_rbuf_init(&r, 64, 1024), 0);
	ASSERT_EQ(r.d.alloc, 64);
	ASSERT_EQ(gd_rbuf_avail(&r), 0);

	/* enough room: nothing moves */
	ASSERT_EQ(gd_rbuf_space(&r, 16, &p, &n), 0);
	ASSERT(p == gd_rbuf_end(&r));
	ASSERT_EQ(n, 63);
	for (i = 0; i < 48; i++)
		p[i] = (uint8_t)i;
	gd_rbuf_commit(&r, 48);
	gd_rbuf_skip(&r, 40);		/* 40 bytes parsed, 8 left */
	ASSERT_EQ(gd_rbuf_avail(&r), 8);
	ASSERT_EQ(gd_rbuf_head(&r)[0], 40);
	ASSERT_EQ(gd_rbuf_space(&r, 15, &p, &n), 0);
	ASSERT(p == gd_rbuf_end(&r));	/* 15 free at the end: no compaction */
	ASSERT_EQ(n, 15);
	ASSERT_EQ(r.off, 40);

	/* 32 wanted: compaction alone makes room, no growth */
	ASSERT_EQ(gd_rbuf_space(&r, 32, &p, &n), 0);
	ASSERT_EQ(r.d.alloc, 64);
	ASSERT_EQ(r.off, 0);
	ASSERT_EQ(gd_rbuf_avail(&r), 8);
	ASSERT(p == gd_rbuf_head(&r) + 8);
	ASSERT_EQ(n, 55);
	for (i = 0; i < 8; i++)
		ASSERT_EQ(gd_rbuf_head(&r)[i], 40 + i);

	/* 100 wanted: grows (doubling), keeps the data */
	ASSERT_EQ(gd_rbuf_space(&r, 100, &p, &n), 0);
	ASSERT_EQ(r.d.alloc, 128);
	ASSERT(n >= 100);
	ASSERT(p == gd_rbuf_head(&r) + 8);
	memset(p, 0xee, n);	/* the whole space is writable */
	for (i = 0; i < 8; i++)
		ASSERT_EQ(gd_rbuf_head(&r)[i], 40 + i);
	ASSERT_EQ(gd_rbuf_space(&r, 1000, &p, &n), 0);
	ASSERT_EQ(r.d.alloc, 1024);
	ASSERT_EQ(n, 1015);
	memset(p, 0xdd, n);
	for (i = 0; i < 8; i++)
		ASSERT_EQ(gd_rbuf_head(&r)[i], 40 + i);

	/* compact with everything parsed, and with nothing parsed */
	gd_rbuf_skip(&r, 8);
	gd_rbuf_compact(&r);
	ASSERT_EQ(gd_rbuf_avail(&r), 0);
	ASSERT_EQ(r.off, 0);
	gd_rbuf_commit(&r, 5);
	gd_rbuf_compact(&r);
	ASSERT_EQ(gd_rbuf_avail(&r), 5);
	gd_rbuf_clear(&r);
	ASSERT_EQ(gd_rbuf_avail(&r), 0);

	gd_rbuf_free(&r);
	ASSERT(gd_rbuf_head(&r) == NULL);
	ASSERT_EQ(gd_rbuf_avail(&r), 0);
	/* a freed buffer is usable again, with its cap */
	ASSERT_EQ(gd_rbuf_space(&r, 10, &p, &n), 0);
	ASSERT(n >= 10);
	gd_rbuf_free(&r);
}

/* The cap: a frame and a read fit exactly; one byte more than the cap is
 * refused, what is held kept, and a parse makes room again. */
TEST(rbuf_at_cap)
{
	struct gd_rbuf r;
	uint8_t *p;
	size_t n;

	ASSERT_EQ(gd_rbuf_init(&r, 64, 1024), 0);
	ASSERT_EQ(gd_rbuf_space(&r, 1000, &p, &n), 0);
	memset(p, 'a', 8);
	gd_rbuf_commit(&r, 8);		/* 8 bytes of a frame not yet whole */
	/* 8 held + 1016 asked = 1024: at the cap, allowed */
	ASSERT_EQ(gd_rbuf_space(&r, 1016, &p, &n), GD_DBUF_OK);
	ASSERT_EQ(n, 1016);
	/* 8 + 1017 is one past it */
	p = NULL;
	ASSERT_EQ(gd_rbuf_space(&r, 1017, &p, &n), GD_DBUF_TOOBIG);
	ASSERT(p == NULL);
	ASSERT_STR(gd_dbuf_strerror(GD_DBUF_TOOBIG), "over its size limit");
	ASSERT_EQ(gd_rbuf_avail(&r), 8);
	ASSERT_EQ(gd_rbuf_head(&r)[7], 'a');
	ASSERT_EQ(r.d.alloc, 1025);	/* never more than the cap and its NUL */
	/* once the frame is parsed the whole cap is room again */
	gd_rbuf_skip(&r, 8);
	ASSERT_EQ(gd_rbuf_space(&r, 1024, &p, &n), GD_DBUF_OK);
	ASSERT_EQ(n, 1024);
	ASSERT_EQ(gd_rbuf_space(&r, 1025, &p, &n), GD_DBUF_TOOBIG);
	gd_rbuf_free(&r);
}

/* Frames streamed through an rbuf in uneven chunks, as a connection's
 * read callback does: read into space, walk frames, compact. */
TEST(rbuf_stream)
{
	enum { NB = 3000 };
	uint8_t *stream = malloc((size_t)NB * (GD_BLOCK_HDR + 700));
	uint8_t payload[700];
	size_t slen = 0, pos = 0, used;
	uint32_t seed = 12345;
	uint64_t want = 0;
	struct gd_rbuf r;
	struct gd_frame f;
	struct gd_block b;
	unsigned i;
	int rc = 0;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i ^ 0x5a);
	for (i = 0; i < NB; i++) {
		seed = seed * 1103515245u + 12345u;
		b.id = i;
		b.seq = i;
		b.time_ns = i;
		b.flags = 0;
		b.len = (seed >> 16) % 700;
		b.data = payload;
		slen += gd_wire_block(stream + slen, &b);
	}
	ASSERT_EQ(gd_rbuf_init(&r, 256, GD_BLOCK_HDR + 700 + 1500 + 128), 0);
	while (pos < slen) {
		uint8_t *p;
		size_t n, take;
		ASSERT_EQ(gd_rbuf_space(&r, 128, &p, &n), 0);
		seed = seed * 1103515245u + 12345u;
		take = 1 + (seed >> 16) % 1500;
		if (take > n)
			take = n;
		if (take > slen - pos)
			take = slen - pos;
		memcpy(p, stream + pos, take);
		pos += take;
		gd_rbuf_commit(&r, take);
		while ((rc = gd_wire_next(gd_rbuf_head(&r), gd_rbuf_avail(&r),
		    700, &f, &used)) == 1) {
			gd_rbuf_skip(&r, used);
			if (gd_wire_get_block(&f, &b) != 0 || b.id != want ||
			    memcmp(b.data, payload, b.len) != 0) {
				FAILF("block %" PRIu64 " garbled", want);
				rc = -1;
				break;
			}
			want++;
		}
		if (rc < 0)
			break;
		gd_rbuf_compact(&r);
	}
	ASSERT_EQ(rc, 0);
	ASSERT_U64(want, NB);
	ASSERT_EQ(gd_rbuf_avail(&r), 0);
	ASSERT(r.d.alloc <= 4096);	/* grew only as far as one frame needed */
	gd_rbuf_free(&r);
	free(stream);
}

int main(void)
{
	RUN(header_layout);
	RUN(block_round_trip);
	RUN(block_empty_payload_and_flags);
	RUN(block_payload_at_max);
	RUN(hello_round_trip);
	RUN(hello_decoder_bounds);
	RUN(challenge_and_proof);
	RUN(text_frame);
	RUN(welcome_round_trip);
	RUN(ack_status_strings);
	RUN(u64_and_empty_frames);
	RUN(ack_frame_many_ids);
	RUN(malformed_headers);
	RUN(ack_at_bound_complete);
	RUN(control_frame_at_bound_complete);
	RUN(back_to_back);
	RUN(rbuf_space_and_compact);
	RUN(rbuf_at_cap);
	RUN(rbuf_stream);
	return UNIT_DONE();
}
