/* Unit tests of lib/conf.c (config keys, file loading, command-line
 * overrides) and lib/parse.c (the strict parsers under them). Config files
 * are written to a private mkdtemp directory removed at the end; error
 * messages are captured by pointing fd 2 at a file around each call. */
#include "conf.h"
#include "log.h"
#include "parse.h"
#include "unit.h"

#include <dirent.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ---- */

static char tmpdir[512];
static char cfpath[600];	/* the config file of the current test */
static char errbuf[16384];	/* what the last captured call wrote on fd 2 */
static int cap_fd = -1, cap_saved = -1;

static void mk_tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s/gdkit-test_conf.XXXXXX",
	    t && *t ? t : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		exit(2);
	}
}

/* Remove every file under tmpdir (one level of subdirectories). */
static void rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[1024];
	struct stat st;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			rm_tree(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static const char *tpath(const char *name)
{
	static char p[600];
	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	return p;
}

/* Write content to tmpdir/name (the current config file). */
static const char *write_conf_named(const char *name, const char *content)
{
	FILE *f;
	snprintf(cfpath, sizeof(cfpath), "%s/%s", tmpdir, name);
	f = fopen(cfpath, "w");
	if (f == NULL) {
		perror(cfpath);
		exit(2);
	}
	fputs(content, f);
	fclose(f);
	return cfpath;
}

static const char *write_conf(const char *content)
{
	return write_conf_named("test.conf", content);
}

static void cap_begin(void)
{
	fflush(stderr);
	cap_saved = dup(2);
	cap_fd = open(tpath("stderr"), O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (cap_saved < 0 || cap_fd < 0) {
		perror("capture");
		exit(2);
	}
	dup2(cap_fd, 2);
}

static const char *cap_end(void)
{
	ssize_t n;
	fflush(stderr);
	dup2(cap_saved, 2);
	close(cap_saved);
	lseek(cap_fd, 0, SEEK_SET);
	n = read(cap_fd, errbuf, sizeof(errbuf) - 1);
	errbuf[n > 0 ? n : 0] = '\0';
	close(cap_fd);
	unlink(tpath("stderr"));
	cap_fd = cap_saved = -1;
	return errbuf;
}

/* Write content as the config file, load it into a fresh config of the
 * family, capture fd 2 into errbuf; returns gd_conf_load's result. */
static int load(struct gd_conf *c, int fam, const char *content)
{
	int rc;
	gd_conf_init(c, fam);
	write_conf(content);
	cap_begin();
	rc = gd_conf_load(c, cfpath);
	cap_end();
	return rc;
}

/* Load content, expect GD_EX_CONFIG; free the config. */
static int load_fails(int fam, const char *content)
{
	struct gd_conf c;
	int rc = load(&c, fam, content);
	gd_conf_free(&c);
	return rc;
}

static int set_opt(struct gd_conf *c, const char *key, const char *opt,
    const char *v)
{
	int rc;
	cap_begin();
	rc = gd_conf_set_opt(c, key, opt, v);
	cap_end();
	return rc;
}

static int contains(const char *hay, const char *needle)
{
	return strstr(hay, needle) != NULL;
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* "PATH:LINE: KEY:" for the current config file */
static const char *where(int line, const char *key)
{
	static char w[800];
	if (key)
		snprintf(w, sizeof(w), "%s:%d: %s:", cfpath, line, key);
	else
		snprintf(w, sizeof(w), "%s:%d: ", cfpath, line);
	return w;
}

#define ASSERT_HAS(hay, needle) do { \
	const char *_h = (hay), *_n = (needle); \
	if (!contains(_h, _n)) \
		FAILF("'%s' not in '%s'", _n, _h); \
} while (0)
#define ASSERT_DBL(a, b) do { \
	double _x = (a), _y = (b); \
	if (!(fabs(_x - _y) <= 1e-9 * (fabs(_y) + 1))) \
		FAILF("%s == %s: %.17g != %.17g", #a, #b, _x, _y); \
} while (0)

/* A valid value for each key, and for keys not supported yet another
 * valid value that differs from the default (refused). String keys not
 * supported yet have no default that can be written: NULL accepted. */
/* a key file that GDpub_authKeyFile and GDsub_authKeyFile accept, made
 * in tmpdir by main (the keys check the file when they are set) */
static char keyfile[600];
/* a certificate and its key that the GD*_tls* keys accept (main) */
static char certfile[600], tlskey[600];

struct kv {
	const char *key;
	const char *accepted;	/* a valid value that loads (NULL: none) */
	const char *other;	/* unsupported keys: a valid non-default value */
};
static const struct kv kvs[] = {
	{ "GDpub_port", "7001", NULL },
	{ "GDpub_timeout", "2.5", NULL },
	{ "GDpub_numSubs", "2", NULL },
	{ "GDpub_bind", "0.0.0.0", NULL },
	{ "GDpub_host", "pub.example", NULL },
	{ "GDpub_maxPending", "1000", NULL },
	{ "GDpub_window", "500", NULL },
	{ "GDpub_maxBlockSize", "4096", NULL },
	{ "GDpub_resend", "3", NULL },
	{ "GDpub_snapshot", "10", NULL },
	{ "GDpub_journal", NULL, "/var/lib/gd/journal" },
	{ "GDpub_fsync", "batch", "always" },
	{ "GDpub_status", "/var/lib/gd/status", NULL },
	{ "GDpub_ctl", "/tmp/gdpub.sock", NULL },
	{ "GDpub_authKeyFile", keyfile, NULL },
	{ "GDpub_tlsCert", certfile, NULL },
	{ "GDpub_tlsKey", tlskey, NULL },
	{ "GDpub_tlsCA", certfile, NULL },
	{ "GDpub_tlsMinVersion", "1.2", NULL },
	{ "GDpub_metrics", "127.0.0.1:9464", NULL },
	{ "GDpub_maxConnections", "64", NULL },
	{ "GDpub_discardInterval", "60", "30" },
	{ "GDpub_sendTimeout", "60", "-1" },
	{ "GDpub_sendQueueSizeMax", "-1", "100" },
	{ "GDpub_sendQueueSizeMaxPolicy", "RemoveSubscriber", "DropEvents" },
	{ "GDpub_cluster", "prod-1.a_b", NULL },
	{ "GDpub_role", "secondary", NULL },
	{ "GDpub_preAckTimerInterval", "0.25", NULL },
	{ "GDpub_tentativePreAckTimeout", "1.5", NULL },
	{ "GDpub_confirmedPreAckTimeout", "60", NULL },
	{ "GDsub_pub", "127.0.0.1:7001", NULL },
	{ "GDsub_retryInt", "0.25", NULL },
	{ "GDsub_maxRetries", "-1", NULL },
	{ "GDsub_maxBlockSize", "4096", NULL },
	{ "GDsub_name", "sub-a", NULL },
	{ "GDsub_gd", "0", NULL },
	{ "GDsub_ctl", "/tmp/gdsub.sock", NULL },
	{ "GDsub_state", "/var/lib/gd/state", NULL },
	{ "GDsub_dedup", "index", NULL },
	{ "GDsub_consecutive", "1", NULL },
	{ "GDsub_authKeyFile", keyfile, NULL },
	{ "GDsub_tlsCA", certfile, NULL },
	{ "GDsub_tlsCert", certfile, NULL },
	{ "GDsub_tlsKey", tlskey, NULL },
	{ "GDsub_tlsMinVersion", "1.3", NULL },
	{ "GDsub_metrics", "[::1]:9465", NULL },
	{ "GDsub_reliability", "", "ordered" },
	{ "GDsub_retryCount", "0", "5" },
	{ "GDsub_connectionCached", "1", "0" },
	{ "GDsub_locatorCacheTimeout", "-1", "30" },
};
#define NKV (sizeof(kvs) / sizeof(kvs[0]))

static const struct kv *kv_find(const char *key)
{
	size_t i;
	for (i = 0; i < NKV; i++)
		if (strcmp(kvs[i].key, key) == 0)
			return &kvs[i];
	return NULL;
}

/* ---- lib/parse.c ---- */

TEST(parse_i64_valid)
{
	int64_t v = 7;
	ASSERT_EQ(gd_parse_i64("0", -10, 10, &v), 0);
	ASSERT_EQ(v, 0);
	ASSERT_EQ(gd_parse_i64("-5", -10, 10, &v), 0);
	ASSERT_EQ(v, -5);
	ASSERT_EQ(gd_parse_i64("-0", -10, 10, &v), 0);
	ASSERT_EQ(v, 0);
	ASSERT_EQ(gd_parse_i64("10", -10, 10, &v), 0);
	ASSERT_EQ(v, 10);
	ASSERT_EQ(gd_parse_i64("-10", -10, 10, &v), 0);
	ASSERT_EQ(v, -10);
	ASSERT_EQ(gd_parse_i64("007", 0, 10, &v), 0);
	ASSERT_EQ(v, 7);
	ASSERT_EQ(gd_parse_i64("9223372036854775807", INT64_MIN, INT64_MAX, &v), 0);
	ASSERT(v == INT64_MAX);
	ASSERT_EQ(gd_parse_i64("-9223372036854775808", INT64_MIN, INT64_MAX, &v), 0);
	ASSERT(v == INT64_MIN);
}

TEST(parse_i64_invalid)
{
	static const char *const bad[] = {
		"", "+5", " 5", "5 ", "5x", "x5", "-", "--5", "0x10", "1e3",
		"5.0", "\t5", "5\n",
	};
	size_t i;
	int64_t v = 1234;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (gd_parse_i64(bad[i], INT64_MIN, INT64_MAX, &v) != -1)
			FAILF("gd_parse_i64('%s') accepted", bad[i]);
	}
	ASSERT_EQ(gd_parse_i64(NULL, 0, 10, &v), -1);
	/* bounds */
	ASSERT_EQ(gd_parse_i64("11", -10, 10, &v), -1);
	ASSERT_EQ(gd_parse_i64("-11", -10, 10, &v), -1);
	ASSERT_EQ(gd_parse_i64("-1", 0, 10, &v), -1);
	ASSERT_EQ(gd_parse_i64("65536", 1, 65535, &v), -1);
	ASSERT_EQ(gd_parse_i64("0", 1, 65535, &v), -1);
	/* overflow of the type itself */
	ASSERT_EQ(gd_parse_i64("9223372036854775808", INT64_MIN, INT64_MAX, &v), -1);
	ASSERT_EQ(gd_parse_i64("-9223372036854775809", INT64_MIN, INT64_MAX, &v), -1);
	ASSERT_EQ(gd_parse_i64("99999999999999999999999", INT64_MIN, INT64_MAX, &v), -1);
	ASSERT_EQ(v, 1234);	/* untouched on error */
}

TEST(parse_u64n)
{
	uint64_t v = 99;
	const char *dig21 = "000000000000000000001";

	ASSERT_EQ(gd_parse_u64n("0", 1, &v), 0);
	ASSERT_U64(v, 0);
	ASSERT_EQ(gd_parse_u64n("18446744073709551615", 20, &v), 0);
	ASSERT_U64(v, UINT64_MAX);
	ASSERT_EQ(gd_parse_u64n("18446744073709551614", 20, &v), 0);
	ASSERT_U64(v, UINT64_MAX - 1);
	ASSERT_EQ(gd_parse_u64n("00000000000000000001", 20, &v), 0);
	ASSERT_U64(v, 1);
	/* len-bounded: no NUL needed, stops at len */
	ASSERT_EQ(gd_parse_u64n("123456", 3, &v), 0);
	ASSERT_U64(v, 123);
	ASSERT_EQ(gd_parse_u64n("42/r", 2, &v), 0);
	ASSERT_U64(v, 42);
	ASSERT_EQ(gd_parse_u64("42", &v), 0);
	ASSERT_U64(v, 42);

	v = 99;
	ASSERT_EQ(gd_parse_u64n("18446744073709551616", 20, &v), -1);
	ASSERT_EQ(gd_parse_u64n("18446744073709551620", 20, &v), -1);
	ASSERT_EQ(gd_parse_u64n("99999999999999999999", 20, &v), -1);
	ASSERT_EQ(gd_parse_u64n(dig21, 21, &v), -1);	/* > 20 chars */
	ASSERT_EQ(gd_parse_u64n("", 0, &v), -1);
	ASSERT_EQ(gd_parse_u64n("12", 0, &v), -1);
	ASSERT_EQ(gd_parse_u64n("-1", 2, &v), -1);
	ASSERT_EQ(gd_parse_u64n("+1", 2, &v), -1);
	ASSERT_EQ(gd_parse_u64n("12a", 3, &v), -1);
	ASSERT_EQ(gd_parse_u64n("a12", 3, &v), -1);
	ASSERT_EQ(gd_parse_u64n(" 12", 3, &v), -1);
	ASSERT_EQ(gd_parse_u64n("12 ", 3, &v), -1);
	ASSERT_EQ(gd_parse_u64n("1:2", 3, &v), -1);	/* ':' is '9' + 1 */
	ASSERT_EQ(gd_parse_u64n("1/2", 3, &v), -1);	/* '/' is '0' - 1 */
	ASSERT_EQ(gd_parse_u64("", &v), -1);
	ASSERT_EQ(gd_parse_u64("18446744073709551616", &v), -1);
	ASSERT_U64(v, 99);
}

/* u64toa writes what %llu writes, at every digit count's edges, and
 * parse_u64n reads it back */
TEST(u64toa)
{
	uint64_t p = 1, vals[64], v;
	char got[32], want[32];
	size_t n = 0, i, len;

	vals[n++] = 0;
	vals[n++] = UINT64_MAX;
	vals[n++] = 12345;
	for (i = 1; i < 20; i++) {
		p *= 10;
		vals[n++] = p - 1;
		vals[n++] = p;
		vals[n++] = p + 1;
	}
	for (i = 0; i < n; i++) {
		memset(got, 'x', sizeof(got));
		len = gd_u64toa(got, vals[i]);
		snprintf(want, sizeof(want), "%llu", (unsigned long long)vals[i]);
		ASSERT_EQ(len, strlen(want));
		ASSERT_EQ(got[len], 'x');	/* nothing past the digits */
		got[len] = '\0';
		ASSERT_STR(got, want);
		ASSERT_EQ(gd_parse_u64n(got, len, &v), 0);
		ASSERT_U64(v, vals[i]);
	}
}

/* u64toa_next writes what u64toa does, whatever came before: the next
 * number (across 9 -> 10, 99 -> 100 ... and 2^64 - 1 -> 0), the same
 * one, another */
TEST(u64toa_next)
{
	static const uint64_t seq[] = { 0, 1, 2, 9, 10, 11, 11, 98, 99, 100,
		101, 5, 999999, 1000000, 1000001, 17, 18, 19, 20,
		18446744073709551614ull, 18446744073709551615ull, 0, 1 };
	struct gd_u64txt t;
	char got[24], want[24];
	size_t i, n, w;

	memset(&t, 0, sizeof(t));
	for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		n = gd_u64toa_next(&t, got, seq[i]);
		w = gd_u64toa(want, seq[i]);
		ASSERT_EQ(n, w);
		ASSERT(memcmp(got, want, n) == 0);
	}
	for (i = 0; i < 100000; i++) {	/* a run of ids */
		n = gd_u64toa_next(&t, got, 999000 + i);
		w = gd_u64toa(want, 999000 + i);
		ASSERT_EQ(n, w);
		ASSERT(memcmp(got, want, n) == 0);
	}
}

/* IDs as keys write them: no leading zero, so "0001" cannot pass as 1 */
TEST(parse_id)
{
	uint64_t v = 99;

	ASSERT_EQ(gd_parse_id("0", 1, &v), 0);
	ASSERT_U64(v, 0);
	ASSERT_EQ(gd_parse_id("10", 2, &v), 0);
	ASSERT_U64(v, 10);
	ASSERT_EQ(gd_parse_id("18446744073709551615", 20, &v), 0);
	ASSERT_U64(v, UINT64_MAX);
	ASSERT_EQ(gd_parse_id("1\tx", 1, &v), 0);	/* len-bounded */
	ASSERT_U64(v, 1);
	v = 99;
	ASSERT_EQ(gd_parse_id("0001", 4, &v), -2);
	ASSERT_EQ(gd_parse_id("00", 2, &v), -2);
	ASSERT_EQ(gd_parse_id("010", 3, &v), -2);
	ASSERT_EQ(gd_parse_id("00000000000000000001", 20, &v), -2);
	ASSERT_EQ(gd_parse_id("", 0, &v), -1);
	ASSERT_EQ(gd_parse_id("0x1", 3, &v), -1);
	ASSERT_EQ(gd_parse_id("01a", 3, &v), -1);
	ASSERT_EQ(gd_parse_id("-1", 2, &v), -1);
	ASSERT_EQ(gd_parse_id("18446744073709551616", 20, &v), -1);
	ASSERT_U64(v, 99);	/* untouched on error */
}

TEST(parse_dur)
{
	static const char *const bad[] = {
		"", "nan", "NaN", "-nan", "inf", "-inf", "infinity", "INF",
		"1e999", "-1e999", "+1", " 1", "1 ", "1s", "1,5", ".", "-", "x",
	};
	size_t i;
	double v = 3;

	ASSERT_EQ(gd_parse_dur("0.25", 0, 100, &v), 0);
	ASSERT_DBL(v, 0.25);
	ASSERT_EQ(gd_parse_dur(".5", 0, 100, &v), 0);
	ASSERT_DBL(v, 0.5);
	ASSERT_EQ(gd_parse_dur("10", 0, 100, &v), 0);
	ASSERT_DBL(v, 10);
	ASSERT_EQ(gd_parse_dur("-1", -1, 100, &v), 0);
	ASSERT_DBL(v, -1);
	ASSERT_EQ(gd_parse_dur("100", 0, 100, &v), 0);
	ASSERT_DBL(v, 100);
	ASSERT_EQ(gd_parse_dur("0.001", 0.001, 100, &v), 0);
	ASSERT_DBL(v, 0.001);

	v = 3;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (gd_parse_dur(bad[i], -1e300, 1e300, &v) != -1)
			FAILF("gd_parse_dur('%s') accepted", bad[i]);
	ASSERT_EQ(gd_parse_dur(NULL, 0, 1, &v), -1);
	ASSERT_EQ(gd_parse_dur("100.001", 0, 100, &v), -1);
	ASSERT_EQ(gd_parse_dur("-1.5", -1, 100, &v), -1);
	ASSERT_EQ(gd_parse_dur("0", 0.001, 100, &v), -1);
	ASSERT_DBL(v, 3);	/* untouched on error */
}

TEST(parse_hostport_valid)
{
	char host[GD_HOST_MAX];
	int port = 0;

	ASSERT_EQ(gd_parse_hostport("127.0.0.1:7001", host, sizeof(host), &port), 0);
	ASSERT_STR(host, "127.0.0.1");
	ASSERT_EQ(port, 7001);
	ASSERT_EQ(gd_parse_hostport("[::1]:7001", host, sizeof(host), &port), 0);
	ASSERT_STR(host, "::1");
	ASSERT_EQ(port, 7001);
	ASSERT_EQ(gd_parse_hostport("[fe80::1:2]:65535", host, sizeof(host), &port), 0);
	ASSERT_STR(host, "fe80::1:2");
	ASSERT_EQ(port, 65535);
	ASSERT_EQ(gd_parse_hostport("localhost:1", host, sizeof(host), &port), 0);
	ASSERT_STR(host, "localhost");
	ASSERT_EQ(port, 1);
	ASSERT_EQ(gd_parse_hostport("h:1", host, 2, &port), 0);	/* fits exactly */
	ASSERT_STR(host, "h");
}

TEST(parse_hostport_invalid)
{
	static const char *const bad[] = {
		"", "localhost", "localhost:", ":7001", "h:0", "h:65536",
		"h:-1", "h:+1", "h:7001x", "h: 7001", "h:0x10",
		"::1", "::1:7001", "fe80::1:7001", "a:b:7001",
		"[::1]", "[::1]:", "[::1]7001", "[::1:7001", "[]:7001",
		"[::1]:0", "[::1]:65536", "[::1]:x",
	};
	char host[GD_HOST_MAX] = "unchanged";
	int port = 42;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (gd_parse_hostport(bad[i], host, sizeof(host), &port) != -1)
			FAILF("gd_parse_hostport('%s') accepted", bad[i]);
	/* host longer than the buffer */
	ASSERT_EQ(gd_parse_hostport("abcd:1", host, 4, &port), -1);
	ASSERT_EQ(gd_parse_hostport("abc:1", host, 4, &port), 0);
	ASSERT_STR(host, "abc");
	port = 42;
	ASSERT_EQ(gd_parse_hostport("[::1]:1", host, 3, &port), -1);
	ASSERT_EQ(port, 42);
}

/* Hosts that keys and stream origins can carry: HOST:PORT/ID with no
 * '/', ':' (but in a bracketed IPv6 address), blank, control or
 * non-ASCII byte. */
TEST(valid_host)
{
	static const char *const good[] = {
		"localhost", "pub.example", "pub-1.example.org", "a_b", "A",
		"10.0.0.1", "127.0.0.1", "::1", "::", "fe80::1:2",
		"2001:db8::ff00:42:8329", "::ffff:192.0.2.1",
	};
	static const char *const bad[] = {
		"", "a/b", "a b", "a\tb", "h\xc3\xa9", "a:b", "a\nb", "a@b",
		"@cluster", "[::1]", "::1%lo", "fe80::1%eth0", ":::", "1::2::3",
		"a%b", "a\\b", "a\x7f", "host\r",
	};
	char big[300];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (gd_valid_host(good[i]) != 1)
			FAILF("gd_valid_host('%s') refused", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (gd_valid_host(bad[i]) != 0)
			FAILF("gd_valid_host('%s') accepted", bad[i]);
	memset(big, 'a', sizeof(big));
	big[GD_VALID_HOST_MAX] = '\0';
	ASSERT_EQ(gd_valid_host(big), 1);
	big[GD_VALID_HOST_MAX] = 'a';
	big[GD_VALID_HOST_MAX + 1] = '\0';
	ASSERT_EQ(gd_valid_host(big), 0);
}

/* GDpub_host and --host go through gd_valid_host: a config error (78)
 * naming file, line and key, or a usage error (64) naming the option. */
TEST(host_refused)
{
	struct gd_conf c;

	ASSERT_EQ(load_fails(GD_FAM_PUB, "GDpub_port=7001\nGDpub_host=a/b\n"),
	    GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, "GDpub_host"));
	ASSERT_HAS(errbuf, "invalid value 'a/b': expected a host name");
	ASSERT_EQ(load_fails(GD_FAM_PUB, "GDpub_host=a:b\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(1, "GDpub_host"));
	ASSERT_EQ(load(&c, GD_FAM_PUB, "GDpub_host=::1\n"), 0);
	ASSERT_STR(c.host, "::1");
	ASSERT_EQ(set_opt(&c, "GDpub_host", "--host", "a b"), GD_EX_USAGE);
	ASSERT_HAS(errbuf, "invalid value 'a b' for --host: expected a host name");
	ASSERT_STR(c.host, "::1");	/* untouched */
	ASSERT_EQ(set_opt(&c, "GDpub_host", "--host", "pub_1.example"), 0);
	ASSERT_STR(c.host, "pub_1.example");
	gd_conf_free(&c);
}

TEST(fmt_hostport)
{
	char buf[300], host[GD_HOST_MAX];
	int port, n;

	n = gd_fmt_hostport(buf, sizeof(buf), "127.0.0.1", 7001);
	ASSERT_STR(buf, "127.0.0.1:7001");
	ASSERT_EQ(n, 14);
	n = gd_fmt_hostport(buf, sizeof(buf), "::1", 7001);
	ASSERT_STR(buf, "[::1]:7001");
	ASSERT_EQ(n, 10);
	n = gd_fmt_hostport(buf, sizeof(buf), "example.org", 1);
	ASSERT_STR(buf, "example.org:1");
	ASSERT_EQ(n, 13);
	/* round trips through the parser */
	gd_fmt_hostport(buf, sizeof(buf), "fe80::1", 65535);
	ASSERT_STR(buf, "[fe80::1]:65535");
	ASSERT_EQ(gd_parse_hostport(buf, host, sizeof(host), &port), 0);
	ASSERT_STR(host, "fe80::1");
	ASSERT_EQ(port, 65535);
	/* truncation: NUL-terminated, returns the length written */
	n = gd_fmt_hostport(buf, 5, "127.0.0.1", 7001);
	ASSERT_EQ(n, 4);
	ASSERT_STR(buf, "127.");
	n = gd_fmt_hostport(buf, 8, "::1", 7001);
	ASSERT_EQ(n, 7);
	ASSERT_STR(buf, "[::1]:7");
}

/* ---- key table ---- */

TEST(key_table_covered)
{
	size_t i, n = 0;
	int fam, sup;
	const char *k;

	for (i = 0; (k = gd_conf_key_at(i, &fam, &sup)) != NULL; i++) {
		const struct kv *x = kv_find(k);
		n++;
		if (x == NULL) {
			FAILF("key %s has no test value", k);
			continue;
		}
		if (fam != GD_FAM_PUB && fam != GD_FAM_SUB)
			FAILF("key %s: family %d", k, fam);
		if (strncmp(k, fam == GD_FAM_PUB ? "GDpub_" : "GDsub_", 6) != 0)
			FAILF("key %s: family %d does not match its prefix", k, fam);
		if (!sup && x->other == NULL)
			FAILF("unsupported key %s has no non-default test value", k);
	}
	ASSERT_EQ(n, NKV);
	ASSERT(gd_conf_key_at(n, NULL, NULL) == NULL);
	ASSERT(gd_conf_key_at((size_t)-1, &fam, &sup) == NULL);
	ASSERT_STR(gd_conf_key_at(0, NULL, NULL), "GDpub_port");
}

TEST(every_key_accepted)
{
	size_t i;
	int fam, sup;
	const char *k;
	char content[600];

	for (i = 0; (k = gd_conf_key_at(i, &fam, &sup)) != NULL; i++) {
		const struct kv *x = kv_find(k);
		struct gd_conf c;
		int rc;

		if (x == NULL || x->accepted == NULL)
			continue;	/* see every_unsupported_key */
		snprintf(content, sizeof(content), "# every key\n%s=%s\n", k,
		    x->accepted);
		rc = load(&c, fam, content);
		if (rc != 0)
			FAILF("%s=%s: rc %d, stderr '%s'", k, x->accepted, rc, errbuf);
		if (errbuf[0] != '\0')
			FAILF("%s=%s: unexpected message '%s'", k, x->accepted, errbuf);
		if (fam == GD_FAM_PUB)
			ASSERT(c.seen_pub && !c.seen_sub);
		else
			ASSERT(c.seen_sub && !c.seen_pub);
		ASSERT(c.path != NULL && strcmp(c.path, cfpath) == 0);
		gd_conf_free(&c);

		/* GD_FAM_ANY (gdinspect) reads both families */
		rc = load(&c, GD_FAM_ANY, content);
		if (rc != 0)
			FAILF("ANY %s=%s: rc %d '%s'", k, x->accepted, rc, errbuf);
		gd_conf_free(&c);
	}
}

TEST(every_unsupported_key)
{
	size_t i, n = 0, unsupported = 0;
	int fam, sup;
	const char *k;
	char content[600];

	for (i = 0; (k = gd_conf_key_at(i, &fam, &sup)) != NULL; i++) {
		const struct kv *x = kv_find(k);
		struct gd_conf c;
		int rc;

		unsupported += !sup;
		if (sup || x == NULL || x->other == NULL)
			continue;
		n++;
		snprintf(content, sizeof(content), "; comment\n\n%s = %s\n", k,
		    x->other);
		rc = load(&c, fam, content);
		if (rc != GD_EX_CONFIG)
			FAILF("%s=%s (non-default, unsupported): rc %d", k, x->other, rc);
		if (!contains(errbuf, where(3, k)) ||
		    !contains(errbuf, "not supported yet"))
			FAILF("%s=%s: message '%s'", k, x->other, errbuf);
		ASSERT_EQ(count_lines(errbuf), 1);
		gd_conf_free(&c);
		/* the same through the command line: usage error */
		gd_conf_init(&c, fam);
		rc = set_opt(&c, k, "--opt", x->other);
		if (rc != GD_EX_USAGE || !contains(errbuf, "not supported yet"))
			FAILF("set_opt %s=%s: rc %d '%s'", k, x->other, rc, errbuf);
		gd_conf_free(&c);
		/* the default value itself is accepted */
		if (x->accepted != NULL) {
			snprintf(content, sizeof(content), "%s=%s\n", k, x->accepted);
			rc = load(&c, fam, content);
			if (rc != 0)
				FAILF("%s=%s (default): rc %d '%s'", k, x->accepted,
				    rc, errbuf);
			gd_conf_free(&c);
		}
	}
	/* every key of the contract is supported by this version: one added
	 * as not supported yet is tried above */
	ASSERT_EQ(n, unsupported);
	ASSERT_EQ(unsupported, 0);
}

TEST(pub_values_stored)
{
	struct gd_conf c;
	int rc = load(&c, GD_FAM_PUB,
	    "GDpub_port=7001\n"
	    "GDpub_timeout=0.25\n"
	    "GDpub_numSubs=32\n"
	    "GDpub_bind=::\n"
	    "GDpub_host=pub.example\n"
	    "GDpub_maxPending=1\n"
	    "GDpub_window=16777216\n"
	    "GDpub_maxBlockSize=0\n"
	    "GDpub_resend=255\n"
	    "GDpub_snapshot=16777216\n"
	    "GDpub_ctl=/tmp/x.sock\n"
	    "GDpub_fsync=batch\n"
	    "GDpub_sendQueueSizeMax=-1\n"
	    "GDpub_role=primary\n"
	    "GDpub_metrics=0.0.0.0:9464\n");
	ASSERT_EQ(rc, 0);
	ASSERT_STR(errbuf, "");
	ASSERT_EQ(c.port, 7001);
	ASSERT_DBL(c.timeout, 0.25);
	ASSERT_EQ(c.num_subs, 32);
	ASSERT_STR(c.bind, "::");
	ASSERT_STR(c.host, "pub.example");
	ASSERT_EQ(c.max_pending, 1);
	ASSERT_EQ(c.window, 1 << 24);
	ASSERT_EQ(c.max_block, 0);
	ASSERT_EQ(c.resend, 255);
	ASSERT_EQ(c.snapshot, 1 << 24);
	ASSERT_STR(c.pub_ctl, "/tmp/x.sock");
	ASSERT_EQ(c.fsync, GD_FSYNC_BATCH);
	ASSERT_EQ(c.sq_max, -1);
	ASSERT_EQ(c.role, GD_ROLE_PRIMARY);
	ASSERT_STR(c.pub_metrics, "0.0.0.0:9464");
	ASSERT(c.journal == NULL && c.cluster == NULL);
	ASSERT_EQ(gd_conf_check(&c, GD_FAM_PUB), 0);
	gd_conf_free(&c);
}

TEST(sub_values_stored)
{
	struct gd_conf c;
	int rc = load(&c, GD_FAM_SUB,
	    "GDsub_pub=127.0.0.1:7001\n"
	    "GDsub_retryInt=0.25\n"
	    "GDsub_maxRetries=-1\n"
	    "GDsub_name=sub-a\n"
	    "GDsub_gd=0\n"
	    "GDsub_ctl=/tmp/s.sock\n"
	    "GDsub_dedup=none\n"
	    "GDsub_consecutive=0\n"
	    "GDsub_reliability=\n"
	    "GDsub_retryCount=0\n"
	    "GDsub_connectionCached=1\n"
	    "GDsub_locatorCacheTimeout=-1\n");
	ASSERT_EQ(rc, 0);
	ASSERT_STR(errbuf, "");
	ASSERT_EQ(c.npubs, 1);
	ASSERT_STR(c.pubs[0].host, "127.0.0.1");
	ASSERT_EQ(c.pubs[0].port, 7001);
	ASSERT_DBL(c.retry_int, 0.25);
	ASSERT_EQ(c.max_retries, -1);
	ASSERT_STR(c.name, "sub-a");
	ASSERT_EQ(c.gd, 0);
	ASSERT_STR(c.sub_ctl, "/tmp/s.sock");
	ASSERT_EQ(c.dedup, GD_DEDUP_NONE);
	ASSERT_EQ(c.consecutive, 0);
	ASSERT_EQ(c.conn_cached, 1);
	ASSERT_DBL(c.locator_timeout, -1);
	ASSERT_EQ(gd_conf_check(&c, GD_FAM_SUB), 0);
	gd_conf_free(&c);
}

TEST(defaults)
{
	struct gd_conf c;
	gd_conf_init(&c, GD_FAM_PUB);
	ASSERT_EQ(c.family, GD_FAM_PUB);
	ASSERT_EQ(c.port, -1);
	ASSERT_DBL(c.timeout, 10);
	ASSERT_EQ(c.num_subs, 0);
	ASSERT_EQ(c.max_pending, 65536);
	ASSERT_EQ(c.window, 0);	/* auto */
	ASSERT_EQ(c.max_block, 1048576);
	ASSERT_EQ(c.resend, 0);
	ASSERT_EQ(c.snapshot, 0);
	ASSERT_EQ(c.fsync, GD_FSYNC_BATCH);
	ASSERT_DBL(c.discard_interval, 60);
	ASSERT_DBL(c.send_timeout, 60);
	ASSERT_EQ(c.sq_max, -1);
	ASSERT_EQ(c.sq_policy, GD_POLICY_REMOVE);
	ASSERT_EQ(c.role, GD_ROLE_PRIMARY);
	ASSERT_DBL(c.preack_interval, 5);
	ASSERT_DBL(c.tentative_timeout, 20);
	ASSERT_DBL(c.confirmed_timeout, 7200);
	ASSERT_DBL(c.retry_int, 1);
	ASSERT_EQ(c.max_retries, 10);
	ASSERT_EQ(c.gd, 1);
	ASSERT_EQ(c.dedup, GD_DEDUP_ID);
	ASSERT_EQ(c.consecutive, 0);
	ASSERT_EQ(c.retry_count, 0);
	ASSERT_EQ(c.conn_cached, 1);
	ASSERT_DBL(c.locator_timeout, -1);
	ASSERT(c.bind == NULL && c.host == NULL && c.path == NULL);
	ASSERT_EQ(c.npubs, 0);
	gd_conf_free(&c);
}

TEST(bool_spellings)
{
	static const char *const t[] = { "1", "true", "yes", "on" };
	static const char *const f[] = { "0", "false", "no", "off" };
	char content[100];
	struct gd_conf c;
	size_t i;

	for (i = 0; i < 4; i++) {
		snprintf(content, sizeof(content), "GDsub_gd=%s\n", f[i]);
		ASSERT_EQ(load(&c, GD_FAM_SUB, content), 0);
		ASSERT_EQ(c.gd, 0);
		gd_conf_free(&c);
		snprintf(content, sizeof(content), "GDsub_gd=0\nGDsub_gd=%s\n", t[i]);
		ASSERT_EQ(load(&c, GD_FAM_SUB, content), 0);
		ASSERT_EQ(c.gd, 1);
		gd_conf_free(&c);
	}
	ASSERT_EQ(load_fails(GD_FAM_SUB, "GDsub_gd=2\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(1, "GDsub_gd"));
	ASSERT_HAS(errbuf, "expected 0 or 1");
	ASSERT_EQ(load_fails(GD_FAM_SUB, "GDsub_gd=TRUE\n"), GD_EX_CONFIG);
	ASSERT_EQ(load_fails(GD_FAM_SUB, "GDsub_gd=\n"), GD_EX_CONFIG);
}

TEST(fractional_durations)
{
	struct gd_conf c;
	ASSERT_EQ(load(&c, GD_FAM_PUB, "GDpub_timeout=0.25\n"), 0);
	ASSERT_DBL(c.timeout, 0.25);
	gd_conf_free(&c);
	ASSERT_EQ(load(&c, GD_FAM_PUB, "GDpub_timeout=.5\n"), 0);
	ASSERT_DBL(c.timeout, 0.5);
	gd_conf_free(&c);
	ASSERT_EQ(load(&c, GD_FAM_PUB, "GDpub_timeout=0.001\n"), 0);
	ASSERT_DBL(c.timeout, 0.001);
	gd_conf_free(&c);
	ASSERT_EQ(load(&c, GD_FAM_SUB, "GDsub_retryInt=1.75\n"), 0);
	ASSERT_DBL(c.retry_int, 1.75);
	gd_conf_free(&c);
	/* the default of an unsupported duration, written differently */
	ASSERT_EQ(load(&c, GD_FAM_PUB, "GDpub_discardInterval=60.0\n"), 0);
	ASSERT_DBL(c.discard_interval, 60);
	gd_conf_free(&c);
	ASSERT_EQ(load_fails(GD_FAM_PUB, "GDpub_timeout=0.0001\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(1, "GDpub_timeout"));
	ASSERT_HAS(errbuf, "expected seconds");
}

TEST(comments_blank_lines)
{
	struct gd_conf c;
	int rc = load(&c, GD_FAM_PUB,
	    "# a comment\n"
	    "; another comment\n"
	    "\n"
	    "   \n"
	    "GDpub_port = 7001\n"
	    "  # indented comment\n"
	    "GDpub_numSubs=3 ; inline comment\n"
	    "GDpub_ctl=h#1\n"
	    "GDpub_resend\t=\t2\n");
	ASSERT_EQ(rc, 0);
	ASSERT_STR(errbuf, "");
	ASSERT_EQ(c.port, 7001);
	ASSERT_EQ(c.num_subs, 3);
	ASSERT_STR(c.pub_ctl, "h#1");	/* '#' only starts a comment at line start */
	ASSERT_EQ(c.resend, 2);
	gd_conf_free(&c);
}

/* inih would hand on the keys under a header, the header ignored */
TEST(section_header_refused)
{
	char want[1000];

	ASSERT_EQ(load_fails(GD_FAM_PUB, "# c\n[publisher]\nGDpub_port=1\n"),
	    GD_EX_CONFIG);
	snprintf(want, sizeof(want), "%ssection header '[publisher]': a gdkit "
	    "config file has no sections, only KEY=VALUE lines\n", where(2, NULL));
	ASSERT_HAS(errbuf, want);
	ASSERT_EQ(count_lines(errbuf), 1);
	/* indented, a comment after it, after keys, unterminated */
	ASSERT_EQ(load_fails(GD_FAM_PUB, "GDpub_port=1\n\t [x y] ; c\n"),
	    GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, NULL));
	ASSERT_HAS(errbuf, "section header '[x y]':");
	ASSERT_EQ(load_fails(GD_FAM_SUB, "[\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(1, NULL));
	ASSERT_HAS(errbuf, "section header '[':");
	/* after a byte-order mark */
	ASSERT_EQ(load_fails(GD_FAM_PUB, "\xEF\xBB\xBF[s]\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(1, NULL));
	ASSERT_HAS(errbuf, "section header '[s]':");
	/* '[' inside a value is no header */
	{
		struct gd_conf c;
		ASSERT_EQ(load(&c, GD_FAM_PUB, "GDpub_ctl=[a]\n"), 0);
		ASSERT_STR(c.pub_ctl, "[a]");
		gd_conf_free(&c);
	}
}

/* a key set again: its last value, and one warning per key after the
 * file is read, naming the first and the last line */
TEST(repeated_key_warned)
{
	struct gd_conf c;
	char want[1000];

	ASSERT_EQ(load(&c, GD_FAM_PUB, "GDpub_port=1\nGDpub_timeout=2\n"
	    "GDpub_port=3\n# x\nGDpub_timeout=4\nGDpub_port=5\n"), 0);
	ASSERT_EQ(c.port, 5);
	ASSERT_DBL(c.timeout, 4);
	ASSERT_EQ(count_lines(errbuf), 2);
	snprintf(want, sizeof(want), "test_conf: warning: %s set 2 times (first "
	    "on line 2); the value of line 5 is used\ntest_conf: warning: ",
	    where(5, "GDpub_timeout"));
	ASSERT_HAS(errbuf, want);
	snprintf(want, sizeof(want), "%s set 3 times (first on line 1); the "
	    "value of line 6 is used\n", where(6, "GDpub_port"));
	ASSERT_HAS(errbuf, want);
	gd_conf_free(&c);
	/* none for a key given once each, nor for GDsub_pub */
	ASSERT_EQ(load(&c, GD_FAM_SUB, "GDsub_pub=a:1\nGDsub_pub=b:1\n"
	    "GDsub_name=n\n"), 0);
	ASSERT_STR(errbuf, "");
	gd_conf_free(&c);
	/* none when the file has an error: that error alone */
	ASSERT_EQ(load_fails(GD_FAM_PUB, "GDpub_port=1\nGDpub_port=2\nx\n"),
	    GD_EX_CONFIG);
	ASSERT_EQ(count_lines(errbuf), 1);
	ASSERT_HAS(errbuf, "syntax error");
}

/* Debian's inih is built with INI_ALLOW_MULTILINE: an indented line is
 * a continuation of the previous key. "Plain key=value lines" (SPEC 3)
 * means an indented key is either read as that key or refused, never
 * swallowed silently as the previous key's value. */
TEST(indented_key_not_continuation)
{
	struct gd_conf c;
	int rc = load(&c, GD_FAM_PUB,
	    "GDpub_host=x\n"
	    "  GDpub_numSubs=2\n"
	    "\tGDpub_port=7001\n");
	if (rc == 0) {
		ASSERT_STR(c.host, "x");
		ASSERT_EQ(c.num_subs, 2);
		ASSERT_EQ(c.port, 7001);
	} else {
		ASSERT_EQ(rc, GD_EX_CONFIG);
		ASSERT_HAS(errbuf, where(2, NULL));
	}
	gd_conf_free(&c);
}

TEST(empty_file_and_crlf)
{
	struct gd_conf c;
	ASSERT_EQ(load(&c, GD_FAM_PUB, ""), 0);
	ASSERT_STR(errbuf, "");
	ASSERT(!c.seen_pub && !c.seen_sub);
	cap_begin();
	ASSERT_EQ(gd_conf_check(&c, GD_FAM_PUB), GD_EX_USAGE);
	cap_end();
	gd_conf_free(&c);
	ASSERT_EQ(load(&c, GD_FAM_PUB, "GDpub_port=7001\r\nGDpub_numSubs=2\r\n"), 0);
	ASSERT_EQ(c.port, 7001);
	ASSERT_EQ(c.num_subs, 2);
	gd_conf_free(&c);
	/* last line without a newline */
	ASSERT_EQ(load(&c, GD_FAM_PUB, "GDpub_numSubs=1\nGDpub_port=9"), 0);
	ASSERT_EQ(c.port, 9);
	gd_conf_free(&c);
	ASSERT_EQ(load_fails(GD_FAM_PUB, "GDpub_numSubs=1\nGDpub_port=65536"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, "GDpub_port"));
}

TEST(repeated_pub)
{
	struct gd_conf c;
	int rc = load(&c, GD_FAM_SUB,
	    "GDsub_pub=127.0.0.1:7001\n"
	    "# second\n"
	    "GDsub_pub=[::1]:7001\n"
	    "GDsub_pub=127.0.0.1:7002\n"
	    "GDsub_pub=pub.example:7001\n");
	ASSERT_EQ(rc, 0);
	ASSERT_EQ(c.npubs, 4);
	if (c.npubs == 4) {
		ASSERT_STR(c.pubs[0].host, "127.0.0.1");
		ASSERT_EQ(c.pubs[0].port, 7001);
		ASSERT_STR(c.pubs[1].host, "::1");
		ASSERT_EQ(c.pubs[1].port, 7001);
		ASSERT_STR(c.pubs[2].host, "127.0.0.1");
		ASSERT_EQ(c.pubs[2].port, 7002);
		ASSERT_STR(c.pubs[3].host, "pub.example");
	}
	ASSERT_EQ(c.pubs_from_cli, 0);
	gd_conf_free(&c);
}

/* 1024 publishers load; the 1025th is refused (one file: the list grows
 * one realloc at a time, slow under ASan) */
TEST(pub_limit_1024)
{
	static char content[1025 * 32];
	struct gd_conf c;
	size_t n = 0;
	int i;

	for (i = 0; i < 1024; i++)
		n += (size_t)snprintf(content + n, sizeof(content) - n,
		    "GDsub_pub=10.0.%d.%d:7001\n", i / 256, i % 256);
	snprintf(content + n, sizeof(content) - n, "GDsub_pub=10.9.9.9:7001\n");
	ASSERT_EQ(load(&c, GD_FAM_SUB, content), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(1025, "GDsub_pub"));
	ASSERT_HAS(errbuf, "too many publishers (at most 1024)");
	ASSERT_EQ(c.npubs, 1024);
	if (c.npubs == 1024) {
		ASSERT_STR(c.pubs[1023].host, "10.0.3.255");
		ASSERT_EQ(c.pubs[1023].port, 7001);
	}
	gd_conf_free(&c);
}

/* ---- errors from files ---- */

TEST(err_unknown_key)
{
	ASSERT_EQ(load_fails(GD_FAM_PUB,
	    "# header\n"
	    "GDpub_port=7001\n"
	    "GDpub_prot=7002\n"
	    "GDpub_bogus=1\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(3, "GDpub_prot"));
	ASSERT_HAS(errbuf, "unknown key");
	ASSERT_EQ(count_lines(errbuf), 1);	/* first error only */
	ASSERT(strncmp(errbuf, "test_conf: ", 11) == 0);
	/* case matters */
	ASSERT_EQ(load_fails(GD_FAM_PUB, "gdpub_port=7001\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(1, "gdpub_port"));
	ASSERT_EQ(load_fails(GD_FAM_SUB, "x=1\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(1, "x"));
}

struct badval {
	int fam;
	const char *key, *value, *why;
};

TEST(err_bad_values)
{
	static const struct badval bv[] = {
		{ GD_FAM_PUB, "GDpub_port", "abc", "expected an integer from 0 to 65535" },
		{ GD_FAM_PUB, "GDpub_port", "7001x", "expected an integer" },
		{ GD_FAM_PUB, "GDpub_port", "-1", "expected an integer" },
		{ GD_FAM_PUB, "GDpub_port", "65536", "expected an integer" },
		{ GD_FAM_PUB, "GDpub_port", "-1", "expected an integer" },
		{ GD_FAM_PUB, "GDpub_port", "7001.5", "expected an integer" },
		{ GD_FAM_PUB, "GDpub_port", "", "expected an integer" },
		{ GD_FAM_PUB, "GDpub_numSubs", "33", "expected an integer from 0 to 32" },
		{ GD_FAM_PUB, "GDpub_maxPending", "0", "expected an integer" },
		{ GD_FAM_PUB, "GDpub_maxPending", "1073741825", "expected an integer" },
		{ GD_FAM_PUB, "GDpub_window", "0", "expected an integer from 1 to 16777216 or 'auto'" },
		{ GD_FAM_PUB, "GDpub_window", "Auto", "expected an integer from 1 to 16777216 or 'auto'" },
		{ GD_FAM_PUB, "GDpub_resend", "1001", "expected an integer" },
		{ GD_FAM_PUB, "GDpub_snapshot", "-1", "expected an integer" },
		{ GD_FAM_PUB, "GDpub_timeout", "0", "expected seconds" },
		{ GD_FAM_PUB, "GDpub_timeout", "-1", "expected seconds" },
		{ GD_FAM_PUB, "GDpub_timeout", "nan", "expected seconds" },
		{ GD_FAM_PUB, "GDpub_timeout", "inf", "expected seconds" },
		{ GD_FAM_PUB, "GDpub_timeout", "1e999", "expected seconds" },
		{ GD_FAM_PUB, "GDpub_timeout", "10s", "expected seconds" },
		{ GD_FAM_PUB, "GDpub_timeout", "40000000", "expected seconds" },
		{ GD_FAM_PUB, "GDpub_fsync", "sometimes", "expected one of 'always', 'batch', 'never'" },
		{ GD_FAM_PUB, "GDpub_fsync", "BATCH", "expected one of" },
		{ GD_FAM_PUB, "GDpub_role", "tertiary", "expected one of 'primary', 'secondary'" },
		{ GD_FAM_PUB, "GDpub_sendQueueSizeMaxPolicy", "Drop", "expected one of" },
		{ GD_FAM_PUB, "GDpub_sendQueueSizeMax", "-2", "expected an integer" },
		{ GD_FAM_PUB, "GDpub_sendTimeout", "-2", "expected seconds" },
		{ GD_FAM_PUB, "GDpub_bind", "", "expected a non-empty value" },
		{ GD_FAM_PUB, "GDpub_metrics", "localhost:9464", "expected ADDR:PORT, a numeric address and a port from 1 to 65535 ([ADDR]:PORT for IPv6), e.g. 127.0.0.1:9464" },
		{ GD_FAM_PUB, "GDpub_metrics", "127.0.0.1", "expected ADDR:PORT" },
		{ GD_FAM_PUB, "GDpub_metrics", "127.0.0.1:0", "expected ADDR:PORT" },
		{ GD_FAM_PUB, "GDpub_metrics", "::1:9464", "expected ADDR:PORT" },
		{ GD_FAM_SUB, "GDsub_metrics", "1.2.3:9", "expected ADDR:PORT" },
		{ GD_FAM_SUB, "GDsub_dedup", "ID", "expected one of 'id', 'index', 'none'" },
		{ GD_FAM_SUB, "GDsub_reliability", "Ordered", "expected 'ordered' or nothing (an empty value, the default)" },
		{ GD_FAM_SUB, "GDsub_maxRetries", "-2", "expected an integer from -1" },
		{ GD_FAM_SUB, "GDsub_retryInt", "0", "expected seconds" },
		{ GD_FAM_SUB, "GDsub_retryInt", "-inf", "expected seconds" },
		{ GD_FAM_SUB, "GDsub_consecutive", "2", "expected 0 or 1" },
		{ GD_FAM_SUB, "GDsub_locatorCacheTimeout", "-2", "expected seconds" },
		{ GD_FAM_SUB, "GDsub_name", "", "expected a non-empty value" },
		{ GD_FAM_SUB, "GDsub_pub", "localhost", "expected HOST:PORT" },
		{ GD_FAM_SUB, "GDsub_pub", "localhost:", "expected HOST:PORT" },
		{ GD_FAM_SUB, "GDsub_pub", ":7001", "expected HOST:PORT" },
		{ GD_FAM_SUB, "GDsub_pub", "h:0", "expected HOST:PORT" },
		{ GD_FAM_SUB, "GDsub_pub", "h:65536", "expected HOST:PORT with PORT from 1 to 65535 ([ADDR]:PORT for IPv6)" },
		{ GD_FAM_SUB, "GDsub_pub", "::1:7001", "expected HOST:PORT" },
		{ GD_FAM_SUB, "GDsub_pub", "[::1]", "expected HOST:PORT" },
		{ GD_FAM_SUB, "GDsub_pub", "", "expected HOST:PORT" },
	};
	char content[600], msg[1200];
	size_t i;

	for (i = 0; i < sizeof(bv) / sizeof(bv[0]); i++) {
		int rc;
		snprintf(content, sizeof(content), "# bad value\n\n%s=%s\n",
		    bv[i].key, bv[i].value);
		rc = load_fails(bv[i].fam, content);
		snprintf(msg, sizeof(msg), "%s invalid value '%s': %s",
		    where(3, bv[i].key), bv[i].value, bv[i].why);
		if (rc != GD_EX_CONFIG)
			FAILF("%s=%s: rc %d", bv[i].key, bv[i].value, rc);
		if (!contains(errbuf, msg))
			FAILF("%s=%s: '%s' not in '%s'", bv[i].key, bv[i].value,
			    msg, errbuf);
	}
}

TEST(err_duplicate_pub)
{
	ASSERT_EQ(load_fails(GD_FAM_SUB,
	    "GDsub_pub=127.0.0.1:7001\n"
	    "GDsub_pub=127.0.0.1:7002\n"
	    "GDsub_pub=127.0.0.1:7001\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(3, "GDsub_pub"));
	ASSERT_HAS(errbuf, "publisher listed twice");
	ASSERT_EQ(load_fails(GD_FAM_SUB,
	    "GDsub_pub=[::1]:7001\n"
	    "GDsub_pub=[::1]:7001\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, "GDsub_pub"));
}

TEST(err_unreadable)
{
	struct gd_conf c;
	char want[700];
	int rc;

	gd_conf_init(&c, GD_FAM_PUB);
	snprintf(cfpath, sizeof(cfpath), "%s/does-not-exist.conf", tmpdir);
	cap_begin();
	rc = gd_conf_load(&c, cfpath);
	cap_end();
	ASSERT_EQ(rc, GD_EX_CONFIG);
	snprintf(want, sizeof(want), "%s: cannot read config file: ", cfpath);
	ASSERT_HAS(errbuf, want);
	ASSERT_HAS(errbuf, "No such file");
	ASSERT(c.path == NULL);
	gd_conf_free(&c);
}

/* A directory opens fine with fopen() but every read fails (EISDIR): the
 * load must report it, not loop. Run in a child with an alarm so a hang
 * fails this test instead of the whole binary. */
TEST(err_unreadable_directory)
{
	char want[700];
	pid_t pid;
	int st = 0;

	mkdir(tpath("adir"), 0700);
	snprintf(cfpath, sizeof(cfpath), "%s", tpath("adir"));
	cap_begin();
	pid = fork();
	if (pid == 0) {
		struct itimerval it = { { 0, 0 }, { 0, 500000 } };
		struct gd_conf c;
		int rc;
		setitimer(ITIMER_REAL, &it, NULL);	/* SIGALRM in 0.5 s */
		gd_conf_init(&c, GD_FAM_PUB);
		rc = gd_conf_load(&c, cfpath);
		_exit(rc);
	}
	waitpid(pid, &st, 0);
	cap_end();
	ASSERT(pid > 0);
	if (WIFSIGNALED(st))
		FAILF("gd_conf_load(directory) did not return: killed by signal %d%s",
		    WTERMSIG(st), WTERMSIG(st) == SIGALRM ? " (hang)" : "");
	else
		ASSERT_EQ(WEXITSTATUS(st), GD_EX_CONFIG);
	snprintf(want, sizeof(want), "%s: cannot read config file", cfpath);
	ASSERT_HAS(errbuf, want);
	rmdir(tpath("adir"));
}

TEST(err_syntax)
{
	ASSERT_EQ(load_fails(GD_FAM_PUB,
	    "# ok\n"
	    "GDpub_port 7001\n"
	    "GDpub_numSubs=1\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, NULL));
	ASSERT_HAS(errbuf, "syntax error");
	ASSERT_EQ(count_lines(errbuf), 1);
	ASSERT_EQ(load_fails(GD_FAM_PUB, "GDpub_port=1\n\n\njunk\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(4, NULL));
	/* the first error of the file is the one reported */
	ASSERT_EQ(load_fails(GD_FAM_PUB, "GDpub_port=1\njunk\nGDpub_bogus=1\n"),
	    GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, NULL));
	ASSERT_HAS(errbuf, "syntax error");
	ASSERT_EQ(count_lines(errbuf), 1);
	ASSERT_EQ(load_fails(GD_FAM_PUB, "GDpub_bogus=1\njunk\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(1, "GDpub_bogus"));
	ASSERT_EQ(count_lines(errbuf), 1);
	ASSERT_EQ(load_fails(GD_FAM_PUB, "GDpub_port=1\njunk\n[s]\n"),
	    GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, NULL));
	ASSERT_HAS(errbuf, "syntax error");
	ASSERT_EQ(count_lines(errbuf), 1);
}

/* "# c\n" then a line "HEAD" + 'a' * (len - strlen(HEAD) - strlen(TAIL))
 * + "TAIL" of exactly len bytes, then "\n" and REST */
static const char *long_line_with(const char *head, size_t len,
    const char *tail, const char *rest)
{
	static char content[20000];
	size_t n = (size_t)snprintf(content, sizeof(content), "# c\n%s", head);
	size_t start = n - strlen(head);
	while (n - start < len - strlen(tail))
		content[n++] = 'a';
	n += (size_t)snprintf(content + n, sizeof(content) - n, "%s\n%s", tail,
	    rest);
	return content;
}

/* "GDpub_ctl=aaa…" of exactly len bytes on line 2 */
static const char *long_line_conf(size_t len)
{
	return long_line_with("GDpub_ctl=", len, "", "");
}

/* Debian's inih reads lines of 197 bytes at most; gdkit.conf(5) promises
 * string values of 4096 bytes, so longer lines are read around it. */
TEST(long_values_load)
{
	struct gd_conf c;
	size_t hl = strlen("GDpub_ctl=");

	ASSERT_EQ(load(&c, GD_FAM_PUB, long_line_conf(197)), 0);
	ASSERT(c.pub_ctl != NULL && strlen(c.pub_ctl) == 197 - hl);
	gd_conf_free(&c);
	ASSERT_EQ(load(&c, GD_FAM_PUB, long_line_conf(198)), 0);
	ASSERT_STR(errbuf, "");
	ASSERT(c.pub_ctl != NULL && strlen(c.pub_ctl) == 198 - hl);
	gd_conf_free(&c);
	/* the documented longest value, with the lines after it read */
	ASSERT_EQ(load(&c, GD_FAM_PUB, long_line_with("GDpub_ctl=", hl + 4096,
	    "", "GDpub_port=7001\n")), 0);
	ASSERT_STR(errbuf, "");
	ASSERT(c.pub_ctl != NULL && strlen(c.pub_ctl) == 4096);
	ASSERT_EQ(c.port, 7001);
	gd_conf_free(&c);
	/* spaces, ':' and an inline comment, by inih's rules */
	ASSERT_EQ(load(&c, GD_FAM_PUB, long_line_with("  GDpub_ctl \t: ", 300,
	    "b/c.sock  ; a comment ; more\r", "")), 0);
	ASSERT_STR(errbuf, "");
	ASSERT(c.pub_ctl != NULL && strlen(c.pub_ctl) > 250);
	if (c.pub_ctl != NULL)
		ASSERT_STR(c.pub_ctl + strlen(c.pub_ctl) - 9, "ab/c.sock");
	gd_conf_free(&c);
	/* a ';' with no space before it is part of the value */
	ASSERT_EQ(load(&c, GD_FAM_PUB, long_line_with("GDpub_ctl=", 250,
	    "x;y", "")), 0);
	if (c.pub_ctl != NULL)
		ASSERT_STR(c.pub_ctl + strlen(c.pub_ctl) - 4, "ax;y");
	gd_conf_free(&c);
	/* long comments */
	ASSERT_EQ(load(&c, GD_FAM_PUB, long_line_with("# ", 3000, "",
	    "; x\nGDpub_port=1\n")), 0);
	ASSERT_EQ(c.port, 1);
	gd_conf_free(&c);
	/* a byte-order mark in front of a long first line */
	ASSERT_EQ(load(&c, GD_FAM_PUB, long_line_with("\xEF\xBB\xBF# c\nGDpub_ctl=", 300, "", "") + 4), 0);
	ASSERT_STR(errbuf, "");
	gd_conf_free(&c);
}

TEST(long_line_errors)
{
	size_t hl = strlen("GDpub_ctl=");
	char want[1000];

	/* a value over 4096 bytes: the start of it and its length */
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_conf(hl + 4097)), GD_EX_CONFIG);
	snprintf(want, sizeof(want), "%s invalid value 'aaaa", where(2, "GDpub_ctl"));
	ASSERT_HAS(errbuf, want);
	ASSERT_HAS(errbuf, "...' (4097 bytes): expected a non-empty value of at most 4096 bytes");
	ASSERT_EQ(count_lines(errbuf), 1);
	/* each kind of error, on the right line, after a long line */
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_with("GDpub_ctl=", 300, "",
	    "GDpub_bogus=1\n")), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(3, "GDpub_bogus"));
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_with("GDpub_ctl=", 300, "",
	    "\njunk\n")), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(4, NULL));
	ASSERT_HAS(errbuf, "syntax error: expected key=value");
	/* long lines that are errors themselves */
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_with("GDpub_bogus=", 300, "", "")),
	    GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, "GDpub_bogus"));
	ASSERT_HAS(errbuf, "unknown key");
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_with("GDpub_port ", 300, "", "")),
	    GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, NULL));
	ASSERT_HAS(errbuf, "syntax error: expected key=value");
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_with("[", 300, "", "")), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, NULL));
	ASSERT_HAS(errbuf, "section header '[aaa");
	ASSERT_HAS(errbuf, "...': a gdkit config file has no sections");
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_with("[", 500, "]", "GDpub_port=2\n")),
	    GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, NULL));
	ASSERT_HAS(errbuf, "section header");
	ASSERT_EQ(load_fails(GD_FAM_SUB, long_line_with("GDpub_ctl=", 300, "", "")),
	    GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, "GDpub_ctl"));
	ASSERT_HAS(errbuf, "not a subscriber (GDsub_*) key");
	/* a key too long to be one is named by its start */
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_with("", 300, "=1", "")), GD_EX_CONFIG);
	snprintf(want, sizeof(want), "%s%.64s: unknown key", where(2, NULL), long_line_with("", 300, "", "") + 4);
	ASSERT_HAS(errbuf, want);
}

/* The message says "at most 8192 bytes": 8192 loads, 8193 is refused,
 * naming the key; the rest of the line is not read as a line of its own. */
TEST(line_length_boundary)
{
	struct gd_conf c;
	char want[1000];

	ASSERT_EQ(load(&c, GD_FAM_PUB, long_line_with("# ", 8192, "", "GDpub_port=3\n")), 0);
	ASSERT_STR(errbuf, "");
	ASSERT_EQ(c.port, 3);
	gd_conf_free(&c);
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_with("# ", 8193, "", "")), GD_EX_CONFIG);
	snprintf(want, sizeof(want), "%sline too long (at most 8192 bytes)", where(2, NULL));
	ASSERT_HAS(errbuf, want);
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_conf(8193)), GD_EX_CONFIG);
	snprintf(want, sizeof(want), "%s line too long (at most 8192 bytes)",
	    where(2, "GDpub_ctl"));
	ASSERT_HAS(errbuf, want);
	ASSERT_EQ(count_lines(errbuf), 1);
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_conf(12000)), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, want);
	ASSERT_EQ(count_lines(errbuf), 1);
	/* the first error of the file wins */
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_with("GDpub_ctl=", 9000, "",
	    "GDpub_bogus=1\n")), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, "line too long");
	ASSERT_EQ(load_fails(GD_FAM_PUB, long_line_with("GDpub_ctl=", 9000, "",
	    "junk\n")), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, want);
}

TEST(err_wrong_family)
{
	ASSERT_EQ(load_fails(GD_FAM_PUB,
	    "GDpub_port=7001\n"
	    "GDsub_pub=127.0.0.1:7001\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(2, "GDsub_pub"));
	ASSERT_HAS(errbuf, "not a publisher (GDpub_*) key");
	ASSERT_EQ(load_fails(GD_FAM_SUB, "GDpub_port=7001\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, where(1, "GDpub_port"));
	ASSERT_HAS(errbuf, "not a subscriber (GDsub_*) key");
}

TEST(unsupported_special_values)
{
	struct gd_conf c;

	/* dedup: id, index and none */
	ASSERT_EQ(load(&c, GD_FAM_SUB, "GDsub_dedup=id\n"), 0);
	ASSERT_EQ(c.dedup, GD_DEDUP_ID);
	gd_conf_free(&c);
	ASSERT_EQ(load(&c, GD_FAM_SUB, "GDsub_dedup=index\n"), 0);
	ASSERT_EQ(c.dedup, GD_DEDUP_INDEX);
	gd_conf_free(&c);
	/* reliability: "" is the default */
	ASSERT_EQ(load(&c, GD_FAM_SUB, "GDsub_reliability=\n"), 0);
	ASSERT_EQ(c.reliability, GD_REL_PIPELINED);
	gd_conf_free(&c);
	ASSERT_EQ(load(&c, GD_FAM_SUB, "GDsub_reliability=ordered\n"), 0);
	ASSERT_EQ(c.reliability, GD_REL_ORDERED);
	gd_conf_free(&c);
	ASSERT_EQ(load_fails(GD_FAM_SUB, "GDsub_reliability=sorted\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, "expected 'ordered' or nothing (an empty value, the default)");
	/* fsync: every value */
	ASSERT_EQ(load(&c, GD_FAM_PUB, "GDpub_fsync=never\n"), 0);
	ASSERT_EQ(c.fsync, GD_FSYNC_NEVER);
	gd_conf_free(&c);
	ASSERT_EQ(load(&c, GD_FAM_PUB, "GDpub_fsync=always\n"), 0);
	ASSERT_EQ(c.fsync, GD_FSYNC_ALWAYS);
	gd_conf_free(&c);
	ASSERT_EQ(load_fails(GD_FAM_PUB, "GDpub_fsync=sometimes\n"), GD_EX_CONFIG);
	ASSERT_HAS(errbuf, "expected one of");
}

TEST(load_twice_overrides)
{
	struct gd_conf c;
	char first[700];

	gd_conf_init(&c, GD_FAM_PUB);
	write_conf_named("a.conf", "GDpub_port=1\nGDpub_host=one\n");
	snprintf(first, sizeof(first), "%s", cfpath);
	cap_begin();
	ASSERT_EQ(gd_conf_load(&c, first), 0);
	write_conf_named("b.conf", "GDpub_host=two\n");
	ASSERT_EQ(gd_conf_load(&c, cfpath), 0);
	cap_end();
	ASSERT_EQ(c.port, 1);
	ASSERT_STR(c.host, "two");
	ASSERT_STR(c.path, cfpath);
	gd_conf_free(&c);
	unlink(first);
}

/* ---- command line ---- */

TEST(set_opt_valid)
{
	struct gd_conf c;
	gd_conf_init(&c, GD_FAM_PUB);
	ASSERT_EQ(set_opt(&c, "GDpub_port", "--port", "7001"), 0);
	ASSERT_EQ(c.port, 7001);
	ASSERT_EQ(set_opt(&c, "GDpub_timeout", "--timeout", "0.25"), 0);
	ASSERT_DBL(c.timeout, 0.25);
	ASSERT_EQ(set_opt(&c, "GDpub_bind", "--bind", "::"), 0);
	ASSERT_STR(c.bind, "::");
	ASSERT_EQ(set_opt(&c, "GDpub_bind", "--bind", "0.0.0.0"), 0);
	ASSERT_STR(c.bind, "0.0.0.0");
	ASSERT_EQ(set_opt(&c, "GDpub_role", "--role", "primary"), 0);
	ASSERT_STR(errbuf, "");
	gd_conf_free(&c);
}

TEST(set_opt_invalid)
{
	static const struct { const char *key, *opt, *v; } bad[] = {
		{ "GDpub_port", "--port", "abc" },
		{ "GDpub_port", "--port", "-1" },
		{ "GDpub_port", "--port", "65536" },
		{ "GDpub_timeout", "--timeout", "nan" },
		{ "GDpub_timeout", "--timeout", "-1" },
		{ "GDpub_numSubs", "--num-subs", "33" },
		{ "GDpub_fsync", "--fsync", "maybe" },
		{ "GDpub_host", "--host", "" },
		{ "GDpub_role", "--role", "tertiary" },
		{ "GDpub_cluster", "--cluster", "a/b" },
		{ "GDpub_cluster", "--cluster", "@c" },
		{ "GDpub_cluster", "--cluster", "x1234567890123456789012345678901234567890123456789012345678901234" },
		{ "GDsub_pub", "--pub", "nohost" },
		{ "GDsub_dedup", "--dedup", "idx" },
		{ "GDsub_gd", "--no-gd", "2" },
	};
	char want[300];
	struct gd_conf c;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc;
		gd_conf_init(&c, GD_FAM_ANY);
		rc = set_opt(&c, bad[i].key, bad[i].opt, bad[i].v);
		snprintf(want, sizeof(want), "test_conf: invalid value '%s' for %s: ",
		    bad[i].v, bad[i].opt);
		if (rc != GD_EX_USAGE)
			FAILF("%s %s: rc %d", bad[i].opt, bad[i].v, rc);
		if (!contains(errbuf, want) || !contains(errbuf, "try 'test_conf --help'"))
			FAILF("%s %s: message '%s'", bad[i].opt, bad[i].v, errbuf);
		gd_conf_free(&c);
	}
	gd_conf_init(&c, GD_FAM_PUB);
	ASSERT_EQ(set_opt(&c, "GDpub_nope", "--nope", "1"), GD_EX_USAGE);
	ASSERT_EQ(c.port, -1);
	gd_conf_free(&c);
}

TEST(cli_pub_replaces_file)
{
	struct gd_conf c;
	ASSERT_EQ(load(&c, GD_FAM_SUB,
	    "GDsub_pub=127.0.0.1:7001\n"
	    "GDsub_pub=127.0.0.1:7002\n"), 0);
	ASSERT_EQ(c.npubs, 2);
	/* the first -P replaces the file's list */
	ASSERT_EQ(set_opt(&c, "GDsub_pub", "--pub", "[::1]:8001"), 0);
	ASSERT_EQ(c.pubs_from_cli, 1);
	ASSERT_EQ(c.npubs, 1);
	ASSERT_STR(c.pubs[0].host, "::1");
	ASSERT_EQ(c.pubs[0].port, 8001);
	/* later ones add to it */
	ASSERT_EQ(set_opt(&c, "GDsub_pub", "--pub", "127.0.0.1:7001"), 0);
	ASSERT_EQ(c.npubs, 2);
	ASSERT_STR(c.pubs[1].host, "127.0.0.1");
	ASSERT_EQ(c.pubs[1].port, 7001);
	/* duplicates on the command line */
	ASSERT_EQ(set_opt(&c, "GDsub_pub", "--pub", "[::1]:8001"), GD_EX_USAGE);
	ASSERT_HAS(errbuf, "invalid value '[::1]:8001' for --pub: publisher listed twice");
	ASSERT_EQ(c.npubs, 2);
	ASSERT_EQ(gd_conf_check(&c, GD_FAM_SUB), 0);
	gd_conf_free(&c);
}

TEST(conf_check)
{
	struct gd_conf c;
	gd_conf_init(&c, GD_FAM_PUB);
	cap_begin();
	ASSERT_EQ(gd_conf_check(&c, GD_FAM_PUB), GD_EX_USAGE);
	cap_end();
	ASSERT_HAS(errbuf, "no port given");
	c.port = 7001;
	ASSERT_EQ(gd_conf_check(&c, GD_FAM_PUB), 0);
	gd_conf_free(&c);
	gd_conf_init(&c, GD_FAM_SUB);
	cap_begin();
	ASSERT_EQ(gd_conf_check(&c, GD_FAM_SUB), GD_EX_USAGE);
	cap_end();
	ASSERT_HAS(errbuf, "no publisher given");
	gd_conf_free(&c);
}

TEST(conf_option)
{
	ASSERT_STR(gd_conf_option("GDpub_port"), "--port");
	ASSERT_STR(gd_conf_option("GDpub_maxBlockSize"), "--max-block-size");
	ASSERT_STR(gd_conf_option("GDsub_pub"), "--pub");
	ASSERT_STR(gd_conf_option("GDsub_gd"), "--no-gd");
	ASSERT_STR(gd_conf_option("GDsub_retryCount"), "--qos");
	ASSERT(gd_conf_option("GDpub_discardInterval") == NULL);
	ASSERT(gd_conf_option("GDpub_nope") == NULL);
}

/* The option -> key map is the key table's: the mains name options only. */
TEST(set_option_by_table)
{
	struct gd_conf c;
	int rc;

	gd_conf_init(&c, GD_FAM_PUB);
	ASSERT_EQ(gd_conf_set_option(&c, "--port", "7001"), 0);
	ASSERT_EQ(c.port, 7001);
	ASSERT_EQ(gd_conf_set_option(&c, "--max-block-size", "10"), 0);
	ASSERT_EQ(c.max_block, 10);
	ASSERT_EQ(gd_conf_set_option(&c, "--format", "line"), -1);	/* no key */
	ASSERT_EQ(gd_conf_set_option(&c, "--pub", "h:1"), -1);	/* not its family */
	ASSERT_EQ(c.npubs, 0);
	/* --ctl is GDpub_ctl for a publisher's config */
	ASSERT_EQ(gd_conf_set_option(&c, "--ctl", "/tmp/p.sock"), 0);
	ASSERT_STR(c.pub_ctl, "/tmp/p.sock");
	ASSERT(c.sub_ctl == NULL);
	cap_begin();
	rc = gd_conf_set_option(&c, "--port", "65536");
	cap_end();
	ASSERT_EQ(rc, GD_EX_USAGE);
	ASSERT_HAS(errbuf, "test_conf: invalid value '65536' for --port: ");
	gd_conf_free(&c);

	gd_conf_init(&c, GD_FAM_SUB);
	ASSERT_EQ(gd_conf_set_option(&c, "--pub", "127.0.0.1:7001"), 0);
	ASSERT_EQ(c.npubs, 1);
	ASSERT_EQ(gd_conf_set_option(&c, "--port", "1"), -1);
	ASSERT_EQ(gd_conf_set_option(&c, "--ctl", "/tmp/s.sock"), 0);
	ASSERT_STR(c.sub_ctl, "/tmp/s.sock");
	/* flags: --no-gd sets 0, --consecutive 1; an unsupported option
	 * says so by its name */
	ASSERT_EQ(c.gd, 1);
	ASSERT_EQ(gd_conf_set_option(&c, "--no-gd", NULL), 0);
	ASSERT_EQ(c.gd, 0);
	ASSERT_EQ(c.consecutive, 0);
	ASSERT_EQ(gd_conf_set_option(&c, "--consecutive", NULL), 0);
	ASSERT_EQ(c.consecutive, 1);
	/* the key file is checked when the option is given */
	ASSERT_EQ(gd_conf_set_option(&c, "--auth-key-file", keyfile), 0);
	ASSERT_STR(c.sub_auth, keyfile);
	ASSERT_EQ(chmod(keyfile, 0604), 0);
	cap_begin();
	rc = gd_conf_set_option(&c, "--auth-key-file", keyfile);
	cap_end();
	ASSERT_EQ(chmod(keyfile, 0600), 0);
	ASSERT_EQ(rc, GD_EX_USAGE);
	{
		char want[2200];
		snprintf(want, sizeof(want), "test_conf: invalid value '%s' for "
		    "--auth-key-file: key file '%s' has mode 0604: group and "
		    "others must have no access (chmod 600 '%s')", keyfile,
		    keyfile, keyfile);
		ASSERT_HAS(errbuf, want);
	}
	/* a valued option given without a value sets nothing */
	ASSERT_EQ(gd_conf_set_option(&c, "--name", NULL), -1);
	gd_conf_free(&c);
}

TEST(set_option_multi_key)
{
	struct gd_conf c;
	int rc;

	gd_conf_init(&c, GD_FAM_SUB);
	ASSERT_EQ(gd_conf_set_option(&c, "--qos", "connectionCached=1"), 0);
	ASSERT_EQ(gd_conf_set_option(&c, "--qos", "retryCount=0"), 0);
	ASSERT_EQ(gd_conf_set_option(&c, "--qos", "locatorCacheTimeout=-1"), 0);
	ASSERT_EQ(gd_conf_set_option(&c, "--qos", "retryCount=3"), 0);
	ASSERT_EQ(c.retry_count, 3);
	ASSERT_EQ(gd_conf_set_option(&c, "--qos", "reliability=ordered"), 0);
	ASSERT_EQ(c.reliability, GD_REL_ORDERED);
	cap_begin();
	rc = gd_conf_set_option(&c, "--qos", "retryCount=-2");
	cap_end();
	ASSERT_EQ(rc, GD_EX_USAGE);
	ASSERT_HAS(errbuf, "invalid value '-2' for --qos: expected an integer from -1 to");
	cap_begin();
	rc = gd_conf_set_option(&c, "--qos", "bogus=1");
	cap_end();
	ASSERT_EQ(rc, GD_EX_USAGE);
	ASSERT_HAS(errbuf, "invalid value 'bogus=1' for --qos: expected reliability=, retryCount=, connectionCached= or locatorCacheTimeout=");
	cap_begin();
	rc = gd_conf_set_option(&c, "--qos", "retryCount");	/* no '=' */
	cap_end();
	ASSERT_EQ(rc, GD_EX_USAGE);
	ASSERT_HAS(errbuf, "invalid value 'retryCount' for --qos: expected reliability=");
	gd_conf_free(&c);
}

/* certfile, self-signed, and its key tlskey */
static void make_tls_files(void)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = X509_new();
	FILE *f;

	snprintf(certfile, sizeof(certfile), "%s/cert.pem", tmpdir);
	snprintf(tlskey, sizeof(tlskey), "%s/tls.key", tmpdir);
	if (k == NULL || x == NULL)
		exit(2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	if (X509_sign(x, k, EVP_sha256()) == 0 ||
	    (f = fopen(certfile, "w")) == NULL || !PEM_write_X509(f, x))
		exit(2);
	fclose(f);
	if ((f = fopen(tlskey, "w")) == NULL ||
	    !PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL))
		exit(2);
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(k);
}

int main(void)
{
	gd_log_init("tests/test_conf");
	mk_tmpdir();
	make_tls_files();
	{
		int fd;
		snprintf(keyfile, sizeof(keyfile), "%s/gd.key", tmpdir);
		fd = open(keyfile, O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd < 0 || write(fd, "0123456789abcdef\n", 17) != 17) {
			perror(keyfile);
			exit(2);
		}
		close(fd);
	}

	RUN(parse_i64_valid);
	RUN(parse_i64_invalid);
	RUN(parse_u64n);
	RUN(u64toa);
	RUN(u64toa_next);
	RUN(parse_id);
	RUN(parse_dur);
	RUN(parse_hostport_valid);
	RUN(parse_hostport_invalid);
	RUN(valid_host);
	RUN(fmt_hostport);

	RUN(key_table_covered);
	RUN(every_key_accepted);
	RUN(every_unsupported_key);
	RUN(pub_values_stored);
	RUN(sub_values_stored);
	RUN(defaults);
	RUN(bool_spellings);
	RUN(fractional_durations);
	RUN(comments_blank_lines);
	RUN(section_header_refused);
	RUN(repeated_key_warned);
	RUN(indented_key_not_continuation);
	RUN(empty_file_and_crlf);
	RUN(repeated_pub);
	RUN(pub_limit_1024);

	RUN(err_unknown_key);
	RUN(err_bad_values);
	RUN(err_duplicate_pub);
	RUN(err_unreadable);
	RUN(err_unreadable_directory);
	RUN(err_syntax);
	RUN(long_values_load);
	RUN(long_line_errors);
	RUN(line_length_boundary);
	RUN(err_wrong_family);
	RUN(unsupported_special_values);
	RUN(load_twice_overrides);

	RUN(set_opt_valid);
	RUN(set_opt_invalid);
	RUN(cli_pub_replaces_file);
	RUN(conf_check);
	RUN(conf_option);
	RUN(set_option_by_table);
	RUN(set_option_multi_key);
	RUN(host_refused);

	rm_tree(tmpdir);
	return UNIT_DONE();
}
