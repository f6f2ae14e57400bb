/* Config keys, their options, types and bounds in one table. The file
 * reader counts lines itself (Debian's inih has no line numbers in the
 * handler), so every error names FILE:LINE: KEY. */
#include "conf.h"
#include "log.h"
#include "parse.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ktype { K_INT, K_DUR, K_BOOL, K_STR, K_ENUM, K_PUB };

struct key {
	const char *key;
	const char *opt;	/* long option, or NULL when config-only */
	int family;
	enum ktype type;
	size_t off;
	double min, max;
	const char *const *enums;
	int supported;		/* 0: refused with "not supported yet" unless default */
	int none_ok;		/* string whose default is "none" */
};

static const char *const fsync_names[] = { "always", "batch", "never", NULL };
static const char *const policy_names[] = { "RemoveSubscriber", "DropEvents", NULL };
static const char *const role_names[] = { "primary", "secondary", NULL };
static const char *const dedup_names[] = { "id", "index", "none", NULL };
static const char *const rel_names[] = { "", "ordered", NULL };

#define O(f) offsetof(struct gd_conf, f)
#define P GD_FAM_PUB
#define S GD_FAM_SUB
#define BIG 9.2e18
#define DAY (86400.0 * 365)

static const struct key keys[] = {
	{ "GDpub_port", "--port", P, K_INT, O(port), 0, 65535, NULL, 1, 0 },
	{ "GDpub_timeout", "--timeout", P, K_DUR, O(timeout), 0.001, DAY, NULL, 1, 0 },
	{ "GDpub_numSubs", "--num-subs", P, K_INT, O(num_subs), 0, GD_MAX_SUBS, NULL, 1, 0 },
	{ "GDpub_bind", "--bind", P, K_STR, O(bind), 0, 0, NULL, 1, 0 },
	{ "GDpub_host", "--host", P, K_STR, O(host), 0, 0, NULL, 1, 0 },
	{ "GDpub_maxPending", "--max-pending", P, K_INT, O(max_pending), 1, 1 << 24, NULL, 1, 0 },
	{ "GDpub_maxBlockSize", "--max-block-size", P, K_INT, O(max_block), 0, 1 << 30, NULL, 1, 0 },
	{ "GDpub_resend", "--resend", P, K_INT, O(resend), 0, 255, NULL, 1, 0 },
	{ "GDpub_snapshot", "--snapshot", P, K_INT, O(snapshot), 0, 1 << 24, NULL, 1, 0 },
	{ "GDpub_journal", "--journal", P, K_STR, O(journal), 0, 0, NULL, 1, 1 },
	{ "GDpub_fsync", "--fsync", P, K_ENUM, O(fsync), 0, 0, fsync_names, 1, 0 },
	{ "GDpub_ctl", "--ctl", P, K_STR, O(pub_ctl), 0, 0, NULL, 1, 0 },
	{ "GDpub_authKeyFile", "--auth-key-file", P, K_STR, O(pub_auth), 0, 0, NULL, 0, 1 },
	{ "GDpub_discardInterval", NULL, P, K_DUR, O(discard_interval), 0, DAY, NULL, 0, 0 },
	{ "GDpub_sendTimeout", NULL, P, K_DUR, O(send_timeout), -1, DAY, NULL, 0, 0 },
	{ "GDpub_sendQueueSizeMax", NULL, P, K_INT, O(sq_max), -1, BIG, NULL, 0, 0 },
	{ "GDpub_sendQueueSizeMaxPolicy", NULL, P, K_ENUM, O(sq_policy), 0, 0, policy_names, 0, 0 },
	{ "GDpub_cluster", "--cluster", P, K_STR, O(cluster), 0, 0, NULL, 0, 1 },
	{ "GDpub_role", "--role", P, K_ENUM, O(role), 0, 0, role_names, 0, 0 },
	{ "GDpub_preAckTimerInterval", NULL, P, K_DUR, O(preack_interval), 0.001, DAY, NULL, 0, 0 },
	{ "GDpub_tentativePreAckTimeout", NULL, P, K_DUR, O(tentative_timeout), 0, DAY, NULL, 0, 0 },
	{ "GDpub_confirmedPreAckTimeout", NULL, P, K_DUR, O(confirmed_timeout), 0, DAY, NULL, 0, 0 },

	{ "GDsub_pub", "--pub", S, K_PUB, O(pubs), 0, 0, NULL, 1, 0 },
	{ "GDsub_retryInt", "--retry-interval", S, K_DUR, O(retry_int), 0.001, DAY, NULL, 1, 0 },
	{ "GDsub_maxRetries", "--max-retries", S, K_INT, O(max_retries), -1, 1 << 30, NULL, 1, 0 },
	{ "GDsub_maxBlockSize", "--max-block-size", S, K_INT, O(sub_max_block), 1, 1 << 30, NULL, 1, 0 },
	{ "GDsub_name", "--name", S, K_STR, O(name), 0, 0, NULL, 1, 0 },
	{ "GDsub_gd", "--no-gd", S, K_BOOL, O(gd), 0, 1, NULL, 1, 0 },
	{ "GDsub_ctl", "--ctl", S, K_STR, O(sub_ctl), 0, 0, NULL, 1, 0 },
	{ "GDsub_state", "--state", S, K_STR, O(state), 0, 0, NULL, 1, 1 },
	{ "GDsub_dedup", "--dedup", S, K_ENUM, O(dedup), 0, 0, dedup_names, 1, 0 },
	{ "GDsub_consecutive", "--consecutive", S, K_BOOL, O(consecutive), 0, 1, NULL, 1, 0 },
	{ "GDsub_authKeyFile", "--auth-key-file", S, K_STR, O(sub_auth), 0, 0, NULL, 0, 1 },
	{ "GDsub_reliability", "--qos", S, K_ENUM, O(reliability), 0, 0, rel_names, 0, 0 },
	{ "GDsub_retryCount", "--qos", S, K_INT, O(retry_count), -1, 1 << 30, NULL, 0, 0 },
	{ "GDsub_connectionCached", "--qos", S, K_BOOL, O(conn_cached), 0, 1, NULL, 0, 0 },
	{ "GDsub_locatorCacheTimeout", "--qos", S, K_DUR, O(locator_timeout), -1, DAY, NULL, 0, 0 },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

void gd_conf_init(struct gd_conf *c, int family)
{
	memset(c, 0, sizeof(*c));
	gd_dbuf_init(&c->pubs_buf, GD_MAX_PUBS * sizeof(struct gd_hostport));
	c->family = family;
	c->port = -1;		/* not given; 0 asks the kernel for one */
	c->timeout = 10;
	c->max_pending = 65536;
	c->max_block = 1048576;
	c->sub_max_block = 1048576;
	c->fsync = GD_FSYNC_BATCH;
	c->discard_interval = 60;
	c->send_timeout = 60;
	c->sq_max = -1;
	c->sq_policy = GD_POLICY_REMOVE;
	c->role = GD_ROLE_PRIMARY;
	c->preack_interval = 5;
	c->tentative_timeout = 20;
	c->confirmed_timeout = 7200;
	c->retry_int = 1;
	c->max_retries = 10;
	c->gd = 1;
	c->dedup = GD_DEDUP_ID;
	c->conn_cached = 1;
	c->locator_timeout = -1;
	c->reliability = NULL;
}

void gd_conf_free(struct gd_conf *c)
{
	size_t i;
	for (i = 0; i < NKEYS; i++)
		if (keys[i].type == K_STR)
			free(*(char **)((char *)c + keys[i].off));
	gd_dbuf_free(&c->pubs_buf);
	free(c->path);
	memset(c, 0, sizeof(*c));
}

static const struct key *find_key(const char *name)
{
	size_t i;
	for (i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].key, name) == 0)
			return &keys[i];
	return NULL;
}

const char *gd_conf_option(const char *key)
{
	const struct key *k = find_key(key);
	return k ? k->opt : NULL;
}

const char *gd_conf_key_at(size_t i, int *family, int *supported)
{
	if (i >= NKEYS)
		return NULL;
	if (family)
		*family = keys[i].family;
	if (supported)
		*supported = keys[i].supported;
	return keys[i].key;
}

static int parse_bool(const char *v, int64_t *out)
{
	static const char *const t[] = { "1", "true", "yes", "on" };
	static const char *const f[] = { "0", "false", "no", "off" };
	size_t i;
	for (i = 0; i < 4; i++) {
		if (strcmp(v, t[i]) == 0) { *out = 1; return 0; }
		if (strcmp(v, f[i]) == 0) { *out = 0; return 0; }
	}
	return -1;
}

/* Validate and store; on failure fill why[] and return -1. */
static int set_key(struct gd_conf *c, const struct key *k, const char *v,
    char *why, size_t whysz)
{
	void *p = (char *)c + k->off;
	int64_t iv;
	double dv;
	size_t i;

	switch (k->type) {
	case K_INT:
		if (gd_parse_i64(v, (int64_t)k->min, (int64_t)k->max, &iv) != 0) {
			snprintf(why, whysz, "expected an integer from %.0f to %.0f",
			    k->min, k->max);
			return -1;
		}
		if (!k->supported && iv != *(int64_t *)p)
			goto unsupported;
		*(int64_t *)p = iv;
		return 0;
	case K_BOOL:
		if (parse_bool(v, &iv) != 0) {
			snprintf(why, whysz, "expected 0 or 1");
			return -1;
		}
		if (!k->supported && iv != *(int64_t *)p)
			goto unsupported;
		*(int64_t *)p = iv;
		return 0;
	case K_DUR:
		if (gd_parse_dur(v, k->min, k->max, &dv) != 0) {
			snprintf(why, whysz, "expected seconds from %g to %g",
			    k->min, k->max);
			return -1;
		}
		if (!k->supported && dv != *(double *)p)
			goto unsupported;
		*(double *)p = dv;
		return 0;
	case K_ENUM:
		for (i = 0; k->enums[i] != NULL; i++)
			if (strcmp(v, k->enums[i]) == 0)
				break;
		if (k->enums[i] == NULL) {
			int n = snprintf(why, whysz, "expected one of");
			size_t j;
			for (j = 0; k->enums[j] != NULL && n > 0 &&
			    (size_t)n < whysz; j++)
				n += snprintf(why + n, whysz - (size_t)n, "%s'%s'",
				    j ? ", " : " ", k->enums[j]);
			return -1;
		}
		if (k->off == offsetof(struct gd_conf, reliability)) {
			if (i != 0)
				goto unsupported;
			return 0;
		}
		if (!k->supported && (int64_t)i != *(int64_t *)p)
			goto unsupported;
		*(int64_t *)p = (int64_t)i;
		return 0;
	case K_STR:
		if (k->none_ok && strcmp(v, "none") == 0) {
			free(*(char **)p);	/* "none" is the default: unset */
			*(char **)p = NULL;
			return 0;
		}
		if (*v == '\0' || strlen(v) > 4096) {
			snprintf(why, whysz, "expected a non-empty value of at most 4096 bytes");
			return -1;
		}
		if (!k->supported)
			goto unsupported;
		if (k->off == offsetof(struct gd_conf, host) && !gd_valid_host(v)) {
			snprintf(why, whysz, "expected %s", GD_VALID_HOST_WHAT);
			return -1;
		}
		free(*(char **)p);
		*(char **)p = strdup(v);
		return *(char **)p ? 0 : -1;
	case K_PUB: {
		struct gd_hostport hp;
		if (gd_parse_hostport(v, hp.host, sizeof(hp.host), &hp.port) != 0) {
			snprintf(why, whysz, "expected HOST:PORT with PORT from 1 to 65535 ([ADDR]:PORT for IPv6)");
			return -1;
		}
		for (i = 0; i < c->npubs; i++)
			if (strcmp(c->pubs[i].host, hp.host) == 0 &&
			    c->pubs[i].port == hp.port) {
				snprintf(why, whysz, "publisher listed twice");
				return -1;
			}
		switch (gd_dbuf_add(&c->pubs_buf, &hp, sizeof(hp))) {
		case GD_DBUF_OK:
			break;
		case GD_DBUF_TOOBIG:
			snprintf(why, whysz, "too many publishers (at most %d)",
			    GD_MAX_PUBS);
			return -1;
		default:
			return -1;
		}
		c->pubs = (struct gd_hostport *)(void *)gd_dbuf_ptr(&c->pubs_buf);
		c->npubs++;
		return 0;
	}
	}
	return -1;
unsupported:
	snprintf(why, whysz, "not supported yet in this version of gdkit");
	return -1;
}

/* Debian's inih reads lines of at most 197 bytes (INI_MAX_LINE 200, its
 * newline and NUL included) and cannot be rebuilt here; gdkit.conf(5)
 * promises string values of 4096 bytes. So the reader takes lines of up
 * to CONF_LINE_MAX bytes itself: a line that fits inih's buffer goes to
 * inih as it is; a longer one is split into key and value here, by
 * inih's own rules, and inih gets a short stand-in for it ("k=v", "#",
 * "[s]"), whose handler call uses the key and value kept aside. Lines
 * still go through inih one for one, so its error line numbers hold. */
#define CONF_LINE_MAX 8192

struct load_ctx {
	struct gd_conf *c;
	FILE *fp;
	const char *file;
	int line;
	int err;		/* exit code once an error was found: reading stops */
	char msg[1024];		/* that error, printed after the parse unless
				 * inih found a syntax error on an earlier line */
	char *buf;		/* the current line, CONF_LINE_MAX + 1 bytes */
	const char *name, *value;	/* the current line's key and value, when
				 * parsed here (they point into buf), or NULL */
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	    c == '\f';
}

static char *rstrip(char *s)
{
	char *e = s + strlen(s);
	while (e > s && is_space(e[-1]))
		*--e = '\0';
	return s;
}

/* inih's find_chars_or_comment: the first of chars (NULL: none) or of an
 * inline comment, a ';' after white space; the end of s if neither */
static char *chars_or_comment(char *s, const char *chars)
{
	int was_space = 0;

	while (*s && !(chars && strchr(chars, *s)) && !(was_space && *s == ';')) {
		was_space = is_space(*s);
		s++;
	}
	return s;
}

/* A line too long for inih, whitespace before it removed: what inih gets
 * in its place, with x->name and x->value set for a key=value line. */
static const char *stand_in(struct load_ctx *x, char *line)
{
	char *end;

	if (x->line == 1 && memcmp(line, "\xEF\xBB\xBF", 3) == 0)
		line += 3;	/* a UTF-8 BOM, which inih skips */
	rstrip(line);
	if (*line == '#' || *line == ';' || *line == '\0')
		return "#\n";
	if (*line == '[')
		return *chars_or_comment(line + 1, "]") == ']' ? "[s]\n" : "[\n";
	end = chars_or_comment(line, "=:");
	if (*end != '=' && *end != ':')
		return "?\n";	/* inih reports it: expected key=value */
	*end++ = '\0';
	x->name = rstrip(line);
	*chars_or_comment(end, NULL) = '\0';
	while (is_space(*end))
		end++;
	x->value = rstrip(end);
	return "k=v\n";
}

/* Keep the first error, "LINE: what"; the file name is added when it is
 * printed. */
__attribute__((format(printf, 2, 3)))
static void fail(struct load_ctx *x, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(x->msg, sizeof(x->msg), "%d: ", x->line);

	va_start(ap, fmt);
	vsnprintf(x->msg + n, sizeof(x->msg) - (size_t)n, fmt, ap);
	va_end(ap);
	x->err = GD_EX_CONFIG;
}

/* inih reader: one line at a time, counting lines for our messages. */
static char *reader(char *str, int num, void *stream)
{
	struct load_ctx *x = stream;
	int ch, over = 0, col = 0;
	size_t n = 0;

	x->name = x->value = NULL;
	if (x->err || feof(x->fp) || ferror(x->fp))
		return NULL;
	while ((ch = getc(x->fp)) != EOF && ch != '\n') {
		/* a NUL would end the line for inih and hide the rest of it
		 * (a file starting with one would read as empty) */
		if (ch == '\0') {
			x->line++;
			fail(x, "NUL byte at column %d: a config file is text, "
			    "without NUL bytes", col + 1);
			return NULL;
		}
		col++;
		/* inih would take an indented line as the continuation of the
		 * previous value; a config line is never that here */
		if (n == 0 && (ch == ' ' || ch == '\t'))
			continue;
		if (n < CONF_LINE_MAX)
			x->buf[n++] = (char)ch;
		else
			over = 1;
	}
	if (ch == EOF && n == 0 && ferror(x->fp) == 0) {
		x->line++;
		return NULL;
	}
	x->line++;
	x->buf[n] = '\0';
	if (over) {	/* an error naming the key, if the line starts with one */
		char *end = chars_or_comment(x->buf, "=:");
		int sep = *end == '=' || *end == ':';
		*end = '\0';
		rstrip(x->buf);
		if (sep && *x->buf != '\0' && strlen(x->buf) <= 64)
			fail(x, "%s: line too long (at most %d bytes)", x->buf,
			    CONF_LINE_MAX);
		else
			fail(x, "line too long (at most %d bytes)", CONF_LINE_MAX);
		return NULL;
	}
	if (n + 2 > (size_t)num - 1) {	/* with "\n" and NUL, one to spare */
		snprintf(str, (size_t)num, "%s", stand_in(x, x->buf));
		return str;
	}
	memcpy(str, x->buf, n);
	str[n++] = '\n';
	str[n] = '\0';
	return str;
}

static int handler(void *user, const char *section, const char *name,
    const char *value)
{
	struct load_ctx *x = user;
	const struct key *k;
	char why[256];

	(void)section;
	if (x->err)
		return 1;
	if (x->name != NULL) {	/* a long line's, kept aside by reader() */
		name = x->name;
		value = x->value;
	}
	if (name[0] == '\0') {
		fail(x, "a value without a key: the line starts with '=' "
		    "(expected KEY=VALUE)");
		return 1;
	}
	k = find_key(name);
	if (k == NULL) {
		fail(x, "%.*s: unknown key",
		    strlen(name) > 64 ? 64 : (int)strlen(name), name);
		return 1;
	}
	if ((k->family & x->c->family) == 0) {
		fail(x, "%s: not a %s key", name,
		    x->c->family == GD_FAM_PUB ? "publisher (GDpub_*)" :
		    "subscriber (GDsub_*)");
		return 1;
	}
	if (set_key(x->c, k, value, why, sizeof(why)) != 0) {
		size_t len = strlen(value);
		if (len > 80)	/* the start of it, and how long it is */
			fail(x, "%s: invalid value '%.64s...' (%zu bytes): %s",
			    name, value, len, why);
		else
			fail(x, "%s: invalid value '%s': %s", name, value, why);
		return 1;
	}
	if (k->family == GD_FAM_PUB)
		x->c->seen_pub = 1;
	else
		x->c->seen_sub = 1;
	return 1;
}

int gd_conf_load(struct gd_conf *c, const char *file)
{
	struct load_ctx x;
	int rc;

	memset(&x, 0, sizeof(x));
	x.c = c;
	x.file = file;
	if ((x.buf = malloc(CONF_LINE_MAX + 1)) == NULL) {
		gd_err("%s: cannot read config file: out of memory", file);
		return GD_EX_CONFIG;
	}
	x.fp = fopen(file, "r");
	if (x.fp == NULL) {
		gd_err("%s: cannot read config file: %s", file, strerror(errno));
		free(x.buf);
		return GD_EX_CONFIG;
	}
	/* reading stops at the first error found here; inih goes on past a
	 * syntax error, and returns the first one's line */
	rc = ini_parse_stream(reader, &x, handler, &x);
	if (ferror(x.fp) && !x.err) {
		gd_err("%s: cannot read config file: %s", file, strerror(errno));
		fclose(x.fp);
		free(x.buf);
		return GD_EX_CONFIG;
	}
	fclose(x.fp);
	free(x.buf);
	if (x.err && rc == 0) {
		gd_err("%s:%s", file, x.msg);
		return x.err;
	}
	if (rc != 0) {
		gd_err("%s:%d: syntax error: expected key=value", file, rc);
		return GD_EX_CONFIG;
	}
	free(c->path);
	c->path = strdup(file);
	return 0;
}

int gd_conf_set_opt(struct gd_conf *c, const char *key, const char *opt,
    const char *value)
{
	const struct key *k = find_key(key);
	char why[256];

	if (k == NULL)
		return GD_EX_USAGE;
	if (k->type == K_PUB && !c->pubs_from_cli) {
		c->pubs_from_cli = 1;
		c->npubs = 0;
		gd_dbuf_reset(&c->pubs_buf);
	}
	if (set_key(c, k, value, why, sizeof(why)) != 0) {
		gd_usage_err("invalid value '%s' for %s: %s", value, opt, why);
		return GD_EX_USAGE;
	}
	return 0;
}

/* The key's name after its family prefix: "retryCount" for
 * GDsub_retryCount, the NAME of --qos NAME=VALUE. */
static const char *short_name(const struct key *k)
{
	const char *u = strchr(k->key, '_');
	return u ? u + 1 : k->key;
}

/* --qos NAME=VALUE: the key of c's family named NAME among those of opt */
static int set_multi(struct gd_conf *c, const char *opt, const char *value)
{
	const char *eq = strchr(value, '=');
	char names[256];
	size_t i, n, len = 0, total = 0;

	for (i = 0; i < NKEYS; i++) {
		if (keys[i].opt == NULL || strcmp(keys[i].opt, opt) != 0 ||
		    (keys[i].family & c->family) == 0)
			continue;
		n = strlen(short_name(&keys[i]));
		if (eq != NULL && n == (size_t)(eq - value) &&
		    strncmp(value, short_name(&keys[i]), n) == 0)
			return gd_conf_set_opt(c, keys[i].key, opt, eq + 1);
		total++;
	}
	/* "reliability=, retryCount=, connectionCached= or locatorCacheTimeout=" */
	for (i = 0, n = 0; i < NKEYS && len < sizeof(names); i++) {
		if (keys[i].opt == NULL || strcmp(keys[i].opt, opt) != 0 ||
		    (keys[i].family & c->family) == 0)
			continue;
		n++;
		len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s=",
		    n == 1 ? "" : n == total ? " or " : ", ", short_name(&keys[i]));
	}
	gd_usage_err("invalid value '%s' for %s: expected %s", value, opt, names);
	return GD_EX_USAGE;
}

int gd_conf_set_option(struct gd_conf *c, const char *opt, const char *value)
{
	const struct key *k = NULL;
	size_t i, n = 0;

	for (i = 0; i < NKEYS; i++)
		if (keys[i].opt != NULL && strcmp(keys[i].opt, opt) == 0 &&
		    (keys[i].family & c->family) != 0) {
			k = &keys[i];
			n++;
		}
	if (n == 0)
		return -1;
	if (n > 1)
		return set_multi(c, opt, value ? value : "");
	if (value == NULL) {	/* a flag: --consecutive, --no-gd */
		if (k->type != K_BOOL)
			return -1;
		if (!k->supported) {
			gd_usage_err("%s is not supported yet in this version of gdkit",
			    opt);
			return GD_EX_USAGE;
		}
		value = strncmp(opt, "--no-", 5) == 0 ? "0" : "1";
	}
	return gd_conf_set_opt(c, k->key, opt, value);
}

int gd_conf_check(const struct gd_conf *c, int family)
{
	if (family == GD_FAM_PUB && c->port < 0) {
		gd_usage_err("no port given: set GDpub_port in the config file or use --port");
		return GD_EX_USAGE;
	}
	if (family == GD_FAM_SUB && c->npubs == 0) {
		gd_usage_err("no publisher given: set GDsub_pub in the config file or use --pub HOST:PORT");
		return GD_EX_USAGE;
	}
	return 0;
}
