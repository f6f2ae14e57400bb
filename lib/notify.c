/* sd_notify's datagrams to the service manager (see notify.h). */
#include "notify.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int gd_notify_addr(const char *s, struct sockaddr_un *a, socklen_t *len)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n >= sizeof(a->sun_path) || (s[0] != '/' && s[0] != '@'))
		return -1;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path, s, n);
	if (s[0] == '@')
		a->sun_path[0] = '\0';	/* abstract: no terminating NUL */
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
	    (s[0] == '/'));
	return 0;
}

int gd_notify_open(struct gd_notify *n, const char *sock, const char *wd_usec,
    const char *wd_pid, long pid, char *why, size_t whysz)
{
	uint64_t us = 0, wp = 0;

	memset(n, 0, sizeof(*n));
	n->fd = -1;
	if (sock == NULL || *sock == '\0')
		return 0;
	if (gd_notify_addr(sock, &n->addr, &n->len) != 0) {
		snprintf(why, whysz, "NOTIFY_SOCKET='%.200s' is not an absolute "
		    "path or an abstract name ('@...') of at most %zu bytes",
		    sock, sizeof(n->addr.sun_path) - 1);
		return -1;
	}
	/* a watchdog for another process (WATCHDOG_PID) is not ours */
	if (wd_usec != NULL && gd_parse_u64(wd_usec, &us) == 0 && us > 0 &&
	    (wd_pid == NULL || (gd_parse_u64(wd_pid, &wp) == 0 &&
	    wp == (uint64_t)pid)) && us < UINT64_MAX / 1000)
		n->wd_ns = us * 1000;
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (n->fd < 0) {
		snprintf(why, whysz, "cannot open a socket for NOTIFY_SOCKET: "
		    "%s", strerror(errno));
		return -1;
	}
	return 0;
}

void gd_notify_send(struct gd_notify *n, const char *msg)
{
	if (n->fd < 0)
		return;
	/* told, not waited for: a full or absent receiver loses the news */
	(void)sendto(n->fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT,
	    (const struct sockaddr *)&n->addr, n->len);
}

void gd_notify_tick(struct gd_notify *n, uint64_t now)
{
	if (n->fd < 0 || n->wd_ns == 0 || now - n->wd_last < n->wd_ns / 2)
		return;
	n->wd_last = now;
	gd_notify_send(n, "WATCHDOG=1");
}

int gd_notify_status_due(struct gd_notify *n, uint64_t now)
{
	if (n->fd < 0 || (n->st_last != 0 &&
	    now - n->st_last < GD_NOTIFY_STATUS_NS))
		return 0;
	n->st_last = now ? now : 1;
	return 1;
}

void gd_notify_close(struct gd_notify *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
}
