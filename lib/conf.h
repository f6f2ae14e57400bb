/* Configuration: every GDpub_* and GDsub_* key of SPEC §3, read from a
 * key=value file through inih and overridden by command-line options that
 * go through the same validation, so a value means the same wherever it
 * was written. */
#ifndef GD_CONF_H
#define GD_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "dbuf.h"

#define GD_HOST_MAX 256
/* GDsub_name: the handshake carries it after one length byte */
#define GD_SUB_NAME_MAX 255
#define GD_MAX_SUBS 32		/* numSubs bound: one bit per GD slot */
#define GD_MAX_PUBS 1024	/* GDsub_pub lines */
#define GD_CONF_KEYS_MAX 64	/* room in set_at for conf.c's table */

enum gd_family { GD_FAM_PUB = 1, GD_FAM_SUB = 2, GD_FAM_ANY = 3 };
enum { GD_FSYNC_ALWAYS, GD_FSYNC_BATCH, GD_FSYNC_NEVER };
enum { GD_POLICY_REMOVE, GD_POLICY_DROP };
enum { GD_ROLE_PRIMARY, GD_ROLE_SECONDARY };
enum { GD_REL_PIPELINED, GD_REL_ORDERED };
enum { GD_DEDUP_ID, GD_DEDUP_INDEX, GD_DEDUP_NONE };
enum { GD_TLS_MIN_13, GD_TLS_MIN_12 };	/* GD*_tlsMinVersion 1.3, 1.2 */

struct gd_hostport {
	char host[GD_HOST_MAX];
	int port;
};

struct gd_conf {
	int family;
	char *path;		/* config file, or NULL */
	/* publisher */
	int64_t port;		/* -1: not given; 0: any free port */
	double timeout;
	int64_t num_subs;
	char *bind;
	char *host;
	int64_t max_pending;
	int64_t window;		/* GDpub_window; 0: auto */
	int64_t max_block;
	int64_t resend;
	int64_t snapshot;
	char *journal;
	int64_t fsync;
	char *pub_ctl;
	char *pub_auth;		/* GDpub_authKeyFile, checked when set */
	int64_t max_conns;
	double discard_interval;
	double send_timeout;
	int64_t sq_max;
	int64_t sq_policy;
	char *cluster;
	int64_t role;
	double preack_interval;
	double tentative_timeout;
	double confirmed_timeout;
	char *pub_tls_cert;	/* GDpub_tlsCert and _tlsKey: TLS on the port */
	char *pub_tls_key;
	char *pub_tls_ca;	/* GDpub_tlsCA: clients must show a certificate */
	int64_t pub_tls_min;	/* GD_TLS_MIN_* */
	char *pub_metrics;	/* GDpub_metrics: ADDR:PORT of /metrics */
	char *pub_status;	/* GDpub_status: status lines' file, or - */
	/* subscriber */
	struct gd_hostport *pubs;	/* pubs_buf's bytes */
	size_t npubs;
	struct gd_dbuf pubs_buf;	/* at most GD_MAX_PUBS */
	int pubs_from_cli;	/* first -P replaces the file's list */
	double retry_int;
	int64_t max_retries;
	int64_t sub_max_block;	/* GDsub_maxBlockSize */
	char *name;
	int64_t gd;
	char *sub_ctl;
	char *state;
	int64_t dedup;
	int64_t consecutive;
	char *sub_auth;		/* GDsub_authKeyFile, checked when set */
	int64_t reliability;	/* GD_REL_* */
	int64_t retry_count;
	int64_t conn_cached;
	double locator_timeout;
	char *sub_tls_ca;	/* GDsub_tlsCA: TLS to every publisher */
	char *sub_tls_cert;	/* GDsub_tlsCert and _tlsKey: our certificate */
	char *sub_tls_key;
	int64_t sub_tls_min;
	char *sub_metrics;	/* GDsub_metrics */
	unsigned char seen_pub, seen_sub;	/* any key of the family given */
	/* where each key of conf.c's table got its value, so a check across
	 * keys can say a config file's line: 0 its default, N > 0 line N of
	 * path, -1 the command line */
	int set_at[GD_CONF_KEYS_MAX];
};

void gd_conf_init(struct gd_conf *c, int family);
void gd_conf_free(struct gd_conf *c);

/* Set the key called name from a file's value: 0, GD_CONF_UNKNOWN (no
 * such key), GD_CONF_FAMILY (a key of the other program), or
 * GD_CONF_INVALID with why filled in. */
enum { GD_CONF_UNKNOWN = 1, GD_CONF_FAMILY, GD_CONF_INVALID };
int gd_conf_set_named(struct gd_conf *c, const char *name, const char *value,
    char *why, size_t whysz);
/* Load FILE; on error prints "PROG: FILE:LINE: KEY: why" and returns
 * GD_EX_CONFIG, else 0 after a warning for each key set more than once
 * (its last value is kept). */
int gd_conf_load(struct gd_conf *c, const char *file);

/* Set KEY from the command-line option OPT ("--port"); on error prints
 * "PROG: invalid value 'V' for --port: why" and returns GD_EX_USAGE. */
int gd_conf_set_opt(struct gd_conf *c, const char *key, const char *opt,
    const char *value);

/* Checks that need the whole config (required keys). Returns 0 or an
 * exit code after printing why. */
int gd_conf_check(const struct gd_conf *c, int family);

/* The checks across keys of c's family (GDpub_role=secondary needs
 * GDpub_cluster), with what the command line says beside them: ids, the
 * input carries the block IDs (-I, -f frame); out, gdpub writes a stream
 * (-o). 0, or the exit code after printing why: a config error, 78, when
 * the config file alone set the keys ("FILE:LINE: why", the line of the
 * first key, the others' lines after it); a bad command line, 64, when
 * an option set one of them or takes part. */
int gd_conf_check_keys(const struct gd_conf *c, int ids, int out);

/* gdpub was passed a socket listening on port (activate.h; what names
 * it, "fd 3 (NAME)"): GDpub_port, when set, must be that port (0, or the
 * exit code after saying why, as gd_conf_check_keys does); GDpub_bind,
 * which it makes moot, is a warning. */
int gd_conf_check_passed(const struct gd_conf *c, int port, const char *addr,
    const char *what);

/* Set the key whose command-line option is opt ("--port": the table's
 * option column, so the programs do not restate which option sets which
 * key), for the keys of c's family. value is the option's argument, or
 * NULL for an option without one: a boolean key is set to 1, or to 0 by
 * an option named --no-*. An option of several keys (--qos) takes
 * NAME=VALUE, NAME a key without its GDsub_ prefix. Returns 0, or
 * GD_EX_USAGE after printing why; -1 when no key has that option. */
int gd_conf_set_option(struct gd_conf *c, const char *opt, const char *value);

/* One QoS setting NAME=VALUE (NAME the key without GDsub_, nlen bytes),
 * validated by the key table as --qos would be, into c (of the subscriber
 * family): 0, or -1 with why filled (gdpub checks what a gdsub sent). */
int gd_conf_qos(struct gd_conf *c, const char *name, size_t nlen,
    const char *value, char *why, size_t whysz);

/* The long option documented for KEY, or NULL (tests, man page check). */
const char *gd_conf_option(const char *key);

/* The index of the key called name, from 0 to gd_conf_nkeys() - 1, or -1
 * when there is none; *repeats says whether the key may be given more
 * than once (GDsub_pub). */
int gd_conf_key_index(const char *name, int *repeats);
size_t gd_conf_nkeys(void);

/* Each key, for iteration by tests: returns NULL past the end. */
const char *gd_conf_key_at(size_t i, int *family, int *supported);
/* A cluster name for keys @NAME/ID: letters, digits, '.', '_', '-'. */
#define GD_CLUSTER_NAME_MAX 64
#define GD_VALID_CLUSTER_WHAT "a cluster name of 1 to 64 letters, digits, '.', '_' or '-'"

#endif
