/* tls.c: a server and a client object talking through their buffers
 * only (the handshake, both ways of data, a batch larger than a record,
 * close_notify after the last data), the host name check, and the file
 * checks. The certificates are made here, self-signed, in a scratch
 * directory. */
#include "tls.h"
#include "unit.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[64], cert[128], key[128], key2[128];

static EVP_PKEY *write_key(const char *path)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	FILE *f = fopen(path, "w");

	if (k == NULL || f == NULL ||
	    !PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL))
		abort();
	fclose(f);
	return k;
}

/* cert.pem: self-signed for IP 127.0.0.1 (its own CA), key.pem its key,
 * key2.pem another key */
static void make_files(void)
{
	EVP_PKEY *k;
	X509 *x = X509_new();
	X509_EXTENSION *e;
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/gdtls.XXXXXX");
	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	snprintf(key2, sizeof(key2), "%s/key2.pem", dir);
	k = write_key(key);
	EVP_PKEY_free(write_key(key2));
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	    (const unsigned char *)"unit", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	e = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name,
	    "IP:127.0.0.1");
	if (e == NULL || !X509_add_ext(x, e, -1) ||
	    X509_sign(x, k, EVP_sha256()) == 0)
		abort();
	X509_EXTENSION_free(e);
	if ((f = fopen(cert, "w")) == NULL || !PEM_write_X509(f, x))
		abort();
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(k);
}

/* What a has waiting, into b: 1 if anything moved. */
static int move(struct gd_tls *a, struct gd_tls *b)
{
	size_t n;
	uint8_t *d = gd_tls_take(a, &n);

	if (d == NULL)
		return 0;
	if (gd_tls_feed(b, d, n) != GD_TLS_OK)
		abort();
	free(d);
	return 1;
}

static struct gd_tls_ctx *ctx(int server, const char *c, const char *k,
    const char *ca)
{
	struct gd_tls_conf tc = { server, c, k, ca, 13 };
	char why[GD_TLS_ERR_MAX + 600];
	struct gd_tls_ctx *x = gd_tls_ctx_new(&tc, why, sizeof(why));

	if (x == NULL)
		printf("  %s\n", why);
	return x;
}

/* Run the handshake: the last read results of client and server. */
static void shake(struct gd_tls *cl, struct gd_tls *sv, long *rc, long *rs)
{
	uint8_t buf[256];
	int i;

	*rc = *rs = GD_TLS_AGAIN;
	for (i = 0; i < 10; i++) {
		int m = move(cl, sv);
		*rs = gd_tls_read(sv, buf, sizeof(buf));
		m |= move(sv, cl);
		*rc = gd_tls_read(cl, buf, sizeof(buf));
		m |= move(cl, sv);
		if (!m)
			break;
	}
}

TEST(handshake_data_and_close)
{
	struct gd_tls_ctx *sx = ctx(1, cert, key, NULL), *cx = ctx(0, NULL, NULL,
	    cert);
	struct gd_tls *sv, *cl;
	static uint8_t big[300000], got[300000];
	uint8_t buf[64];
	size_t i, have = 0;
	long rc, rs, n;
	char d[400];

	ASSERT(sx != NULL && cx != NULL);
	if (sx == NULL || cx == NULL)
		return;
	sv = gd_tls_new(sx, NULL);
	cl = gd_tls_new(cx, "127.0.0.1");
	ASSERT(gd_tls_pending(cl) > 0);	/* the ClientHello */
	ASSERT_EQ(gd_tls_write(cl, (const uint8_t *)"x", 1), GD_TLS_FAIL);
	shake(cl, sv, &rc, &rs);
	ASSERT_EQ(rc, GD_TLS_AGAIN);
	ASSERT_EQ(rs, GD_TLS_AGAIN);
	ASSERT(gd_tls_done(cl));
	ASSERT(gd_tls_done(sv));
	gd_tls_describe(sv, d, sizeof(d));
	ASSERT(strncmp(d, "TLSv1.3 TLS_", 12) == 0);
	ASSERT(strstr(d, " -") != NULL);	/* the client showed none */
	gd_tls_describe(cl, d, sizeof(d));
	ASSERT(strstr(d, "/CN=unit") != NULL);

	ASSERT_EQ(gd_tls_write(cl, (const uint8_t *)"hello", 5), GD_TLS_OK);
	move(cl, sv);
	n = gd_tls_read(sv, buf, sizeof(buf));
	ASSERT_EQ(n, 5);
	ASSERT(memcmp(buf, "hello", 5) == 0);

	/* a batch many records long, then close_notify, in one feed: every
	 * byte comes out before the end */
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	ASSERT_EQ(gd_tls_write(sv, big, sizeof(big)), GD_TLS_OK);
	gd_tls_close(sv);
	move(sv, cl);
	while ((n = gd_tls_read(cl, got + have, sizeof(got) - have)) > 0)
		have += (size_t)n;
	ASSERT_U64(have, sizeof(big));
	ASSERT(memcmp(got, big, sizeof(big)) == 0);
	ASSERT_EQ(n, GD_TLS_EOF);
	gd_tls_free(sv);
	gd_tls_free(cl);
	gd_tls_ctx_free(sx);
	gd_tls_ctx_free(cx);
}

TEST(wrong_host_and_garbage)
{
	struct gd_tls_ctx *sx = ctx(1, cert, key, NULL), *cx = ctx(0, NULL, NULL,
	    cert);
	struct gd_tls *sv, *cl;
	long rc, rs;
	uint8_t buf[64];
	static const uint8_t junk[] = "\x3c\0\0\0\x01\0\0\0not TLS at all";

	if (sx == NULL || cx == NULL) {
		ASSERT(0);
		return;
	}
	sv = gd_tls_new(sx, NULL);
	cl = gd_tls_new(cx, "10.9.9.9");
	shake(cl, sv, &rc, &rs);
	ASSERT_EQ(rc, GD_TLS_FAIL);
	ASSERT_STR(gd_tls_error(cl),
	    "certificate verify failed: IP address mismatch");
	ASSERT(!gd_tls_peer_refused(cl));
	/* failed for good, with the first reason */
	ASSERT_EQ(gd_tls_read(cl, buf, sizeof(buf)), GD_TLS_FAIL);
	ASSERT_STR(gd_tls_error(cl),
	    "certificate verify failed: IP address mismatch");
	/* the server got the client's alert */
	ASSERT_EQ(rs, GD_TLS_FAIL);
	ASSERT(gd_tls_peer_refused(sv));
	ASSERT(strstr(gd_tls_error(sv), "alert") != NULL);
	gd_tls_free(sv);
	gd_tls_free(cl);

	/* plain bytes at a server: a failure with OpenSSL's reason */
	sv = gd_tls_new(sx, NULL);
	ASSERT_EQ(gd_tls_feed(sv, junk, sizeof(junk) - 1), GD_TLS_OK);
	ASSERT_EQ(gd_tls_read(sv, buf, sizeof(buf)), GD_TLS_FAIL);
	ASSERT(gd_tls_error(sv)[0] != '\0');
	ASSERT(!gd_tls_peer_refused(sv));
	gd_tls_free(sv);
	gd_tls_ctx_free(sx);
	gd_tls_ctx_free(cx);
}

TEST(files)
{
	char why[GD_TLS_ERR_MAX + 600], want[400], bad[128];
	struct gd_tls_conf tc = { 1, cert, key2, NULL, 13 };
	FILE *f;

	ASSERT_EQ(gd_tls_check_file(GD_TLS_CERT, cert, why, sizeof(why)), 0);
	ASSERT_EQ(gd_tls_check_file(GD_TLS_CA, cert, why, sizeof(why)), 0);
	ASSERT_EQ(gd_tls_check_file(GD_TLS_KEY, key, why, sizeof(why)), 0);
	ASSERT_EQ(gd_tls_check_file(GD_TLS_CERT, "/nonexistent/c.pem", why,
	    sizeof(why)), -1);
	ASSERT_STR(why, "cannot read the certificate '/nonexistent/c.pem': "
	    "No such file or directory");
	/* a key is no certificate, a certificate no key */
	ASSERT_EQ(gd_tls_check_file(GD_TLS_CERT, key, why, sizeof(why)), -1);
	snprintf(want, sizeof(want), "cannot read the certificate '%s': no "
	    "start line", key);
	ASSERT_STR(why, want);
	ASSERT_EQ(gd_tls_check_file(GD_TLS_KEY, cert, why, sizeof(why)), -1);
	ASSERT(strstr(why, "no PEM private key in it") != NULL);
	/* a good certificate followed by junk */
	snprintf(bad, sizeof(bad), "%s/bad.pem", dir);
	if ((f = fopen(bad, "w")) != NULL) {
		FILE *c = fopen(cert, "r");
		int ch;
		while (c != NULL && (ch = fgetc(c)) != EOF)
			fputc(ch, f);
		if (c != NULL)
			fclose(c);
		fputs("-----BEGIN CERTIFICATE-----\nAAAA\n-----END "
		    "CERTIFICATE-----\n", f);
		fclose(f);
	}
	ASSERT_EQ(gd_tls_check_file(GD_TLS_CA, bad, why, sizeof(why)), -1);
	ASSERT(strstr(why, "a later certificate in it does not parse") != NULL);
	ASSERT(gd_tls_ctx_new(&tc, why, sizeof(why)) == NULL);
	snprintf(want, sizeof(want), "the private key '%s' does not match the "
	    "certificate '%s'", key2, cert);
	ASSERT_STR(why, want);
	unlink(bad);
}

int main(void)
{
	char cmd[96];

	make_files();
	RUN(handshake_data_and_close);
	RUN(wrong_host_and_garbage);
	RUN(files);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("cannot remove %s\n", dir);
	return UNIT_DONE();
}
