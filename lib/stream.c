/* The framed block stream (see stream.h and gdkit-stream(5)). */
#include "stream.h"
#include "wire.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const uint8_t magic[8] = { 0x89, 'G', 'D', 'K', 0x0d, 0x0a, 0x1a, 0x0a };

/* ---- CRC32C (Castagnoli, reflected 0x82F63B78) ---- */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* GD_CRC_NO_HW builds the table code alone (tests/unit/test_crc_soft.c
 * checks it on machines whose CPU would take the SSE4.2 path). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(GD_CRC_NO_HW)
#define GD_CRC_HW 1
#endif

#ifdef GD_CRC_HW
static int crc_hw;

__attribute__((target("sse4.2")))
static uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t n)
{
	uint64_t c = crc;

	while (n > 0 && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		n--;
	}
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		n -= 8;
	}
	while (n-- > 0)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

static void crc_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			crc_tab[j][i] = (crc_tab[j - 1][i] >> 8) ^
			    crc_tab[0][crc_tab[j - 1][i] & 0xff];
#ifdef GD_CRC_HW
	__builtin_cpu_init();
	crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

uint32_t gd_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c;

	pthread_once(&crc_once, crc_init);
	c = ~crc;
#ifdef GD_CRC_HW
	if (crc_hw)
		return ~crc_sse42(c, p, len);
#endif
	while (len >= 8) {	/* slicing by 8 */
		uint32_t lo = c ^ gd_get32(p), hi = gd_get32(p + 4);
		c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xff];
	return ~c;
}

/* ---- writing ---- */

size_t gd_stream_header_v(uint8_t *dst, unsigned version)
{
	memcpy(dst, magic, 8);
	dst[8] = (uint8_t)version;
	dst[9] = (uint8_t)(version >> 8);
	dst[10] = GD_STREAM_HDR;
	dst[11] = 0;
	gd_put32(dst + 12, gd_crc32c(0, dst, 12));
	return GD_STREAM_HDR;
}

size_t gd_stream_header(uint8_t *dst)
{
	return gd_stream_header_v(dst, GD_STREAM_VERSION);
}

static void sframe_hdr(uint8_t *dst, const struct gd_sframe *f)
{
	dst[0] = 'g';
	dst[1] = 'f';
	dst[2] = f->type;
	dst[3] = f->flags;
	dst[4] = (uint8_t)f->origin_len;
	dst[5] = (uint8_t)(f->origin_len >> 8);
	dst[6] = f->tag_len;
	dst[7] = 0;
	gd_put32(dst + 8, f->len);
	gd_put64(dst + 12, f->id);
	gd_put64(dst + 20, f->seq);
	gd_put64(dst + 28, f->time_ns);
	gd_put64(dst + 36, f->epoch);
}

size_t gd_sframe_put_body(uint8_t *dst, const struct gd_sframe *f)
{
	size_t n = GD_SFRAME_HDR;

	sframe_hdr(dst, f);
	if (f->len)
		memcpy(dst + n, f->data, f->len);
	n += f->len;
	memcpy(dst + n, f->origin, f->origin_len);
	return n + f->origin_len;
}

size_t gd_sframe_put(uint8_t *dst, const struct gd_sframe *f)
{
	size_t n = gd_sframe_put_body(dst, f);

	if (f->tag_len) {
		memcpy(dst + n, f->tag, f->tag_len);
		n += f->tag_len;
	}
	gd_put32(dst + n, gd_crc32c(0, dst, n));
	return n + GD_SFRAME_TRAILER;
}

/* ---- reading ---- */

int gd_stream_peek(const uint8_t *p, size_t n, uint32_t max_payload,
    size_t *total)
{
	size_t olen;
	uint32_t plen;

	if (n == 0)
		return 0;
	if (p[0] == magic[0]) {
		*total = GD_STREAM_HDR;
		return 1;
	}
	if (p[0] != 'g' || (n > 1 && p[1] != 'f'))
		return -1;
	if (n < 12)
		return 0;
	olen = (size_t)p[4] | (size_t)p[5] << 8;
	plen = gd_get32(p + 8);
	if (olen == 0 || olen > GD_STREAM_ORIGIN_MAX || plen > max_payload ||
	    (p[6] != 0 && p[6] != GD_SFRAME_TAG))
		return -1;
	*total = gd_sframe_tsize(olen, plen, p[6]);
	return 1;
}

void gd_sreader_init(struct gd_sreader *r, uint32_t max_payload)
{
	memset(r, 0, sizeof(*r));
	/* no frame may be larger than the format allows, whatever asked */
	r->max_payload = max_payload && max_payload < GD_STREAM_MAX_PAYLOAD ?
	    max_payload : GD_STREAM_MAX_PAYLOAD;
}

static int fail(struct gd_sreader *r, uint64_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct gd_sreader *r, uint64_t at, const char *fmt, ...)
{
	char why[160];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	n = snprintf(r->err, sizeof(r->err), "corrupt stream at byte offset %"
	    PRIu64 ": ", at);
	r->why = n > 0 && (size_t)n < sizeof(r->err) ? (size_t)n : 0;
	snprintf(r->err + r->why, sizeof(r->err) - r->why, "%s", why);
	return -1;
}

static int header(struct gd_sreader *r, const uint8_t *b, size_t len,
    int eof, struct gd_sframe *f, size_t *used)
{
	unsigned ver, hsz;

	if (len < GD_STREAM_HDR) {
		/* only the magic is known before all 16 bytes are here */
		if (memcmp(b, magic, len < 8 ? len : 8) != 0)
			return fail(r, r->off, "not a gdkit stream header");
		if (!eof)
			return 0;
		return fail(r, r->off, "truncated stream header: %zu of %d bytes",
		    len, GD_STREAM_HDR);
	}
	if (memcmp(b, magic, 8) != 0)
		return fail(r, r->off, "not a gdkit stream header");
	ver = (unsigned)b[8] | (unsigned)b[9] << 8;
	hsz = (unsigned)b[10] | (unsigned)b[11] << 8;
	if (gd_get32(b + 12) != gd_crc32c(0, b, 12))
		return fail(r, r->off, "stream header CRC32C mismatch");
	if (ver != GD_STREAM_VERSION && ver != GD_STREAM_VERSION_TAGS)
		return fail(r, r->off, "stream version %u is not supported "
		    "(this reader knows versions %d and %d)", ver,
		    GD_STREAM_VERSION, GD_STREAM_VERSION_TAGS);
	if (hsz != GD_STREAM_HDR)
		return fail(r, r->off, "stream header size %u is not %d for "
		    "version %u", hsz, GD_STREAM_HDR, ver);
	memset(f, 0, sizeof(*f));
	f->type = GD_SF_HEADER;
	*used = GD_STREAM_HDR;
	r->started = 1;
	r->version = ver;
	r->off += GD_STREAM_HDR;
	return 1;
}

int gd_sreader_next(struct gd_sreader *r, const uint8_t *b, size_t len,
    int eof, struct gd_sframe *f, size_t *used)
{
	size_t olen, total, i;
	uint32_t plen;
	unsigned tlen;

	if (len == 0)
		return 0;
	if (b[0] == magic[0])
		return header(r, b, len, eof, f, used);
	if (!r->started)
		return fail(r, r->off, "no stream header: the input is not a "
		    "gdkit stream, or starts in the middle of one");
	if (b[0] != 'g' || (len > 1 && b[1] != 'f')) {
		if (len == 1)	/* the last byte of the input */
			return fail(r, r->off, "garbage where a frame should "
			    "start (byte %02x)", b[0]);
		return fail(r, r->off, "garbage where a frame should start "
		    "(bytes %02x %02x)", b[0], b[1]);
	}
	if (len < GD_SFRAME_HDR) {
		if (eof)
			return fail(r, r->off, "truncated frame header: %zu of "
			    "%d bytes", len, GD_SFRAME_HDR);
		return 0;
	}
	f->type = b[2];
	f->flags = b[3];
	olen = (size_t)b[4] | (size_t)b[5] << 8;
	plen = gd_get32(b + 8);
	tlen = b[6];
	if (f->type < GD_SF_BLOCK || f->type > GD_SF_END)
		return fail(r, r->off, "unknown frame type %u", f->type);
	/* in a version 1 stream the tag length is a reserved byte */
	if ((f->type == GD_SF_BLOCK && (f->flags & ~3u)) ||
	    (f->type != GD_SF_BLOCK && f->flags) || b[7] ||
	    (r->version == GD_STREAM_VERSION && tlen))
		return fail(r, r->off, "reserved bits set in the frame header");
	if (r->version == GD_STREAM_VERSION_TAGS && tlen != GD_SFRAME_TAG)
		return fail(r, r->off, "tag length %u in a version %d stream, "
		    "whose frames carry a %d-byte tag", tlen,
		    GD_STREAM_VERSION_TAGS, GD_SFRAME_TAG);
	if (tlen != 0 && tlen != GD_SFRAME_TAG)
		return fail(r, r->off, "tag length %u is neither 0 nor %d", tlen,
		    GD_SFRAME_TAG);
	if (olen == 0 || olen > GD_STREAM_ORIGIN_MAX)
		return fail(r, r->off, "origin length %zu is outside 1..%d",
		    olen, GD_STREAM_ORIGIN_MAX);
	if (plen > r->max_payload) {
		r->over_limit = 1;
		return fail(r, r->off, "frame payload of %" PRIu32 " bytes is "
		    "over the limit of %" PRIu32, plen, r->max_payload);
	}
	if (f->type != GD_SF_BLOCK && plen != 0)
		return fail(r, r->off, "a frame of type %u carries a payload",
		    f->type);
	total = gd_sframe_tsize(olen, plen, tlen);
	if (len < total) {
		if (eof)
			return fail(r, r->off, "truncated frame: %zu of %zu bytes",
			    len, total);
		return 0;
	}
	if (gd_get32(b + total - 4) != gd_crc32c(0, b, total - 4))
		return fail(r, r->off, "frame CRC32C mismatch (header or "
		    "payload damaged)");
	f->len = plen;
	f->data = b + GD_SFRAME_HDR;
	f->origin = (const char *)b + GD_SFRAME_HDR + plen;
	f->origin_len = olen;
	f->tag_len = (uint8_t)tlen;
	f->tag = tlen ? b + GD_SFRAME_HDR + plen + olen : NULL;
	for (i = 0; i < olen; i++)
		if (f->origin[i] <= ' ' || f->origin[i] == '/' ||
		    (unsigned char)f->origin[i] > '~')
			return fail(r, r->off, "origin has a byte that cannot be "
			    "in HOST:PORT (0x%02x)", (unsigned char)f->origin[i]);
	f->id = gd_get64(b + 12);
	f->seq = gd_get64(b + 20);
	f->time_ns = gd_get64(b + 28);
	f->epoch = gd_get64(b + 36);
	*used = total;
	r->off += total;
	r->frames++;
	if (f->type == GD_SF_BLOCK)
		r->blocks++;
	return 1;
}
