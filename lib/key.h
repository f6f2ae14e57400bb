/* Block keys: HOST:PORT/ID, [V6]:PORT/ID or @CLUSTER/ID, optionally
 * followed by /FLAGS (r resent, s snapshot) as gdsub writes them. */
#ifndef GD_KEY_H
#define GD_KEY_H

#include <stddef.h>
#include <stdint.h>

#define GD_KEY_MAX 512

/* Split KEY[/FLAGS]: *origin_len is the length of the origin part, *id the
 * ID, *flags GD_FL_* bits. 0 on success, -1 if malformed. */
int gd_key_parse(const char *key, size_t len, size_t *origin_len,
    uint64_t *id, int *flags);
/* The same split when the origin is known to be key[0 .. olen): 0 when
 * key[olen ..] is "/ID" or "/ID/FLAGS" (then gd_key_parse gives this
 * olen, id and flags too), else -1 (gd_key_parse decides). */
int gd_key_parse_at(const char *key, size_t len, size_t olen,
    uint64_t *id, int *flags);

#endif
