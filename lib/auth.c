/* Pre-shared key loading and the HMAC-SHA256 proofs of the connection
 * handshake (auth.h). OpenSSL's libcrypto rather than libsodium: it is
 * on every Debian machine already (libssl3, with libssl-dev to build),
 * and it has the pieces needed: HMAC, and CRYPTO_memcmp for a comparison
 * whose time does not depend on where the bytes differ. Nonces come from
 * the kernel's generator (getrandom). */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

/* 19 bytes each, NUL excluded: the role that proves */
static const char label_pub[] = "gdkit-auth-v3 pub >";
static const char label_sub[] = "gdkit-auth-v3 sub <";

int gd_auth_load(const char *path, struct gd_auth_key *key, char *why,
    size_t whysz)
{
	unsigned char buf[GD_AUTH_KEY_MAX + 1];
	struct stat st;
	size_t n = 0;
	ssize_t r = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC)) < 0) {
		snprintf(why, whysz, "cannot open key file '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	/* the file opened, not the name: no race with a chmod or rename */
	if (fstat(fd, &st) != 0) {
		snprintf(why, whysz, "cannot read key file '%s': %s", path,
		    strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whysz, "key file '%s' is not a regular file", path);
		close(fd);
		return -1;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(why, whysz, "key file '%s' has mode %04o: group and "
		    "others must have no access (chmod 600 '%s')", path,
		    (unsigned)(st.st_mode & 07777), path);
		close(fd);
		return -1;
	}
	while (n < sizeof(buf) &&
	    ((r = read(fd, buf + n, sizeof(buf) - n)) > 0 ||
	    (r < 0 && errno == EINTR)))
		if (r > 0)
			n += (size_t)r;
	if (n < sizeof(buf) && r < 0) {
		snprintf(why, whysz, "cannot read key file '%s': %s", path,
		    strerror(errno));
		close(fd);
		OPENSSL_cleanse(buf, sizeof(buf));
		return -1;
	}
	close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' ||
	    buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		n--;
	if (n < GD_AUTH_KEY_MIN || n > GD_AUTH_KEY_MAX) {
		snprintf(why, whysz, "key file '%s' holds %s%zu bytes: a key "
		    "has %d to %d (e.g. head -c 32 /dev/urandom | base64 > "
		    "FILE)", path, n > GD_AUTH_KEY_MAX ? "more than " : "",
		    n > GD_AUTH_KEY_MAX ? (size_t)GD_AUTH_KEY_MAX : n,
		    GD_AUTH_KEY_MIN, GD_AUTH_KEY_MAX);
		OPENSSL_cleanse(buf, sizeof(buf));
		return -1;
	}
	if (key != NULL) {
		memcpy(key->k, buf, n);
		key->len = n;
	}
	OPENSSL_cleanse(buf, sizeof(buf));
	return 0;
}

void gd_auth_clear(struct gd_auth_key *key)
{
	OPENSSL_cleanse(key->k, sizeof(key->k));
	key->len = 0;
}

/* The nonce straight from the kernel's generator (getrandom, which also
 * seeds libcrypto's): a connection without a key never starts libcrypto's
 * own generator, whose start-up cost every short run paid. */
int gd_auth_nonce(uint8_t nonce[GD_AUTH_NONCE])
{
	ssize_t n;

	do
		n = getrandom(nonce, GD_AUTH_NONCE, 0);
	while (n < 0 && errno == EINTR);
	return n == GD_AUTH_NONCE ? 0 : -1;
}

int gd_auth_hmac(const void *key, size_t klen, const void *msg, size_t mlen,
    uint8_t out[GD_AUTH_MAC])
{
	unsigned int olen = 0;

	if (HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &olen) == NULL ||
	    olen != GD_AUTH_MAC)
		return -1;
	return 0;
}

int gd_auth_proof(const struct gd_auth_key *key, enum gd_auth_role role,
    const uint8_t nc[GD_AUTH_NONCE], const uint8_t ns[GD_AUTH_NONCE],
    uint8_t out[GD_AUTH_MAC])
{
	uint8_t msg[sizeof(label_pub) - 1 + 2 * GD_AUTH_NONCE];
	const char *label = role == GD_AUTH_PUB ? label_pub : label_sub;
	size_t ll = sizeof(label_pub) - 1;

	memcpy(msg, label, ll);
	memcpy(msg + ll, nc, GD_AUTH_NONCE);
	memcpy(msg + ll + GD_AUTH_NONCE, ns, GD_AUTH_NONCE);
	return gd_auth_hmac(key->k, key->len, msg, sizeof(msg), out);
}

int gd_auth_verify(const struct gd_auth_key *key, enum gd_auth_role role,
    const uint8_t nc[GD_AUTH_NONCE], const uint8_t ns[GD_AUTH_NONCE],
    const uint8_t proof[GD_AUTH_MAC])
{
	uint8_t want[GD_AUTH_MAC];
	int ok;

	if (key->len == 0 || gd_auth_proof(key, role, nc, ns, want) != 0)
		return 0;
	ok = CRYPTO_memcmp(want, proof, GD_AUTH_MAC) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	return ok;
}
