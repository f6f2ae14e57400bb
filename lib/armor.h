/* Armored frames (gdkit-stream(5), ARMORED LINES): one frame of the framed
 * stream as one self-contained text line, so that line-oriented engines
 * (mosquitto_pub -l, kcat -P, nats pub) carry it unchanged:
 *
 *   GDK1:<base64 of the whole frame, CRC32C included>\n
 *
 * Standard base64 (RFC 4648 section 4, '+' '/' and '=' padding), no line
 * breaks inside. No stream header is needed: every line decodes alone, so
 * lines of several publishers may be interleaved, and an engine may drop,
 * repeat or reorder them. A reader tells an armored input from a binary
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

/* The longest line a reader accepts for payloads up to max_payload (the
 * armor of a frame with that payload, the longest origin and a tag, CR
 * LF). */
size_t gd_armor_line_max(uint32_t max_payload);

/* Armor the frame that sits at dst + GD_ARMOR_PREFIX_LEN (n bytes, as
 * gd_sframe_put wrote it there) in place: dst must have gd_armor_size(n)
 * bytes. Returns that size. */
size_t gd_armor_in_place(uint8_t *dst, size_t n);

/* 1 when p[0..n) can start an armored input, 0 when it cannot, -1 when
 * more bytes are needed to tell (n shorter than the prefix, all matching). */
int gd_armor_starts(const uint8_t *p, size_t n);

/* Decode one line (without its '\n'; a final '\r' is allowed) in place
 * and check its frame: 0 with *f pointing into line, or -1 with why set
 * to a static or err-held reason. The frame may be a block, floor or end
 * frame whose payload is at most max_payload bytes. */
int gd_armor_decode(uint8_t *line, size_t len, uint32_t max_payload,
    struct gd_sframe *f, char *err, size_t errsz);

#endif
