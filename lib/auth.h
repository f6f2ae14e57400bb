/* The pre-shared key of GDpub_authKeyFile and GDsub_authKeyFile and the
 * proofs of the mutual challenge-response that opens an authenticated
 * connection: each side sends a fresh random nonce, and proves the key
 * with HMAC-SHA256 over a label naming its role and both nonces, so a
 * proof is good for one connection and one direction only. OpenSSL's
 * libcrypto does the HMAC, the random bytes and the constant-time
 * comparison. */
#ifndef GD_AUTH_H
#define GD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define GD_AUTH_NONCE 32	/* bytes of each side's nonce */
#define GD_AUTH_MAC 32		/* bytes of a proof: HMAC-SHA256 */
#define GD_AUTH_KEY_MIN 16	/* key bytes, trailing white space aside */
#define GD_AUTH_KEY_MAX 4096

/* Who proves: the labels differ, so a proof cannot be reflected back. */
enum gd_auth_role { GD_AUTH_PUB = 0, GD_AUTH_SUB = 1 };

struct gd_auth_key {
	size_t len;		/* 0: no key */
	unsigned char k[GD_AUTH_KEY_MAX];
};

/* Read the key file at path: a regular file that only its owner may
 * read or write (no group or other permission bits), holding
 * GD_AUTH_KEY_MIN to GD_AUTH_KEY_MAX bytes; trailing white space (the
 * newline of `echo`) is not part of the key. Returns 0, or -1 with why
 * filled ("key file 'k' has mode 0644: ..."). key may be NULL to check
 * only. */
int gd_auth_load(const char *path, struct gd_auth_key *key, char *why,
    size_t whysz);
/* Forget the key (the memory is wiped). */
void gd_auth_clear(struct gd_auth_key *key);

/* A fresh nonce from the system's random source: 0, or -1. */
int gd_auth_nonce(uint8_t nonce[GD_AUTH_NONCE]);

/* HMAC-SHA256(key, msg): 0, or -1. */
int gd_auth_hmac(const void *key, size_t klen, const void *msg, size_t mlen,
    uint8_t out[GD_AUTH_MAC]);

/* The proof that role gives for the connection whose subscriber nonce is
 * nc and publisher nonce ns. */
int gd_auth_proof(const struct gd_auth_key *key, enum gd_auth_role role,
    const uint8_t nc[GD_AUTH_NONCE], const uint8_t ns[GD_AUTH_NONCE],
    uint8_t out[GD_AUTH_MAC]);
/* 1 when proof is what role must give for (nc, ns), compared in constant
 * time; 0 otherwise. */
int gd_auth_verify(const struct gd_auth_key *key, enum gd_auth_role role,
    const uint8_t nc[GD_AUTH_NONCE], const uint8_t ns[GD_AUTH_NONCE],
    const uint8_t proof[GD_AUTH_MAC]);

/* Multisend clusters open no connection of their own: gdsub sends its
 * pre-acknowledgements over its connection to each member, which opened
 * with this exchange. */

#endif
