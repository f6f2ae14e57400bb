/* Armored frames (see armor.h): base64 in place both ways, so gdpub
 * armors a frame where it wrote it in the output buffer and gdsub decodes
 * a line where it was read, with no copy and no allocation per block; a
 * batch of frames is armored from gdpub's buffer of them. */
#include "armor.h"

#include <stdio.h>
#include <string.h>

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* 0..63 for a base64 digit, 64 for '=', 255 for anything else */
static inline uint8_t dig(uint8_t c)
{
	if (c >= 'A' && c <= 'Z')
		return (uint8_t)(c - 'A');
	if (c >= 'a' && c <= 'z')
		return (uint8_t)(c - 'a' + 26);
	if (c >= '0' && c <= '9')
		return (uint8_t)(c - '0' + 52);
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return c == '=' ? 64 : 255;
}

size_t gd_armor_line_max(uint32_t max_payload)
{
	size_t one;

	if (max_payload == 0 || max_payload > GD_STREAM_MAX_PAYLOAD)
		max_payload = GD_STREAM_MAX_PAYLOAD;
	one = gd_armor_size(gd_sframe_tsize(GD_STREAM_ORIGIN_MAX, max_payload,
	    GD_SFRAME_TAG));
	/* a reader with a small block limit still reads any batch; CR LF:
	 * a transport may end lines the DOS way */
	return (one > GD_ARMOR_BATCH_MAX ? one : GD_ARMOR_BATCH_MAX) + 1;
}

/* The 4 characters at o of the k (1..3) bytes at s; s may be o itself. */
static inline void group(uint8_t *o, const uint8_t *s, size_t k)
{
	uint32_t v = (uint32_t)s[0] << 16;

	if (k > 1)
		v |= (uint32_t)s[1] << 8;
	if (k > 2)
		v |= s[2];
	o[0] = (uint8_t)b64[v >> 18];
	o[1] = (uint8_t)b64[(v >> 12) & 63];
	o[2] = k > 1 ? (uint8_t)b64[(v >> 6) & 63] : '=';
	o[3] = k > 2 ? (uint8_t)b64[v & 63] : '=';
}

size_t gd_armor_in_place(uint8_t *dst, size_t n)
{
	uint8_t *src = dst + GD_ARMOR_PREFIX_LEN;
	size_t groups = (n + 2) / 3, g, total = gd_armor_size(n);

	/* Backwards: group g's 4 characters go at 4g, past its 3 bytes at 3g
	 * and past every earlier group's bytes, so nothing is overwritten
	 * before it is read (its own bytes are read first). */
	dst[total - 1] = '\n';
	for (g = groups; g-- > 0;) {
		size_t at = 3 * g;
		group(src + 4 * g, src + at, n - at < 3 ? n - at : 3);
	}
	memcpy(dst, GD_ARMOR_PREFIX, GD_ARMOR_PREFIX_LEN);
	return total;
}

size_t gd_armor_encode(uint8_t *dst, const uint8_t *src, size_t n)
{
	uint8_t *o = dst + GD_ARMOR_PREFIX_LEN;
	size_t at, total = gd_armor_size(n);

	memcpy(dst, GD_ARMOR_PREFIX, GD_ARMOR_PREFIX_LEN);
	for (at = 0; at < n; at += 3, o += 4)
		group(o, src + at, n - at < 3 ? n - at : 3);
	dst[total - 1] = '\n';
	return total;
}

int gd_armor_starts(const uint8_t *p, size_t n)
{
	size_t k = n < GD_ARMOR_PREFIX_LEN ? n : GD_ARMOR_PREFIX_LEN;

	if (memcmp(p, GD_ARMOR_PREFIX, k) != 0)
		return 0;
	return k == GD_ARMOR_PREFIX_LEN ? 1 : -1;
}

/* Base64 of s[0..n) decoded to s itself (the output never passes the
 * input); returns the decoded length, or -1 with why set. */
static long decode64(uint8_t *s, size_t n, const char **why)
{
	size_t i, o = 0;

	if (n % 4 != 0) {
		*why = "its base64 is not a multiple of 4 characters (a cut line)";
		return -1;
	}
	for (i = 0; i < n; i += 4) {
		uint8_t a = dig(s[i]), b = dig(s[i + 1]), c = dig(s[i + 2]),
		    d = dig(s[i + 3]);
		int last = i + 4 == n;

		if (a > 63 || b > 63 || c == 255 || d == 255) {
			*why = "a byte that is not base64";
			return -1;
		}
		if ((c == 64 || d == 64) && (!last || (c == 64 && d != 64))) {
			*why = "base64 padding before the end of the line";
			return -1;
		}
		s[o++] = (uint8_t)(a << 2 | b >> 4);
		if (c != 64)
			s[o++] = (uint8_t)(b << 4 | c >> 2);
		if (d != 64)
			s[o++] = (uint8_t)(c << 6 | d);
	}
	return (long)o;
}

int gd_armor_open(struct gd_armor_line *a, uint8_t *line, size_t len,
    uint32_t max_payload, char *err, size_t errsz)
{
	const char *why = NULL;
	long n;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len < GD_ARMOR_PREFIX_LEN ||
	    memcmp(line, GD_ARMOR_PREFIX, GD_ARMOR_PREFIX_LEN) != 0) {
		snprintf(err, errsz, "not an armored frame (no %s prefix)",
		    GD_ARMOR_PREFIX);
		return -1;
	}
	a->p = line + GD_ARMOR_PREFIX_LEN;
	if ((n = decode64(a->p, len - GD_ARMOR_PREFIX_LEN, &why)) < 0) {
		snprintf(err, errsz, "%s", why);
		return -1;
	}
	a->n = (size_t)n;
	a->off = 0;
	a->max_payload = max_payload;
	a->frames = 0;
	if (a->n == 0) {
		snprintf(err, errsz, "0 bytes that are not a frame (a cut or "
		    "damaged line)");
		return -1;
	}
	return 0;
}

int gd_armor_next(struct gd_armor_line *a, struct gd_sframe *f, char *err,
    size_t errsz)
{
	struct gd_sreader r;
	size_t rest = a->n - a->off, used;
	char nth[64] = "";

	if (rest == 0)
		return 0;
	if (a->frames > 0)	/* a line of one frame reads as it always did */
		snprintf(nth, sizeof(nth), "frame %u of the line, after %u good: ",
		    a->frames + 1, a->frames);
	if (rest < GD_SFRAME_HDR + GD_SFRAME_TRAILER + 1 || a->p[a->off] != 'g') {
		snprintf(err, errsz, "%s%zu bytes that are not a frame (a cut or "
		    "damaged line)", nth, rest);
		return -1;
	}
	gd_sreader_init(&r, a->max_payload);
	r.started = 1;	/* each line stands alone: no stream header */
	if (gd_sreader_next(&r, a->p + a->off, rest, 1, f, &used) != 1) {
		snprintf(err, errsz, "%s%s", nth, r.err + r.why);
		return -1;
	}
	a->off += used;
	a->frames++;
	return 1;
}

int gd_armor_decode(uint8_t *line, size_t len, uint32_t max_payload,
    struct gd_sframe *f, char *err, size_t errsz)
{
	struct gd_armor_line a;

	if (gd_armor_open(&a, line, len, max_payload, err, errsz) != 0 ||
	    gd_armor_next(&a, f, err, errsz) != 1)
		return -1;
	if (a.off != a.n) {
		snprintf(err, errsz, "%zu bytes after its frame", a.n - a.off);
		return -1;
	}
	return 0;
}
