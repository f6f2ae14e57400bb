/* Unit tests of the control server's reply buffer (lib/ctl.c) on a real
 * libuv loop and a Unix socket, the client side driven by the test: a
 * reply at the cap goes out whole, a reply past it is replaced by one
 * error line and the connection stays usable, a line longer than the old
 * formatting buffer comes out whole; the request table's dispatch (hello
 * answered by it, for every program); a taken path at listen: only our
 * own stale socket is replaced.
 * The waits are bounded loops on the condition (bytes arrived), never
 * sleeps. */
#include "ctl.h"
#include "log.h"
#include "unit.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define CAP 4096

static int on_line(void *user, struct gd_ctl_client *cl, char *line,
    size_t len)
{
	char row[64];
	size_t i;

	(void)user;
	(void)len;
	if (strcmp(line, "fit") == 0) {
		/* exactly CAP bytes: 64 rows of 64 */
		memset(row, 'f', sizeof(row));
		row[sizeof(row) - 1] = '\n';
		for (i = 0; i < CAP / sizeof(row); i++)
			gd_ctl_reply(cl, row, sizeof(row));
	} else if (strcmp(line, "big") == 0) {
		for (i = 0; i < 1000; i++)
			gd_ctl_printf(cl, "row %zu of a reply far over the cap\n", i);
	} else if (strcmp(line, "long") == 0) {
		char *s = malloc(3001);
		memset(s, 'l', 3000);
		s[3000] = '\0';
		gd_ctl_printf(cl, "%s\n", s);
		free(s);
	} else {
		gd_ctl_printf(cl, "echo %s\n", line);
	}
	return 0;
}

/* Run the loop and read what the server sent until want bytes came (or a
 * bounded number of rounds passed); returns the bytes read. */
static size_t exchange(uv_loop_t *loop, struct gd_ctl_srv *s, int fd,
    char *buf, size_t cap, size_t want)
{
	size_t got = 0;
	int round;

	for (round = 0; round < 2000 && got < want; round++) {
		struct pollfd pf = { fd, POLLIN, 0 };
		ssize_t n;

		uv_run(loop, UV_RUN_NOWAIT);
		gd_ctl_flush(s);
		uv_run(loop, UV_RUN_NOWAIT);
		if (poll(&pf, 1, 5) <= 0)
			continue;
		n = recv(fd, buf + got, cap - 1 - got, MSG_DONTWAIT);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return got;
}

TEST(test_reply_cap)
{
	uv_loop_t loop;
	struct gd_ctl_srv srv;
	char dir[] = "/tmp/gdkit-test-ctl.XXXXXX", path[108], *buf;
	const char *err = "error reply larger than 4096 bytes, the control "
	    "socket's limit: ask for fewer rows (gdinspect --limit N)\n";
	size_t got, i;
	int fd, ok;

	ASSERT(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/s", dir);
	ASSERT_EQ(uv_loop_init(&loop), 0);
	ASSERT_EQ(gd_ctl_listen(&srv, &loop, path, on_line, NULL), 0);
	srv.reply_max = CAP;
	fd = gd_ctl_connect(path, 1, 1);
	ASSERT(fd >= 0);
	buf = malloc(1 << 16);

	/* exactly at the cap: whole */
	ASSERT_EQ(write(fd, "fit\n", 4), 4);
	got = exchange(&loop, &srv, fd, buf, 1 << 16, CAP);
	ASSERT_EQ(got, CAP);
	for (i = 0, ok = 1; i < got; i++)
		ok &= buf[i] == ((i % 64) == 63 ? '\n' : 'f');
	ASSERT(ok);

	/* past the cap: one error line instead, then the next request is
	 * answered as usual on the same connection */
	ASSERT_EQ(write(fd, "big\nafter\n", 10), 10);
	got = exchange(&loop, &srv, fd, buf, 1 << 16,
	    strlen(err) + strlen("echo after\n"));
	ASSERT_EQ(got, strlen(err) + strlen("echo after\n"));
	ASSERT(strncmp(buf, err, strlen(err)) == 0);
	ASSERT_STR(buf + strlen(err), "echo after\n");

	/* a formatted line longer than a request line comes out whole */
	ASSERT_EQ(write(fd, "long\n", 5), 5);
	got = exchange(&loop, &srv, fd, buf, 1 << 16, 3001);
	ASSERT_EQ(got, 3001);
	ASSERT(buf[0] == 'l' && buf[2999] == 'l' && buf[3000] == '\n');

	free(buf);
	close(fd);
	gd_ctl_close(&srv);
	uv_run(&loop, UV_RUN_DEFAULT);
	ASSERT_EQ(uv_loop_close(&loop), 0);
	rmdir(dir);
}

/* A unix socket bound at path that nothing serves */
static void bind_stale(const char *path)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ASSERT(fd >= 0);
	ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
}

/* What gd_ctl_listen does with a path that is taken: a stale socket of
 * ours is replaced; a served one, a file, and (as root, given to uid
 * 65534) another user's stale socket are left alone: 69. */
TEST(test_stale)
{
	uv_loop_t loop;
	struct gd_ctl_srv a, b;
	char dir[] = "/tmp/gdkit-test-stale.XXXXXX", path[108], other[108];
	struct stat st;
	FILE *f;

	gd_log_level(-1);
	ASSERT(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/s", dir);
	snprintf(other, sizeof(other), "%s/o", dir);
	ASSERT_EQ(uv_loop_init(&loop), 0);
	bind_stale(path);
	ASSERT_EQ(gd_ctl_listen(&a, &loop, path, on_line, NULL), 0);
	/* served now: a second server is refused, the first keeps it */
	ASSERT_EQ(gd_ctl_listen(&b, &loop, path, on_line, NULL), 69);
	ASSERT_EQ(lstat(path, &st), 0);
	ASSERT(S_ISSOCK(st.st_mode));
	gd_ctl_close(&a);
	ASSERT(lstat(path, &st) != 0);
	/* a file that is not a socket */
	ASSERT((f = fopen(other, "w")) != NULL);
	fclose(f);
	ASSERT_EQ(gd_ctl_listen(&b, &loop, other, on_line, NULL), 69);
	ASSERT_EQ(unlink(other), 0);
	if (geteuid() == 0) {
		bind_stale(other);
		ASSERT_EQ(chown(other, 65534, 65534), 0);
		ASSERT_EQ(gd_ctl_listen(&b, &loop, other, on_line, NULL), 69);
		ASSERT_EQ(lstat(other, &st), 0);
		ASSERT_EQ(st.st_uid, 65534);
		unlink(other);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	ASSERT_EQ(uv_loop_close(&loop), 0);
	rmdir(dir);
	gd_log_level(0);
}

/* A derived subscriber name over GD_SUB_NAME_MAX (many publishers, a
 * deep config path) keeps its start and ends with '~' and the hash of the
 * whole, so that lists or paths alike in their first 255 bytes still give
 * two names; a short one is as before. */
TEST(test_identity_long)
{
	struct gd_conf a, b;
	char na[1024], nb[1024], host[256];
	size_t i, n;

	gd_conf_init(&a, GD_FAM_SUB);
	gd_conf_init(&b, GD_FAM_SUB);
	ASSERT_EQ(gd_conf_set_named(&a, "GDsub_pub", "127.0.0.1:7001", na,
	    sizeof(na)), 0);
	gd_sub_identity(&a, na, sizeof(na));
	ASSERT(gethostname(host, sizeof(host)) == 0);
	n = strlen(host);
	ASSERT(strncmp(na, host, n) == 0);
	ASSERT_STR(na + n, ":127.0.0.1:7001");
	/* 40 publishers each, only the last differs */
	for (i = 1; i <= 40; i++) {
		char hp[64];
		snprintf(hp, sizeof(hp), "127.0.0.1:%zu", 7000 + i);
		if (i > 1)
			ASSERT_EQ(gd_conf_set_named(&a, "GDsub_pub", hp, na,
			    sizeof(na)), 0);
		snprintf(hp, sizeof(hp), "127.0.0.1:%zu", i < 40 ? 7000 + i : 9999);
		ASSERT_EQ(gd_conf_set_named(&b, "GDsub_pub", hp, nb, sizeof(nb)), 0);
	}
	gd_sub_identity(&a, na, sizeof(na));
	gd_sub_identity(&b, nb, sizeof(nb));
	ASSERT_EQ(strlen(na), GD_SUB_NAME_MAX);
	ASSERT_EQ(strlen(nb), GD_SUB_NAME_MAX);
	ASSERT(strncmp(na, nb, GD_SUB_NAME_MAX - 17) == 0);
	ASSERT(strcmp(na, nb) != 0);
	ASSERT(na[GD_SUB_NAME_MAX - 17] == '~');
	/* the same config, the same name (gdack finds gdsub by it) */
	gd_sub_identity(&b, na, sizeof(na));
	ASSERT_STR(na, nb);
	gd_conf_free(&a);
	gd_conf_free(&b);
	/* a cut that would split a UTF-8 character is moved before it */
	gd_conf_init(&a, GD_FAM_SUB);
	{
		char path[600];
		n = strlen(host) + 1;	/* "HOST:" */
		memset(path, 'p', sizeof(path));
		path[0] = '/';
		/* a 2-byte character whose second byte is where the cut
		 * falls, byte GD_SUB_NAME_MAX - 17 of the name */
		memcpy(path + (GD_SUB_NAME_MAX - 18 - n), "\xC3\xA9", 2);
		path[sizeof(path) - 1] = '\0';
		a.path = strdup(path);
	}
	gd_sub_identity(&a, na, sizeof(na));
	ASSERT_EQ(strlen(na), GD_SUB_NAME_MAX - 1);
	ASSERT(na[GD_SUB_NAME_MAX - 18] == '~');
	gd_conf_free(&a);
}

/* gd_ctl_dispatch: the rules both engines' tables rely on */
static char got[64];

static int req_note(void *user, struct gd_ctl_client *cl, const char *line,
    const char *args)
{
	(void)cl;
	(void)line;
	snprintf(got, sizeof(got), "%s[%s]", (const char *)user, args);
	return strcmp(args, "close") == 0 ? -1 : 0;
}

static const struct gd_ctl_req reqs[] = {
	{ "ack", GD_CTL_ARGS, req_note },
	{ "stats", GD_CTL_NOARGS, req_note },
	{ "pending", GD_CTL_OPTARGS, req_note },
};
static const struct gd_ctl_table table = { "gdtest", reqs,
	sizeof(reqs) / sizeof(reqs[0]) };

/* what line did: the handler's note, or the reply */
static const char *dispatch(struct gd_ctl_client *cl, const char *line,
    int *rc)
{
	static char out[256];
	size_t n;

	got[0] = '\0';
	gd_dbuf_reset(&cl->out);
	*rc = gd_ctl_dispatch(&table, "u", cl, line);
	if (got[0] != '\0')
		return got;
	n = gd_dbuf_len(&cl->out);
	if (n >= sizeof(out))
		n = sizeof(out) - 1;
	memcpy(out, gd_dbuf_ptr(&cl->out), n);
	out[n] = '\0';
	return out;
}

TEST(test_dispatch)
{
	struct gd_ctl_client *cl = calloc(1, sizeof(*cl));
	char line[200];
	int rc;

	gd_dbuf_init(&cl->out, CAP);
	ASSERT_STR(dispatch(cl, "stats", &rc), "u[]");
	ASSERT_EQ(rc, 0);
	/* hello is the dispatcher's, alike for every program */
	ASSERT_STR(dispatch(cl, "hello", &rc), "hello gdtest 2\n");
	ASSERT_EQ(rc, 0);
	ASSERT_STR(dispatch(cl, "ack 5", &rc), "u[5]");
	ASSERT_STR(dispatch(cl, "ack  5", &rc), "u[ 5]");
	ASSERT_STR(dispatch(cl, "pending", &rc), "u[]");
	ASSERT_STR(dispatch(cl, "pending sort=id", &rc), "u[sort=id]");
	/* the handler's -1 (close the client) comes back */
	ASSERT_STR(dispatch(cl, "ack close", &rc), "u[close]");
	ASSERT_EQ(rc, -1);
	/* a request without the arguments it must have, with some it does
	 * not take, a word that only begins like one, nothing at all */
	ASSERT_STR(dispatch(cl, "ack", &rc), "error unknown request 'ack'\n");
	ASSERT_EQ(rc, 0);
	/* "hello N": a client of version N, answered with the lower of N
	 * and ours, never below 2, what a bare hello gets */
	ASSERT_STR(dispatch(cl, "hello 3", &rc), "hello gdtest 3\n");
	ASSERT_STR(dispatch(cl, "hello 2", &rc), "hello gdtest 2\n");
	ASSERT_STR(dispatch(cl, "hello 9", &rc), "hello gdtest 3\n");
	ASSERT_STR(dispatch(cl, "hello 1", &rc), "hello gdtest 2\n");
	ASSERT_EQ(rc, 0);
	ASSERT_STR(dispatch(cl, "hello x", &rc),
	    "error bad version in 'hello x'\n");
	ASSERT_STR(dispatch(cl, "hello ", &rc),
	    "error bad version in 'hello '\n");
	ASSERT_STR(dispatch(cl, "hello -3", &rc),
	    "error bad version in 'hello -3'\n");
	ASSERT_EQ(rc, 0);
	ASSERT_STR(dispatch(cl, "stats x", &rc),
	    "error unknown request 'stats x'\n");
	ASSERT_STR(dispatch(cl, "pendingx", &rc),
	    "error unknown request 'pendingx'\n");
	ASSERT_STR(dispatch(cl, "hel", &rc), "error unknown request 'hel'\n");
	ASSERT_STR(dispatch(cl, "", &rc), "error unknown request ''\n");
	/* the echo is cut at 64 bytes */
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	ASSERT_EQ(strlen(dispatch(cl, line, &rc)),
	    strlen("error unknown request ''\n") + 64);
	gd_dbuf_free(&cl->out);
	free(cl);
}

int main(void)
{
	gd_log_init("test_ctl");
	RUN(test_reply_cap);
	RUN(test_identity_long);
	RUN(test_dispatch);
	RUN(test_stale);
	return UNIT_DONE();
}
