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
	/* the longest line for a limit: 300-byte origin, a tag, CR LF */
	ASSERT_EQ(gd_armor_line_max(2000), 5 + (48 + 2000 + 300 + 16 + 2) / 3 *
	    4 + 2);
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

int main(void)
{
	RUN(rfc4648_vectors);
	RUN(known_line);
	RUN(round_trip_every_length);
	RUN(crlf_accepted);
	RUN(bad_lines);
	RUN(over_the_limit);
	RUN(starts);
	return UNIT_DONE();
}
