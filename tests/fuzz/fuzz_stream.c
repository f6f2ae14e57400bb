/* The framed block stream reader (lib/stream.c, gdkit-stream(5)): the
 * bytes after a 5-byte prefix are a stream, read as gdsub -i and gdpub
 * -f frame do, in pieces of a size the prefix picks, with the reader's
 * payload limit from the prefix too. Checks: a frame accepted agrees with
 * gd_stream_peek about its size, stays inside the input, carries a
 * payload within the limit; re-encoding it gives the very same bytes; and
 * after -1 nothing more is read. */
#include "fuzz.h"
#include "stream.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t enc[GD_SFRAME_HDR + (1u << 16) + GD_STREAM_ORIGIN_MAX +
	    GD_SFRAME_TRAILER];
	struct gd_sreader r;
	uint32_t max_payload;
	size_t start = 0, have, step;

	if (size < 5)
		return 0;
	max_payload = gd_get32(data) % (1u << 16);	/* 0: the format's bound */
	step = 1 + data[4] % 128;
	data += 5;
	size -= 5;
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
			if (gd_sframe_size(f.origin_len, f.len) != used)
				abort();
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
