/* Blocking file writes the programs share: write everything, and sync a
 * file's directory so that a create or rename survives a crash; who holds
 * the lock on a file. */
#ifndef GD_FILEIO_H
#define GD_FILEIO_H

#include <stddef.h>

/* Write all of buf (EINTR retried); 0, or -1 with errno. */
int gd_write_all(int fd, const void *buf, size_t len);
/* fsync the directory that holds path ("." for a bare name); 0, or -1
 * with errno. */
int gd_sync_dir(const char *path);
/* The pid of the process that holds a flock() on the open file fd, from
 * /proc/locks (Linux); 0 when it cannot be told. */
long gd_flock_holder(int fd);
/* A file of lines that a kill may have cut mid-line: truncate what
 * follows its last newline, looked for in its last window bytes (a
 * longer tail is left alone). 0 with *cut the bytes removed, or -1 with
 * errno. */
int gd_cut_partial_line(int fd, size_t window, size_t *cut);

#endif
