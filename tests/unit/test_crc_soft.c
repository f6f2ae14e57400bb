/* The table-driven CRC32C (slicing by 8) that machines without SSE4.2
 * run: lib/stream.c built here with GD_CRC_NO_HW, against the published
 * vectors and a bitwise reference at every length and alignment. This
 * binary links this copy of the stream codec, not libgdcore's. */
#define GD_CRC_NO_HW 1
#include "stream.c"
#include "unit.h"

#include <stdlib.h>

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

TEST(vectors)
{
	uint8_t b[32];
	int i;

	ASSERT_U64(gd_crc32c(0, "123456789", 9), 0xE3069283u);
	memset(b, 0, sizeof(b));
	ASSERT_U64(gd_crc32c(0, b, 32), 0x8A9136AAu);
	memset(b, 0xff, sizeof(b));
	ASSERT_U64(gd_crc32c(0, b, 32), 0x62A8AB43u);
	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	ASSERT_U64(gd_crc32c(0, b, 32), 0x46DD794Eu);
}

TEST(every_length_and_alignment)
{
	uint8_t *b = malloc(600);
	size_t len, al, k;
	uint32_t x = 99;

	for (len = 0; len < 600; len++) {
		x = x * 1103515245u + 12345u;
		b[len] = (uint8_t)(x >> 16);
	}
	for (al = 0; al < 8; al++)
		for (len = 0; len + al <= 600; len++) {
			if (gd_crc32c(0, b + al, len) != crc_ref(b + al, len)) {
				FAILF("length %zu at alignment %zu", len, al);
				goto out;
			}
			k = len / 3;
			if (gd_crc32c(gd_crc32c(0, b + al, k), b + al + k,
			    len - k) != crc_ref(b + al, len)) {
				FAILF("split %zu+%zu at alignment %zu", k,
				    len - k, al);
				goto out;
			}
		}
out:
	free(b);
}

TEST(frames_check_with_the_table_code)
{
	uint8_t h[GD_STREAM_HDR];
	struct gd_sreader r;
	struct gd_sframe f;
	size_t used;

	gd_stream_header(h);
	ASSERT_U64(gd_get32(h + 12), 0x32fcf6e2u);
	gd_sreader_init(&r, 0);
	ASSERT_EQ(gd_sreader_next(&r, h, sizeof(h), 1, &f, &used), 1);
}

int main(void)
{
	RUN(vectors);
	RUN(every_length_and_alignment);
	RUN(frames_check_with_the_table_code);
	return UNIT_DONE();
}
