/* One string hash for the tables and names that need one (FNV-1a, 64
 * bits): the control socket's name, measure's key sets, the sink's keys. */
#ifndef GD_HASH_H
#define GD_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t gd_fnv1a(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;

	while (n-- > 0) {
		h ^= *s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

#endif
