/* Common main skeleton pieces and the table of the options the four
 * programs share (see cli.h). */
#include "cli.h"
#include "log.h"
#include "parse.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void cli_init(const char *argv0)
{
	int fd;

	gd_log_init(argv0);
	signal(SIGPIPE, SIG_IGN);
	/* a closed fd 0-2 would be reused by the first socket we open */
	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
}

static int prepass(int argc, char **argv, const char *shortopts,
    const struct option *longopts, struct gd_conf *c, const char *usage)
{
	const char *config = NULL;
	int ch, rc;

	opterr = 0;
	optind = 0;
	while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (ch == 'c')
			config = optarg;
		else if (ch == 'q')	/* quiet for the file's warnings too */
			gd_log_level(-1);
		else if (ch == 'h') {
			fputs(usage, stdout);
			return -1;
		} else if (ch == 'V') {
			printf("%s (gdkit) %s\n", gd_prog(), GD_VERSION);
			return -1;
		}
	}
	optind = 0;
	if (config && (rc = gd_conf_load(c, config)) != 0)
		return rc;
	return 0;
}

int gd_cli_bad_option(int ch, char **argv)
{
	const char *arg = argv[optind - 1];

	if (ch == ':')
		gd_usage_err("option '%s' needs a value", arg);
	else if (optopt && strncmp(arg, "--", 2) != 0)
		gd_usage_err("unknown option '-%c'", optopt);
	else
		gd_usage_err("unknown option '%s'", arg);
	return GD_EX_USAGE;
}

static int keyopt(struct gd_conf *c, const struct option *longopts, int ch,
    const char *arg)
{
	const struct option *o;
	char opt[64];

	for (o = longopts; o->name != NULL; o++)
		if (o->flag == NULL && o->val == ch)
			break;
	if (o->name == NULL || ch == '?' || ch == ':' ||
	    (size_t)snprintf(opt, sizeof(opt), "--%s", o->name) >= sizeof(opt))
		return -1;
	return gd_conf_set_option(c, opt, arg);
}

int gd_cli_seconds(const char *opt, const char *arg, double min, double max,
    const char *expect, double *out)
{
	if (gd_parse_dur(arg, min, max, out) == 0)
		return 0;
	gd_usage_err("invalid value '%s' for %s: expected %s", arg, opt, expect);
	return GD_EX_USAGE;
}

int gd_cli_verbosity(int verbose, int quiet)
{
	if (verbose && quiet) {
		gd_usage_err("cannot use -v and -q together");
		return GD_EX_USAGE;
	}
	gd_log_level(quiet ? -1 : verbose);
	return 0;
}

/* The long option that prev names ("--wait" for --wait-ready, as getopt
 * takes an unambiguous prefix), if its argument is optional and prev
 * gave it none. */
static const struct option *optional_opt(const char *prev,
    const struct option *longopts)
{
	const struct option *o, *hit = NULL;
	size_t n;

	if (strncmp(prev, "--", 2) != 0 || prev[2] == '\0' ||
	    strchr(prev, '=') != NULL)
		return NULL;
	prev += 2;
	n = strlen(prev);
	for (o = longopts; o->name != NULL; o++) {
		if (strncmp(o->name, prev, n) != 0)
			continue;
		if (o->name[n] == '\0') {	/* exact */
			hit = o;
			break;
		}
		if (hit != NULL)
			return NULL;	/* ambiguous: getopt refused it */
		hit = o;
	}
	return hit != NULL && hit->has_arg == optional_argument ? hit : NULL;
}

int gd_cli_unexpected(char **argv, int i, const struct option *longopts,
    const char *why)
{
	const struct option *o = i > 1 ? optional_opt(argv[i - 1], longopts) : NULL;

	if (o != NULL)
		gd_usage_err("unexpected argument '%s': %s (did you mean --%s=%s?)",
		    argv[i], why, o->name, argv[i]);
	else
		gd_usage_err("unexpected argument '%s': %s", argv[i], why);
	return GD_EX_USAGE;
}

/* The common options; GD_CLI_* bit i is row i. */
static const struct {
	struct option o;
	const char *shorts;	/* its getopt letters, "" for none */
} common_opts[] = {
	{ { "config", required_argument, NULL, 'c' }, "c:" },
	{ { "format", required_argument, NULL, 'f' }, "f:" },
	{ { "null", no_argument, NULL, '0' }, "0" },
	{ { "verbose", no_argument, NULL, 'v' }, "v" },
	{ { "quiet", no_argument, NULL, 'q' }, "q" },
	{ { "help", no_argument, NULL, 'h' }, "h" },
	{ { "version", no_argument, NULL, 'V' }, "V" },
	{ { "ctl", required_argument, NULL, GD_OPT_CTL }, "" },
};
#define NCOMMON (sizeof(common_opts) / sizeof(common_opts[0]))

int gd_cli_begin(struct gd_cli *cli, int argc, char **argv, unsigned common,
    const char *shorts, const struct option *own, struct gd_conf *c,
    const char *usage)
{
	size_t n = 0, i, len;

	cli_init(argv[0]);
	memset(cli, 0, sizeof(*cli));
	cli->delim = '\n';
	/* ':' after a '+': getopt reports a missing value as ':' */
	len = (size_t)snprintf(cli->shortopts, sizeof(cli->shortopts), "%s:%s",
	    shorts[0] == '+' ? "+" : "", shorts + (shorts[0] == '+'));
	for (; own[n].name != NULL && n + 1 < GD_CLI_MAXOPTS; n++)
		cli->longopts[n] = own[n];
	for (i = 0; i < NCOMMON && n + 1 < GD_CLI_MAXOPTS; i++) {
		if (!(common & (1u << i)))
			continue;
		cli->longopts[n++] = common_opts[i].o;
		len += (size_t)snprintf(cli->shortopts + len,
		    len < sizeof(cli->shortopts) ? sizeof(cli->shortopts) - len : 0,
		    "%s", common_opts[i].shorts);
	}
	/* the zero row ends the table; both bounds hold for every main, by
	 * far: a main that outgrew them would lose options, so stop here */
	if (n + 1 >= GD_CLI_MAXOPTS || len >= sizeof(cli->shortopts))
		abort();
	memset(&cli->longopts[n], 0, sizeof(cli->longopts[n]));
	return prepass(argc, argv, cli->shortopts, cli->longopts, c,
	    usage);
}

int gd_cli_next(struct gd_cli *cli, int argc, char **argv)
{
	int ch;

	while ((ch = getopt_long(argc, argv, cli->shortopts, cli->longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'c': case 'h': case 'V':	/* the prepass's */
			break;
		case 'v':
			cli->verbose++;
			break;
		case 'q':
			cli->quiet = 1;
			break;
		case '0':
			cli->delim = '\0';
			break;
		default:
			return ch;
		}
	}
	return -1;
}

int gd_cli_other(struct gd_cli *cli, struct gd_conf *c, int ch, char **argv)
{
	int rc = keyopt(c, cli->longopts, ch, optarg);

	return rc < 0 ? gd_cli_bad_option(ch, argv) : rc;
}
