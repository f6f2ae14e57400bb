/* TLS for the gdpub <-> gdsub TCP connection, through OpenSSL's libssl
 * and memory BIOs: the loop's socket code reads ciphertext and hands it
 * in (gd_tls_feed), takes plaintext out (gd_tls_read), hands plaintext in
 * (gd_tls_write) and writes out the ciphertext waiting (gd_tls_take). No
 * socket is touched here, nothing blocks and nothing runs in a thread. */
#ifndef GD_TLS_H
#define GD_TLS_H

#include <stddef.h>
#include <stdint.h>

#define GD_TLS_ERR_MAX 400
#define GD_TLS_RECORD_MAX 16384	/* plaintext bytes of one record (RFC 8446
				 * 5.1; the same bound in TLS 1.2) */

struct gd_tls_ctx;
struct gd_tls;

/* What a side needs: cert and key (the server's, or a client's own for
 * mutual TLS), ca (the server: clients must show a certificate it
 * signed; the client: it verifies the server), min_version 12 or 13. */
struct gd_tls_conf {
	int server;
	const char *cert, *key, *ca;
	int min_version;
};

/* Check one file as what it should be (GD_TLS_CERT, _KEY, _CA): 0, or -1
 * with why ("cannot read the certificate 'F': REASON"). */
enum { GD_TLS_CERT, GD_TLS_KEY, GD_TLS_CA };
int gd_tls_check_file(int kind, const char *path, char *why, size_t whysz);

/* A context from the files: NULL with why filled. */
struct gd_tls_ctx *gd_tls_ctx_new(const struct gd_tls_conf *c, char *why,
    size_t whysz);
void gd_tls_ctx_free(struct gd_tls_ctx *x);

/* A connection: host (a client's) is the name or address the server's
 * certificate must carry. NULL when out of memory. A client's first
 * flight is waiting in gd_tls_take once made. */
struct gd_tls *gd_tls_new(struct gd_tls_ctx *x, const char *host);
void gd_tls_free(struct gd_tls *t);

/* Results of gd_tls_feed/_read/_write. */
enum { GD_TLS_OK = 0, GD_TLS_AGAIN = -1, GD_TLS_FAIL = -2, GD_TLS_EOF = -3 };

/* Ciphertext from the peer: GD_TLS_OK, or GD_TLS_FAIL (out of memory). */
int gd_tls_feed(struct gd_tls *t, const uint8_t *d, size_t n);
/* Plaintext into buf (at most cap bytes): the count (> 0), GD_TLS_AGAIN
 * (more ciphertext is needed; the handshake may have moved on, and may
 * have left bytes for gd_tls_take), GD_TLS_EOF (the peer's close_notify)
 * or GD_TLS_FAIL (gd_tls_error says why). */
long gd_tls_read(struct gd_tls *t, uint8_t *buf, size_t cap);
int gd_tls_done(const struct gd_tls *t);
/* Encrypt n bytes (after the handshake): GD_TLS_OK or GD_TLS_FAIL. */
int gd_tls_write(struct gd_tls *t, const uint8_t *d, size_t n);
/* Our close_notify, into what waits for gd_tls_take. */
void gd_tls_close(struct gd_tls *t);
/* The ciphertext waiting to go to the peer: its length, and taken into
 * a buffer of its own (malloc, *len; NULL when nothing waits or out of
 * memory, *len 0). */
size_t gd_tls_pending(const struct gd_tls *t);
uint8_t *gd_tls_take(struct gd_tls *t, size_t *len);

/* Why the last GD_TLS_FAIL: OpenSSL's reason, the verification's result
 * ("certificate has expired") or the peer's alert. */
const char *gd_tls_error(const struct gd_tls *t);
/* The failure was the peer's alert (it refused us), not our check. */
int gd_tls_peer_refused(const struct gd_tls *t);
/* "TLSv1.3 TLS_AES_256_GCM_SHA384 CN=..." once the handshake is done:
 * version, cipher, the peer certificate's subject (or "-"). */
void gd_tls_describe(const struct gd_tls *t, char *buf, size_t sz);

/* Bytes that open a TLS handshake (a ClientHello record): a plain
 * listener tells a TLS client by them. */
int gd_tls_looks_like_hello(const uint8_t *d, size_t n);
/* A TLS alert record (fatal, handshake_failure) a plain listener answers
 * a TLS client with, so that its handshake fails at once with a reason. */
size_t gd_tls_plain_alert(uint8_t out[7]);

#endif
