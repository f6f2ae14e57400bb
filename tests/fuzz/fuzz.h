/* Shared by the libFuzzer targets (tests/fuzz/fuzz_*.c) and their replay
 * driver (replay.c): each target defines LLVMFuzzerTestOneInput, and may
 * use a scratch file of its own process for the readers that take a
 * path (config, journal, state, decode). */
#ifndef GD_FUZZ_H
#define GD_FUZZ_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A directory of this process's own, removed at exit. */
static char fuzz_dir[64];

static inline void fuzz_cleanup(void)
{
	char cmd[96];
	if (fuzz_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fuzz_dir);
		if (system(cmd) != 0)
			fuzz_dir[0] = '\0';
	}
}

/* Once per process: a program name for messages, quiet warnings, and
 * the scratch directory. */
static inline void fuzz_once(void)
{
	static int done;
	const char *t;

	if (done)
		return;
	done = 1;
	gd_log_init("gdfuzz");
	gd_log_level(-1);
	t = getenv("TMPDIR");
	snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/gdfuzz.XXXXXX",
	    t && *t && strlen(t) < 40 ? t : "/tmp");
	if (mkdtemp(fuzz_dir) == NULL) {
		perror("gdfuzz: cannot create a scratch directory");
		abort();
	}
	atexit(fuzz_cleanup);
}

/* Send standard output to /dev/null (the readers that print), so the
 * fuzzer's -close_fd_mask and a replay's report do not see it. */
static inline void fuzz_quiet_stdout(void)
{
	static int done;
	int fd;

	if (done)
		return;
	done = 1;
	fflush(stdout);
	if ((fd = open("/dev/null", O_WRONLY)) < 0 || dup2(fd, 1) < 0) {
		perror("gdfuzz: cannot open /dev/null");
		abort();
	}
	close(fd);
}

/* The path of a scratch file named name, holding data (or absent when
 * data is NULL). */
static inline const char *fuzz_file(const char *name, const uint8_t *data,
    size_t size)
{
	static char path[128];
	int fd;

	fuzz_once();
	snprintf(path, sizeof(path), "%s/%s", fuzz_dir, name);
	unlink(path);
	if (data == NULL)
		return path;
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0) {
		perror("gdfuzz: cannot create a scratch file");
		abort();
	}
	while (size > 0) {
		ssize_t n = write(fd, data, size);
		if (n <= 0) {
			perror("gdfuzz: cannot write a scratch file");
			abort();
		}
		data += n;
		size -= (size_t)n;
	}
	close(fd);
	return path;
}

#endif
