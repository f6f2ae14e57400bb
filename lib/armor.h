/* Armored frames (gdkit-stream(5), ARMORED LINES): one or more whole
 * frames of the framed stream as one self-contained text line, so that
 * line-oriented engines (mosquitto_pub -l, kcat -P, nats pub) carry them
 * unchanged:
 *
 *   GDK1:<base64 of the frames one after the other, CRC32C included>\n
 *
 * Standard base64 (RFC 4648 section 4, '+' '/' and '=' padding), no line
 * breaks inside. No stream header is needed: every line decodes alone, so
 * lines of several publishers may be interleaved, and an engine may drop,
 * repeat or reorder them. Several frames a line (gdpub --armor-batch)
 * because an engine's cost is per message, not per byte; a line of one
 * frame is the same format. A reader tells an armored input from a binary
 * stream by its first bytes: the prefix here, the stream header's 0x89
 * there. A reader also accepts CR LF at the end of a line. */
#ifndef GD_ARMOR_H
#define GD_ARMOR_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

#define GD_ARMOR_PREFIX "GDK1:"
#define GD_ARMOR_PREFIX_LEN 5
/* A reader's bound on an armored frame's payload unless told otherwise:
 * GDpub_maxBlockSize's default, so what a default gdpub writes is read. */
#define GD_ARMOR_MAX_PAYLOAD 1048576u

/* The armored line of a frame of n bytes, newline included. */
static inline size_t gd_armor_size(size_t n)
{
	return GD_ARMOR_PREFIX_LEN + (n + 2) / 3 * 4 + 1;
}

/* gdpub --armor-batch: the longest line of several frames, newline
 * included (a frame longer than the batch has a line of its own), and the
 * default, chosen by measurement through mosquitto (gdkit(7)). */
#define GD_ARMOR_BATCH_MAX 1048576u
#define GD_ARMOR_BATCH_DEFAULT 65536u

/* The frame bytes a line of at most batch bytes carries: 0 when not even
 * one byte fits. */
static inline size_t gd_armor_batch_room(size_t batch)
{
	return batch < GD_ARMOR_PREFIX_LEN + 1 ? 0 :
	    (batch - GD_ARMOR_PREFIX_LEN - 1) / 4 * 3;
}

/* The longest line a reader accepts for payloads up to max_payload (the
 * armor of a frame with that payload, the longest origin and a tag, or
 * the longest batch if longer, CR LF). */
size_t gd_armor_line_max(uint32_t max_payload);

/* Armor the frame that sits at dst + GD_ARMOR_PREFIX_LEN (n bytes, as
 * gd_sframe_put wrote it there) in place: dst must have gd_armor_size(n)
 * bytes. Returns that size. */
size_t gd_armor_in_place(uint8_t *dst, size_t n);

/* Armor the n frame bytes at src (not overlapping dst) into dst, which
 * must have gd_armor_size(n) bytes. Returns that size. */
size_t gd_armor_encode(uint8_t *dst, const uint8_t *src, size_t n);

/* 1 when p[0..n) can start an armored input, 0 when it cannot, -1 when
 * more bytes are needed to tell (n shorter than the prefix, all matching). */
int gd_armor_starts(const uint8_t *p, size_t n);

/* A line's frames, one by one: gd_armor_open decodes the line (without
 * its '\n'; a final '\r' is allowed) in place, gd_armor_next checks and
 * returns its frames in order. Frames may be blocks, floors or ends whose
 * payload is at most max_payload bytes. */
struct gd_armor_line {
	uint8_t *p;		/* the decoded bytes, inside the line */
	size_t n, off;		/* their length, the next frame's offset */
	uint32_t max_payload;
	unsigned frames;	/* returned so far */
};

/* 0, or -1 with err set: not armored, not base64, or no frame at all. */
int gd_armor_open(struct gd_armor_line *a, uint8_t *line, size_t len,
    uint32_t max_payload, char *err, size_t errsz);
/* 1 with *f pointing into the line, 0 after the last frame, -1 with err
 * set when the rest of the line is not a frame (the frames returned
 * before it passed every check, CRC32C included, and stay good). */
int gd_armor_next(struct gd_armor_line *a, struct gd_sframe *f, char *err,
    size_t errsz);

/* A line that must hold exactly one frame: 0 with *f, or -1 with err. */
int gd_armor_decode(uint8_t *line, size_t len, uint32_t max_payload,
    struct gd_sframe *f, char *err, size_t errsz);

#endif
