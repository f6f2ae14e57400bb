/* Key parsing shared by gdsub (acks from gdack) and gdack (its input). */
#define _GNU_SOURCE	/* memrchr */
#include "key.h"
#include "parse.h"
#include "wire.h"

#include <string.h>

static int parse_flags(const char *s, size_t n, int *flags)
{
	size_t i;
	*flags = 0;
	if (n == 0 || n > 2)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] == 'r')
			*flags |= GD_FL_RESENT;
		else if (s[i] == 's')
			*flags |= GD_FL_SNAPSHOT;
		else
			return -1;
	}
	return 0;
}

int gd_key_parse(const char *key, size_t len, size_t *origin_len,
    uint64_t *id, int *flags)
{
	const char *slash, *end = key + len;
	int fl = 0;

	if (len == 0 || len > GD_KEY_MAX)
		return -1;
	slash = memrchr(key, '/', len);
	if (slash == NULL)
		return -1;
	if (parse_flags(slash + 1, (size_t)(end - slash - 1), &fl) == 0) {
		end = slash;
		slash = memrchr(key, '/', (size_t)(end - key));
		if (slash == NULL)
			return -1;
	}
	if (slash == key ||
	    gd_parse_u64n(slash + 1, (size_t)(end - slash - 1), id) != 0)
		return -1;
	*origin_len = (size_t)(slash - key);
	*flags = fl;
	return 0;
}
