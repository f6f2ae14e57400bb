/* Armored frames (see armor.h): base64 in place both ways, so gdpub
 * armors a frame where it wrote it in the output buffer and gdsub decodes
 * a line where it was read, with no copy and no allocation per block. */
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
	if (max_payload == 0 || max_payload > GD_STREAM_MAX_PAYLOAD)
		max_payload = GD_STREAM_MAX_PAYLOAD;
	/* CR LF: a transport may end lines the DOS way */
	return gd_armor_size(gd_sframe_tsize(GD_STREAM_ORIGIN_MAX,
	    max_payload, GD_SFRAME_TAG)) + 1;
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
		size_t at = 3 * g, k = n - at < 3 ? n - at : 3;
		uint32_t v = (uint32_t)src[at] << 16;
		uint8_t *o = src + 4 * g;

		if (k > 1)
			v |= (uint32_t)src[at + 1] << 8;
		if (k > 2)
			v |= src[at + 2];
		o[0] = (uint8_t)b64[v >> 18];
		o[1] = (uint8_t)b64[(v >> 12) & 63];
		o[2] = k > 1 ? (uint8_t)b64[(v >> 6) & 63] : '=';
		o[3] = k > 2 ? (uint8_t)b64[v & 63] : '=';
	}
	memcpy(dst, GD_ARMOR_PREFIX, GD_ARMOR_PREFIX_LEN);
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

int gd_armor_decode(uint8_t *line, size_t len, uint32_t max_payload,
    struct gd_sframe *f, char *err, size_t errsz)
{
	struct gd_sreader r;
	const char *why = NULL;
	uint8_t *body = line + GD_ARMOR_PREFIX_LEN;
	size_t used;
	long n;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len < GD_ARMOR_PREFIX_LEN ||
	    memcmp(line, GD_ARMOR_PREFIX, GD_ARMOR_PREFIX_LEN) != 0) {
		snprintf(err, errsz, "not an armored frame (no %s prefix)",
		    GD_ARMOR_PREFIX);
		return -1;
	}
	if ((n = decode64(body, len - GD_ARMOR_PREFIX_LEN, &why)) < 0) {
		snprintf(err, errsz, "%s", why);
		return -1;
	}
	if (n < GD_SFRAME_HDR + GD_SFRAME_TRAILER + 1 || body[0] != 'g') {
		snprintf(err, errsz, "%ld bytes that are not a frame (a cut or "
		    "damaged line)", n);
		return -1;
	}
	gd_sreader_init(&r, max_payload);
	r.started = 1;	/* each line is a frame of its own */
	if (gd_sreader_next(&r, body, (size_t)n, 1, f, &used) != 1) {
		snprintf(err, errsz, "%s", r.err + r.why);
		return -1;
	}
	if (used != (size_t)n) {
		snprintf(err, errsz, "%zu bytes after its frame",
		    (size_t)n - used);
		return -1;
	}
	return 0;
}
