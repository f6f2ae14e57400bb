/* The framed block stream (gdkit-stream(5)): what gdpub -o and gdsub -f
 * frame write, and gdsub -i, gdpub -f frame, gdack -f frame and gdinspect
 * decode read. A 16-byte stream header, then frames; every frame carries
 * its origin, so streams from several publishers can be merged and still
 * be acknowledged. Little-endian throughout.
 *
 *   stream header: magic 89 'G' 'D' 'K' 0D 0A 1A 0A, u16 version (1, or
 *                  2 when every frame carries a tag), u16 header size
 *                  (16), u32 CRC32C of bytes 0..11
 *   frame:  0  u8[2] sync 'g' 'f'
 *           2  u8  type (1 block, 2 floor, 3 end)
 *           3  u8  flags (block: 1 resent, 2 snapshot; others 0)
 *           4  u16 origin length (1..GD_STREAM_ORIGIN_MAX)
 *           6  u8  tag length: 0, or GD_SFRAME_TAG (a version 1 stream:
 *                  reserved, 0)
 *           7  u8  reserved, 0
 *           8  u32 payload length (0 unless a block)
 *          12  u64 id          20 u64 sequence index (floor: the floor)
 *          28  u64 time_ns     36 u64 epoch of the publisher's run
 *          44  payload, then origin ("HOST:PORT" or "@CLUSTER")
 *          ..  the tag (tag.h), if any
 *          ..  u32 CRC32C of every byte of the frame before it
 *
 * The payload comes right after the fixed header so a block kept in its
 * input buffer finds its header at data - GD_SFRAME_HDR; the tag sits
 * behind the origin so that this holds with or without one. */
#ifndef GD_STREAM_H
#define GD_STREAM_H

#include <stddef.h>
#include <stdint.h>

#define GD_STREAM_VERSION 1	/* frames without tags */
#define GD_STREAM_VERSION_TAGS 2	/* every frame carries a tag */
#define GD_STREAM_HDR 16
#define GD_SFRAME_HDR 44
#define GD_SFRAME_TRAILER 4
#define GD_SFRAME_TAG 16	/* bytes of a frame's tag (tag.h) */
#define GD_STREAM_ORIGIN_MAX 300
#define GD_STREAM_MAX_PAYLOAD (1u << 30)	/* GDpub_maxBlockSize's bound */

enum gd_sftype {
	GD_SF_HEADER = 0,	/* a stream header (returned so offsets add up) */
	GD_SF_BLOCK = 1,
	GD_SF_FLOOR = 2,	/* every sequence index below seq is resolved */
	GD_SF_END = 3,		/* the publisher's stream ended */
};

struct gd_sframe {
	uint8_t type, flags;
	uint64_t id, seq, time_ns, epoch;
	const char *origin;
	size_t origin_len;
	const uint8_t *data;
	uint32_t len;
	/* last, so that positional initialisers leave a frame untagged */
	const uint8_t *tag;	/* tag_len bytes; in place when read */
	uint8_t tag_len;	/* 0 or GD_SFRAME_TAG */
};

uint32_t gd_crc32c(uint32_t crc, const void *buf, size_t len);

/* The stream header (version 1); returns GD_STREAM_HDR. */
size_t gd_stream_header(uint8_t *dst);
/* The stream header of version (GD_STREAM_VERSION_TAGS for a writer whose
 * frames carry tags); returns GD_STREAM_HDR. */
size_t gd_stream_header_v(uint8_t *dst, unsigned version);
/* The size of an untagged frame. */
static inline size_t gd_sframe_size(size_t origin_len, size_t len)
{
	return GD_SFRAME_HDR + len + origin_len + GD_SFRAME_TRAILER;
}
/* The size of a frame with a tag of tag_len bytes (0 or GD_SFRAME_TAG). */
static inline size_t gd_sframe_tsize(size_t origin_len, size_t len,
    size_t tag_len)
{
	return gd_sframe_size(origin_len, len) + tag_len;
}
/* Encode f's header, payload and origin at dst, the bytes its tag
 * (tag.h) covers; returns their count. */
size_t gd_sframe_put_body(uint8_t *dst, const struct gd_sframe *f);
/* Encode f at dst (gd_sframe_tsize bytes), with its tag when f->tag_len;
 * returns the size. */
size_t gd_sframe_put(uint8_t *dst, const struct gd_sframe *f);

/* How long the frame (or stream header) at p is, from its first bytes:
 * 1 with *total set, 0 when more bytes are needed, -1 when p cannot start
 * a frame. Checks only what fixes the length; gd_sreader_next checks all. */
int gd_stream_peek(const uint8_t *p, size_t n, uint32_t max_payload,
    size_t *total);

/* Incremental reader: validates the header, every frame and its CRC, and
 * keeps the stream offset for messages. */
struct gd_sreader {
	uint64_t off;		/* stream offset of the next byte to parse */
	uint32_t max_payload;
	int started;		/* a stream header was seen */
	/* of the latest stream header: 1, frames carry no tag; 2, every
	 * frame carries one; 0, no header (an armored line): either */
	unsigned version;
	uint64_t frames, blocks;
	int over_limit;		/* the last call failed on max_payload */
	char err[200];		/* why the last call failed */
	size_t why;		/* where in err the reason starts, past the offset */
};

void gd_sreader_init(struct gd_sreader *r, uint32_t max_payload);
/* Next frame in buf[0..len): 1 with *f and *used (the offset advances),
 * 0 when more bytes are needed (never when eof: a partial frame is then
 * a truncated stream), -1 when the stream is corrupt (r->err says where
 * and why; nothing at or after that offset may be used). */
int gd_sreader_next(struct gd_sreader *r, const uint8_t *buf, size_t len,
    int eof, struct gd_sframe *f, size_t *used);

/* The origin (and the snapshot flag) of a block whose payload is at data
 * and was read by gd_sreader_next in place, for status lines. */
static inline const char *gd_sframe_origin_of(const uint8_t *data,
    uint32_t len, size_t *olen, int *snapshot)
{
	const uint8_t *h = data - GD_SFRAME_HDR;
	*olen = (size_t)h[4] | (size_t)h[5] << 8;
	*snapshot = (h[3] & 2) != 0;
	return (const char *)data + len;
}

#endif
