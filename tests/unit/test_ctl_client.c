/* Unit tests of the control client (lib/ctl_client.c) and what it shares
 * with the server (lib/ctlproto.c): the escaping of a peer's words, the
 * bounded wait for a reply line, the hello against peers that say
 * nothing, garbage, an error or another version (each a forked child on
 * a real Unix socket), and the runtime directory another user created
 * first. Waits are bounded by the timeouts under test, never sleeps. */
#include "ctl_client.h"
#include "conf.h"
#include "log.h"
#include "unit.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/gdkit-test-ctlc.XXXXXX";

TEST(test_escape)
{
	char out[64];

	ASSERT_EQ(gd_ctl_escape(out, sizeof(out), "plain", 5, 0), 5);
	ASSERT_STR(out, "plain");
	gd_ctl_escape(out, sizeof(out), "a\x1b[2J\x07" "b", 7, 0);
	ASSERT_STR(out, "a\\x1b[2J\\x07b");
	gd_ctl_escape(out, sizeof(out), "back\\slash\x7f", 11, 0);
	ASSERT_STR(out, "back\\\\slash\\x7f");
	/* a NUL inside is a byte like the others */
	gd_ctl_escape(out, sizeof(out), "a\0b", 3, 0);
	ASSERT_STR(out, "a\\x00b");
	/* UTF-8: escaped for a message, kept for a name in a table */
	gd_ctl_escape(out, sizeof(out), "caf\xc3\xa9", 5, 0);
	ASSERT_STR(out, "caf\\xc3\\xa9");
	gd_ctl_escape(out, sizeof(out), "caf\xc3\xa9\x1b", 6, 1);
	ASSERT_STR(out, "caf\xc3\xa9\\x1b");
	/* cut at a whole escape, never inside one */
	ASSERT_EQ(gd_ctl_escape(out, 6, "ab\x1b", 3, 0), 2);
	ASSERT_STR(out, "ab");
	ASSERT_EQ(gd_ctl_escape(out, 7, "ab\x1b", 3, 0), 6);
	ASSERT_STR(out, "ab\\x1b");
	ASSERT_EQ(gd_ctl_escape(out, 1, "ab", 2, 0), 0);
	ASSERT_STR(out, "");
}

TEST(test_lreader_timeout)
{
	struct gd_lreader *rd = calloc(1, sizeof(*rd));
	char *line;
	size_t len;
	int sv[2];

	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	rd->fd = sv[0];
	rd->timeout = 0.05;
	errno = 0;
	ASSERT_EQ(gd_lreader_line(rd, &line, &len), -1);
	ASSERT_EQ(errno, ETIMEDOUT);
	/* what comes within the time is read as ever */
	ASSERT_EQ(write(sv[1], "one\ntw", 6), 6);
	ASSERT_EQ(gd_lreader_line(rd, &line, &len), 1);
	ASSERT_STR(line, "one");
	ASSERT_EQ(gd_lreader_line(rd, &line, &len), -1);
	ASSERT_EQ(errno, ETIMEDOUT);
	ASSERT_EQ(write(sv[1], "o\n", 2), 2);
	ASSERT_EQ(gd_lreader_line(rd, &line, &len), 1);
	ASSERT_STR(line, "two");
	close(sv[1]);
	ASSERT_EQ(gd_lreader_line(rd, &line, &len), 0);
	close(sv[0]);
	free(rd);
}

/* A listening socket at dir/name; its child accepts one connection,
 * reads the hello and answers with what, then waits to be killed (NULL:
 * answers nothing; "": hangs up). The child's pid in *pid. */
static int peer(const char *name, const char *what, char *path, pid_t *pid)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(path, 108, "%s/%s", dir, name);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(fd, 4) != 0)
		return -1;
	if ((*pid = fork()) == 0) {
		char buf[64];
		int c = accept(fd, NULL, NULL);
		if (c >= 0 && read(c, buf, sizeof(buf)) > 0 && what != NULL &&
		    write(c, what, strlen(what)) == (ssize_t)strlen(what) &&
		    *what == '\0')
			_exit(0);	/* "": hangs up */
		pause();
		_exit(0);
	}
	close(fd);
	return *pid > 0 ? 0 : -1;
}

static int open_peer(const char *name, const char *what,
    struct gd_ctl_peer *p)
{
	struct gd_lreader *rd = calloc(1, sizeof(*rd));
	char path[108];
	pid_t pid;
	int fail = -1;

	if (rd == NULL || peer(name, what, path, &pid) != 0) {
		free(rd);
		return -1;
	}
	rd->timeout = 0.2;
	fail = gd_ctl_open(path, 0, rd, p);
	if (fail == GD_CTL_OK)
		close(rd->fd);
	else if (rd->fd != -1)
		fail = -2;	/* a failure leaves no fd behind */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
	free(rd);
	return fail;
}

TEST(test_hello)
{
	struct gd_ctl_peer p;
	struct gd_lreader rd;

	ASSERT_EQ(open_peer("ok", "hello gdsub 2\n", &p), GD_CTL_OK);
	ASSERT_STR(p.prog, "gdsub");
	ASSERT_EQ(p.ver, 2);
	ASSERT_EQ(p.uid, geteuid());
	ASSERT(p.pid > 0);
	/* says nothing: a bounded wait, then ETIMEDOUT */
	ASSERT_EQ(open_peer("silent", NULL, &p), GD_CTL_NOANSWER);
	ASSERT_EQ(p.err, ETIMEDOUT);
	/* hangs up */
	ASSERT_EQ(open_peer("closed", "", &p), GD_CTL_NOANSWER);
	ASSERT_EQ(p.err, 0);
	ASSERT_EQ(open_peer("old", "hello gdpub 1\n", &p), GD_CTL_VERSION);
	ASSERT_STR(p.prog, "gdpub");
	ASSERT_EQ(p.ver, 1);
	ASSERT_EQ(open_peer("v3", "hello gdsub 3\n", &p), GD_CTL_OK);
	ASSERT_EQ(p.ver, 3);
	ASSERT_EQ(open_peer("new", "hello gdsub 4\n", &p), GD_CTL_VERSION);
	ASSERT_EQ(p.ver, 4);
	/* a server of version 2 does not know "hello 3": the bare hello */
	ASSERT_EQ(open_peer("v2", "error unknown request 'hello 3'\n"
	    "hello gdsub 2\n", &p), GD_CTL_OK);
	ASSERT_STR(p.prog, "gdsub");
	ASSERT_EQ(p.ver, 2);
	/* garbage, escaped for the message; more than "hello PROG VER" too */
	ASSERT_EQ(open_peer("junk", "hello \x1b[2J gdpub 2\n", &p),
	    GD_CTL_GARBLED);
	ASSERT_STR(p.answer, "hello \\x1b[2J gdpub 2");
	ASSERT_EQ(open_peer("more", "hello gdpub 2 and more\n", &p),
	    GD_CTL_GARBLED);
	ASSERT_EQ(open_peer("refuse", "error go\x07 away\n", &p),
	    GD_CTL_REFUSED);
	ASSERT_STR(p.answer, "go\\x07 away");
	/* nothing there */
	memset(&rd, 0, sizeof(rd));
	ASSERT_EQ(gd_ctl_open("/nonexistent/gdkit.sock", 0, &rd, &p),
	    GD_CTL_NOCONN);
	ASSERT_EQ(p.err, ENOENT);
	ASSERT_EQ(rd.fd, -1);
}

/* The runtime directory: one of ours with mode 0700 is used; one that
 * another user created first (root gives it to uid 65534 here) is left
 * for $HOME/.gdkit/HOST, the same path every time. */
TEST(test_runtime_dir)
{
	char run[64], home[64], sq[128], want[256];
	char host[64], path[108];
	struct gd_conf c;
	struct stat st;

	snprintf(run, sizeof(run), "%s/run", dir);
	snprintf(home, sizeof(home), "%s/home", dir);
	snprintf(sq, sizeof(sq), "%s/gdkit", run);
	ASSERT_EQ(mkdir(run, 0700), 0);
	ASSERT_EQ(mkdir(home, 0700), 0);
	setenv("XDG_RUNTIME_DIR", run, 1);
	setenv("HOME", home, 1);
	gd_conf_init(&c, GD_FAM_PUB);
	c.port = 7001;
	ASSERT_EQ(gd_ctl_path_pub(&c, path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/pub-7001.sock", sq);
	ASSERT_STR(path, want);
	ASSERT_EQ(stat(sq, &st), 0);
	ASSERT_EQ(st.st_mode & 0777, 0700);
	if (geteuid() == 0) {
		ASSERT_EQ(chown(sq, 65534, 65534), 0);
		ASSERT_EQ(gd_ctl_path_pub(&c, path, sizeof(path)), 0);
		ASSERT_EQ(gethostname(host, sizeof(host)), 0);
		host[sizeof(host) - 1] = '\0';
		snprintf(want, sizeof(want), "%s/.gdkit/%s/pub-7001.sock", home,
		    host);
		ASSERT_STR(path, want);
		snprintf(want, sizeof(want), "%s/.gdkit/%s", home, host);
		ASSERT_EQ(stat(want, &st), 0);
		ASSERT_EQ(st.st_mode & 0777, 0700);
		/* again: the same place */
		ASSERT_EQ(gd_ctl_path_pub(&c, path, sizeof(path)), 0);
		ASSERT(strncmp(path, want, strlen(want)) == 0);
		rmdir(want);
		snprintf(want, sizeof(want), "%s/.gdkit", home);
		rmdir(want);
	}
	gd_conf_free(&c);
	rmdir(sq);
	rmdir(run);
	rmdir(home);
	unsetenv("XDG_RUNTIME_DIR");
}

int main(void)
{
	gd_log_init("test_ctl_client");
	gd_log_level(-1);	/* the fallback's warning */
	if (mkdtemp(dir) == NULL)
		return 1;
	RUN(test_escape);
	RUN(test_lreader_timeout);
	RUN(test_hello);
	RUN(test_runtime_dir);
	rmdir(dir);
	return UNIT_DONE();
}
