/* Control socket, client side (gdack, gdinspect): refuse another user's
 * socket or program. The connect with a bounded wait and the reader of
 * reply lines are ctlproto.c, shared with the server (ctl.c). */
#include "ctl_client.h"
#include "log.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* "nobody (uid 65534)" */
static const char *uid_name(uid_t uid, char *buf, size_t sz)
{
	struct passwd *pw = getpwuid(uid);
	if (pw != NULL && pw->pw_name != NULL)
		snprintf(buf, sz, "%.32s (uid %u)", pw->pw_name, (unsigned)uid);
	else
		snprintf(buf, sz, "uid %u", (unsigned)uid);
	return buf;
}

int gd_ctl_trust(const char *path, int fd)
{
	char dir[PATH_MAX], a[64], b[64];
	const char *d;
	struct stat st;
	uid_t me = geteuid(), uid;
	long pid;

	if (lstat(path, &st) == 0) {
		if (st.st_uid != me) {
			gd_err("refusing control socket %s: it belongs to %s and you "
			    "are %s", path, uid_name(st.st_uid, a, sizeof(a)),
			    uid_name(me, b, sizeof(b)));
			return GD_EX_UNAVAILABLE;
		}
		snprintf(dir, sizeof(dir), "%s", path);
		d = dirname(dir);	/* "." for a bare name, not dir */
		if (stat(d, &st) == 0 && st.st_uid != me && st.st_uid != 0) {
			gd_err("refusing control socket %s: its directory %s belongs "
			    "to %s, neither to you, %s, nor to root", path, d,
			    uid_name(st.st_uid, a, sizeof(a)), uid_name(me, b, sizeof(b)));
			return GD_EX_UNAVAILABLE;
		}
	}
	if (fd >= 0) {
		if (gd_ctl_peer_uid(fd, &uid, &pid) != 0) {
			gd_err("refusing control socket %s: cannot tell who serves it: %s",
			    path, strerror(errno));
			return GD_EX_UNAVAILABLE;
		}
		if (uid != me) {
			gd_err("refusing control socket %s: the program serving it "
			    "runs as %s and you are %s", path,
			    uid_name(uid, a, sizeof(a)), uid_name(me, b, sizeof(b)));
			return GD_EX_UNAVAILABLE;
		}
	}
	return 0;
}
