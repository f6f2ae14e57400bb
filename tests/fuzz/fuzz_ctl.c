/* The control socket's request side (lib/ctl.c): the bytes are what a
 * client sends, written to a real gd_ctl_srv on a libuv loop, so the
 * server's line splitting, its line-length limit, its reply cap and its
 * half-close handling all run. The line callback is gdsub's and gdpub's
 * grammar over lib/ code, dispatched by gd_ctl_dispatch as theirs are:
 * "ack N" then N keys (gd_key_parse), "ackbin LEN" then a binary batch
 * of LEN bytes (ctl.c's raw body, gd_ackbin_feed, as gdsub reads it),
 * "pending [ARGS]" (gd_ctl_pending_args), "hello [VERSION]", anything
 * else an error. The run
 * ends when the server has closed the connection (a hang is a finding);
 * replies are flushed once per loop turn, from a prepare handle, as the
 * programs do. */
#include "fuzz.h"
#include "ackbin.h"
#include "ctl.h"
#include "key.h"
#include "parse.h"

#include <errno.h>
#include <inttypes.h>
#include <sys/socket.h>
#include <sys/un.h>

static uv_loop_t loop;
static uv_prepare_t prep;
static struct gd_ctl_srv srv;
static int gone;

/* an "ack N" request between its lines, or an "ackbin LEN" one between
 * the pieces of its body, as gdsub keeps it per client */
struct batch {
	uint64_t left, ok, failed;
	struct gd_ackbin bin;
};

static struct batch *batch_of(struct gd_ctl_client *cl)
{
	struct batch *b = cl->req;

	if (b == NULL) {
		if ((b = calloc(1, sizeof(*b))) == NULL)
			return NULL;
		cl->req = b;
		cl->req_free = free;
	}
	b->ok = b->failed = b->left = 0;
	return b;
}

static int req_ack(void *user, struct gd_ctl_client *cl, const char *line,
    const char *args)
{
	struct batch *b;
	int64_t n;

	(void)user;
	if (gd_parse_i64(args, 0, GD_CTL_MAX_KEYS, &n) != 0) {
		gd_ctl_printf(cl, "error bad key count in '%.64s'\n", line);
		return -1;
	}
	if ((b = batch_of(cl)) == NULL)
		return -1;
	b->left = (uint64_t)n;
	if (n == 0)
		gd_ctl_printf(cl, "ack 0 0\n");
	return 0;
}

/* ackbin: every key of a run whose origin begins with "bad" fails */
static int bin_ids(void *user, const char *origin, size_t olen,
    const char *ids, size_t k)
{
	struct batch *b = user;
	size_t i;
	uint64_t sum = 0;

	/* each ID read, as gdsub reads them */
	for (i = 0; i < k; i++)
		sum += gd_ackbin_id(ids + 8 * i);
	b->ok += sum == 0;	/* (kept from being optimized away) */
	b->ok -= sum == 0;
	if (olen >= 3 && memcmp(origin, "bad", 3) == 0)
		b->failed += k;
	else
		b->ok += k;
	return 0;
}

static const struct gd_ackbin_ops bin_ops = { NULL, bin_ids };

static int64_t ack_bin(void *user, struct gd_ctl_client *cl,
    const char *buf, size_t n)
{
	struct batch *b = cl->req;
	const char *why;
	int64_t took = gd_ackbin_feed(&b->bin, buf, n, &bin_ops, b, &why);

	(void)user;
	if (took < 0) {
		gd_ctl_printf(cl, "error malformed ackbin batch: %s\n",
		    why ? why : "stopped");
		return -1;
	}
	if (b->bin.left == 0)
		gd_ctl_printf(cl, "ack %" PRIu64 " %" PRIu64 "\n", b->ok,
		    b->failed);
	return took;
}

static int req_ackbin(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	struct batch *b;
	int64_t n;

	(void)user;
	if (gd_parse_i64(args, 0, (int64_t)GD_ACKBIN_MAX, &n) != 0) {
		gd_ctl_printf(cl, "error bad batch length in '%.64s'\n", line);
		return -1;
	}
	if ((b = batch_of(cl)) == NULL)
		return -1;
	gd_ackbin_start(&b->bin, (uint64_t)n);
	cl->raw_left = (uint64_t)n;
	cl->raw_cb = ack_bin;
	if (n == 0)
		gd_ctl_printf(cl, "ack 0 0\n");
	return 0;
}

static int req_pending(void *user, struct gd_ctl_client *cl,
    const char *line, const char *args)
{
	char why[128];
	struct gd_ctl_pending_req pr;
	uint64_t i;

	(void)user;
	(void)line;
	if (gd_ctl_pending_args(args, &pr, why, sizeof(why)) != 0) {
		gd_ctl_printf(cl, "error %s\n", why);
		return 0;
	}
	gd_ctl_printf(cl, "pending %" PRIu64 "\nid:n\tsort:s\n", pr.limit);
	/* the reply cap (4 KiB here) replaces a long reply */
	for (i = 0; i < pr.limit && i < 1000; i++)
		gd_ctl_printf(cl, "%" PRIu64 "\t%s\n", i,
		    gd_ctl_sort_name(pr.sort));
	return 0;
}

/* the shapes of the engines' tables: arguments required, optional;
 * hello is the dispatcher's */
static const struct gd_ctl_req requests[] = {
	{ "ack", GD_CTL_ARGS, req_ack },
	{ "ackbin", GD_CTL_ARGS, req_ackbin },
	{ "pending", GD_CTL_OPTARGS, req_pending },
};
static const struct gd_ctl_table table = { "gdfuzz", requests,
	sizeof(requests) / sizeof(requests[0]) };

static int on_line(void *user, struct gd_ctl_client *cl, char *line,
    size_t len)
{
	if (strlen(line) != len)	/* a NUL inside the line */
		len = strlen(line);
	struct batch *b = cl->req;

	if (b != NULL && b->left > 0) {
		size_t olen;
		uint64_t id;
		int fl;
		if (gd_key_parse(line, len, &olen, &id, &fl) == 0)
			b->ok++;
		else
			b->failed++;
		if (--b->left == 0)
			gd_ctl_printf(cl, "ack %" PRIu64 " %" PRIu64 "\n", b->ok,
			    b->failed);
		return 0;
	}
	return gd_ctl_dispatch(&table, user, cl, line);
}

static void on_gone(void *user)
{
	(void)user;
	gone = 1;
}

/* as gdpub and gdsub do: replies go out once per loop turn */
static void on_prepare(uv_prepare_t *h)
{
	(void)h;
	gd_ctl_flush(&srv);
}

static void setup(void)
{
	static int done;
	const char *path;

	if (done)
		return;
	done = 1;
	path = fuzz_file("ctl.sock", NULL, 0);
	if (uv_loop_init(&loop) != 0 ||
	    gd_ctl_listen(&srv, &loop, path, on_line, NULL) != 0)
		abort();
	srv.on_gone = on_gone;
	srv.reply_max = 4096;
	uv_prepare_init(&loop, &prep);
	uv_prepare_start(&prep, on_prepare);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_un sa;
	char sink[65536];
	size_t off = 0;
	int fd, spins = 0;

	fuzz_once();
	setup();
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", srv.path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		abort();
	gone = 0;
	/* write what the socket takes, run the server, read its replies */
	while (!gone) {
		if (off < size) {
			ssize_t w = send(fd, data + off, size - off, MSG_NOSIGNAL);
			if (w > 0)
				off += (size_t)w;
			else if (w < 0 && errno != EAGAIN)
				off = size;	/* the server closed on us */
			if (off == size)
				shutdown(fd, SHUT_WR);
		} else if (size == 0 && spins == 0) {
			shutdown(fd, SHUT_WR);
		}
		spins++;
		uv_run(&loop, UV_RUN_NOWAIT);
		while (recv(fd, sink, sizeof(sink), 0) > 0)
			;
		if (!gone && off == size)
			uv_run(&loop, UV_RUN_ONCE);
	}
	close(fd);
	/* let the closed client's handle go */
	uv_run(&loop, UV_RUN_NOWAIT);
	return 0;
}
