/* auth.c: HMAC-SHA256 against RFC 4231's vectors, the handshake proofs
 * (right key, wrong key, the other role's proof, a replayed nonce) and
 * the key file checks. */
#include "auth.h"
#include "unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void hex(const uint8_t *p, size_t n, char *out)
{
	size_t i;
	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void check_hmac(const void *k, size_t kl, const void *m, size_t ml,
    const char *want)
{
	uint8_t mac[GD_AUTH_MAC];
	char got[2 * GD_AUTH_MAC + 1];

	ASSERT_EQ(gd_auth_hmac(k, kl, m, ml, mac), 0);
	hex(mac, sizeof(mac), got);
	ASSERT_STR(got, want);
}

TEST(rfc4231_vectors)
{
	uint8_t k[131], d[50];
	size_t i;
	static const char t6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
	static const char t7[] = "This is a test using a larger than block-size "
	    "key and a larger than block-size data. The key needs to be hashed "
	    "before being used by the HMAC algorithm.";

	memset(k, 0x0b, 20);	/* test case 1 */
	check_hmac(k, 20, "Hi There", 8,
	    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	check_hmac("Jefe", 4, "what do ya want for nothing?", 28,	/* 2 */
	    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(k, 0xaa, 20);	/* 3 */
	memset(d, 0xdd, 50);
	check_hmac(k, 20, d, 50,
	    "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	for (i = 0; i < 25; i++)	/* 4 */
		k[i] = (uint8_t)(i + 1);
	memset(d, 0xcd, 50);
	check_hmac(k, 25, d, 50,
	    "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
	memset(k, 0xaa, 131);	/* 6 and 7: a key longer than SHA-256's block */
	check_hmac(k, 131, t6, strlen(t6),
	    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	check_hmac(k, 131, t7, strlen(t7),
	    "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

static void set_key(struct gd_auth_key *k, const char *s)
{
	memset(k, 0, sizeof(*k));
	k->len = strlen(s);
	memcpy(k->k, s, k->len);
}

TEST(proof_right_and_wrong_key)
{
	struct gd_auth_key a, b;
	uint8_t nc[GD_AUTH_NONCE], ns[GD_AUTH_NONCE], pp[GD_AUTH_MAC],
	    ps[GD_AUTH_MAC];

	set_key(&a, "correct horse battery staple");
	set_key(&b, "correct horse battery stapl3");
	ASSERT_EQ(gd_auth_nonce(nc), 0);
	ASSERT_EQ(gd_auth_nonce(ns), 0);
	ASSERT(memcmp(nc, ns, GD_AUTH_NONCE) != 0);
	ASSERT_EQ(gd_auth_proof(&a, GD_AUTH_PUB, nc, ns, pp), 0);
	ASSERT_EQ(gd_auth_proof(&a, GD_AUTH_SUB, nc, ns, ps), 0);
	ASSERT_EQ(gd_auth_verify(&a, GD_AUTH_PUB, nc, ns, pp), 1);
	ASSERT_EQ(gd_auth_verify(&a, GD_AUTH_SUB, nc, ns, ps), 1);
	/* a different key */
	ASSERT_EQ(gd_auth_verify(&b, GD_AUTH_PUB, nc, ns, pp), 0);
	ASSERT_EQ(gd_auth_verify(&b, GD_AUTH_SUB, nc, ns, ps), 0);
	/* a publisher's proof reflected back as the subscriber's */
	ASSERT(memcmp(pp, ps, GD_AUTH_MAC) != 0);
	ASSERT_EQ(gd_auth_verify(&a, GD_AUTH_SUB, nc, ns, pp), 0);
	/* one bit off, in the last byte (the comparison reads them all) */
	ps[GD_AUTH_MAC - 1] ^= 1;
	ASSERT_EQ(gd_auth_verify(&a, GD_AUTH_SUB, nc, ns, ps), 0);
	/* no key proves nothing */
	b.len = 0;
	ASSERT_EQ(gd_auth_verify(&b, GD_AUTH_SUB, nc, ns, ps), 0);
	gd_auth_clear(&a);
	ASSERT_EQ(a.len, 0);
}

TEST(replayed_nonce_fails)
{
	struct gd_auth_key k;
	uint8_t nc[GD_AUTH_NONCE], ns_old[GD_AUTH_NONCE], ns_new[GD_AUTH_NONCE],
	    nc_new[GD_AUTH_NONCE], old[GD_AUTH_MAC];

	set_key(&k, "0123456789abcdef0123");
	gd_auth_nonce(nc);
	gd_auth_nonce(ns_old);
	gd_auth_nonce(ns_new);
	gd_auth_nonce(nc_new);
	/* a subscriber's proof recorded on one connection ... */
	ASSERT_EQ(gd_auth_proof(&k, GD_AUTH_SUB, nc, ns_old, old), 0);
	ASSERT_EQ(gd_auth_verify(&k, GD_AUTH_SUB, nc, ns_old, old), 1);
	/* ... is worth nothing on the next, where the publisher's nonce is
	 * new, even with the same subscriber nonce replayed */
	ASSERT_EQ(gd_auth_verify(&k, GD_AUTH_SUB, nc, ns_new, old), 0);
	/* and a publisher's recorded proof fails a subscriber's new nonce */
	ASSERT_EQ(gd_auth_proof(&k, GD_AUTH_PUB, nc, ns_old, old), 0);
	ASSERT_EQ(gd_auth_verify(&k, GD_AUTH_PUB, nc_new, ns_old, old), 0);
}

static char dir[64];

static void put(const char *name, const char *text, mode_t mode, char *path)
{
	int fd;

	sprintf(path, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, text, strlen(text)), (long long)strlen(text));
	close(fd);
	ASSERT_EQ(chmod(path, mode), 0);
}

TEST(key_files)
{
	struct gd_auth_key k;
	char path[128], why[512], want[512];

	snprintf(dir, sizeof(dir), "/tmp/gdkit-test-auth.XXXXXX");
	ASSERT(mkdtemp(dir) != NULL);
	put("ok", "0123456789abcdef\n\n", 0600, path);
	ASSERT_EQ(gd_auth_load(path, &k, why, sizeof(why)), 0);
	ASSERT_EQ(k.len, 16);	/* without the newlines */
	ASSERT(memcmp(k.k, "0123456789abcdef", 16) == 0);
	ASSERT_EQ(chmod(path, 0400), 0);	/* read-only for its owner: fine */
	ASSERT_EQ(gd_auth_load(path, NULL, why, sizeof(why)), 0);
	unlink(path);

	put("open", "0123456789abcdef", 0644, path);
	ASSERT_EQ(gd_auth_load(path, &k, why, sizeof(why)), -1);
	snprintf(want, sizeof(want), "key file '%s' has mode 0644: group and "
	    "others must have no access (chmod 600 '%s')", path, path);
	ASSERT_STR(why, want);
	ASSERT_EQ(chmod(path, 0640), 0);
	ASSERT_EQ(gd_auth_load(path, &k, why, sizeof(why)), -1);
	ASSERT(strstr(why, "has mode 0640") != NULL);
	unlink(path);

	put("short", "too short\n", 0600, path);
	ASSERT_EQ(gd_auth_load(path, &k, why, sizeof(why)), -1);
	snprintf(want, sizeof(want), "key file '%s' holds 9 bytes: a key has "
	    "16 to 4096 (e.g. head -c 32 /dev/urandom | base64 > FILE)", path);
	ASSERT_STR(why, want);
	unlink(path);

	snprintf(path, sizeof(path), "%s/missing", dir);
	ASSERT_EQ(gd_auth_load(path, &k, why, sizeof(why)), -1);
	snprintf(want, sizeof(want), "cannot open key file '%s': No such file "
	    "or directory", path);
	ASSERT_STR(why, want);

	ASSERT_EQ(gd_auth_load(dir, &k, why, sizeof(why)), -1);
	ASSERT(strstr(why, "is not a regular file") != NULL);
	rmdir(dir);
}

int main(void)
{
	RUN(rfc4231_vectors);
	RUN(proof_right_and_wrong_key);
	RUN(replayed_nonce_fails);
	RUN(key_files);
	return UNIT_DONE();
}
