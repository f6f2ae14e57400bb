/* Strict parsers. Each rejects empty input, signs where not allowed,
 * leading or trailing junk and out-of-range values. */
#include "parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gd_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (s == NULL || *s == '\0' || (*s != '-' && (*s < '0' || *s > '9')))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int gd_parse_u64n(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i, safe = len < 19 ? len : 19;	/* 19 digits never overflow */
	unsigned d;

	if (len == 0 || len > 20)
		return -1;
	for (i = 0; i < safe; i++) {
		if ((d = (unsigned char)s[i] - '0') > 9)
			return -1;
		v = v * 10 + d;
	}
	if (len == 20) {
		if ((d = (unsigned char)s[19] - '0') > 9 ||
		    v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int gd_parse_id(const char *s, size_t len, uint64_t *out)
{
	uint64_t v;

	if (gd_parse_u64n(s, len, &v) != 0)
		return -1;
	if (len > 1 && s[0] == '0')
		return -2;
	*out = v;
	return 0;
}

int gd_parse_id_record(const char *rec, size_t len, uint64_t *id,
    size_t *payload_off)
{
	/* 20 digits at most, then the TAB */
	const char *tab = memchr(rec, '\t', len < 21 ? len : 21);
	int e;

	if (tab == NULL)
		return -1;
	if ((e = gd_parse_id(rec, (size_t)(tab - rec), id)) != 0)
		return e;
	*payload_off = (size_t)(tab - rec) + 1;
	return 0;
}

int gd_parse_u64(const char *s, uint64_t *out)
{
	return gd_parse_u64n(s, strlen(s), out);
}

int gd_parse_dur(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	const char *q;
	int dots = 0, digits = 0;

	if (s == NULL)
		return -1;
	/* plain decimal only: no hex, exponents, inf or nan */
	for (q = s + (*s == '-'); *q; q++) {
		if (*q == '.')
			dots++;
		else if (*q >= '0' && *q <= '9')
			digits++;
		else
			return -1;
	}
	if (digits == 0 || dots > 1)
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int gd_parse_hostport(const char *s, char *host, size_t hostsz, int *port)
{
	const char *colon, *h = s;
	size_t hlen;
	int64_t p;

	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (rb == NULL || rb[1] != ':')
			return -1;
		h = s + 1;
		hlen = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || memchr(s, ':', (size_t)(colon - s)) != NULL)
			return -1;
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen >= hostsz)
		return -1;
	if (gd_parse_i64(colon + 1, 1, 65535, &p) != 0)
		return -1;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*port = (int)p;
	return 0;
}

/* A key is HOST:PORT/ID and a stream origin is printable ASCII without
 * '/' or blanks: a host with '/', ':' (unless IPv6), a blank, a control
 * or a non-ASCII byte would give keys and streams every reader refuses. */
int gd_valid_host(const char *host)
{
	struct in6_addr a6;
	size_t i;

	if (strchr(host, ':') != NULL)
		return inet_pton(AF_INET6, host, &a6) == 1;
	for (i = 0; host[i] != '\0'; i++) {
		char c = host[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
			return 0;
	}
	return i > 0 && i <= GD_VALID_HOST_MAX;
}

int gd_fmt_hostport(char *buf, size_t sz, const char *host, int port)
{
	int n;
	if (strchr(host, ':') != NULL)
		n = snprintf(buf, sz, "[%s]:%d", host, port);
	else
		n = snprintf(buf, sz, "%s:%d", host, port);
	return n < 0 ? 0 : (n >= (int)sz ? (int)sz - 1 : n);
}

size_t gd_u64toa_next(struct gd_u64txt *t, char *buf, uint64_t v)
{
	size_t i;

	if (t->n > 0 && v == t->v + 1 && v != 0) {
		for (i = t->n; i > 0 && t->d[i - 1] == '9'; i--)
			t->d[i - 1] = '0';
		if (i > 0)
			t->d[i - 1]++;
		else		/* 99 -> 100: one digit more */
			t->n = gd_u64toa(t->d, v);
		t->v = v;
	} else if (t->n == 0 || v != t->v) {
		t->n = gd_u64toa(t->d, v);
		t->v = v;
	}
	memcpy(buf, t->d, t->n);
	return t->n;
}

/* Two digits a step, from a table, into exactly the digits counted first:
 * every key gdsub writes and every status line gdpub prints goes through
 * here. */
size_t gd_u64toa(char *buf, uint64_t v)
{
	static const char d2[201] =
	    "00010203040506070809101112131415161718192021222324"
	    "25262728293031323334353637383940414243444546474849"
	    "50515253545556575859606162636465666768697071727374"
	    "75767778798081828384858687888990919293949596979899";
	uint64_t t = 10;
	size_t n = 1;
	char *p;

	while (n < 20 && v >= t) {	/* 10^19 is the last that fits */
		t *= 10;
		n++;
	}
	p = buf + n;
	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		p -= 2;
		memcpy(p, d2 + 2 * r, 2);
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, d2 + 2 * v, 2);
	} else {
		*--p = (char)('0' + v);
	}
	return n;
}
