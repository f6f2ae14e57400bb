/* Blocking file writes the programs share (see fileio.h). */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int gd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int gd_sync_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, rc;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

/* One line of /proc/locks: "N: [->] FLOCK ADVISORY WRITE PID MAJ:MIN:INO
 * START END". A flock() holder, not a waiter (->): its pid, device and
 * inode; 0 when the line is something else. */
static int lock_line(char *line, long *pid, unsigned long *maj,
    unsigned long *min, unsigned long long *ino)
{
	char *tok[8], *save = NULL, *w, *end;
	int n = 0;

	for (w = strtok_r(line, " \t\n", &save); w != NULL && n < 8;
	    w = strtok_r(NULL, " \t\n", &save))
		tok[n++] = w;
	if (n < 6 || strcmp(tok[1], "FLOCK") != 0 || strcmp(tok[3], "WRITE") != 0)
		return 0;
	errno = 0;
	*pid = strtol(tok[4], &end, 10);
	if (errno || *end || *pid <= 0)
		return 0;
	*maj = strtoul(tok[5], &end, 16);
	if (errno || *end != ':')
		return 0;
	*min = strtoul(end + 1, &end, 16);
	if (errno || *end != ':')
		return 0;
	*ino = strtoull(end + 1, &end, 10);
	return !errno && *end == '\0';
}

long gd_flock_holder(int fd)
{
	struct stat st;
	char line[256];
	FILE *f;
	long pid, exact = 0, by_ino = 0;
	unsigned long maj, min;
	unsigned long long ino;
	unsigned n_ino = 0;

	if (fstat(fd, &st) != 0 || (f = fopen("/proc/locks", "re")) == NULL)
		return 0;
	while (exact == 0 && fgets(line, sizeof(line), f) != NULL) {
		if (!lock_line(line, &pid, &maj, &min, &ino) ||
		    ino != (unsigned long long)st.st_ino)
			continue;
		if (maj == major(st.st_dev) && min == minor(st.st_dev))
			exact = pid;
		else if (n_ino++ == 0)
			by_ino = pid;
	}
	fclose(f);
	/* some file systems (btrfs subvolumes) show another device there:
	 * the inode alone, when only one holder has it */
	return exact ? exact : n_ino == 1 ? by_ino : 0;
}

int gd_cut_partial_line(int fd, size_t window, size_t *cut)
{
	char buf[16384];
	struct stat sb;
	size_t want;
	off_t from;
	ssize_t n;

	*cut = 0;
	if (fstat(fd, &sb) != 0)
		return -1;
	if (!S_ISREG(sb.st_mode) || sb.st_size == 0)
		return 0;
	if (window > sizeof(buf))
		window = sizeof(buf);
	want = (off_t)window < sb.st_size ? window : (size_t)sb.st_size;
	from = sb.st_size - (off_t)want;
	do
		n = pread(fd, buf, want, from);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if (n > 0 && buf[n - 1] == '\n')
		return 0;
	while (n > 0 && buf[n - 1] != '\n')
		n--;
	if (n == 0 && from > 0)
		return 0;	/* a line longer than window: not ours to cut */
	if (ftruncate(fd, from + n) != 0)
		return -1;
	*cut = (size_t)(sb.st_size - (from + n));
	return 0;
}
