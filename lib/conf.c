/* Config keys, their options, types and bounds in one table; setting a
 * key from a file's line (conf_file.c reads the files) or from its
 * option. */
#include "conf.h"
#include "auth.h"
#include "log.h"
#include "parse.h"
#include "tls.h"

#include <arpa/inet.h>
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
	int none_ok;		/* string whose default is "none"; an
				 * integer that may be "auto" (0) */
	/* a string's own rule after the common ones, or NULL: 0, or -1
	 * with the reason in why */
	int (*check)(const char *v, char *why, size_t whysz);
};

static const char *const fsync_names[] = { "always", "batch", "never", NULL };
static const char *const policy_names[] = { "RemoveSubscriber", "DropEvents", NULL };
static const char *const role_names[] = { "primary", "secondary", NULL };
static const char *const dedup_names[] = { "id", "index", "none", NULL };
static const char *const rel_names[] = { "", "ordered", NULL };
static const char *const tls_names[] = { "1.3", "1.2", NULL };

static int check_cluster(const char *v, char *why, size_t whysz);
static int check_host(const char *v, char *why, size_t whysz);
static int check_name(const char *v, char *why, size_t whysz);
static int check_key_file(const char *v, char *why, size_t whysz);
static int check_tls_cert(const char *v, char *why, size_t whysz);
static int check_tls_key(const char *v, char *why, size_t whysz);
static int check_tls_ca(const char *v, char *why, size_t whysz);
static int check_metrics(const char *v, char *why, size_t whysz);

#define O(f) offsetof(struct gd_conf, f)
#define P GD_FAM_PUB
#define S GD_FAM_SUB
#define BIG 9.2e18
#define DAY (86400.0 * 365)

static const struct key keys[] = {
	{ "GDpub_port", "--port", P, K_INT, O(port), 0, 65535, NULL, 1, 0, NULL },
	{ "GDpub_timeout", "--timeout", P, K_DUR, O(timeout), 0.001, DAY, NULL, 1, 0, NULL },
	{ "GDpub_numSubs", "--num-subs", P, K_INT, O(num_subs), 0, GD_MAX_SUBS, NULL, 1, 0, NULL },
	{ "GDpub_bind", "--bind", P, K_STR, O(bind), 0, 0, NULL, 1, 0, NULL },
	{ "GDpub_host", "--host", P, K_STR, O(host), 0, 0, NULL, 1, 0, check_host },
	{ "GDpub_maxPending", "--max-pending", P, K_INT, O(max_pending), 1, 1 << 24, NULL, 1, 0, NULL },
	{ "GDpub_window", "--window", P, K_INT, O(window), 1, 1 << 24, NULL, 1, 1, NULL },
	{ "GDpub_maxBlockSize", "--max-block-size", P, K_INT, O(max_block), 0, 1 << 30, NULL, 1, 0, NULL },
	{ "GDpub_resend", "--resend", P, K_INT, O(resend), 0, 255, NULL, 1, 0, NULL },
	{ "GDpub_snapshot", "--snapshot", P, K_INT, O(snapshot), 0, 1 << 24, NULL, 1, 0, NULL },
	{ "GDpub_journal", "--journal", P, K_STR, O(journal), 0, 0, NULL, 1, 1, NULL },
	{ "GDpub_fsync", "--fsync", P, K_ENUM, O(fsync), 0, 0, fsync_names, 1, 0, NULL },
	{ "GDpub_ctl", "--ctl", P, K_STR, O(pub_ctl), 0, 0, NULL, 1, 0, NULL },
	{ "GDpub_authKeyFile", "--auth-key-file", P, K_STR, O(pub_auth), 0, 0, NULL, 1, 1, check_key_file },
	{ "GDpub_maxConnections", "--max-connections", P, K_INT, O(max_conns), 1, 65536, NULL, 1, 0, NULL },
	{ "GDpub_discardInterval", NULL, P, K_DUR, O(discard_interval), 0, DAY, NULL, 1, 0, NULL },
	{ "GDpub_sendTimeout", NULL, P, K_DUR, O(send_timeout), -1, DAY, NULL, 1, 0, NULL },
	{ "GDpub_sendQueueSizeMax", NULL, P, K_INT, O(sq_max), -1, BIG, NULL, 1, 0, NULL },
	{ "GDpub_sendQueueSizeMaxPolicy", NULL, P, K_ENUM, O(sq_policy), 0, 0, policy_names, 1, 0, NULL },
	{ "GDpub_cluster", "--cluster", P, K_STR, O(cluster), 0, 0, NULL, 1, 1, check_cluster },
	{ "GDpub_role", "--role", P, K_ENUM, O(role), 0, 0, role_names, 1, 0, NULL },
	{ "GDpub_preAckTimerInterval", NULL, P, K_DUR, O(preack_interval), 0.001, DAY, NULL, 1, 0, NULL },
	{ "GDpub_tentativePreAckTimeout", NULL, P, K_DUR, O(tentative_timeout), 0, DAY, NULL, 1, 0, NULL },
	{ "GDpub_confirmedPreAckTimeout", NULL, P, K_DUR, O(confirmed_timeout), 0, DAY, NULL, 1, 0, NULL },
	{ "GDpub_tlsCert", "--tls-cert", P, K_STR, O(pub_tls_cert), 0, 0, NULL, 1, 1, check_tls_cert },
	{ "GDpub_tlsKey", "--tls-key", P, K_STR, O(pub_tls_key), 0, 0, NULL, 1, 1, check_tls_key },
	{ "GDpub_tlsCA", "--tls-ca", P, K_STR, O(pub_tls_ca), 0, 0, NULL, 1, 1, check_tls_ca },
	{ "GDpub_tlsMinVersion", "--tls-min-version", P, K_ENUM, O(pub_tls_min), 0, 0, tls_names, 1, 0, NULL },
	{ "GDpub_metrics", "--metrics", P, K_STR, O(pub_metrics), 0, 0, NULL, 1, 1, check_metrics },
	{ "GDpub_status", "--status", P, K_STR, O(pub_status), 0, 0, NULL, 1, 1, NULL },

	{ "GDsub_pub", "--pub", S, K_PUB, O(pubs), 0, 0, NULL, 1, 0, NULL },
	{ "GDsub_retryInt", "--retry-interval", S, K_DUR, O(retry_int), 0.001, DAY, NULL, 1, 0, NULL },
	{ "GDsub_maxRetries", "--max-retries", S, K_INT, O(max_retries), -1, 1 << 30, NULL, 1, 0, NULL },
	{ "GDsub_maxBlockSize", "--max-block-size", S, K_INT, O(sub_max_block), 1, 1 << 30, NULL, 1, 0, NULL },
	{ "GDsub_name", "--name", S, K_STR, O(name), 0, 0, NULL, 1, 0, check_name },
	{ "GDsub_gd", "--no-gd", S, K_BOOL, O(gd), 0, 1, NULL, 1, 0, NULL },
	{ "GDsub_ctl", "--ctl", S, K_STR, O(sub_ctl), 0, 0, NULL, 1, 0, NULL },
	{ "GDsub_state", "--state", S, K_STR, O(state), 0, 0, NULL, 1, 1, NULL },
	{ "GDsub_dedup", "--dedup", S, K_ENUM, O(dedup), 0, 0, dedup_names, 1, 0, NULL },
	{ "GDsub_consecutive", "--consecutive", S, K_BOOL, O(consecutive), 0, 1, NULL, 1, 0, NULL },
	{ "GDsub_authKeyFile", "--auth-key-file", S, K_STR, O(sub_auth), 0, 0, NULL, 1, 1, check_key_file },
	{ "GDsub_reliability", "--qos", S, K_ENUM, O(reliability), 0, 0, rel_names, 1, 0, NULL },
	{ "GDsub_retryCount", "--qos", S, K_INT, O(retry_count), -1, 1 << 30, NULL, 1, 0, NULL },
	{ "GDsub_connectionCached", "--qos", S, K_BOOL, O(conn_cached), 0, 1, NULL, 1, 0, NULL },
	{ "GDsub_locatorCacheTimeout", "--qos", S, K_DUR, O(locator_timeout), -1, DAY, NULL, 1, 0, NULL },
	{ "GDsub_tlsCA", "--tls-ca", S, K_STR, O(sub_tls_ca), 0, 0, NULL, 1, 1, check_tls_ca },
	{ "GDsub_tlsCert", "--tls-cert", S, K_STR, O(sub_tls_cert), 0, 0, NULL, 1, 1, check_tls_cert },
	{ "GDsub_tlsKey", "--tls-key", S, K_STR, O(sub_tls_key), 0, 0, NULL, 1, 1, check_tls_key },
	{ "GDsub_tlsMinVersion", "--tls-min-version", S, K_ENUM, O(sub_tls_min), 0, 0, tls_names, 1, 0, NULL },
	{ "GDsub_metrics", "--metrics", S, K_STR, O(sub_metrics), 0, 0, NULL, 1, 1, check_metrics },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))
_Static_assert(NKEYS <= GD_CONF_KEYS_MAX, "struct gd_conf's set_at is too small");

void gd_conf_init(struct gd_conf *c, int family)
{
	memset(c, 0, sizeof(*c));
	gd_dbuf_init(&c->pubs_buf, GD_MAX_PUBS * sizeof(struct gd_hostport));
	c->family = family;
	c->port = -1;		/* not given; 0 asks the kernel for one */
	c->timeout = 10;
	c->max_pending = 65536;
	c->max_block = 1048576;
	c->max_conns = 256;
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
	c->reliability = GD_REL_PIPELINED;
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

/* GD_VALID_CLUSTER_WHAT */
static int gd_valid_cluster(const char *v)
{
	size_t i, n = strlen(v);

	if (n == 0 || n > GD_CLUSTER_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') ||
		    (v[i] >= '0' && v[i] <= '9') || v[i] == '.' || v[i] == '_' ||
		    v[i] == '-'))
			return 0;
	return 1;
}

int gd_conf_key_index(const char *name, int *repeats)
{
	const struct key *k = find_key(name);

	if (k == NULL)
		return -1;
	if (repeats)
		*repeats = k->type == K_PUB;
	return (int)(k - keys);
}

size_t gd_conf_nkeys(void)
{
	return NKEYS;
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

/* A key not supported yet takes only its default. */
static int unsupported(char *why, size_t whysz)
{
	snprintf(why, whysz, "not supported yet in this version of gdkit");
	return -1;
}

static int set_int(struct gd_conf *c, const struct key *k, const char *v,
    char *why, size_t whysz)
{
	int64_t *p = (int64_t *)(void *)((char *)c + k->off), iv;

	if (k->none_ok && strcmp(v, "auto") == 0) {
		*p = 0;
		return 0;
	}
	if (gd_parse_i64(v, (int64_t)k->min, (int64_t)k->max, &iv) != 0) {
		snprintf(why, whysz, "expected an integer from %.0f to %.0f%s",
		    k->min, k->max, k->none_ok ? " or 'auto'" : "");
		return -1;
	}
	if (!k->supported && iv != *p)
		return unsupported(why, whysz);
	*p = iv;
	return 0;
}

static int set_bool(struct gd_conf *c, const struct key *k, const char *v,
    char *why, size_t whysz)
{
	int64_t *p = (int64_t *)(void *)((char *)c + k->off), iv;

	if (parse_bool(v, &iv) != 0) {
		snprintf(why, whysz, "expected 0 or 1");
		return -1;
	}
	if (!k->supported && iv != *p)
		return unsupported(why, whysz);
	*p = iv;
	return 0;
}

static int set_dur(struct gd_conf *c, const struct key *k, const char *v,
    char *why, size_t whysz)
{
	double *p = (double *)(void *)((char *)c + k->off), dv;

	if (gd_parse_dur(v, k->min, k->max, &dv) != 0) {
		snprintf(why, whysz, "expected seconds from %g to %g", k->min,
		    k->max);
		return -1;
	}
	if (!k->supported && dv != *p)
		return unsupported(why, whysz);
	*p = dv;
	return 0;
}

static int set_enum(struct gd_conf *c, const struct key *k, const char *v,
    char *why, size_t whysz)
{
	int64_t *p = (int64_t *)(void *)((char *)c + k->off);
	size_t i, j, m = 0;
	int empty, n;

	for (i = 0; k->enums[i] != NULL; i++)
		if (strcmp(v, k->enums[i]) == 0)
			break;
	if (k->enums[i] != NULL) {
		if (!k->supported && (int64_t)i != *p)
			return unsupported(why, whysz);
		*p = (int64_t)i;
		return 0;
	}
	/* an empty name (GDsub_reliability's default) is said in words:
	 * "''" reads as a typo */
	empty = k->enums[0][0] == '\0';
	n = snprintf(why, whysz, "expected%s", empty ? "" : " one of");
	for (j = 0; k->enums[j] != NULL && n > 0 && (size_t)n < whysz; j++)
		if (k->enums[j][0] != '\0')
			n += snprintf(why + n, whysz - (size_t)n, "%s'%s'",
			    m++ ? ", " : " ", k->enums[j]);
	if (empty && n > 0 && (size_t)n < whysz)
		snprintf(why + n, whysz - (size_t)n,
		    " or nothing (an empty value, the default)");
	return -1;
}

static int check_cluster(const char *v, char *why, size_t whysz)
{
	if (gd_valid_cluster(v))
		return 0;
	snprintf(why, whysz, "expected %s", GD_VALID_CLUSTER_WHAT);
	return -1;
}

/* cut on the wire, two names alike in their first 255 bytes would take
 * each other's GD slot ("already connected") */
static int check_name(const char *v, char *why, size_t whysz)
{
	if (strlen(v) <= GD_SUB_NAME_MAX)
		return 0;
	snprintf(why, whysz, "a subscriber name has at most %d bytes",
	    GD_SUB_NAME_MAX);
	return -1;
}

static int check_host(const char *v, char *why, size_t whysz)
{
	if (gd_valid_host(v))
		return 0;
	snprintf(why, whysz, "expected %s", GD_VALID_HOST_WHAT);
	return -1;
}

/* --metrics: where the exporter listens, a numeric address and a port */
static int check_metrics(const char *v, char *why, size_t whysz)
{
	char host[GD_HOST_MAX];
	unsigned char a[16];
	int port;

	if (gd_parse_hostport(v, host, sizeof(host), &port) == 0 &&
	    (inet_pton(AF_INET, host, a) == 1 ||
	    inet_pton(AF_INET6, host, a) == 1))
		return 0;
	snprintf(why, whysz, "expected ADDR:PORT, a numeric address and a "
	    "port from 1 to 65535 ([ADDR]:PORT for IPv6), e.g. 127.0.0.1:9464");
	return -1;
}

/* a key file anyone else can read is no secret: refused here, with the
 * file's line or the option, not at the first connection */
static int check_key_file(const char *v, char *why, size_t whysz)
{
	return gd_auth_load(v, NULL, why, whysz) != 0 ? -1 : 0;
}

/* like a key file: a certificate that does not load is said with its
 * line or option */
static int check_tls_cert(const char *v, char *why, size_t whysz)
{
	return gd_tls_check_file(GD_TLS_CERT, v, why, whysz);
}

static int check_tls_key(const char *v, char *why, size_t whysz)
{
	return gd_tls_check_file(GD_TLS_KEY, v, why, whysz);
}

static int check_tls_ca(const char *v, char *why, size_t whysz)
{
	return gd_tls_check_file(GD_TLS_CA, v, why, whysz);
}

static int set_str(struct gd_conf *c, const struct key *k, const char *v,
    char *why, size_t whysz)
{
	char **p = (char **)(void *)((char *)c + k->off);

	if (k->none_ok && strcmp(v, "none") == 0) {
		free(*p);	/* "none" is the default: unset */
		*p = NULL;
		return 0;
	}
	if (*v == '\0' || strlen(v) > 4096) {
		snprintf(why, whysz, "expected a non-empty value of at most 4096 bytes");
		return -1;
	}
	if (!k->supported)
		return unsupported(why, whysz);
	if (k->check != NULL && k->check(v, why, whysz) != 0)
		return -1;
	free(*p);
	*p = strdup(v);
	return *p ? 0 : -1;
}

static int set_pub(struct gd_conf *c, const struct key *k, const char *v,
    char *why, size_t whysz)
{
	struct gd_hostport hp;
	size_t i;

	(void)k;
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

/* Validate and store by the key's type; on failure fill why[] and return
 * -1. */
static int (*const setters[])(struct gd_conf *c, const struct key *k,
    const char *v, char *why, size_t whysz) = {
	[K_INT] = set_int, [K_DUR] = set_dur, [K_BOOL] = set_bool,
	[K_STR] = set_str, [K_ENUM] = set_enum, [K_PUB] = set_pub,
};

static int set_key(struct gd_conf *c, const struct key *k, const char *v,
    char *why, size_t whysz)
{
	return setters[k->type](c, k, v, why, whysz);
}

int gd_conf_set_named(struct gd_conf *c, const char *name, const char *value,
    char *why, size_t whysz)
{
	const struct key *k = find_key(name);

	if (k == NULL)
		return GD_CONF_UNKNOWN;
	if ((k->family & c->family) == 0)
		return GD_CONF_FAMILY;
	if (set_key(c, k, value, why, whysz) != 0)
		return GD_CONF_INVALID;
	if (k->family == GD_FAM_PUB)
		c->seen_pub = 1;
	else
		c->seen_sub = 1;
	return 0;
}

int gd_conf_set_opt(struct gd_conf *c, const char *key, const char *opt,
    const char *value)
{
	const struct key *k = find_key(key);
	char why[768];

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
	c->set_at[k - keys] = -1;
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

int gd_conf_qos(struct gd_conf *c, const char *name, size_t nlen,
    const char *value, char *why, size_t whysz)
{
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		const char *sn = short_name(&keys[i]);
		if (keys[i].opt == NULL || strcmp(keys[i].opt, "--qos") != 0 ||
		    strlen(sn) != nlen || strncmp(sn, name, nlen) != 0)
			continue;
		if (set_key(c, &keys[i], value, why, whysz) != 0)
			return -1;
		return 0;
	}
	snprintf(why, whysz, "unknown QoS name");
	return -1;
}
