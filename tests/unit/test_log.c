/* Unit tests of lib/log.c: what each kind of message looks like on fd 2
 * at each verbosity. A timestamp starts a line at -v and -vv only, traces
 * of level 0 included (gdpub(1): "only -v adds them"). */
#include "log.h"
#include "unit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out[4096];

/* run f with fd 2 going to a temporary file; its text in out */
static const char *capture(void (*f)(void))
{
	char path[] = "/tmp/gdkit-test-log.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;

	if (fd < 0 || saved < 0) {
		perror("capture");
		exit(2);
	}
	unlink(path);
	dup2(fd, 2);
	f();
	dup2(saved, 2);
	close(saved);
	lseek(fd, 0, SEEK_SET);
	n = read(fd, out, sizeof(out) - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	return out;
}

/* "HH:MM:SS.uuuuuu " */
static int stamped(const char *s)
{
	static const char pat[] = "dd:dd:dd.dddddd ";
	size_t i;
	for (i = 0; pat[i]; i++) {
		if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
			return 0;
	}
	return 1;
}

static void trace0(void) { gd_trace(0, "SIGINT: no more input"); }
static void trace1(void) { gd_trace(1, "connected"); }
static void err(void) { gd_err("cannot read x: %s", "why"); }
static void warn(void) { gd_warn("odd"); }

TEST(default_level_no_timestamps)
{
	gd_log_level(0);
	ASSERT_STR(capture(trace0), "test_log: SIGINT: no more input\n");
	ASSERT_STR(capture(trace1), "");
	ASSERT_STR(capture(err), "test_log: cannot read x: why\n");
	ASSERT_STR(capture(warn), "test_log: warning: odd\n");
}

TEST(verbose_every_line_stamped)
{
	gd_log_level(1);
	capture(trace0);
	ASSERT(stamped(out));
	ASSERT_STR(out + 16, "test_log: SIGINT: no more input\n");
	capture(trace1);
	ASSERT(stamped(out));
	ASSERT_STR(out + 16, "test_log: connected\n");
	capture(err);
	ASSERT(stamped(out));
	ASSERT_STR(out + 16, "test_log: cannot read x: why\n");
	gd_log_level(0);
}

TEST(quiet_errors_only)
{
	gd_log_level(-1);
	ASSERT_STR(capture(trace0), "");
	ASSERT_STR(capture(warn), "");
	ASSERT_STR(capture(err), "test_log: cannot read x: why\n");
	gd_log_level(0);
}

/* $JOURNAL_STREAM is DEVICE:INODE of stderr's stream, exactly */
TEST(journal_stream_names_the_fd)
{
	char path[] = "/tmp/gdkit-test-log.XXXXXX", env[64];
	int fd = mkstemp(path);
	struct stat st;

	ASSERT(fd >= 0);
	unlink(path);
	ASSERT_EQ(fstat(fd, &st), 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino);
	ASSERT_EQ(gd_log_journald(env, fd), 1);
	ASSERT_EQ(gd_log_journald(NULL, fd), 0);
	ASSERT_EQ(gd_log_journald("", fd), 0);
	ASSERT_EQ(gd_log_journald("1:2", fd), 0);
	ASSERT_EQ(gd_log_journald(env, -1), 0);	/* no such fd */
	snprintf(env, sizeof(env), "%llu:%llux", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino);
	ASSERT_EQ(gd_log_journald(env, fd), 0);	/* trailing junk */
	close(fd);
}

int main(int argc, char **argv)
{
	(void)argc;
	gd_log_init(argv[0]);
	RUN(default_level_no_timestamps);
	RUN(verbose_every_line_stamped);
	RUN(quiet_errors_only);
	RUN(journal_stream_names_the_fd);
	return UNIT_DONE();
}
