/* Socket activation: the file descriptors a service manager passes to
 * gdpub (systemd's sd_listen_fds protocol: $LISTEN_PID names the process
 * they are for, $LISTEN_FDS how many, from fd 3 on, $LISTEN_FDNAMES their
 * names, ':'-separated). They are told apart by what they are, not by
 * their names, so a socket unit needs no FileDescriptorName=: a listening
 * TCP socket (ListenStream=PORT) is where gdpub serves its subscribers, a
 * FIFO (ListenFIFO=PATH) is its input. Anything else, or two of a kind,
 * is refused with what it is and what gdpub takes; the names only make
 * the messages clearer. The few lines the protocol needs are written
 * here, as notify.c does for the notifications, rather than linking
 * libsystemd for them. */
#ifndef GD_ACTIVATE_H
#define GD_ACTIVATE_H

#include <stddef.h>

#define GD_ACT_FIRST_FD 3	/* SD_LISTEN_FDS_START */
#define GD_ACT_MAX_FDS 64	/* more than any unit of gdpub's passes */
#define GD_ACT_NAME_MAX 255	/* systemd's bound on FileDescriptorName= */

struct gd_act {
	int n;			/* fds passed to this process, 0: none */
	int listen_fd;		/* the listening TCP socket, or -1 */
	int fifo_fd;		/* the FIFO to read, or -1 */
	int port;		/* listen_fd's port */
	char addr[64];		/* listen_fd's address, numeric ("::") */
	char listen_what[GD_ACT_NAME_MAX + 32];	/* "fd 3 (NAME)" */
	char fifo_what[GD_ACT_NAME_MAX + 32];
};

/* From the variables' values (NULL when unset), this process's pid and
 * the first fd (GD_ACT_FIRST_FD; tests pass others): 0 when nothing is
 * passed to this process (a->n == 0; note says why when LISTEN_FDS is
 * set for another process, else is ""), or when what was passed is taken
 * (each fd made close-on-exec); -1 with why when a variable is malformed
 * or a passed fd is not one gdpub can use. */
int gd_act_parse(struct gd_act *a, const char *pid, const char *fds,
    const char *names, long self, int first, char *why, size_t whysz,
    char *note, size_t notesz);

/* gd_act_parse of this process's environment, which it then clears of
 * the three variables (nothing gdpub starts is meant to take them): 0,
 * or after one message GD_EX_CONFIG (the service manager's unit passes
 * what gdpub cannot use). */
int gd_act_take(struct gd_act *a);

#endif
