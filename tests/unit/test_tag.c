/* tag.c: SipHash-2-4-128 against the reference implementation's vectors;
 * the frame tag against a value computed apart (tests/cli/tagcheck.py, in
 * gdkit-stream(5)'s example) and against SipHash of the frame under a run
 * key derived with libcrypto's HMAC; a tagged frame read back verifies,
 * and fails with any byte changed, with the key of another run, origin or
 * pre-shared key, or without its tag; stream.c's rules on tag lengths in
 * version 1, version 2 and armored (headerless) input. */
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

	memset(&f, 0, sizeof(f));
	f.type = GD_SF_BLOCK;
	f.id = f.seq = id;
	f.time_ns = TIME;
	f.epoch = k ? k->epoch : 1;
	f.origin = ORIGIN;
	f.origin_len = strlen(ORIGIN);
	f.data = (const uint8_t *)p;
	f.len = (uint32_t)strlen(p);
	if (k == NULL)
		return gd_sframe_put(b, &f);
	f.tag_len = GD_SFRAME_TAG;
	return gd_tag_sframe_put(k, b, &f);
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

/* The reference implementation's vectors_sip128 (key bytes 00..0f, the
 * message bytes 00..n-1), for every tail length and word edge. */
TEST(siphash_vectors)
{
	static const struct {
		size_t n;
		const char *want;
	} ref[] = {
		{ 0, "a3817f04ba25a8e66df67214c7550293" },
		{ 1, "da87c1d86b99af44347659119b22fc45" },
		{ 2, "8177228da4a45dc7fca38bdef60affe4" },
		{ 3, "9c70b60c5267a94e5f33b6b02985ed51" },
		{ 4, "f88164c12d9c8faf7d0f6e7c7bcd5579" },
		{ 5, "1368875980776f8854527a07690e9627" },
		{ 6, "14eeca338b208613485ea0308fd7a15e" },
		{ 7, "a1f1ebbed8dbc153c0b84aa61ff08239" },
		{ 8, "3b62a9ba6258f5610f83e264f31497b4" },
		{ 9, "264499060ad9baabc47f8b02bb6d71ed" },
		{ 10, "00110dc378146956c95447d3f3d0fbba" },
		{ 11, "0151c568386b6677a2b4dc6f81e5dc18" },
		{ 12, "d626b266905ef35882634df68532c125" },
		{ 13, "9869e247e9c08b10d029934fc4b952f7" },
		{ 14, "31fcefac66d7de9c7ec7485fe4494902" },
		{ 15, "5493e99933b0a8117e08ec0f97cfc3d9" },
		{ 16, "6ee2a4ca67b054bbfd3315bf85230577" },
		{ 31, "2939b0183223fafc1723de4f52c43d35" },
		{ 32, "7c3956ca5eeafc3e363e9d556546eb68" },
		{ 47, "e61c432b720b19d18ec8d84bdc63151b" },
		{ 48, "f7e5aef549f782cf379055a608269b16" },
		{ 63, "5150d1772f50834a503e069a973fbd7c" },
	};
	uint8_t key[16], msg[64], out[16];
	char got[33];
	size_t i;

	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	for (i = 0; i < sizeof(ref) / sizeof(ref[0]); i++) {
		gd_siphash128(key, msg, ref[i].n, out);
		hex(out, sizeof(out), got);
		ASSERT_STR(got, ref[i].want);
	}
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
	/* python3 tests/cli/tagcheck.py kat */
	ASSERT_STR(got, "78127068a836f8c262dc3fcfc6b3c5e0");
	ASSERT(read1(b, n, &f));
	ASSERT_EQ(f.tag_len, GD_SFRAME_TAG);
	ASSERT(f.tag == b + n - 4 - GD_SFRAME_TAG);
	ASSERT_EQ(gd_tag_check(&k, &f), 1);
}

/* A frame gd_tag_sframe_put writes carries SipHash of its bytes before
 * the tag under the first 16 bytes of the run key as libcrypto's HMAC
 * derives it, a CRC32C over the tag too, and reads back verified: for
 * every tail length, and frames of some kilobytes. */
TEST(tag_of_the_frame)
{
	struct gd_sframe f;
	static char p[3000];
	uint8_t rk[GD_AUTH_MAC], msg[64], mac[GD_SFRAME_TAG];
	struct gd_tagkey k;
	uint8_t *b = malloc(4096);
	size_t len, n;
	int cases = 0;

	set_psk("a key of more than sixteen bytes");
	memcpy(msg, "gdkit-stream-tag-v2", 20);
	gd_put64(msg + 20, 7);
	memcpy(msg + 28, ORIGIN, strlen(ORIGIN));
	ASSERT_EQ(gd_auth_hmac(psk.k, psk.len, msg, 28 + strlen(ORIGIN), rk), 0);
	ASSERT_EQ(gd_tagkey_derive(&k, &psk, 7, ORIGIN, strlen(ORIGIN)), 0);
	memset(p, 'x', sizeof(p) - 1);
	for (len = 0; len < sizeof(p) - 1; len += len < 140 ? 1 : 997) {
		p[len] = '\0';
		n = put(b, &k, len + 1, p);
		gd_siphash128(rk, b, n - 4 - GD_SFRAME_TAG, mac);
		ASSERT(memcmp(mac, b + n - 4 - GD_SFRAME_TAG, GD_SFRAME_TAG) == 0);
		ASSERT(read1(b, n, &f));
		ASSERT_EQ(gd_tag_check(&k, &f), 1);
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
	RUN(siphash_vectors);
	RUN(known_answer);
	RUN(tag_of_the_frame);
	RUN(what_fails);
	RUN(key_cache);
	RUN(stream_versions);
	return UNIT_DONE();
}
