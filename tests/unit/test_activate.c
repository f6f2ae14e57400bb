/* Unit tests of lib/activate.c: the fds a service manager passes, told
 * apart by what they are (a listening TCP socket, a FIFO), the variables
 * checked (for this pid, a count, names that match it), and each kind of
 * fd gdpub cannot use refused with what it is. The fds are placed from
 * FIRST on, where the protocol has them from 3. */
#define _GNU_SOURCE	/* pipe2 */
#include "activate.h"
#include "unit.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIRST 200
#define SELF 4242L

static char why[1024], note[512];

/* put fd at FIRST + i */
static void place(int fd, int i)
{
	if (fd != FIRST + i) {
		dup2(fd, FIRST + i);
		close(fd);
	}
}

static void clear(int n)
{
	for (int i = 0; i < n; i++)
		close(FIRST + i);
}

/* a TCP socket of 127.0.0.1 on a port the kernel chose: listening, or
 * connected to one (l: the listener it connected to) */
static int tcp_listener(int *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	listen(fd, 4);
	getsockname(fd, (struct sockaddr *)&a, &len);
	*port = ntohs(a.sin_port);
	return fd;
}

static int tcp_connected(int port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	connect(fd, (struct sockaddr *)&a, sizeof(a));
	return fd;
}

static int parse(struct gd_act *a, const char *pid, const char *fds,
    const char *names)
{
	why[0] = '\0';
	return gd_act_parse(a, pid, fds, names, SELF, FIRST, why, sizeof(why),
	    note, sizeof(note));
}

TEST(nothing_passed)
{
	struct gd_act a;

	ASSERT_EQ(parse(&a, NULL, NULL, NULL), 0);
	ASSERT_EQ(a.n, 0);
	ASSERT_EQ(a.listen_fd, -1);
	ASSERT_EQ(a.fifo_fd, -1);
	ASSERT_STR(note, "");
	/* for another process (a shell that did not exec): not taken, and
	 * said, since its port held by the manager is then "in use" */
	ASSERT_EQ(parse(&a, "1", "2", NULL), 0);
	ASSERT_EQ(a.n, 0);
	ASSERT_STR(note, "LISTEN_FDS=2 is for pid 1, not this gdpub (pid 4242): "
	    "the file descriptors it counts are not taken (a shell between the "
	    "service manager and gdpub? start gdpub with exec)");
	ASSERT_EQ(parse(&a, NULL, "1", NULL), 0);
	ASSERT_STR(note, "LISTEN_FDS=1 is set without LISTEN_PID: the file "
	    "descriptors it counts are not taken");
	ASSERT_EQ(parse(&a, "4242", "0", NULL), 0);
	ASSERT_EQ(a.n, 0);
}

TEST(listener_and_fifo)
{
	struct gd_act a;
	int port, p[2];

	place(tcp_listener(&port), 0);
	ASSERT_EQ(pipe(p), 0);	/* a FIFO as fstat sees it */
	place(p[0], 1);
	ASSERT_EQ(parse(&a, "4242", "2", NULL), 0);
	ASSERT_EQ(a.n, 2);
	ASSERT_EQ(a.listen_fd, FIRST);
	ASSERT_EQ(a.fifo_fd, FIRST + 1);
	ASSERT_EQ(a.port, port);
	ASSERT_STR(a.addr, "127.0.0.1");
	ASSERT_STR(a.listen_what, "fd 200");
	ASSERT_STR(a.fifo_what, "fd 201");
	ASSERT_EQ(fcntl(FIRST, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	ASSERT_EQ(fcntl(FIRST + 1, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	/* in the other order, with names: told apart by what they are */
	ASSERT_EQ(parse(&a, "4242", "1", "in"), 0);
	ASSERT_EQ(a.listen_fd, FIRST);
	ASSERT_EQ(a.fifo_fd, -1);
	ASSERT_STR(a.listen_what, "fd 200 (in)");
	dup2(FIRST, FIRST + 2);
	dup2(FIRST + 1, FIRST);
	dup2(FIRST + 2, FIRST + 1);
	close(FIRST + 2);
	ASSERT_EQ(parse(&a, "4242", "2", "gdpub@7001.socket:port"), 0);
	ASSERT_EQ(a.fifo_fd, FIRST);
	ASSERT_EQ(a.listen_fd, FIRST + 1);
	ASSERT_STR(a.fifo_what, "fd 200 (gdpub@7001.socket)");
	ASSERT_STR(a.listen_what, "fd 201 (port)");
	/* a FIFO alone */
	ASSERT_EQ(parse(&a, "4242", "1", NULL), 0);
	ASSERT_EQ(a.listen_fd, -1);
	ASSERT_EQ(a.fifo_fd, FIRST);
	close(p[1]);
	clear(2);
}

TEST(bad_variables)
{
	struct gd_act a;
	int port;

	ASSERT_EQ(parse(&a, "4242", "x", NULL), -1);
	ASSERT_STR(why, "LISTEN_FDS='x' is not a count of file descriptors "
	    "from 0 to 64");
	ASSERT_EQ(parse(&a, "4242", "65", NULL), -1);
	ASSERT_EQ(parse(&a, "4242", "-1", NULL), -1);
	place(tcp_listener(&port), 0);
	ASSERT_EQ(parse(&a, "4242", "1", "a:b"), -1);
	ASSERT_STR(why, "LISTEN_FDNAMES names 2 file descriptors and "
	    "LISTEN_FDS says 1");
	{
		char names[300];
		memset(names, 'n', sizeof(names) - 1);
		names[sizeof(names) - 1] = '\0';
		ASSERT_EQ(parse(&a, "4242", "1", names), -1);
		ASSERT_STR(why, "LISTEN_FDNAMES has a name longer than 255 bytes");
	}
	clear(1);
	/* counted but not open */
	ASSERT_EQ(parse(&a, "4242", "1", NULL), -1);
	ASSERT(strncmp(why, "fd 200 is not open: ", 20) == 0);
}

TEST(refused_kinds)
{
	struct gd_act a;
	int port, l, p[2], sv[2];
	char path[64];

	/* two listeners */
	place(tcp_listener(&port), 0);
	place(tcp_listener(&port), 1);
	ASSERT_EQ(parse(&a, "4242", "2", NULL), -1);
	ASSERT_STR(why, "fd 201 is a second listening socket (the first is fd "
	    "200); gdpub listens on one: give the socket unit one ListenStream=");
	clear(2);
	/* two FIFOs */
	ASSERT_EQ(pipe(p), 0);
	place(p[0], 0);
	place(dup(FIRST), 1);
	ASSERT_EQ(parse(&a, "4242", "2", "a:b"), -1);
	ASSERT_STR(why, "fd 201 (b) is a second FIFO (the first is fd 200 (a)); "
	    "gdpub takes one listening TCP socket (ListenStream=PORT) and one "
	    "FIFO (ListenFIFO=PATH)");
	clear(2);
	/* the write end of a FIFO */
	place(p[1], 0);
	ASSERT_EQ(parse(&a, "4242", "1", NULL), -1);
	ASSERT_STR(why, "fd 200 is a FIFO open for writing only; gdpub reads "
	    "its input from it");
	clear(1);
	/* Accept=yes: a connected socket */
	l = tcp_listener(&port);
	place(tcp_connected(port), 0);
	ASSERT_EQ(parse(&a, "4242", "1", NULL), -1);
	ASSERT_STR(why, "fd 200 is a connected TCP socket, not a listening one "
	    "(Accept=yes passes one per connection: gdpub needs Accept=no)");
	clear(1);
	close(l);
	/* a datagram socket */
	place(socket(AF_INET, SOCK_DGRAM, 0), 0);
	ASSERT_EQ(parse(&a, "4242", "1", NULL), -1);
	ASSERT_STR(why, "fd 200 is a datagram socket (ListenDatagram=?); gdpub "
	    "takes one listening TCP socket (ListenStream=PORT) and one FIFO "
	    "(ListenFIFO=PATH)");
	clear(1);
	/* a unix socket */
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	place(sv[0], 0);
	ASSERT_EQ(parse(&a, "4242", "1", NULL), -1);
	ASSERT_STR(why, "fd 200 is a unix socket; gdpub serves its subscribers "
	    "over TCP: gdpub takes one listening TCP socket (ListenStream=PORT) "
	    "and one FIFO (ListenFIFO=PATH)");
	clear(1);
	close(sv[1]);
	/* a regular file */
	snprintf(path, sizeof(path), "/tmp/test_activate.%d", (int)getpid());
	place(open(path, O_CREAT | O_RDWR, 0600), 0);
	unlink(path);
	ASSERT_EQ(parse(&a, "4242", "1", NULL), -1);
	ASSERT_STR(why, "fd 200 is a regular file, neither a socket nor a "
	    "FIFO; gdpub takes one listening TCP socket (ListenStream=PORT) and "
	    "one FIFO (ListenFIFO=PATH)");
	clear(1);
	place(open("/dev/null", O_RDONLY), 0);
	ASSERT_EQ(parse(&a, "4242", "1", NULL), -1);
	ASSERT(strstr(why, "is a character device") != NULL);
	clear(1);
}

int main(void)
{
	RUN(nothing_passed);
	RUN(listener_and_fifo);
	RUN(bad_variables);
	RUN(refused_kinds);
	return UNIT_DONE();
}
