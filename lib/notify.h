/* The service manager's notification protocol (systemd's sd_notify): one
 * datagram of NAME=VALUE lines to the unix socket $NOTIFY_SOCKET names
 * (a path, or '@' for the abstract namespace). READY=1 when the program is
 * up, STATUS= a one-line summary, WATCHDOG=1 while its loop runs (every
 * half of $WATCHDOG_USEC), STOPPING=1 when it drains. Nothing is sent
 * when $NOTIFY_SOCKET is unset. A lost datagram is no error: the service
 * manager is told, never waited for. The few lines the protocol needs are
 * written here rather than linking libsystemd for them. */
#ifndef GD_NOTIFY_H
#define GD_NOTIFY_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

struct gd_notify {
	int fd;			/* -1: off */
	struct sockaddr_un addr;
	socklen_t len;
	uint64_t wd_ns;		/* watchdog period asked for, 0: none */
	uint64_t wd_last;	/* when WATCHDOG=1 was last sent */
	uint64_t st_last;	/* when STATUS= was last sent */
};

#define GD_NOTIFY_STATUS_NS 5000000000ull	/* STATUS= every 5 s */

/* From the variables' values (NULL when unset): 0, on or off; -1 with
 * why when $NOTIFY_SOCKET is set but unusable. pid: this process, for
 * $WATCHDOG_PID. */
int gd_notify_open(struct gd_notify *n, const char *sock, const char *wd_usec,
    const char *wd_pid, long pid, char *why, size_t whysz);
/* Parse $NOTIFY_SOCKET into an address: 0, or -1 (empty, relative, too
 * long). */
int gd_notify_addr(const char *s, struct sockaddr_un *a, socklen_t *len);
/* Send msg (NAME=VALUE lines); nothing when off. */
void gd_notify_send(struct gd_notify *n, const char *msg);
/* From the loop's periodic timer: WATCHDOG=1 when half the period has
 * passed since the last. */
void gd_notify_tick(struct gd_notify *n, uint64_t now);
/* STATUS= due (every GD_NOTIFY_STATUS_NS, the first at once)? */
int gd_notify_status_due(struct gd_notify *n, uint64_t now);
void gd_notify_close(struct gd_notify *n);

#endif
