/* Checks across config keys, once every file and option is read: keys
 * that go together or exclude each other, and the TLS files opened as a
 * run would (conf.c checks each key alone as it is set). An error names
 * the file and line of the keys it is about, or says the option. */
#include "conf.h"
#include "log.h"
#include "tls.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* A check across keys failed: names the keys it is about, NULL-ended;
 * cli says a command-line option without a key takes part (-o). */
static int conflict(const struct gd_conf *c, const char *const *names,
    int cli, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int conflict(const struct gd_conf *c, const char *const *names,
    int cli, const char *fmt, ...)
{
	char msg[1024], also[256];
	size_t i, n = 0;
	int line = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	also[0] = '\0';
	for (i = 0; names[i] != NULL; i++) {
		int k = gd_conf_key_index(names[i], NULL), at;
		at = k < 0 ? 0 : c->set_at[k];
		if (at < 0)
			cli = 1;
		else if (at > 0 && line == 0)
			line = at;
		else if (at > 0 && n < sizeof(also))
			n += (size_t)snprintf(also + n, sizeof(also) - n,
			    "%s%s on line %d", n ? ", " : " (", names[i], at);
	}
	if (cli || line == 0 || c->path == NULL) {
		gd_usage_err("%s", msg);
		return GD_EX_USAGE;
	}
	gd_err("%s:%d: %s%s%s", c->path, line, msg, also, n ? ")" : "");
	return GD_EX_CONFIG;
}

/* A certificate and its key go together, and must match; a gdsub's
 * certificate is for a publisher it verifies (GDsub_tlsCA). */
static int check_tls(const struct gd_conf *c)
{
	static const char *const pub_pair[] = { "GDpub_tlsCert", "GDpub_tlsKey",
	    NULL };
	static const char *const pub_ca[] = { "GDpub_tlsCA", NULL };
	static const char *const sub_pair[] = { "GDsub_tlsCert", "GDsub_tlsKey",
	    NULL };
	static const char *const sub_ca[] = { "GDsub_tlsCert", "GDsub_tlsCA",
	    NULL };
	int pub = c->family == GD_FAM_PUB;
	const char *cert = pub ? c->pub_tls_cert : c->sub_tls_cert;
	const char *key = pub ? c->pub_tls_key : c->sub_tls_key;
	const char *const *pair = pub ? pub_pair : sub_pair;
	struct gd_tls_conf tc = { pub, cert, key, NULL, 13 };
	struct gd_tls_ctx *x;
	char why[GD_TLS_ERR_MAX + 600];

	if ((cert == NULL) != (key == NULL))
		return conflict(c, pair, 0, "%s needs %s: a certificate and its "
		    "private key go together", cert ? pair[0] : pair[1],
		    cert ? pair[1] : pair[0]);
	if (pub && c->pub_tls_ca != NULL && cert == NULL)
		return conflict(c, pub_ca, 0, "GDpub_tlsCA needs GDpub_tlsCert and "
		    "GDpub_tlsKey: clients are asked for certificates only over "
		    "TLS");
	if (!pub && cert != NULL && c->sub_tls_ca == NULL)
		return conflict(c, sub_ca, 0, "GDsub_tlsCert needs GDsub_tlsCA: "
		    "the CA that signed the publisher's certificate");
	if (cert == NULL)
		return 0;
	if ((x = gd_tls_ctx_new(&tc, why, sizeof(why))) == NULL)
		return conflict(c, pair, 0, "%s", why);
	gd_tls_ctx_free(x);
	return 0;
}

int gd_conf_check_keys(const struct gd_conf *c, int ids, int out)
{
	int rc;

	static const char *const role_cluster[] = { "GDpub_role",
	    "GDpub_cluster", NULL };
	static const char *const cluster[] = { "GDpub_cluster", NULL };
	static const char *const role_subs[] = { "GDpub_role",
	    "GDpub_numSubs", NULL };
	static const char *const journal_subs[] = { "GDpub_journal",
	    "GDpub_numSubs", NULL };
	static const char *const snapshot[] = { "GDpub_snapshot", NULL };
	static const char *const state_gd[] = { "GDsub_state", "GDsub_gd",
	    NULL };

	if ((rc = check_tls(c)) != 0)
		return rc;
	if (c->family == GD_FAM_SUB) {
		if (c->state && !c->gd)
			return conflict(c, state_gd, 0, "cannot use --state "
			    "(GDsub_state) with --no-gd (GDsub_gd=0): nothing "
			    "is acknowledged");
		return 0;
	}
	if (out && c->snapshot > 0)
		return conflict(c, snapshot, 1, "GDpub_snapshot cannot be used "
		    "with -o: a stream has no subscribers joining later to "
		    "replay blocks to");
	if (c->cluster == NULL && c->role == GD_ROLE_SECONDARY)
		return conflict(c, role_cluster, 0, "GDpub_role=secondary needs "
		    "GDpub_cluster (--cluster NAME): a secondary of which "
		    "cluster?");
	if (c->cluster != NULL && !ids)
		return conflict(c, cluster, 0, "GDpub_cluster needs the block "
		    "IDs from the input (-I/--ids or -f frame): every member "
		    "of cluster %s must give a block the same ID, and gdpub "
		    "would number them itself", c->cluster);
	if (c->cluster != NULL && out)
		return conflict(c, cluster, 1, "GDpub_cluster cannot be used "
		    "with -o: cluster members serve their subscribers over TCP");
	if (c->cluster != NULL && c->role == GD_ROLE_SECONDARY &&
	    c->num_subs == 0)
		return conflict(c, role_subs, 0, "GDpub_role=secondary needs "
		    "GDpub_numSubs of 1 or more: pre-acknowledgements come "
		    "from GD subscribers, and without them every block would "
		    "wait out its GDpub_tentativePreAckTimeout first");
	/* pub_journal.c says it too, but only once the run has begun */
	if (c->journal != NULL && c->num_subs == 0)
		return conflict(c, journal_subs, 0, "GDpub_journal needs "
		    "GDpub_numSubs above 0: with GD off nothing is pending to "
		    "journal");
	return 0;
}

int gd_conf_check_passed(const struct gd_conf *c, int port, const char *addr,
    const char *what)
{
	static const char *const port_key[] = { "GDpub_port", NULL };

	if (c->port >= 0 && c->port != port)
		return conflict(c, port_key, 0, "GDpub_port is %d, and the "
		    "service manager passed a socket listening on port %d (%s): "
		    "leave GDpub_port out, or make them agree", (int)c->port,
		    port, what);
	if (c->bind != NULL)
		gd_warn("GDpub_bind=%s is not used: gdpub serves its subscribers "
		    "on the socket the service manager passed (%s, address %s)",
		    c->bind, what, addr);
	return 0;
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
