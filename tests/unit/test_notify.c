/* Unit tests of lib/notify.c: $NOTIFY_SOCKET parsed into an address (a
 * path, an abstract name, nothing else), the watchdog's period taken only
 * for this process, pings at half the period, STATUS= every 5 s, and the
 * datagrams themselves through a socket pair of our own. */
#include "notify.h"
#include "unit.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define S 1000000000ull

TEST(addresses)
{
	struct sockaddr_un a;
	socklen_t len;
	char big[200];

	ASSERT_EQ(gd_notify_addr("/run/systemd/notify", &a, &len), 0);
	ASSERT_STR(a.sun_path, "/run/systemd/notify");
	ASSERT_EQ(len, offsetof(struct sockaddr_un, sun_path) + 20);
	ASSERT_EQ(gd_notify_addr("@abc", &a, &len), 0);
	ASSERT_EQ(a.sun_path[0], '\0');
	ASSERT(memcmp(a.sun_path + 1, "abc", 3) == 0);
	ASSERT_EQ(len, offsetof(struct sockaddr_un, sun_path) + 4);
	ASSERT_EQ(gd_notify_addr("", &a, &len), -1);
	ASSERT_EQ(gd_notify_addr(NULL, &a, &len), -1);
	ASSERT_EQ(gd_notify_addr("relative", &a, &len), -1);
	memset(big, 'x', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	ASSERT_EQ(gd_notify_addr(big, &a, &len), -1);
}

TEST(open_and_watchdog)
{
	struct gd_notify n;
	char why[256];

	ASSERT_EQ(gd_notify_open(&n, NULL, "1000", NULL, 7, why, sizeof(why)), 0);
	ASSERT_EQ(n.fd, -1);		/* unset: off */
	gd_notify_send(&n, "READY=1");	/* nothing, no crash */
	ASSERT_EQ(gd_notify_status_due(&n, 1), 0);
	ASSERT_EQ(gd_notify_open(&n, "x", NULL, NULL, 7, why, sizeof(why)), -1);
	ASSERT(strstr(why, "NOTIFY_SOCKET='x'") != NULL);
	ASSERT_EQ(gd_notify_open(&n, "/nonexistent/notify", "2000000", NULL, 7,
	    why, sizeof(why)), 0);
	ASSERT(n.fd >= 0);
	ASSERT_U64(n.wd_ns, 2 * S);
	gd_notify_close(&n);
	/* another process's watchdog is not ours */
	ASSERT_EQ(gd_notify_open(&n, "/nonexistent/notify", "2000000", "8", 7,
	    why, sizeof(why)), 0);
	ASSERT_U64(n.wd_ns, 0);
	gd_notify_close(&n);
	ASSERT_EQ(gd_notify_open(&n, "/nonexistent/notify", "2000000", "7", 7,
	    why, sizeof(why)), 0);
	ASSERT_U64(n.wd_ns, 2 * S);
	gd_notify_close(&n);
	ASSERT_EQ(gd_notify_open(&n, "/nonexistent/notify", "2s", NULL, 7,
	    why, sizeof(why)), 0);
	ASSERT_U64(n.wd_ns, 0);	/* not a number of microseconds */
	gd_notify_close(&n);
	ASSERT_EQ(n.fd, -1);
}

TEST(datagrams)
{
	struct gd_notify n;
	struct sockaddr_un a;
	socklen_t len;
	char path[64], buf[64], why[256];
	int rx;
	ssize_t r;

	snprintf(path, sizeof(path), "/tmp/gdkit-test-notify.%ld", (long)getpid());
	unlink(path);
	ASSERT_EQ(gd_notify_addr(path, &a, &len), 0);
	rx = socket(AF_UNIX, SOCK_DGRAM, 0);
	ASSERT(rx >= 0);
	ASSERT_EQ(bind(rx, (struct sockaddr *)&a, len), 0);
	ASSERT_EQ(gd_notify_open(&n, path, "1000000", NULL, 7, why,
	    sizeof(why)), 0);
	gd_notify_send(&n, "READY=1");
	r = recv(rx, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	ASSERT_EQ(r, 7);
	buf[r > 0 ? r : 0] = '\0';
	ASSERT_STR(buf, "READY=1");
	/* the watchdog at half its 1 s period, from the first tick on */
	gd_notify_tick(&n, 10 * S);
	ASSERT_EQ(recv(rx, buf, sizeof(buf), MSG_DONTWAIT), 10);
	gd_notify_tick(&n, 10 * S + S / 4);
	ASSERT_EQ(recv(rx, buf, sizeof(buf), MSG_DONTWAIT), -1);
	gd_notify_tick(&n, 10 * S + S / 2);
	ASSERT_EQ(recv(rx, buf, sizeof(buf), MSG_DONTWAIT), 10);
	/* STATUS= at once, then every 5 s */
	ASSERT_EQ(gd_notify_status_due(&n, 3 * S), 1);
	ASSERT_EQ(gd_notify_status_due(&n, 7 * S), 0);
	ASSERT_EQ(gd_notify_status_due(&n, 8 * S), 1);
	/* the receiver gone: told, not waited for, no error */
	close(rx);
	unlink(path);
	gd_notify_send(&n, "STOPPING=1");
	gd_notify_close(&n);
}

int main(void)
{
	RUN(addresses);
	RUN(open_and_watchdog);
	RUN(datagrams);
	return UNIT_DONE();
}
