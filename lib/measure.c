/* gdinspect measure (see measure.h). Each line is reduced to its first
 * TAB-separated field without /FLAGS, so gdsub's output, gdack's input and
 * plain key or ID lists all work; when either file holds bare IDs, keys are
 * compared by their ID. Lines become 64-bit hashes, sorted and merged. */
#include "measure.h"
#include "dbuf.h"
#include "hash.h"
#include "key.h"
#include "log.h"
#include "parse.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lines a file may have: what a run's key list could reasonably be,
 * and a bound on the memory (8 bytes a line) measure takes. */
#define MAX_LINES ((size_t)1 << 31)

struct list {
	struct gd_dbuf hb;	/* uint64_t hashes, one per line */
	uint64_t *h;		/* hb's bytes, once loaded */
	size_t n;
	int bare_ids;		/* some line was a bare ID */
};

static void list_init(struct list *l)
{
	memset(l, 0, sizeof(*l));
	gd_dbuf_init_sized(&l->hb, 4096 * sizeof(uint64_t),
	    MAX_LINES * sizeof(uint64_t));
}

/* One entry per non-empty line: the key (origin/id) or the ID. */
struct item {
	int is_key;
	uint64_t id;
	const char *key;
	size_t keylen;
};

static int parse_line(char *line, size_t len, struct item *it)
{
	char *tab = memchr(line, '\t', len);
	size_t n = tab ? (size_t)(tab - line) : len, olen;
	int flags;

	if (n > 0 && line[n - 1] == '\r')
		n--;
	if (gd_parse_u64n(line, n, &it->id) == 0) {
		it->is_key = 0;
		return 0;
	}
	if (gd_key_parse(line, n, &olen, &it->id, &flags) != 0)
		return -1;
	it->is_key = 1;
	it->key = line;
	it->keylen = olen;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Two passes over the file: the first learns whether it has bare IDs. */
static int load(const char *path, struct list *l, int by_id, int pass)
{
	FILE *fp = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc = 0, add;

	if (fp == NULL) {
		gd_err("cannot read %s: %s", path, strerror(errno));
		return GD_EX_IOERR;
	}
	while ((len = getline(&line, &cap, fp)) >= 0) {
		struct item it;
		uint64_t h;

		lineno++;
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len == 0)
			continue;
		if (parse_line(line, (size_t)len, &it) != 0) {
			gd_err("%s:%zu: not a key or ID: '%.80s'", path, lineno, line);
			rc = GD_EX_DATAERR;
			break;
		}
		if (pass == 0) {
			if (!it.is_key)
				l->bare_ids = 1;
			continue;
		}
		if (by_id || !it.is_key) {
			char num[24];
			h = gd_fnv1a(num, gd_u64toa(num, it.id));
		} else {
			h = gd_fnv1a(it.key, it.keylen) ^ (it.id * 0x9E3779B97F4A7C15ull);
		}
		if ((add = gd_dbuf_add(&l->hb, &h, sizeof(h))) != GD_DBUF_OK) {
			if (add == GD_DBUF_TOOBIG)
				gd_err("%s: more than %zu lines: too many to measure",
				    path, MAX_LINES);
			else
				gd_err("out of memory reading %s", path);
			rc = GD_EX_FAIL;
			break;
		}
		l->n++;
	}
	l->h = (uint64_t *)(void *)gd_dbuf_ptr(&l->hb);
	if (rc == 0 && ferror(fp)) {
		gd_err("cannot read %s: %s", path, strerror(errno));
		rc = GD_EX_IOERR;
	}
	free(line);
	fclose(fp);
	return rc;
}

static size_t uniq(uint64_t *h, size_t n)
{
	size_t i, k = 0;
	for (i = 0; i < n; i++)
		if (k == 0 || h[k - 1] != h[i])
			h[k++] = h[i];
	return k;
}

int gd_measure_files(const char *sent, const char *received,
    struct gd_measure *m)
{
	struct list s, r;
	size_t ns, i, j;
	int rc, by_id;

	memset(m, 0, sizeof(*m));
	list_init(&s);
	list_init(&r);
	if ((rc = load(sent, &s, 0, 0)) != 0 ||
	    (rc = load(received, &r, 0, 0)) != 0)
		goto out;
	by_id = s.bare_ids || r.bare_ids;
	if ((rc = load(sent, &s, by_id, 1)) != 0 ||
	    (rc = load(received, &r, by_id, 1)) != 0)
		goto out;
	if (s.n == 0) {
		gd_err("%s lists no block: nothing to measure", sent);
		rc = GD_EX_DATAERR;
		goto out;
	}
	m->received = r.n;
	qsort(s.h, s.n, sizeof(*s.h), cmp_u64);
	ns = uniq(s.h, s.n);
	if (r.n)
		qsort(r.h, r.n, sizeof(*r.h), cmp_u64);
	m->sent = ns;
	for (i = j = 0; j < r.n; j++) {
		while (i < ns && s.h[i] < r.h[j])
			i++;
		if (i == ns || s.h[i] != r.h[j])
			m->unexpected++;
		else if (j == 0 || r.h[j - 1] != r.h[j])
			m->unique++;
		else
			m->duplicates++;
	}
	m->reliability = (double)m->unique / (double)m->sent;
	m->uniqueness = m->received ? (double)m->unique / (double)m->received : 1;
	if (m->unique == m->sent)
		m->mode = m->unique == m->received ? "exactly-once" : "at-least-once";
	else
		m->mode = m->unique == m->received ? "at-most-once" : "unreliable";
out:
	gd_dbuf_free(&s.hb);
	gd_dbuf_free(&r.hb);
	return rc;
}

void gd_measure_print(const struct gd_measure *m, int json)
{
	if (json) {
		printf("{\"sent\":%" PRIu64 ",\"received\":%" PRIu64
		    ",\"unique\":%" PRIu64 ",\"duplicates\":%" PRIu64
		    ",\"lost\":%" PRIu64 ",\"unexpected\":%" PRIu64
		    ",\"reliability\":%.6f,\"uniqueness\":%.6f,\"mode\":\"%s\"}\n",
		    m->sent, m->received, m->unique, m->duplicates,
		    m->sent - m->unique, m->unexpected, m->reliability,
		    m->uniqueness, m->mode);
		return;
	}
	printf("%-10s %-10s %-10s %-10s %-10s %-10s %-8s %-8s %s\n", "SENT",
	    "RECEIVED", "UNIQUE", "DUPLICATES", "LOST", "UNEXPECTED", "R", "UR",
	    "MODE");
	printf("%-10" PRIu64 " %-10" PRIu64 " %-10" PRIu64 " %-10" PRIu64
	    " %-10" PRIu64 " %-10" PRIu64 " %-8.4f %-8.4f %s\n", m->sent,
	    m->received, m->unique, m->duplicates, m->sent - m->unique, m->unexpected, m->reliability, m->uniqueness,
	    m->mode);
}
