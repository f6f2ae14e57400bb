/* The handshake-facing code around OpenSSL (lib/tls.c), not OpenSSL
 * itself: the bytes are what an untrusted peer sends, fed into a
 * connection object in pieces as the loop would read them. The first
 * byte picks the side (bit 0: a server, as gdpub, else a client, as
 * gdsub, whose ClientHello is already out) and the piece size (the other
 * bits). After each piece everything readable is read and the waiting
 * ciphertext taken, as pub_tls.c and sub_tls.c do. A failure must be a
 * GD_TLS_FAIL with a reason, and stay one; nothing may crash or leak. A
 * handshake can only complete with a real peer, so no input reaches
 * application data: what is fuzzed is the handshake's and the error's
 * paths through lib/tls.c. The server's certificate is made once, into
 * the scratch directory. */
#include "fuzz.h"
#include "tls.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

static struct gd_tls_ctx *server, *client;

/* A self-signed P-256 certificate and its key, as PEM files. */
static void make_cert(char *cert, char *key, size_t sz)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = X509_new();
	FILE *f;

	snprintf(cert, sz, "%s/cert.pem", fuzz_dir);
	snprintf(key, sz, "%s/key.pem", fuzz_dir);
	if (k == NULL || x == NULL)
		abort();
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, k);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	    (const unsigned char *)"fuzz", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	if (X509_sign(x, k, EVP_sha256()) == 0)
		abort();
	if ((f = fopen(cert, "w")) == NULL || !PEM_write_X509(f, x))
		abort();
	fclose(f);
	if ((f = fopen(key, "w")) == NULL ||
	    !PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL))
		abort();
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(k);
}

static void setup(void)
{
	char cert[128], key[128], why[GD_TLS_ERR_MAX + 600];
	struct gd_tls_conf sc = { 1, cert, key, NULL, 13 };
	struct gd_tls_conf cc = { 0, NULL, NULL, cert, 12 };

	if (server != NULL)
		return;
	fuzz_once();
	make_cert(cert, key, sizeof(cert));
	if ((server = gd_tls_ctx_new(&sc, why, sizeof(why))) == NULL ||
	    (client = gd_tls_ctx_new(&cc, why, sizeof(why))) == NULL) {
		fprintf(stderr, "fuzz_tls: %s\n", why);
		abort();
	}
}

/* Read all there is, take what waits: the last read's result. */
static long drain(struct gd_tls *t)
{
	static uint8_t buf[16384];
	uint8_t *out;
	size_t n;
	long got;

	while ((got = gd_tls_read(t, buf, sizeof(buf))) > 0)
		;
	out = gd_tls_take(t, &n);
	if ((out == NULL) != (n == 0))
		abort();
	free(out);
	if (gd_tls_pending(t) != 0)
		abort();
	return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gd_tls *t;
	size_t off = 1, piece;
	uint8_t *out;
	size_t n;
	long got = GD_TLS_AGAIN;
	char d[400];

	setup();
	if (size < 1)
		return 0;
	piece = (size_t)(data[0] >> 1) * 7 + 1;
	t = gd_tls_new(data[0] & 1 ? server : client, "fuzz.example");
	if (t == NULL)
		abort();
	free(gd_tls_take(t, &n));	/* a client's ClientHello */
	while (off < size) {
		size_t len = size - off < piece ? size - off : piece;
		if (gd_tls_feed(t, data + off, len) != GD_TLS_OK)
			abort();
		off += len;
		got = drain(t);
		if (got == GD_TLS_FAIL || got == GD_TLS_EOF)
			break;
		if (got != GD_TLS_AGAIN)
			abort();
	}
	if (got == GD_TLS_FAIL) {
		const char *why = gd_tls_error(t);
		if (why == NULL || why[0] == '\0')
			abort();
		/* a failed connection stays failed */
		if (drain(t) > 0)
			abort();
	}
	/* before a finished handshake nothing can be sent */
	if (!gd_tls_done(t) && gd_tls_write(t, data, size) != GD_TLS_FAIL)
		abort();
	gd_tls_describe(t, d, sizeof(d));
	gd_tls_close(t);
	out = gd_tls_take(t, &n);
	free(out);
	gd_tls_free(t);
	return 0;
}
