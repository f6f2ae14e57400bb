/* TLS through memory BIOs (tls.h). The reasons a handshake fails are
 * OpenSSL's, said once per failure with the verification's result when
 * that was the cause: "certificate verify failed: certificate has
 * expired" names more than "certificate verify failed". */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct gd_tls_ctx {
	SSL_CTX *ctx;
	int server;
};

struct gd_tls {
	SSL *ssl;
	BIO *rbio, *wbio;	/* the peer's ciphertext in; ours out */
	int peer_refused;
	int failed;		/* for good: the first reason is kept */
	char err[GD_TLS_ERR_MAX];
};

/* An encrypted key would make OpenSSL ask on the terminal: refused. */
static int no_password(char *buf, int size, int rw, void *u)
{
	(void)buf;
	(void)size;
	(void)rw;
	(void)u;
	return -1;
}

/* OpenSSL's reason for the latest error on this thread's queue, which
 * is then emptied (a stale entry would be blamed for the next failure). */
static const char *ssl_reason(char *buf, size_t sz)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;

	if (r != NULL)
		snprintf(buf, sz, "%s", r);
	else if (e != 0)
		ERR_error_string_n(e, buf, sz);
	else
		snprintf(buf, sz, "unknown error");
	ERR_clear_error();
	return buf;
}

static const char *const kind_name[] = { "certificate", "private key",
	"CA certificate" };

int gd_tls_check_file(int kind, const char *path, char *why, size_t whysz)
{
	FILE *f = fopen(path, "r");
	char r[256];
	int ok = 0, n = 0;

	if (f == NULL) {
		snprintf(why, whysz, "cannot read the %s '%s': %s",
		    kind_name[kind], path, strerror(errno));
		return -1;
	}
	ERR_clear_error();
	if (kind == GD_TLS_KEY) {
		EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, no_password, NULL);
		ok = k != NULL;
		EVP_PKEY_free(k);
		if (!ok) {	/* OpenSSL 3 says "unsupported" of any non-key */
			snprintf(why, whysz, "cannot read the private key '%s': "
			    "no PEM private key in it (%s)", path,
			    ssl_reason(r, sizeof(r)));
			fclose(f);
			return -1;
		}
	} else {
		X509 *x;
		/* a CA file may hold several; every one must parse */
		while ((x = PEM_read_X509(f, NULL, no_password, NULL)) != NULL) {
			X509_free(x);
			n++;
		}
		ok = n > 0 && ERR_GET_REASON(ERR_peek_last_error()) ==
		    PEM_R_NO_START_LINE;
	}
	fclose(f);
	if (!ok) {
		snprintf(why, whysz, "cannot read the %s '%s': %s",
		    kind_name[kind], path, n > 0 ? "a later certificate in it "
		    "does not parse" : ssl_reason(r, sizeof(r)));
		ERR_clear_error();
		return -1;
	}
	ERR_clear_error();
	return 0;
}

struct gd_tls_ctx *gd_tls_ctx_new(const struct gd_tls_conf *c, char *why,
    size_t whysz)
{
	struct gd_tls_ctx *x = calloc(1, sizeof(*x));
	char r[256];

	if (x == NULL) {
		snprintf(why, whysz, "out of memory");
		return NULL;
	}
	x->server = c->server;
	ERR_clear_error();
	x->ctx = SSL_CTX_new(c->server ? TLS_server_method() :
	    TLS_client_method());
	if (x->ctx == NULL) {
		snprintf(why, whysz, "cannot set up TLS: %s",
		    ssl_reason(r, sizeof(r)));
		free(x);
		return NULL;
	}
	SSL_CTX_set_default_passwd_cb(x->ctx, no_password);
	(void)SSL_CTX_set_min_proto_version(x->ctx, c->min_version == 12 ?
	    TLS1_2_VERSION : TLS1_3_VERSION);
	SSL_CTX_set_options(x->ctx, SSL_OP_NO_RENEGOTIATION);
	/* no session is ever resumed: tickets would be bytes for nothing */
	(void)SSL_CTX_set_num_tickets(x->ctx, 0);
	if (c->cert != NULL &&
	    SSL_CTX_use_certificate_chain_file(x->ctx, c->cert) != 1) {
		snprintf(why, whysz, "cannot use the certificate '%s': %s",
		    c->cert, ssl_reason(r, sizeof(r)));
		goto fail;
	}
	if (c->key != NULL &&
	    SSL_CTX_use_PrivateKey_file(x->ctx, c->key, SSL_FILETYPE_PEM) != 1) {
		/* checked against the certificate as it is loaded */
		if (c->cert != NULL && ERR_GET_REASON(ERR_peek_last_error()) ==
		    X509_R_KEY_VALUES_MISMATCH)
			snprintf(why, whysz, "the private key '%s' does not "
			    "match the certificate '%s'", c->key, c->cert);
		else
			snprintf(why, whysz, "cannot use the private key '%s': "
			    "%s", c->key, ssl_reason(r, sizeof(r)));
		ERR_clear_error();
		goto fail;
	}
	if (c->cert != NULL && c->key != NULL &&
	    SSL_CTX_check_private_key(x->ctx) != 1) {
		snprintf(why, whysz, "the private key '%s' does not match the "
		    "certificate '%s': %s", c->key, c->cert,
		    ssl_reason(r, sizeof(r)));
		goto fail;
	}
	if (c->ca != NULL) {
		if (SSL_CTX_load_verify_locations(x->ctx, c->ca, NULL) != 1) {
			snprintf(why, whysz, "cannot use the CA certificate "
			    "'%s': %s", c->ca, ssl_reason(r, sizeof(r)));
			goto fail;
		}
		if (c->server) {
			STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(c->ca);
			if (names != NULL)
				SSL_CTX_set_client_CA_list(x->ctx, names);
			SSL_CTX_set_verify(x->ctx, SSL_VERIFY_PEER |
			    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
		}
	} else if (!c->server)
		(void)SSL_CTX_set_default_verify_paths(x->ctx);
	if (!c->server)
		SSL_CTX_set_verify(x->ctx, SSL_VERIFY_PEER, NULL);
	ERR_clear_error();
	return x;
fail:
	SSL_CTX_free(x->ctx);
	free(x);
	return NULL;
}

void gd_tls_ctx_free(struct gd_tls_ctx *x)
{
	if (x == NULL)
		return;
	SSL_CTX_free(x->ctx);
	free(x);
}

static int handshake(struct gd_tls *t);

struct gd_tls *gd_tls_new(struct gd_tls_ctx *x, const char *host)
{
	struct gd_tls *t = calloc(1, sizeof(*t));
	unsigned char ip[16];

	if (t == NULL)
		return NULL;
	t->ssl = SSL_new(x->ctx);
	t->rbio = BIO_new(BIO_s_mem());
	t->wbio = BIO_new(BIO_s_mem());
	if (t->ssl == NULL || t->rbio == NULL || t->wbio == NULL) {
		BIO_free(t->rbio);
		BIO_free(t->wbio);
		SSL_free(t->ssl);
		free(t);
		ERR_clear_error();
		return NULL;
	}
	/* an empty BIO means "more later", not the end of the stream */
	BIO_set_mem_eof_return(t->rbio, -1);
	BIO_set_mem_eof_return(t->wbio, -1);
	SSL_set_bio(t->ssl, t->rbio, t->wbio);
	if (x->server) {
		SSL_set_accept_state(t->ssl);
		return t;
	}
	SSL_set_connect_state(t->ssl);
	if (host != NULL) {
		/* an address is checked against the certificate's IP names,
		 * a name against its DNS names (and sent as SNI) */
		if (inet_pton(AF_INET, host, ip) == 1 ||
		    inet_pton(AF_INET6, host, ip) == 1)
			(void)X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl),
			    host);
		else {
			(void)SSL_set_tlsext_host_name(t->ssl, host);
			(void)SSL_set1_host(t->ssl, host);
		}
	}
	(void)handshake(t);	/* the ClientHello, for gd_tls_take */
	return t;
}

void gd_tls_free(struct gd_tls *t)
{
	if (t == NULL)
		return;
	SSL_free(t->ssl);	/* and its BIOs */
	free(t);
}

int gd_tls_feed(struct gd_tls *t, const uint8_t *d, size_t n)
{
	size_t done = 0;

	while (done < n) {
		int chunk = n - done > 1u << 30 ? 1 << 30 : (int)(n - done);
		int w = BIO_write(t->rbio, d + done, chunk);
		if (w <= 0) {
			snprintf(t->err, sizeof(t->err), "out of memory");
			return GD_TLS_FAIL;
		}
		done += (size_t)w;
	}
	return GD_TLS_OK;
}

/* A failed call: its reason kept for gd_tls_error. */
static int failed(struct gd_tls *t, int ret)
{
	int e = SSL_get_error(t->ssl, ret);
	unsigned long q;
	long v;
	char r[256];

	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return GD_TLS_AGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return GD_TLS_EOF;
	case SSL_ERROR_SSL:
		t->failed = 1;
		q = ERR_peek_last_error();
		/* OpenSSL numbers a received alert's reason from 1000 */
		t->peer_refused = ERR_GET_LIB(q) == ERR_LIB_SSL &&
		    ERR_GET_REASON(q) >= SSL_AD_REASON_OFFSET &&
		    ERR_GET_REASON(q) < SSL_AD_REASON_OFFSET + 256;
		ssl_reason(r, sizeof(r));
		v = SSL_get_verify_result(t->ssl);
		if (ERR_GET_REASON(q) == SSL_R_CERTIFICATE_VERIFY_FAILED &&
		    v != X509_V_OK)
			snprintf(t->err, sizeof(t->err), "%s: %s", r,
			    X509_verify_cert_error_string(v));
		else
			snprintf(t->err, sizeof(t->err), "%s", r);
		return GD_TLS_FAIL;
	default:
		t->failed = 1;
		snprintf(t->err, sizeof(t->err), "TLS error %d: %s", e,
		    ssl_reason(r, sizeof(r)));
		return GD_TLS_FAIL;
	}
}

/* Move the handshake on without reading: GD_TLS_OK once done,
 * GD_TLS_AGAIN, GD_TLS_FAIL. */
static int handshake(struct gd_tls *t)
{
	int ret;

	if (t->failed)
		return GD_TLS_FAIL;
	if (SSL_is_init_finished(t->ssl))
		return GD_TLS_OK;
	ERR_clear_error();
	ret = SSL_do_handshake(t->ssl);
	return ret == 1 ? GD_TLS_OK : failed(t, ret);
}

int gd_tls_done(const struct gd_tls *t)
{
	return SSL_is_init_finished(t->ssl);
}

long gd_tls_read(struct gd_tls *t, uint8_t *buf, size_t cap)
{
	size_t n = 0;
	int ret;

	if (t->failed)
		return GD_TLS_FAIL;
	ERR_clear_error();
	ret = SSL_read_ex(t->ssl, buf, cap, &n);
	if (ret == 1)
		return (long)n;
	return failed(t, ret);
}

int gd_tls_write(struct gd_tls *t, const uint8_t *d, size_t n)
{
	size_t w;
	int ret;

	if (t->failed)
		return GD_TLS_FAIL;
	ERR_clear_error();
	while (n > 0) {
		ret = SSL_write_ex(t->ssl, d, n, &w);
		if (ret != 1) {
			ret = failed(t, ret);
			if (ret == GD_TLS_AGAIN)	/* not done: no write yet */
				snprintf(t->err, sizeof(t->err), "the TLS "
				    "handshake is not done");
			return GD_TLS_FAIL;
		}
		d += w;
		n -= w;
	}
	return GD_TLS_OK;
}

void gd_tls_close(struct gd_tls *t)
{
	if (!t->failed && SSL_is_init_finished(t->ssl))
		(void)SSL_shutdown(t->ssl);
	ERR_clear_error();
}

size_t gd_tls_pending(const struct gd_tls *t)
{
	return BIO_ctrl_pending(t->wbio);
}

uint8_t *gd_tls_take(struct gd_tls *t, size_t *len)
{
	size_t n = BIO_ctrl_pending(t->wbio);
	uint8_t *b;

	*len = 0;
	if (n == 0 || (b = malloc(n)) == NULL)
		return NULL;
	if (BIO_read(t->wbio, b, (int)n) != (int)n) {
		free(b);
		return NULL;
	}
	*len = n;
	return b;
}

const char *gd_tls_error(const struct gd_tls *t)
{
	return t->err[0] ? t->err : "unknown TLS error";
}

int gd_tls_peer_refused(const struct gd_tls *t)
{
	return t->peer_refused;
}

void gd_tls_describe(const struct gd_tls *t, char *buf, size_t sz)
{
	X509 *peer = SSL_get_peer_certificate(t->ssl);
	char subj[256] = "-";

	if (!SSL_is_init_finished(t->ssl)) {
		snprintf(buf, sz, "handshake");
		return;
	}
	if (peer != NULL) {
		X509_NAME_oneline(X509_get_subject_name(peer), subj, sizeof(subj));
		X509_free(peer);
	}
	snprintf(buf, sz, "%s %s %s", SSL_get_version(t->ssl),
	    SSL_get_cipher_name(t->ssl), subj);
}

int gd_tls_looks_like_hello(const uint8_t *d, size_t n)
{
	/* a handshake record of SSL 3.0 to TLS 1.3's legacy versions */
	return n >= 3 && d[0] == 0x16 && d[1] == 0x03 && d[2] <= 0x04;
}

size_t gd_tls_plain_alert(uint8_t out[7])
{
	static const uint8_t alert[7] = { 0x15, 0x03, 0x03, 0x00, 0x02,
		0x02, 0x28 };	/* alert record: fatal, handshake_failure */

	memcpy(out, alert, sizeof(alert));
	return sizeof(alert);
}
