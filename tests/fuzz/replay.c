/* Replays the committed corpus of one fuzz target (tests/fuzz/corpus/T
 * and the crashes fixed since, tests/fuzz/regress/T) through the target,
 * built with the ordinary compiler so that make check (and make check
 * SANITIZE=1) runs it: each file in a child process of its own, so a
 * crash is one failure that names the file. Extra arguments are files or
 * directories to replay instead. Ends with "N passed, N failed". */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>

static int passed, failed;

static int run_one(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	FILE *f = fopen(path, "rb");

	if (f == NULL) {
		fprintf(stderr, "replay: cannot open %s: %s\n", path,
		    strerror(errno));
		return 1;
	}
	for (;;) {
		size_t n;
		if (len == cap) {
			uint8_t *nb;
			cap = cap ? cap * 2 : 4096;
			if ((nb = realloc(buf, cap)) == NULL) {
				fprintf(stderr, "replay: out of memory for %s\n",
				    path);
				return 1;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		return 1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static void replay_file(const char *path)
{
	pid_t pid;
	int st;

	fflush(stdout);
	if ((pid = fork()) < 0) {
		fprintf(stderr, "replay: cannot fork: %s\n", strerror(errno));
		failed++;
		return;
	}
	if (pid == 0)
		exit(run_one(path));
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		passed++;
		printf("ok   %s\n", path);
	} else {
		failed++;
		if (WIFSIGNALED(st))
			printf("FAIL %s (signal %d)\n", path, WTERMSIG(st));
		else
			printf("FAIL %s (exit %d)\n", path, WEXITSTATUS(st));
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_path(const char *path, int must_exist)
{
	struct stat sb;
	DIR *d;
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0, i;

	if (stat(path, &sb) != 0) {
		if (must_exist) {
			printf("FAIL %s: %s\n", path, strerror(errno));
			failed++;
		}
		return;
	}
	if (!S_ISDIR(sb.st_mode)) {
		replay_file(path);
		return;
	}
	if ((d = opendir(path)) == NULL) {
		printf("FAIL %s: %s\n", path, strerror(errno));
		failed++;
		return;
	}
	while ((e = readdir(d)) != NULL) {
		char *p;
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn;
			cap = cap ? cap * 2 : 64;
			if ((nn = realloc(names, cap * sizeof(*nn))) == NULL)
				abort();
			names = nn;
		}
		if ((p = malloc(strlen(path) + strlen(e->d_name) + 2)) == NULL)
			abort();
		sprintf(p, "%s/%s", path, e->d_name);
		names[n++] = p;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_name);
	for (i = 0; i < n; i++) {
		replay_file(names[i]);
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	int i;

	if (argc > 1) {
		for (i = 1; i < argc; i++)
			replay_path(argv[i], 1);
	} else {
		replay_path(FUZZ_TOP "/tests/fuzz/corpus/" FUZZ_TARGET, 1);
		replay_path(FUZZ_TOP "/tests/fuzz/regress/" FUZZ_TARGET, 0);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
