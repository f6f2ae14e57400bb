/* gdinspect's offline readers: decode, a framed block stream
 * (gdkit-stream(5)) as one readable line, or one JSON object, per frame;
 * journal, what a gdpub journal holds pending. */
#ifndef GD_DECODE_H
#define GD_DECODE_H

#include <stddef.h>
#include <stdint.h>

#define GD_DECODE_PREVIEW 64	/* payload bytes shown per block */

/* Decode the file at path (NULL or "-": standard input) to standard
 * output, a binary stream or armored lines (told by the first bytes).
 * max_payload bounds a frame's payload, 0 the defaults (2^30 binary,
 * GD_ARMOR_MAX_PAYLOAD armored). Returns an exit code: 0, GD_EX_DATAERR
 * (a corrupt stream, or a file that cannot be opened or read; the frames
 * before the damage are printed; or bad armored lines, skipped) or
 * GD_EX_FAIL (out of memory, standard output unwritable). */
int gd_decode_file(const char *path, int json, uint32_t max_payload);

/* gdinspect journal: the blocks pending in a gdpub journal, one line or
 * one JSON object each, in sequence order. Returns 0, or GD_EX_IOERR (the
 * file cannot be read, is not a journal, or is corrupt before its end; a
 * torn tail is a warning) or GD_EX_FAIL (standard output unwritable). */
int gd_journal_dump(const char *path, int json);

/* The first min(n, max) bytes of p, C-escaped into dst (at least 4 * max
 * + 1 bytes): printable ASCII as is but backslash and double quote, then
 * \0 \t \n \r \\ \" and \xNN (two lower-case hex digits) for the rest.
 * Returns the length written (dst is NUL-terminated). */
size_t gd_escape_preview(char *dst, const uint8_t *p, size_t n, size_t max);

#endif
