/* Capped doubling of a typed array (see grow.h). The pointer goes in and
 * out through memcpy: the caller's array is of its own type, and writing
 * it as a void * would be an access through another type. */
#include "grow.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROW_FIRST 16

int gd_grow_slow(void **base, size_t *cap, size_t need, size_t elem,
    size_t max)
{
	size_t n;
	void *b, *nb;

	if (elem == 0)
		return -1;
	if (max > SIZE_MAX / elem)
		max = SIZE_MAX / elem;
	if (need <= *cap)
		return 0;
	if (need > max)
		return -1;
	n = *cap >= GROW_FIRST ? *cap : GROW_FIRST;
	while (n < need)
		n = n > max / 2 ? max : n * 2;
	if (n > max)
		n = max;
	memcpy(&b, base, sizeof(b));
	if ((nb = realloc(b, n * elem)) == NULL)
		return -1;
	memcpy(base, &nb, sizeof(nb));
	*cap = n;
	return 0;
}

const char *gd_grow_why(size_t have, size_t max, char *buf, size_t size)
{
	if (have >= max)
		snprintf(buf, size, "%zu waiting already", max);
	else
		snprintf(buf, size, "out of memory");
	return buf;
}
