/* One string hash for the tables and names that need one (FNV-1a, 64
 * bits): the control socket's name, measure's key sets, the sink's keys. */
#ifndef GD_HASH_H
#define GD_HASH_H

#include <stddef.h>
#include <stdint.h>

#define GD_FNV1A_INIT 0xcbf29ce484222325ull

/* h, the hash of what came before, continued over p: a string hashed in
 * pieces as if whole */
static inline uint64_t gd_fnv1a_more(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	while (n-- > 0) {
		h ^= *s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

static inline uint64_t gd_fnv1a(const void *p, size_t n)
{
	return gd_fnv1a_more(GD_FNV1A_INIT, p, n);
}

#endif
