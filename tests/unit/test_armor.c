/* Unit tests of lib/armor.c: the line of a known frame character for
 * character, base64 against RFC 4648's vectors, round trips of every
 * payload length around the 3-byte groups, CR LF, and every bad line a
 * reader must refuse with its reason. Lines are copied into exact-size
 * heap buffers so the sanitizer build catches any read past them. */
#include "armor.h"
#include "stream.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ORIGIN "127.0.0.1:7001"

/* the armored line of a block (id, seq, payload) in a heap buffer of
 * exactly its size; *n its length, newline included */
static uint8_t *line_of(uint64_t id, const void *data, uint32_t len, size_t *n)
{
	struct gd_sframe f;
	size_t fs = gd_sframe_size(strlen(ORIGIN), len);
	uint8_t *b = malloc(gd_armor_size(fs));

	if (b == NULL)
		abort();
	memset(&f, 0, sizeof(f));
	f.type = GD_SF_BLOCK;
	f.id = id;
	f.seq = id;
	f.time_ns = 1796006270123456789ull;
	f.epoch = 1;
	f.origin = ORIGIN;
	f.origin_len = strlen(ORIGIN);
	f.data = data;
	f.len = len;
	ASSERT_EQ(gd_sframe_put(b + GD_ARMOR_PREFIX_LEN, &f), fs);
	*n = gd_armor_in_place(b, fs);
	ASSERT_EQ(*n, gd_armor_size(fs));
	return b;
}

/* decode a copy of s[0..n) (without its newline) in an exact buffer */
static int dec(const void *s, size_t n, struct gd_sframe *f, char *err,
    uint8_t **keep)
{
	uint8_t *c = malloc(n ? n : 1);
	int rc;

	if (c == NULL)
		abort();
	memcpy(c, s, n);
	rc = gd_armor_decode(c, n, 0, f, err, 200);
	*keep = c;
	return rc;
}

TEST(rfc4648_vectors)
{
	static const char *in[] = { "", "f", "fo", "foo", "foob", "fooba",
		"foobar" };
	static const char *out[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==",
		"Zm9vYmE=", "Zm9vYmFy" };
	uint8_t b[64];
	size_t i, n;

	for (i = 0; i < 7; i++) {
		n = strlen(in[i]);
		memcpy(b + GD_ARMOR_PREFIX_LEN, in[i], n);
		ASSERT_EQ(gd_armor_in_place(b, n), 5 + strlen(out[i]) + 1);
		ASSERT(memcmp(b, "GDK1:", 5) == 0);
		ASSERT(memcmp(b + 5, out[i], strlen(out[i])) == 0);
		ASSERT_EQ(b[5 + strlen(out[i])], '\n');
	}
}

TEST(known_line)
{
	size_t n;
	uint8_t *b = line_of(1, "hello", 5, &n);

	/* the frame of gdkit-stream(5)'s example, time and epoch its own */
	static const char want[] = "GDK1:Z2YBAA4AAAAFAAAAAQAAAAAAAAABAAAAAAAA"
	    "ABU5FeEvsuwYAQAAAAAAAABoZWxsbzEyNy4wLjAuMTo3MDAxuIB6hQ==\n";

	ASSERT_EQ(n, strlen(want));
	ASSERT(memcmp(b, want, n) == 0);
	free(b);
}

TEST(round_trip_every_length)
{
	uint8_t data[300];
	uint32_t len;
	size_t i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);	/* '\n', NUL, 0xFF among them */
	for (len = 0; len < sizeof(data); len++) {
		struct gd_sframe f;
		char err[200] = "";
		uint8_t *keep;
		size_t n;
		uint8_t *b = line_of(len + 10, data, len, &n);

		for (i = 0; i + 1 < n; i++)	/* one line: no newline inside */
			if (b[i] == '\n' || b[i] == '\r' || b[i] == ' ')
				break;
		ASSERT_EQ(i, n - 1);
		ASSERT_EQ(dec(b, n - 1, &f, err, &keep), 0);
		ASSERT_STR(err, "");
		ASSERT_EQ(f.type, GD_SF_BLOCK);
		ASSERT_U64(f.id, len + 10);
		ASSERT_EQ(f.len, len);
		ASSERT(len == 0 || memcmp(f.data, data, len) == 0);
		ASSERT_EQ(f.origin_len, strlen(ORIGIN));
		ASSERT(memcmp(f.origin, ORIGIN, f.origin_len) == 0);
		free(keep);
		free(b);
	}
}

TEST(crlf_accepted)
{
	struct gd_sframe f;
	char err[200];
	uint8_t *keep, *c;
	size_t n;
	uint8_t *b = line_of(7, "x", 1, &n);

	c = malloc(n);
	memcpy(c, b, n - 1);
	c[n - 1] = '\r';
	ASSERT_EQ(dec(c, n, &f, err, &keep), 0);
	ASSERT_U64(f.id, 7);
	free(keep);
	free(c);
	free(b);
}

/* the line b[0..n) (newline excluded) changed by fn fails with why */
static int fails(const uint8_t *b, size_t n, const char *why)
{
	struct gd_sframe f;
	char err[200] = "";
	uint8_t *keep;
	int rc = dec(b, n, &f, err, &keep);

	free(keep);
	if (rc != -1 || strcmp(err, why) != 0) {
		printf("  got rc %d, '%s'; wanted '%s'\n", rc, err, why);
		return 0;
	}
	return 1;
}

TEST(bad_lines)
{
	size_t n, i;
	/* a 69-byte frame: 92 base64 characters, no padding */
	uint8_t *b = line_of(3, "abcdefg", 7, &n), *c = malloc(n + 8);
	size_t L = n - 1;	/* without the newline */

	ASSERT(fails(b, 0, "not an armored frame (no GDK1: prefix)"));
	ASSERT(fails((const uint8_t *)"hello", 5,
	    "not an armored frame (no GDK1: prefix)"));
	ASSERT(fails((const uint8_t *)"GDK1", 4,
	    "not an armored frame (no GDK1: prefix)"));
	ASSERT(fails((const uint8_t *)"GDK2:Zm9v", 9,
	    "not an armored frame (no GDK1: prefix)"));
	/* cut: base64 no longer a multiple of 4, or whole groups missing */
	ASSERT(fails(b, L - 1, "its base64 is not a multiple of 4 characters "
	    "(a cut line)"));
	ASSERT(fails(b, L - 4, "truncated frame: 66 of 69 bytes"));
	ASSERT(fails(b, 5 + 8, "6 bytes that are not a frame (a cut or "
	    "damaged line)"));
	ASSERT(fails((const uint8_t *)"GDK1:", 5, "0 bytes that are not a "
	    "frame (a cut or damaged line)"));
	/* a byte that is not base64 */
	memcpy(c, b, L);
	c[20] = '!';
	ASSERT(fails(c, L, "a byte that is not base64"));
	c[20] = ' ';
	ASSERT(fails(c, L, "a byte that is not base64"));
	/* padding in the middle */
	memcpy(c, b, L);
	c[23] = '=';
	ASSERT(fails(c, L, "base64 padding before the end of the line"));
	/* a changed character: the CRC catches it */
	for (i = 5; i < L; i++) {
		struct gd_sframe f;
		char err[200];
		uint8_t *keep;
		memcpy(c, b, L);
		c[i] = c[i] == 'A' ? 'B' : 'A';
		ASSERT_EQ(dec(c, L, &f, err, &keep), -1);
		free(keep);
	}
	memcpy(c, b, L);
	c[40] = c[40] == 'A' ? 'B' : 'A';
	ASSERT(fails(c, L, "frame CRC32C mismatch (header or payload damaged)"));
	/* two lines run together: bytes after the frame */
	memcpy(c, b, L);
	memcpy(c + L, "AAAA", 4);
	ASSERT(fails(c, L + 4, "3 bytes after its frame"));
	free(c);
	free(b);
}

TEST(over_the_limit)
{
	static uint8_t data[2000];
	struct gd_sframe f;
	char err[200];
	size_t n;
	uint8_t *b = line_of(1, data, sizeof(data), &n);

	ASSERT_EQ(gd_armor_decode(b, n - 1, 1999, &f, err, sizeof(err)), -1);
	ASSERT_STR(err, "frame payload of 2000 bytes is over the limit of 1999");
	free(b);
	b = line_of(1, data, sizeof(data), &n);
	ASSERT_EQ(gd_armor_decode(b, n - 1, 2000, &f, err, sizeof(err)), 0);
	free(b);
	/* the longest line for a limit: 300-byte origin, a tag, CR LF; at
	 * least the longest batch, whatever the limit */
	ASSERT_EQ(gd_armor_line_max(2000), GD_ARMOR_BATCH_MAX + 1);
	ASSERT_EQ(gd_armor_line_max(1048576),
	    5 + (48 + 1048576 + 300 + 16 + 2) / 3 * 4 + 2);
	ASSERT_EQ(gd_armor_line_max(0), gd_armor_line_max(1u << 30));
}

TEST(starts)
{
	ASSERT_EQ(gd_armor_starts((const uint8_t *)"GDK1:Z2YB", 9), 1);
	ASSERT_EQ(gd_armor_starts((const uint8_t *)"GDK", 3), -1);
	ASSERT_EQ(gd_armor_starts((const uint8_t *)"", 0), -1);
	ASSERT_EQ(gd_armor_starts((const uint8_t *)"\x89GDK", 4), 0);
	ASSERT_EQ(gd_armor_starts((const uint8_t *)"GDK2:", 5), 0);
	ASSERT_EQ(gd_armor_starts((const uint8_t *)"hello", 5), 0);
}

/* frames 1..k of payload "pN" one after the other in frames[], their
 * total length returned */
static size_t frames_of(uint8_t *frames, unsigned k)
{
	size_t n = 0;
	unsigned i;

	for (i = 1; i <= k; i++) {
		struct gd_sframe f;
		char data[8];

		memset(&f, 0, sizeof(f));
		f.type = GD_SF_BLOCK;
		f.id = f.seq = i;
		f.epoch = 1;
		f.origin = ORIGIN;
		f.origin_len = strlen(ORIGIN);
		f.len = (uint32_t)snprintf(data, sizeof(data), "p%u", i);
		f.data = (const uint8_t *)data;
		n += gd_sframe_put(frames + n, &f);
	}
	return n;
}

TEST(batched_line)
{
	static uint8_t frames[4096], line[8192];
	struct gd_armor_line a;
	struct gd_sframe f;
	char err[200];
	size_t n = frames_of(frames, 3), L;
	unsigned i;

	L = gd_armor_encode(line, frames, n);
	ASSERT_EQ(L, gd_armor_size(n));
	ASSERT_EQ(line[L - 1], '\n');
	/* the same characters as one frame's armor would give */
	{
		uint8_t same[8192];
		memcpy(same + GD_ARMOR_PREFIX_LEN, frames, n);
		ASSERT_EQ(gd_armor_in_place(same, n), L);
		ASSERT(memcmp(same, line, L) == 0);
	}
	ASSERT_EQ(gd_armor_open(&a, line, L - 1, 0, err, sizeof(err)), 0);
	for (i = 1; i <= 3; i++) {
		ASSERT_EQ(gd_armor_next(&a, &f, err, sizeof(err)), 1);
		ASSERT_EQ(f.id, i);
		ASSERT_EQ(f.len, 2);
		ASSERT_EQ(f.data[1], '0' + i);
	}
	ASSERT_EQ(gd_armor_next(&a, &f, err, sizeof(err)), 0);
	ASSERT_EQ(a.frames, 3);
	/* one frame expected: the rest is bytes after it */
	L = gd_armor_encode(line, frames, n);
	ASSERT_EQ(gd_armor_decode(line, L - 1, 0, &f, err, sizeof(err)), -1);
	ASSERT_STR(err, "128 bytes after its frame");
}

TEST(batched_line_damaged)
{
	static uint8_t frames[4096], line[8192];
	struct gd_armor_line a;
	struct gd_sframe f;
	char err[200];
	size_t n = frames_of(frames, 3), L, one = n / 3;

	/* a payload byte of frame 2: frame 1 stays good, 2 and 3 are lost */
	frames[one + GD_SFRAME_HDR] ^= 1;
	L = gd_armor_encode(line, frames, n);
	ASSERT_EQ(gd_armor_open(&a, line, L - 1, 0, err, sizeof(err)), 0);
	ASSERT_EQ(gd_armor_next(&a, &f, err, sizeof(err)), 1);
	ASSERT_EQ(f.id, 1);
	ASSERT_EQ(gd_armor_next(&a, &f, err, sizeof(err)), -1);
	ASSERT_STR(err, "frame 2 of the line, after 1 good: frame CRC32C "
	    "mismatch (header or payload damaged)");
	/* the line cut inside frame 3 */
	frames[one + GD_SFRAME_HDR] ^= 1;
	L = gd_armor_encode(line, frames, n - 9);
	ASSERT_EQ(gd_armor_open(&a, line, L - 1, 0, err, sizeof(err)), 0);
	ASSERT_EQ(gd_armor_next(&a, &f, err, sizeof(err)), 1);
	ASSERT_EQ(gd_armor_next(&a, &f, err, sizeof(err)), 1);
	ASSERT_EQ(gd_armor_next(&a, &f, err, sizeof(err)), -1);
	ASSERT(strncmp(err, "frame 3 of the line, after 2 good: ", 35) == 0);
	/* base64 damage anywhere loses the whole line */
	L = gd_armor_encode(line, frames, n);
	line[L / 2] = '*';
	ASSERT_EQ(gd_armor_open(&a, line, L - 1, 0, err, sizeof(err)), -1);
	ASSERT_STR(err, "a byte that is not base64");
}

TEST(batch_room)
{
	size_t b;

	/* the most frame bytes whose line fits the batch, newline included */
	for (b = 1; b < 300; b++) {
		size_t r = gd_armor_batch_room(b);
		if (r > 0)
			ASSERT(gd_armor_size(r) <= b);
		ASSERT(gd_armor_size(r + 3) > b);
	}
	ASSERT_EQ(gd_armor_batch_room(1), 0);
	ASSERT_EQ(gd_armor_size(gd_armor_batch_room(GD_ARMOR_BATCH_DEFAULT)),
	    GD_ARMOR_BATCH_DEFAULT - 2);
}

int main(void)
{
	RUN(rfc4648_vectors);
	RUN(known_line);
	RUN(round_trip_every_length);
	RUN(crlf_accepted);
	RUN(bad_lines);
	RUN(over_the_limit);
	RUN(starts);
	RUN(batched_line);
	RUN(batched_line_damaged);
	RUN(batch_room);
	return UNIT_DONE();
}
