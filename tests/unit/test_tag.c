/* tag.c: the frame tag against a value computed apart (Python's hmac, in
 * gdkit-stream(5)'s example) and against libcrypto's one-shot HMAC; a
 * tagged frame read back verifies, and fails with any byte changed, with
 * the key of another run, origin or pre-shared key, or without its tag;
 * stream.c's rules on tag lengths in version 1, version 2 and armored
 * (headerless) input. */
#include "auth.h"
#include "stream.h"
#include "tag.h"
#include "wire.h"
#include "unit.h"

#include <stdlib.h>

#define ORIGIN "127.0.0.1:7001"
#define TIME 1796006270123456789ull

static struct gd_auth_key psk;

static void set_psk(const char *k)
{
	psk.len = strlen(k);
	memcpy(psk.k, k, psk.len);
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	size_t i;
	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

/* A block frame of payload p, tagged with k unless k is NULL, at b;
 * returns its size. */
static size_t put(uint8_t *b, const struct gd_tagkey *k, uint64_t id,
    const char *p)
{
	struct gd_sframe f;
	uint8_t tag[GD_SFRAME_TAG];

	memset(&f, 0, sizeof(f));
	f.type = GD_SF_BLOCK;
	f.id = f.seq = id;
	f.time_ns = TIME;
	f.epoch = k ? k->epoch : 1;
	f.origin = ORIGIN;
	f.origin_len = strlen(ORIGIN);
	f.data = (const uint8_t *)p;
	f.len = (uint32_t)strlen(p);
	if (k != NULL) {
		f.tag_len = GD_SFRAME_TAG;
		gd_tag_sframe(k, &f, tag);
		f.tag = tag;
	}
	return gd_sframe_put(b, &f);
}

/* Read the frame at b[0..n) as in an armored line: 1 and *f, or 0. */
static int read1(const uint8_t *b, size_t n, struct gd_sframe *f)
{
	struct gd_sreader r;
	size_t used;

	gd_sreader_init(&r, 0);
	r.started = 1;
	return gd_sreader_next(&r, b, n, 1, f, &used) == 1 && used == n;
}

TEST(known_answer)
{
	struct gd_tagkey k;
	struct gd_sframe f;
	uint8_t b[256];
	char got[2 * GD_SFRAME_TAG + 1];
	size_t n;

	set_psk("0123456789abcdef0123456789abcdef");
	ASSERT_EQ(gd_tagkey_derive(&k, &psk, 1, ORIGIN, strlen(ORIGIN)), 0);
	n = put(b, &k, 1, "hello");
	ASSERT_EQ(n, gd_sframe_tsize(strlen(ORIGIN), 5, GD_SFRAME_TAG));
	ASSERT_EQ(b[6], GD_SFRAME_TAG);
	hex(b + GD_SFRAME_HDR + 5 + strlen(ORIGIN), GD_SFRAME_TAG, got);
	/* hmac.new(hmac.new(psk, b"gdkit-stream-tag-v1\0" + pack("<Q", 1) +
	 * origin, sha256).digest(), frame[:63], sha256).digest()[:16] */
	ASSERT_STR(got, "9cc8a0b7d28c7b175f62e9994feaefaa");
	ASSERT(read1(b, n, &f));
	ASSERT_EQ(f.tag_len, GD_SFRAME_TAG);
	ASSERT(f.tag == b + n - 4 - GD_SFRAME_TAG);
	ASSERT_EQ(gd_tag_check(&k, &f), 1);
}

/* The precomputed pads give what libcrypto's HMAC gives, for frames
 * shorter and longer than a SHA-256 block and around its edges. */
TEST(same_as_libcrypto_hmac)
{
	static char p[3000];
	uint8_t rk[GD_AUTH_MAC], msg[64], mac[GD_AUTH_MAC];
	struct gd_tagkey k;
	uint8_t *b = malloc(4096);
	size_t len, n;
	int cases = 0;

	set_psk("a key of more than sixteen bytes");
	memcpy(msg, "gdkit-stream-tag-v1", 20);
	gd_put64(msg + 20, 7);
	memcpy(msg + 28, ORIGIN, strlen(ORIGIN));
	ASSERT_EQ(gd_auth_hmac(psk.k, psk.len, msg, 28 + strlen(ORIGIN), rk), 0);
	ASSERT_EQ(gd_tagkey_derive(&k, &psk, 7, ORIGIN, strlen(ORIGIN)), 0);
	memset(p, 'x', sizeof(p) - 1);
	for (len = 0; len < sizeof(p) - 1; len += len < 140 ? 1 : 997) {
		p[len] = '\0';
		n = put(b, &k, len + 1, p);
		ASSERT_EQ(gd_auth_hmac(rk, sizeof(rk), b, n - 4 - GD_SFRAME_TAG,
		    mac), 0);
		ASSERT(memcmp(mac, b + n - 4 - GD_SFRAME_TAG, GD_SFRAME_TAG) == 0);
		p[len] = 'x';
		cases++;
	}
	ASSERT(cases > 140);
	free(b);
}

TEST(what_fails)
{
	struct gd_tagkey k, other;
	struct gd_sframe f;
	uint8_t b[256], c[256];
	size_t n, i;

	set_psk("0123456789abcdef0123456789abcdef");
	ASSERT_EQ(gd_tagkey_derive(&k, &psk, 5, ORIGIN, strlen(ORIGIN)), 0);
	n = put(b, &k, 9, "payload");
	/* any byte the tag covers, changed (and the CRC made right again,
	 * as a forger would): the header, payload and origin */
	for (i = 0; i < n - 4 - GD_SFRAME_TAG; i++) {
		if (i < 2 || i == 6)
			continue;	/* sync and tag length: not a frame then */
		memcpy(c, b, n);
		c[i] ^= (i >= GD_SFRAME_HDR + 7) ? 0x02 : 0x01;
		gd_put32(c + n - 4, gd_crc32c(0, c, n - 4));
		if (read1(c, n, &f))
			ASSERT_EQ(gd_tag_check(&k, &f), 0);
	}
	/* the tag itself */
	memcpy(c, b, n);
	c[n - 5] ^= 0x80;
	gd_put32(c + n - 4, gd_crc32c(0, c, n - 4));
	ASSERT(read1(c, n, &f));
	ASSERT_EQ(gd_tag_check(&k, &f), 0);
	ASSERT(read1(b, n, &f));
	ASSERT_EQ(gd_tag_check(&k, &f), 1);
	/* the key of another run, origin or pre-shared key */
	ASSERT_EQ(gd_tagkey_derive(&other, &psk, 6, ORIGIN, strlen(ORIGIN)), 0);
	ASSERT_EQ(gd_tag_check(&other, &f), 0);
	ASSERT_EQ(gd_tagkey_derive(&other, &psk, 5, "127.0.0.1:7002", 14), 0);
	ASSERT_EQ(gd_tag_check(&other, &f), 0);
	set_psk("0123456789abcdef0123456789abcdeF");
	ASSERT_EQ(gd_tagkey_derive(&other, &psk, 5, ORIGIN, strlen(ORIGIN)), 0);
	ASSERT_EQ(gd_tag_check(&other, &f), 0);
	/* no tag, or no key */
	n = put(c, NULL, 9, "payload");
	ASSERT(read1(c, n, &f));
	ASSERT_EQ(f.tag_len, 0);
	ASSERT_EQ(gd_tag_check(&k, &f), 0);
	gd_tagkey_clear(&other);
	ASSERT(read1(b, gd_sframe_tsize(strlen(ORIGIN), 7, GD_SFRAME_TAG), &f));
	ASSERT_EQ(gd_tag_check(&other, &f), 0);
}

TEST(key_cache)
{
	struct gd_tagkey k;

	set_psk("0123456789abcdef0123456789abcdef");
	memset(&k, 0, sizeof(k));
	ASSERT_EQ(gd_tagkey_is(&k, 0, ORIGIN, strlen(ORIGIN)), 0);
	ASSERT_EQ(gd_tagkey_derive(&k, &psk, 5, ORIGIN, strlen(ORIGIN)), 0);
	ASSERT_EQ(gd_tagkey_is(&k, 5, ORIGIN, strlen(ORIGIN)), 1);
	ASSERT_EQ(gd_tagkey_is(&k, 4, ORIGIN, strlen(ORIGIN)), 0);
	ASSERT_EQ(gd_tagkey_is(&k, 5, ORIGIN, 9), 0);
	ASSERT_EQ(gd_tagkey_is(&k, 5, "127.0.0.1:7009", 14), 0);
	ASSERT_EQ(gd_tagkey_derive(&k, &psk, 5, ORIGIN, 0), -1);
	ASSERT_EQ(k.set, 0);
}

/* Tag lengths: a version 2 stream's frames all carry one, a version 1
 * stream's none; without a header (armored) either, but 0 or 16 only. */
TEST(stream_versions)
{
	struct gd_tagkey k;
	struct gd_sreader r;
	struct gd_sframe f;
	uint8_t b[512];
	size_t n, used, fr;

	set_psk("0123456789abcdef0123456789abcdef");
	ASSERT_EQ(gd_tagkey_derive(&k, &psk, 1, ORIGIN, strlen(ORIGIN)), 0);
	n = gd_stream_header_v(b, GD_STREAM_VERSION_TAGS);
	fr = put(b + n, &k, 1, "one");
	n += fr;
	gd_sreader_init(&r, 0);
	ASSERT_EQ(gd_sreader_next(&r, b, n, 1, &f, &used), 1);
	ASSERT_EQ(r.version, 2);
	ASSERT_EQ(gd_sreader_next(&r, b + 16, n - 16, 1, &f, &used), 1);
	ASSERT_EQ(gd_tag_check(&k, &f), 1);
	ASSERT_EQ(gd_stream_peek(b + 16, n - 16, 1000, &used), 1);
	ASSERT_EQ(used, fr);
	/* an untagged frame in a version 2 stream */
	n = 16 + put(b + 16, NULL, 1, "one");
	gd_sreader_init(&r, 0);
	ASSERT_EQ(gd_sreader_next(&r, b, n, 1, &f, &used), 1);
	ASSERT_EQ(gd_sreader_next(&r, b + 16, n - 16, 1, &f, &used), -1);
	ASSERT_STR(r.err, "corrupt stream at byte offset 16: tag length 0 in a "
	    "version 2 stream, whose frames carry a 16-byte tag");
	/* a tagged frame in a version 1 stream: its reserved byte is set */
	n = gd_stream_header(b);
	n += put(b + n, &k, 1, "one");
	gd_sreader_init(&r, 0);
	ASSERT_EQ(gd_sreader_next(&r, b, n, 1, &f, &used), 1);
	ASSERT_EQ(r.version, 1);
	ASSERT_EQ(gd_sreader_next(&r, b + 16, n - 16, 1, &f, &used), -1);
	ASSERT_STR(r.err, "corrupt stream at byte offset 16: reserved bits set "
	    "in the frame header");
	/* no header: either, but no other length */
	fr = put(b, &k, 1, "one");
	ASSERT(read1(b, fr, &f));
	b[6] = 8;
	gd_put32(b + fr - 4, gd_crc32c(0, b, fr - 4));
	gd_sreader_init(&r, 0);
	r.started = 1;
	ASSERT_EQ(gd_sreader_next(&r, b, fr, 1, &f, &used), -1);
	ASSERT_STR(r.err, "corrupt stream at byte offset 0: tag length 8 is "
	    "neither 0 nor 16");
	ASSERT_EQ(gd_stream_peek(b, fr, 1000, &used), -1);
}

int main(void)
{
	RUN(known_answer);
	RUN(same_as_libcrypto_hmac);
	RUN(what_fails);
	RUN(key_cache);
	RUN(stream_versions);
	return UNIT_DONE();
}
