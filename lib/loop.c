/* Loop teardown (see loop.h). */
#include "loop.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

static void walk_close(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

struct left {
	char names[200];
	unsigned n;
};

static void walk_name(uv_handle_t *h, void *arg)
{
	struct left *l = arg;
	size_t len = strlen(l->names);

	l->n++;
	if (len < sizeof(l->names) - 40)
		snprintf(l->names + len, sizeof(l->names) - len, "%s%s%s",
		    len ? ", " : "", uv_handle_type_name(uv_handle_get_type(h)),
		    uv_is_closing(h) ? " (closing)" : "");
}

int gd_loop_close(uv_loop_t *loop)
{
	struct left l = { "", 0 };
	int rc;

	uv_walk(loop, walk_close, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	if ((rc = uv_loop_close(loop)) == 0)
		return 0;
	uv_walk(loop, walk_name, &l);
	gd_err("internal error: the event loop cannot be closed: %s (%u "
	    "handle%s left: %s)", uv_strerror(rc), l.n, gd_plural(l.n),
	    l.n ? l.names : "requests still pending");
	return rc;
}
