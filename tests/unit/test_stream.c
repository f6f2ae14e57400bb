/* Unit tests of lib/stream.c: CRC32C against published vectors and a
 * bitwise reference, the stream header and frame layout byte for byte,
 * round trips, the incremental reader fed whole or a byte at a time, and
 * every corruption it must refuse, with the exact offset and reason.
 * Inputs are copied into exact-size heap buffers so the sanitizer build
 * catches any read past the bytes given. */
#include "stream.h"
#include "wire.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ORIGIN "127.0.0.1:7001"
#define T0 1796006270123456789ull	/* 2026-11-30T02:37:50.123456789Z */

/* bit at a time, the definition itself */
static uint32_t crc_ref(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		c ^= p[i];
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
	}
	return ~c;
}

/* ---- a growable stream under construction ---- */

struct sbuf {
	uint8_t *p;
	size_t n, cap;
};

static uint8_t *sb_room(struct sbuf *s, size_t n)
{
	if (s->n + n > s->cap) {
		size_t cap = s->cap ? s->cap : 256;
		while (cap < s->n + n)
			cap *= 2;
		s->p = realloc(s->p, cap);
		if (s->p == NULL)
			abort();
		s->cap = cap;
	}
	return s->p + s->n;
}

static void sb_free(struct sbuf *s)
{
	free(s->p);
	memset(s, 0, sizeof(*s));
}

static size_t sb_header(struct sbuf *s)
{
	size_t at = s->n;
	s->n += gd_stream_header(sb_room(s, GD_STREAM_HDR));
	return at;
}

static void sb_bytes(struct sbuf *s, const void *p, size_t n)
{
	memcpy(sb_room(s, n), p, n);
	s->n += n;
}

static size_t sb_frame(struct sbuf *s, uint8_t type, uint8_t flags,
    uint64_t id, uint64_t seq, const char *origin, const void *data,
    uint32_t len)
{
	struct gd_sframe f;
	size_t at = s->n;

	memset(&f, 0, sizeof(f));
	f.type = type;
	f.flags = flags;
	f.id = id;
	f.seq = seq;
	f.time_ns = T0 + seq;
	f.epoch = 0x1122334455667788ull;
	f.origin = origin;
	f.origin_len = strlen(origin);
	f.data = data;
	f.len = len;
	s->n += gd_sframe_put(sb_room(s, gd_sframe_size(f.origin_len, len)), &f);
	return at;
}

static size_t sb_block(struct sbuf *s, uint64_t id, const char *payload)
{
	return sb_frame(s, GD_SF_BLOCK, 0, id, id, ORIGIN, payload,
	    (uint32_t)strlen(payload));
}

/* the CRC of the frame at s->p + at, of total size n, made right again
 * after a test changed a field */
static void recrc(struct sbuf *s, size_t at, size_t n)
{
	gd_put32(s->p + at + n - 4, gd_crc32c(0, s->p + at, n - 4));
}

/* ---- reading ---- */

struct rd {
	struct gd_sreader r;
	struct gd_sframe f[64];
	size_t nf, nh;		/* frames, stream headers */
	int rc;			/* the last call's result */
	uint64_t at[64];	/* stream offset of each frame */
};

/* Read all of p[0..n) in one go from a private exact-size copy; stops at
 * the first error or when more is needed. */
static void read_all(struct rd *d, const uint8_t *p, size_t n, int eof,
    uint32_t max_payload)
{
	uint8_t *c = malloc(n ? n : 1);
	size_t off = 0, used;
	struct gd_sframe f;

	memset(d, 0, sizeof(*d));
	gd_sreader_init(&d->r, max_payload);
	if (n)
		memcpy(c, p, n);
	for (;;) {
		uint64_t at = d->r.off;
		d->rc = gd_sreader_next(&d->r, c + off, n - off, eof, &f, &used);
		if (d->rc != 1)
			break;
		off += used;
		if (f.type == GD_SF_HEADER) {
			d->nh++;
			continue;
		}
		if (d->nf < 64) {
			d->at[d->nf] = at;
			/* payload and origin point into c: keep copies' bounds
			 * by checking here, and keep only scalars below */
			d->f[d->nf] = f;
			d->f[d->nf].data = NULL;
			d->f[d->nf].origin = NULL;
		}
		d->nf++;
	}
	free(c);
}

/* read p and expect an error at offset `at` with exactly `why` */
static int fails_with(const uint8_t *p, size_t n, int eof, uint32_t max,
    uint64_t at, const char *why)
{
	struct rd d;
	char want[256];

	read_all(&d, p, n, eof, max);
	snprintf(want, sizeof(want), "corrupt stream at byte offset %" PRIu64
	    ": %s", at, why);
	if (d.rc != -1 || strcmp(d.r.err, want) != 0) {
		printf("  rc %d, err '%s'\n  want -1, '%s'\n", d.rc, d.r.err, want);
		return 0;
	}
	if (d.r.off != at) {
		printf("  reader offset %" PRIu64 " after the error, want %" PRIu64
		    "\n", d.r.off, at);
		return 0;
	}
	return 1;
}

/* ---- CRC32C ---- */

TEST(crc_check_value_and_vectors)
{
	uint8_t b[32];
	int i;

	ASSERT_U64(gd_crc32c(0, "123456789", 9), 0xE3069283u);
	ASSERT_U64(gd_crc32c(0, "", 0), 0);
	memset(b, 0, sizeof(b));	/* RFC 3720 B.4 */
	ASSERT_U64(gd_crc32c(0, b, 32), 0x8A9136AAu);
	memset(b, 0xff, sizeof(b));
	ASSERT_U64(gd_crc32c(0, b, 32), 0x62A8AB43u);
	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	ASSERT_U64(gd_crc32c(0, b, 32), 0x46DD794Eu);
	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	ASSERT_U64(gd_crc32c(0, b, 32), 0x113FDB5Cu);
}

/* every length and alignment against the bitwise reference, so the
 * head, 8-byte body and tail loops all count */
TEST(crc_matches_reference)
{
	uint8_t *b = malloc(1100);
	size_t len, al;
	uint32_t x = 12345;

	for (len = 0; len < 1100; len++) {
		x = x * 1103515245u + 12345u;
		b[len] = (uint8_t)(x >> 16);
	}
	for (al = 0; al < 8; al++)
		for (len = 0; len + al <= 1100; len += len < 80 ? 1 : 37)
			if (gd_crc32c(0, b + al, len) != crc_ref(b + al, len)) {
				FAILF("length %zu at alignment %zu", len, al);
				al = 8;
				break;
			}
	free(b);
}

TEST(crc_of_split_buffers_is_crc_of_whole)
{
	uint8_t b[300];
	size_t i, k;
	uint32_t whole;

	for (i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 7 + 3);
	whole = gd_crc32c(0, b, sizeof(b));
	for (k = 0; k <= sizeof(b); k++)
		if (gd_crc32c(gd_crc32c(0, b, k), b + k, sizeof(b) - k) != whole) {
			FAILF("split at %zu", k);
			break;
		}
	/* three pieces */
	ASSERT_U64(gd_crc32c(gd_crc32c(gd_crc32c(0, b, 5), b + 5, 100),
	    b + 105, 195), whole);
}

/* ---- layout ---- */

TEST(header_bytes)
{
	uint8_t h[GD_STREAM_HDR];
	static const uint8_t want[GD_STREAM_HDR] = {
		0x89, 'G', 'D', 'K', 0x0d, 0x0a, 0x1a, 0x0a,
		0x01, 0x00, 0x10, 0x00, 0xe2, 0xf6, 0xfc, 0x32,
	};

	ASSERT_EQ(gd_stream_header(h), GD_STREAM_HDR);
	ASSERT(memcmp(h, want, sizeof(want)) == 0);
	ASSERT_U64(gd_get32(h + 12), gd_crc32c(0, h, 12));
}

/* the frame that gdkit-stream(5) shows byte by byte (written by
 * tests/cli/mkstream.py too) */
TEST(frame_bytes)
{
	static const uint8_t want[] = {
		'g', 'f', 0x01, 0x00, 0x0e, 0x00, 0x00, 0x00,
		0x05, 0x00, 0x00, 0x00,
		0x01, 0, 0, 0, 0, 0, 0, 0,
		0x01, 0, 0, 0, 0, 0, 0, 0,
		0x15, 0x39, 0x15, 0xe1, 0x2f, 0xb2, 0xec, 0x18,
		0x01, 0, 0, 0, 0, 0, 0, 0,
		'h', 'e', 'l', 'l', 'o',
		'1', '2', '7', '.', '0', '.', '0', '.', '1', ':', '7', '0', '0', '1',
		0xb8, 0x80, 0x7a, 0x85,
	};
	struct gd_sframe f;
	uint8_t out[sizeof(want)];

	memset(&f, 0, sizeof(f));
	f.type = GD_SF_BLOCK;
	f.id = 1;
	f.seq = 1;
	f.time_ns = T0;
	f.epoch = 1;
	f.origin = ORIGIN;
	f.origin_len = strlen(ORIGIN);
	f.data = (const uint8_t *)"hello";
	f.len = 5;
	ASSERT_EQ(gd_sframe_size(f.origin_len, f.len), sizeof(want));
	ASSERT_EQ(gd_sframe_put(out, &f), sizeof(want));
	ASSERT(memcmp(out, want, sizeof(want)) == 0);
}

/* ---- round trips ---- */

static void check_frame(const struct gd_sframe *f, uint8_t type, uint8_t flags,
    uint64_t id, uint64_t seq, const char *origin, const uint8_t *data,
    uint32_t len)
{
	ASSERT_EQ(f->type, type);
	ASSERT_EQ(f->flags, flags);
	ASSERT_U64(f->id, id);
	ASSERT_U64(f->seq, seq);
	ASSERT_U64(f->time_ns, T0 + seq);
	ASSERT_U64(f->epoch, 0x1122334455667788ull);
	ASSERT_EQ(f->origin_len, strlen(origin));
	ASSERT(memcmp(f->origin, origin, f->origin_len) == 0);
	ASSERT_EQ(f->len, len);
	ASSERT(len == 0 || memcmp(f->data, data, len) == 0);
}

/* encode one frame after a header, read it back in place */
static void round_trip(uint8_t type, uint8_t flags, uint64_t id, uint64_t seq,
    const char *origin, const uint8_t *data, uint32_t len)
{
	struct sbuf s = { 0 };
	struct gd_sreader r;
	struct gd_sframe f;
	size_t used, olen;

	sb_header(&s);
	sb_frame(&s, type, flags, id, seq, origin, data, len);
	gd_sreader_init(&r, 0);
	ASSERT_EQ(gd_sreader_next(&r, s.p, s.n, 1, &f, &used), 1);
	ASSERT_EQ(f.type, GD_SF_HEADER);
	ASSERT_EQ(used, GD_STREAM_HDR);
	ASSERT_EQ(gd_sreader_next(&r, s.p + used, s.n - used, 1, &f, &used), 1);
	ASSERT_EQ(used, gd_sframe_size(strlen(origin), len));
	ASSERT_U64(r.off, s.n);
	check_frame(&f, type, flags, id, seq, origin, data, len);
	/* in place: the header right before the payload, the origin after
	 * (what gd_sframe_origin_of relies on) */
	ASSERT(f.data == s.p + GD_STREAM_HDR + GD_SFRAME_HDR);
	ASSERT(f.origin == (const char *)f.data + f.len);
	olen = (size_t)f.data[-GD_SFRAME_HDR + 4] |
	    (size_t)f.data[-GD_SFRAME_HDR + 5] << 8;
	ASSERT_EQ(olen, strlen(origin));
	if (type == GD_SF_BLOCK) {
		int snap = -1;
		const char *o = gd_sframe_origin_of(f.data, f.len, &olen, &snap);
		ASSERT(o == f.origin);
		ASSERT_EQ(olen, strlen(origin));
		ASSERT_EQ(snap, (flags & GD_FL_SNAPSHOT) != 0);
	}
	ASSERT_EQ(gd_sreader_next(&r, s.p + s.n, 0, 1, &f, &used), 0);
	ASSERT_U64(r.frames, 1);
	ASSERT_U64(r.blocks, type == GD_SF_BLOCK);
	sb_free(&s);
}

TEST(round_trip_every_byte)
{
	uint8_t b[256];
	int i;

	for (i = 0; i < 256; i++)
		b[i] = (uint8_t)i;
	round_trip(GD_SF_BLOCK, GD_FL_RESENT | GD_FL_SNAPSHOT, UINT64_MAX,
	    UINT64_MAX - 1, ORIGIN, b, 256);
	round_trip(GD_SF_BLOCK, GD_FL_RESENT, 0, 0, "[::1]:7001", b, 1);
	round_trip(GD_SF_BLOCK, GD_FL_SNAPSHOT, 42, 7, "@cluster1", b + 10, 100);
}

TEST(round_trip_empty_payload)
{
	round_trip(GD_SF_BLOCK, 0, 5, 5, ORIGIN, NULL, 0);
}

TEST(round_trip_one_mib)
{
	uint32_t n = 1u << 20, i;
	uint8_t *b = malloc(n);

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(i ^ (i >> 8) ^ (i >> 16));
	round_trip(GD_SF_BLOCK, 0, 9, 9, ORIGIN, b, n);
	free(b);
}

TEST(round_trip_floor_and_end)
{
	round_trip(GD_SF_FLOOR, 0, 0, 1000, ORIGIN, NULL, 0);
	round_trip(GD_SF_END, 0, 0, 1001, "@c", NULL, 0);
}

TEST(origin_lengths_at_the_limits)
{
	char o[GD_STREAM_ORIGIN_MAX + 1];

	memset(o, 'h', GD_STREAM_ORIGIN_MAX);
	o[GD_STREAM_ORIGIN_MAX] = '\0';
	round_trip(GD_SF_BLOCK, 0, 1, 1, o, (const uint8_t *)"x", 1);
	round_trip(GD_SF_BLOCK, 0, 1, 1, "h", (const uint8_t *)"x", 1);
	memset(o, 0x21, 10);	/* '!' to '~' are all allowed but '/' */
	o[10] = '\0';
	round_trip(GD_SF_BLOCK, 0, 1, 1, o, NULL, 0);
	round_trip(GD_SF_BLOCK, 0, 1, 1, "~", NULL, 0);
}

/* ---- the reader ---- */

/* a stream of every kind of frame: header, 3 blocks, floor, end */
static void sample(struct sbuf *s)
{
	sb_header(s);
	sb_block(s, 1, "one");
	sb_frame(s, GD_SF_BLOCK, GD_FL_RESENT, 2, 2, ORIGIN, "", 0);
	sb_frame(s, GD_SF_BLOCK, GD_FL_SNAPSHOT, 3, 3, "@c", "t\n\0x", 4);
	sb_frame(s, GD_SF_FLOOR, 0, 0, 4, ORIGIN, NULL, 0);
	sb_frame(s, GD_SF_END, 0, 0, 4, ORIGIN, NULL, 0);
}

TEST(reader_whole_stream)
{
	struct sbuf s = { 0 };
	struct rd d;

	sample(&s);
	read_all(&d, s.p, s.n, 1, 0);
	ASSERT_EQ(d.rc, 0);
	ASSERT_EQ(d.nh, 1);
	ASSERT_EQ(d.nf, 5);
	ASSERT_U64(d.r.off, s.n);
	ASSERT_U64(d.r.frames, 5);
	ASSERT_U64(d.r.blocks, 3);
	ASSERT_EQ(d.f[0].type, GD_SF_BLOCK);
	ASSERT_EQ(d.f[1].flags, GD_FL_RESENT);
	ASSERT_EQ(d.f[2].flags, GD_FL_SNAPSHOT);
	ASSERT_EQ(d.f[2].origin_len, 2);
	ASSERT_EQ(d.f[3].type, GD_SF_FLOOR);
	ASSERT_U64(d.f[3].seq, 4);
	ASSERT_EQ(d.f[4].type, GD_SF_END);
	ASSERT_U64(d.at[0], 16);
	ASSERT_U64(d.at[1], 16 + 48 + 14 + 3);
	/* without eof, the same frames and then "need more" */
	read_all(&d, s.p, s.n, 0, 0);
	ASSERT_EQ(d.rc, 0);
	ASSERT_EQ(d.nf, 5);
	sb_free(&s);
}

/* Feed one more byte each time the reader asks for more: the same frames
 * at the same offsets, and "need more" at every cut inside a frame. */
TEST(reader_byte_by_byte)
{
	struct sbuf s = { 0 };
	struct rd whole;
	struct gd_sreader r;
	struct gd_sframe f;
	size_t start = 0, have = 0, used, nf = 0, calls = 0;
	int rc;

	sample(&s);
	read_all(&whole, s.p, s.n, 1, 0);
	gd_sreader_init(&r, 0);
	while (have <= s.n) {
		uint8_t *c = malloc(have - start + 1);
		uint64_t at = r.off;

		memcpy(c, s.p + start, have - start);
		rc = gd_sreader_next(&r, c, have - start, 0, &f, &used);
		calls++;
		if (rc == 1 && f.type != GD_SF_HEADER) {
			ASSERT(nf < whole.nf);
			ASSERT_U64(at, whole.at[nf]);
			ASSERT_EQ(f.type, whole.f[nf].type);
			ASSERT_EQ(f.flags, whole.f[nf].flags);
			ASSERT_U64(f.id, whole.f[nf].id);
			ASSERT_U64(f.seq, whole.f[nf].seq);
			ASSERT_U64(f.time_ns, whole.f[nf].time_ns);
			ASSERT_U64(f.epoch, whole.f[nf].epoch);
			ASSERT_EQ(f.len, whole.f[nf].len);
			ASSERT_EQ(f.origin_len, whole.f[nf].origin_len);
			ASSERT(memcmp(f.origin, s.p + at + GD_SFRAME_HDR + f.len,
			    f.origin_len) == 0);
			ASSERT(f.len == 0 || memcmp(f.data, s.p + at +
			    GD_SFRAME_HDR, f.len) == 0);
			nf++;
		}
		free(c);
		if (rc == 1)
			start += used;
		else if (rc == 0)
			have++;
		else {
			FAILF("error at %zu: %s", have, r.err);
			break;
		}
	}
	ASSERT_EQ(nf, 5);
	ASSERT_EQ(start, s.n);
	ASSERT(calls > s.n);
	sb_free(&s);
}

TEST(reader_concatenated_streams)
{
	struct sbuf s = { 0 };
	struct rd d;
	size_t second;

	sb_header(&s);
	sb_block(&s, 1, "a");
	sb_frame(&s, GD_SF_END, 0, 0, 1, ORIGIN, NULL, 0);
	second = sb_header(&s);		/* cat a b */
	sb_frame(&s, GD_SF_BLOCK, 0, 1, 1, "127.0.0.1:7002", "b", 1);
	sb_header(&s);			/* an empty stream in between */
	sb_header(&s);
	sb_block(&s, 2, "c");
	read_all(&d, s.p, s.n, 1, 0);
	ASSERT_EQ(d.rc, 0);
	ASSERT_EQ(d.nh, 4);
	ASSERT_EQ(d.nf, 4);
	ASSERT_U64(d.at[2], second + GD_STREAM_HDR);
	ASSERT_EQ(d.f[2].origin_len, 14);
	ASSERT_U64(d.r.off, s.n);
	sb_free(&s);
}

TEST(reader_empty_input_and_header_only)
{
	struct sbuf s = { 0 };
	struct rd d;

	read_all(&d, NULL, 0, 1, 0);
	ASSERT_EQ(d.rc, 0);
	ASSERT_EQ(d.nf, 0);
	sb_header(&s);
	read_all(&d, s.p, s.n, 1, 0);
	ASSERT_EQ(d.rc, 0);
	ASSERT_EQ(d.nh, 1);
	ASSERT_EQ(d.nf, 0);
	sb_free(&s);
}

/* ---- corruption ---- */

#define FRAME1 (16 + 48 + 14 + 3)	/* offset after header + block "one" */

TEST(err_no_header)
{
	struct sbuf s = { 0 };

	sb_block(&s, 1, "one");		/* starts mid-stream */
	ASSERT(fails_with(s.p, s.n, 1, 0, 0, "no stream header: the input is "
	    "not a gdkit stream, or starts in the middle of one"));
	ASSERT(fails_with(s.p, 1, 0, 0, 0, "no stream header: the input is "
	    "not a gdkit stream, or starts in the middle of one"));
	ASSERT(fails_with((const uint8_t *)"hello\n", 6, 1, 0, 0,
	    "no stream header: the input is not a gdkit stream, or starts in "
	    "the middle of one"));
	sb_free(&s);
}

TEST(err_garbage_between_frames)
{
	struct sbuf s = { 0 };

	sb_header(&s);
	sb_block(&s, 1, "one");
	sb_bytes(&s, "xy", 2);
	sb_block(&s, 2, "two");
	ASSERT(fails_with(s.p, s.n, 1, 0, FRAME1, "garbage where a frame "
	    "should start (bytes 78 79)"));
	/* 'g' then not 'f' */
	s.p[FRAME1] = 'g';
	ASSERT(fails_with(s.p, s.n, 1, 0, FRAME1, "garbage where a frame "
	    "should start (bytes 67 79)"));
	/* one garbage byte, as soon as it is there */
	s.p[FRAME1] = 'z';
	ASSERT(fails_with(s.p, FRAME1 + 1, 0, 0, FRAME1, "garbage where a "
	    "frame should start (byte 7a)"));
	sb_free(&s);
}

TEST(err_truncated)
{
	struct sbuf s = { 0 };
	struct rd d;
	size_t k;

	sb_header(&s);
	sb_block(&s, 1, "one");
	sb_block(&s, 2, "twotwo");		/* 68 bytes at FRAME1 */
	ASSERT(fails_with(s.p, s.n - 1, 1, 0, FRAME1,
	    "truncated frame: 67 of 68 bytes"));
	ASSERT(fails_with(s.p, FRAME1 + 44, 1, 0, FRAME1,
	    "truncated frame: 44 of 68 bytes"));
	ASSERT(fails_with(s.p, FRAME1 + 43, 1, 0, FRAME1,
	    "truncated frame header: 43 of 44 bytes"));
	ASSERT(fails_with(s.p, FRAME1 + 1, 1, 0, FRAME1,
	    "truncated frame header: 1 of 44 bytes"));
	ASSERT(fails_with(s.p, 10, 1, 0, 0,
	    "truncated stream header: 10 of 16 bytes"));
	ASSERT(fails_with(s.p, 1, 1, 0, 0,
	    "truncated stream header: 1 of 16 bytes"));
	/* without eof every cut is "need more", after the first frame */
	for (k = 0; k < s.n; k++) {
		read_all(&d, s.p, k, 0, 0);
		if (d.rc != 0 || d.nf != (k >= FRAME1) + 0u) {
			FAILF("cut at %zu: rc %d, %zu frames (%s)", k, d.rc,
			    d.nf, d.r.err);
			break;
		}
	}
	/* a second header cut short at eof */
	gd_stream_header(sb_room(&s, 16));
	s.n += 9;
	ASSERT(fails_with(s.p, s.n, 1, 0, s.n - 9,
	    "truncated stream header: 9 of 16 bytes"));
	sb_free(&s);
}

/* one byte flipped anywhere in a frame: the CRC catches it */
TEST(err_crc_mismatch)
{
	struct sbuf s = { 0 };
	size_t at, n, i;
	const char *why = "frame CRC32C mismatch (header or payload damaged)";

	sb_header(&s);
	sb_block(&s, 1, "one");
	at = sb_frame(&s, GD_SF_BLOCK, 1, 2, 2, ORIGIN, "payload", 7);
	n = s.n - at;
	/* id, seq, time, epoch, payload, origin, CRC; not the fields that
	 * change the frame's length or kind */
	for (i = 12; i < n; i++) {
		s.p[at + i] ^= 0x01;
		if (!fails_with(s.p, s.n, 1, 0, at, why)) {
			FAILF("byte %zu of the frame", i);
			break;
		}
		s.p[at + i] ^= 0x01;
	}
	s.p[at + 3] ^= 0x02;		/* resent -> resent+snapshot */
	ASSERT(fails_with(s.p, s.n, 1, 0, at, why));
	s.p[at + 3] ^= 0x02;
	s.p[at + 4] ^= 0x01;		/* origin length 14 -> 15 */
	ASSERT(fails_with(s.p, s.n, 1, 0, at, "truncated frame: 69 of 70 bytes"));
	sb_bytes(&s, "1", 1);
	ASSERT(fails_with(s.p, s.n, 1, 0, at, why));
	sb_free(&s);
}

TEST(err_stream_header)
{
	struct sbuf s = { 0 };
	size_t i;

	sb_header(&s);
	sb_block(&s, 1, "one");
	for (i = 1; i < 8; i++) {
		s.p[i] ^= 0x20;
		ASSERT(fails_with(s.p, s.n, 1, 0, 0, "not a gdkit stream header"));
		ASSERT(fails_with(s.p, i + 1, 0, 0, 0, "not a gdkit stream header"));
		s.p[i] ^= 0x20;
	}
	for (i = 8; i < 16; i++) {
		s.p[i] ^= 0x01;
		ASSERT(fails_with(s.p, s.n, 1, 0, 0,
		    "stream header CRC32C mismatch"));
		s.p[i] ^= 0x01;
	}
	s.p[0] ^= 0x01;			/* not a header byte at all */
	ASSERT(fails_with(s.p, s.n, 1, 0, 0, "no stream header: the input is "
	    "not a gdkit stream, or starts in the middle of one"));
	s.p[0] ^= 0x01;
	/* version 3, CRC right */
	s.p[8] = 3;
	gd_put32(s.p + 12, gd_crc32c(0, s.p, 12));
	ASSERT(fails_with(s.p, s.n, 1, 0, 0, "stream version 3 is not "
	    "supported (this reader knows versions 1 and 2)"));
	s.p[8] = 0;
	s.p[9] = 1;
	gd_put32(s.p + 12, gd_crc32c(0, s.p, 12));
	ASSERT(fails_with(s.p, s.n, 1, 0, 0, "stream version 256 is not "
	    "supported (this reader knows versions 1 and 2)"));
	s.p[8] = 1;
	s.p[9] = 0;
	s.p[10] = 24;
	gd_put32(s.p + 12, gd_crc32c(0, s.p, 12));
	ASSERT(fails_with(s.p, s.n, 1, 0, 0, "stream header size 24 is not "
	    "16 for version 1"));
	/* a damaged second header */
	s.p[10] = 16;
	gd_put32(s.p + 12, gd_crc32c(0, s.p, 12));
	sb_header(&s);
	s.p[FRAME1 + 12] ^= 0x80;
	ASSERT(fails_with(s.p, s.n, 1, 0, FRAME1,
	    "stream header CRC32C mismatch"));
	sb_free(&s);
}

/* fields the CRC cannot vouch for: a well-formed frame that breaks a rule */
TEST(err_frame_fields)
{
	struct sbuf s = { 0 };
	size_t at, n;

	sb_header(&s);
	sb_block(&s, 1, "one");
	at = sb_block(&s, 2, "two");
	n = s.n - at;

	s.p[at + 2] = 4;
	recrc(&s, at, n);
	ASSERT(fails_with(s.p, s.n, 1, 0, at, "unknown frame type 4"));
	s.p[at + 2] = 0;
	recrc(&s, at, n);
	ASSERT(fails_with(s.p, s.n, 1, 0, at, "unknown frame type 0"));
	s.p[at + 2] = GD_SF_BLOCK;

	s.p[at + 3] = 0x04;
	recrc(&s, at, n);
	ASSERT(fails_with(s.p, s.n, 1, 0, at,
	    "reserved bits set in the frame header"));
	s.p[at + 3] = 0x80;
	recrc(&s, at, n);
	ASSERT(fails_with(s.p, s.n, 1, 0, at,
	    "reserved bits set in the frame header"));
	s.p[at + 3] = 0;
	s.p[at + 7] = 0x01;
	recrc(&s, at, n);
	ASSERT(fails_with(s.p, s.n, 1, 0, at,
	    "reserved bits set in the frame header"));
	s.p[at + 7] = 0;
	s.p[at + 6] = 0x10;
	recrc(&s, at, n);
	ASSERT(fails_with(s.p, s.n, 1, 0, at,
	    "reserved bits set in the frame header"));
	s.p[at + 6] = 0;

	/* a byte of the origin that cannot be in HOST:PORT */
	s.p[at + 44 + 3 + 9] = '/';
	recrc(&s, at, n);
	ASSERT(fails_with(s.p, s.n, 1, 0, at, "origin has a byte that cannot "
	    "be in HOST:PORT (0x2f)"));
	s.p[at + 44 + 3 + 9] = ' ';
	recrc(&s, at, n);
	ASSERT(fails_with(s.p, s.n, 1, 0, at, "origin has a byte that cannot "
	    "be in HOST:PORT (0x20)"));
	s.p[at + 44 + 3 + 9] = 0x7f;
	recrc(&s, at, n);
	ASSERT(fails_with(s.p, s.n, 1, 0, at, "origin has a byte that cannot "
	    "be in HOST:PORT (0x7f)"));
	s.p[at + 44 + 3 + 9] = 0xc3;
	recrc(&s, at, n);
	ASSERT(fails_with(s.p, s.n, 1, 0, at, "origin has a byte that cannot "
	    "be in HOST:PORT (0xc3)"));
	sb_free(&s);
}

TEST(err_origin_length)
{
	struct sbuf s = { 0 };
	char o[302];
	size_t at;

	sb_header(&s);
	at = sb_block(&s, 1, "one");
	s.p[at + 4] = 0;		/* origin length 0, whatever follows */
	ASSERT(fails_with(s.p, s.n, 1, 0, at, "origin length 0 is outside "
	    "1..300"));
	sb_free(&s);

	memset(o, 'h', 301);
	o[301] = '\0';
	sb_header(&s);
	at = sb_frame(&s, GD_SF_BLOCK, 0, 1, 1, o, "x", 1);
	ASSERT(fails_with(s.p, s.n, 1, 0, at, "origin length 301 is outside "
	    "1..300"));
	/* refused from the 44 header bytes alone, before the frame is in */
	ASSERT(fails_with(s.p, at + 44, 0, 0, at, "origin length 301 is "
	    "outside 1..300"));
	s.p[at + 4] = 0xff;
	s.p[at + 5] = 0xff;
	ASSERT(fails_with(s.p, at + 44, 0, 0, at, "origin length 65535 is "
	    "outside 1..300"));
	sb_free(&s);
}

TEST(err_payload_limits)
{
	struct sbuf s = { 0 };
	uint8_t b[101];
	size_t at;
	struct rd d;

	memset(b, 'p', sizeof(b));
	sb_header(&s);
	sb_frame(&s, GD_SF_BLOCK, 0, 1, 1, ORIGIN, b, 100);
	at = sb_frame(&s, GD_SF_BLOCK, 0, 2, 2, ORIGIN, b, 101);
	read_all(&d, s.p, at, 1, 100);	/* at the limit: fine */
	ASSERT_EQ(d.rc, 0);
	ASSERT_EQ(d.nf, 1);
	ASSERT(fails_with(s.p, s.n, 1, 100, at, "frame payload of 101 bytes "
	    "is over the limit of 100"));
	/* known from the header, before the payload arrives */
	ASSERT(fails_with(s.p, at + 44, 0, 100, at, "frame payload of 101 "
	    "bytes is over the limit of 100"));
	/* over the format's limit, whatever the reader was given */
	gd_put32(s.p + at + 8, GD_STREAM_MAX_PAYLOAD + 1);
	ASSERT(fails_with(s.p, at + 44, 0, 0, at, "frame payload of "
	    "1073741825 bytes is over the limit of 1073741824"));
	ASSERT(fails_with(s.p, at + 44, 0, UINT32_MAX, at, "frame payload of "
	    "1073741825 bytes is over the limit of 1073741824"));
	gd_put32(s.p + at + 8, UINT32_MAX);
	ASSERT(fails_with(s.p, at + 44, 0, 0, at, "frame payload of "
	    "4294967295 bytes is over the limit of 1073741824"));
	sb_free(&s);

	/* floor and end frames carry none */
	sb_header(&s);
	at = sb_frame(&s, GD_SF_FLOOR, 0, 0, 3, ORIGIN, "x", 1);
	ASSERT(fails_with(s.p, s.n, 1, 0, at, "a frame of type 2 carries a "
	    "payload"));
	s.p[at + 2] = GD_SF_END;
	ASSERT(fails_with(s.p, s.n, 1, 0, at, "a frame of type 3 carries a "
	    "payload"));
	s.p[at + 2] = GD_SF_FLOOR;
	s.p[at + 3] = GD_FL_RESENT;	/* flags on a floor */
	ASSERT(fails_with(s.p, s.n, 1, 0, at,
	    "reserved bits set in the frame header"));
	sb_free(&s);
}

/* nothing after a corrupt frame is returned: a good frame after a bad
 * one is not reached */
TEST(err_stops_the_stream)
{
	struct sbuf s = { 0 };
	struct rd d;
	size_t at;

	sb_header(&s);
	sb_block(&s, 1, "one");
	at = sb_block(&s, 2, "two");
	sb_block(&s, 3, "three");
	s.p[at + 44] ^= 1;
	read_all(&d, s.p, s.n, 1, 0);
	ASSERT_EQ(d.rc, -1);
	ASSERT_EQ(d.nf, 1);
	ASSERT_U64(d.r.off, at);
	ASSERT_U64(d.r.frames, 1);
	sb_free(&s);
}

/* ---- gd_stream_peek ---- */

TEST(peek)
{
	struct sbuf s = { 0 };
	size_t total = 0, at, k;

	sb_header(&s);
	at = sb_block(&s, 1, "one");
	ASSERT_EQ(gd_stream_peek(s.p, 0, 100, &total), 0);
	ASSERT_EQ(gd_stream_peek(s.p, 1, 100, &total), 1);
	ASSERT_EQ(total, GD_STREAM_HDR);
	for (k = 1; k < 12; k++)
		if (gd_stream_peek(s.p + at, k, 100, &total) != 0)
			FAILF("%zu bytes of a frame did not ask for more", k);
	total = 0;
	ASSERT_EQ(gd_stream_peek(s.p + at, 12, 100, &total), 1);
	ASSERT_EQ(total, 48 + 14 + 3);
	ASSERT_EQ(gd_stream_peek(s.p + at, s.n - at, 100, &total), 1);
	ASSERT_EQ(total, s.n - at);
	ASSERT_EQ(gd_stream_peek(s.p + at, 12, 2, &total), -1);
	ASSERT_EQ(gd_stream_peek(s.p + at, 12, 3, &total), 1);
	ASSERT_EQ(gd_stream_peek((const uint8_t *)"x", 1, 100, &total), -1);
	ASSERT_EQ(gd_stream_peek((const uint8_t *)"gx", 2, 100, &total), -1);
	ASSERT_EQ(gd_stream_peek((const uint8_t *)"g", 1, 100, &total), 0);
	s.p[at + 4] = 0;
	ASSERT_EQ(gd_stream_peek(s.p + at, 12, 100, &total), -1);
	s.p[at + 4] = 0x2d;		/* 301 */
	s.p[at + 5] = 0x01;
	ASSERT_EQ(gd_stream_peek(s.p + at, 12, 100, &total), -1);
	s.p[at + 4] = 0x2c;		/* 300 */
	ASSERT_EQ(gd_stream_peek(s.p + at, 12, 100, &total), 1);
	ASSERT_EQ(total, 48 + 300 + 3);
	sb_free(&s);
}

int main(void)
{
	RUN(crc_check_value_and_vectors);
	RUN(crc_matches_reference);
	RUN(crc_of_split_buffers_is_crc_of_whole);
	RUN(header_bytes);
	RUN(frame_bytes);
	RUN(round_trip_every_byte);
	RUN(round_trip_empty_payload);
	RUN(round_trip_one_mib);
	RUN(round_trip_floor_and_end);
	RUN(origin_lengths_at_the_limits);
	RUN(reader_whole_stream);
	RUN(reader_byte_by_byte);
	RUN(reader_concatenated_streams);
	RUN(reader_empty_input_and_header_only);
	RUN(err_no_header);
	RUN(err_garbage_between_frames);
	RUN(err_truncated);
	RUN(err_crc_mismatch);
	RUN(err_stream_header);
	RUN(err_frame_fields);
	RUN(err_origin_length);
	RUN(err_payload_limits);
	RUN(err_stops_the_stream);
	RUN(peek);
	return UNIT_DONE();
}
