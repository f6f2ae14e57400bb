/* Key parsing shared by gdsub (acks from gdack) and gdack (its input). */
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

int gd_key_parse_at(const char *key, size_t len, size_t olen,
    uint64_t *id, int *flags)
{
	size_t i = olen + 1, end;
	uint64_t v = 0;
	unsigned d;
	int fl = 0;

	if (olen == 0 || len > GD_KEY_MAX || i >= len || key[olen] != '/')
		return -1;
	/* the digits in one pass: 19 cannot overflow, a 20th is checked */
	for (end = i; end < len && key[end] != '/'; end++) {
		if (end - i == 20 || (d = (unsigned char)key[end] - '0') > 9 ||
		    (end - i == 19 && v > (UINT64_MAX - d) / 10))
			return -1;
		v = v * 10 + d;
	}
	if (end == i || (end < len &&
	    parse_flags(key + end + 1, len - end - 1, &fl) != 0))
		return -1;
	*id = v;
	*flags = fl;
	return 0;
}

/* The last '/' in key[0 .. len) within its last 21 bytes (an id's 20
 * digits at most, or flags), or NULL: a key whose last '/' is further
 * back is malformed either way. */
static const char *last_slash(const char *key, size_t len)
{
	size_t i = len, stop = len > 21 ? len - 21 : 0;

	while (i > stop)
		if (key[--i] == '/')
			return key + i;
	return NULL;
}

int gd_key_parse(const char *key, size_t len, size_t *origin_len,
    uint64_t *id, int *flags)
{
	const char *slash, *end = key + len;
	int fl = 0;

	if (len == 0 || len > GD_KEY_MAX)
		return -1;
	slash = last_slash(key, len);
	if (slash == NULL)
		return -1;
	if (parse_flags(slash + 1, (size_t)(end - slash - 1), &fl) == 0) {
		end = slash;
		slash = last_slash(key, (size_t)(end - key));
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
