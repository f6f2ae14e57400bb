/* The framed block stream reader (lib/stream.c, gdkit-stream(5)): the
 * bytes after a 5-byte prefix are a stream, read as gdsub -i and gdpub
 * -f frame do, in pieces of a size the prefix picks, with the reader's
 * payload limit from the prefix too. Checks: a frame accepted agrees with
 * gd_stream_peek about its size, stays inside the input, carries a
 * payload within the limit; re-encoding it gives the very same bytes; and
 * after -1 nothing more is read. Tags (tag.h): a frame accepted has none,
 * or one GD_SFRAME_TAG long behind its origin, which its re-encoding
 * keeps; tagged anew with a key it verifies, and with one bit of it
 * changed it does not; checking the tag it came with never fails loudly
 * (the fuzzer cannot forge SipHash-2-4-128: a good tag in the input is the
 * seeds'). */
#include "fuzz.h"
#include "stream.h"
#include "tag.h"
#include "wire.h"

/* The key of the seeds in tests/fuzz/corpus/stream: the pre-shared key
 * below, epoch 1 and origin 127.0.0.1:7001, as tests/unit/test_tag.c's
 * known answer. */
static const char *psk_text = "0123456789abcdef0123456789abcdef";

/* f re-encoded with a tag made by k, read back: verifies; flipped: not */
static void retag(const struct gd_tagkey *k, const struct gd_sframe *f,
    uint8_t *enc, size_t encsz)
{
	struct gd_sframe g = *f, h;
	struct gd_sreader r;
	size_t n = gd_sframe_tsize(f->origin_len, f->len, GD_SFRAME_TAG), used;

	if (n > encsz)
		return;
	g.tag_len = GD_SFRAME_TAG;
	if (gd_tag_sframe_put(k, enc, &g) != n)
		abort();
	gd_sreader_init(&r, 0);
	r.started = 1;
	if (gd_sreader_next(&r, enc, n, 1, &h, &used) != 1 || used != n ||
	    h.tag_len != GD_SFRAME_TAG || gd_tag_check(k, &h) != 1)
		abort();
	enc[GD_SFRAME_HDR + f->len + f->origin_len] ^= 0x01;
	if (gd_tag_check(k, &h) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t enc[GD_SFRAME_HDR + (1u << 16) + GD_STREAM_ORIGIN_MAX +
	    GD_SFRAME_TAG + GD_SFRAME_TRAILER];
	static struct gd_tagkey tk;
	struct gd_sreader r;
	uint32_t max_payload;
	size_t start = 0, have, step;

	if (size < 5)
		return 0;
	max_payload = gd_get32(data) % (1u << 16);	/* 0: the format's bound */
	step = 1 + data[4] % 128;
	data += 5;
	size -= 5;
	if (!tk.set) {
		struct gd_auth_key psk;
		psk.len = strlen(psk_text);
		memcpy(psk.k, psk_text, psk.len);
		if (gd_tagkey_derive(&tk, &psk, 1, "127.0.0.1:7001", 14) != 0)
			abort();
	}
	gd_sreader_init(&r, max_payload);
	have = size < step ? size : step;
	for (;;) {
		struct gd_sframe f;
		size_t used = 0, total = 0;
		int eof = have == size, k;

		k = gd_sreader_next(&r, data + start, have - start, eof, &f,
		    &used);
		if (k < 0) {
			if (r.err[0] == '\0')
				abort();
			break;
		}
		if (k == 0) {
			if (eof)
				break;	/* a clean end at a frame boundary */
			have = size - have < step ? size : have + step;
			continue;
		}
		if (used == 0 || used > have - start)
			abort();
		if (gd_stream_peek(data + start, have - start, r.max_payload,
		    &total) != 1 || total != used)
			abort();
		if (f.type != GD_SF_HEADER) {
			if (f.len > r.max_payload || f.origin_len == 0 ||
			    f.origin_len > GD_STREAM_ORIGIN_MAX)
				abort();
			if (gd_sframe_tsize(f.origin_len, f.len, f.tag_len) !=
			    used || (f.tag_len != 0 && (f.tag_len != GD_SFRAME_TAG ||
			    f.tag != f.data + f.len + f.origin_len)) ||
			    (f.tag_len == 0 && f.tag != NULL) ||
			    (r.version == GD_STREAM_VERSION && f.tag_len != 0) ||
			    (r.version == GD_STREAM_VERSION_TAGS &&
			    f.tag_len != GD_SFRAME_TAG))
				abort();
			if (gd_tag_check(&tk, &f) != 0 && f.tag_len == 0)
				abort();
			retag(&tk, &f, enc, sizeof(enc));
			if (used <= sizeof(enc) &&
			    (gd_sframe_put(enc, &f) != used ||
			    memcmp(enc, data + start, used) != 0))
				abort();
			if (f.type == GD_SF_BLOCK) {
				size_t olen;
				int snap;
				const char *o = gd_sframe_origin_of(f.data, f.len,
				    &olen, &snap);
				if (o != f.origin || olen != f.origin_len ||
				    snap != ((f.flags & GD_FL_SNAPSHOT) != 0))
					abort();
			}
		}
		start += used;
	}
	return 0;
}
