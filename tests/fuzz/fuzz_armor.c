/* Armored lines (lib/armor.c, gdkit-stream(5) ARMORED LINES), as gdsub -i
 * and gdinspect decode read them: the bytes after a 2-byte prefix are one
 * line (without its newline) of one or more frames, read with a payload
 * limit the prefix picks. Checks: every frame returned lies inside the
 * decoded line, within the limit, and encodes back to the very bytes it
 * came from; the frames end exactly at the line's end when the reader says
 * 0; the good frames before a bad one, armored again as a line of their
 * own, read back as the same frames and nothing more; gd_armor_decode
 * agrees (one frame exactly, or an error). */
#include "fuzz.h"
#include "armor.h"
#include "stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gd_armor_line a;
	struct gd_sframe f;
	char err[200];
	uint8_t *line, *again, *enc;
	uint32_t max_payload;
	size_t n, good = 0, L;
	unsigned frames = 0;
	int k;

	if (size < 2)
		return 0;
	max_payload = (uint32_t)(data[0] | data[1] << 8);	/* 0: the format's */
	data += 2;
	size -= 2;
	if ((line = malloc(size ? size : 1)) == NULL)
		abort();
	memcpy(line, data, size);
	if (gd_armor_open(&a, line, size, max_payload, err, sizeof(err)) != 0) {
		if (err[0] == '\0')
			abort();
		free(line);
		return 0;
	}
	n = a.n;
	if ((enc = malloc(n)) == NULL)
		abort();
	while ((k = gd_armor_next(&a, &f, err, sizeof(err))) == 1) {
		size_t fs = gd_sframe_tsize(f.origin_len, f.len, f.tag_len);
		if (a.off != good + fs || a.off > n || a.frames != ++frames)
			abort();
		if (max_payload && f.len > max_payload)
			abort();
		if (f.type == GD_SF_HEADER || f.origin_len == 0 ||
		    f.origin_len > GD_STREAM_ORIGIN_MAX)
			abort();
		if (gd_sframe_put(enc, &f) != fs ||
		    memcmp(enc, a.p + good, fs) != 0)
			abort();
		good = a.off;
	}
	if ((k == 0) != (good == n) || (k < 0 && err[0] == '\0'))
		abort();
	/* the good frames alone make a line that reads back the same */
	if (good > 0) {
		struct gd_armor_line b;
		memcpy(enc, a.p, good);
		if ((again = malloc(gd_armor_size(good))) == NULL)
			abort();
		L = gd_armor_encode(again, enc, good);
		if (L != gd_armor_size(good) || again[L - 1] != '\n' ||
		    gd_armor_open(&b, again, L - 1, max_payload, err,
		    sizeof(err)) != 0 || b.n != good ||
		    memcmp(b.p, enc, good) != 0)
			abort();
		while ((k = gd_armor_next(&b, &f, err, sizeof(err))) == 1)
			;
		if (k != 0 || b.frames != frames)
			abort();
		free(again);
	}
	/* gd_armor_decode: exactly one frame, or an error */
	memcpy(line, data, size);
	if ((gd_armor_decode(line, size, max_payload, &f, err,
	    sizeof(err)) == 0) != (frames == 1 && good == n))
		abort();
	free(enc);
	free(line);
	return 0;
}
