/* gdinspect: show what a running gdpub or gdsub holds. */
#include "gdkit.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* --help: this, the commands from their table, then the options */
static const char usage_head[] =
"usage: gdinspect [-c FILE | -p PORT | -P HOST:PORT [--name N] | --ctl PATH]\n"
"                 [--json] [--watch SECS] [--format FORMAT] [--output FILE]\n"
"                 [--sort KEY] [--limit N] [--timeout SECS] COMMAND\n"
"Ask a running gdpub or gdsub (found from its config file, a gdpub from\n"
"its port, a gdsub from the options it was started with) what it holds.\n"
"\n"
"Commands:\n";

static const char usage_tail[] =
"\n"
"  -c, --config FILE   a gdpub (GDpub_port) or gdsub (GDsub_pub) config\n"
"  -p, --port PORT     the gdpub listening on PORT, started without -c\n"
"  -P, --pub HOST:PORT the gdsub started with these -P (repeatable)...\n"
"      --name NAME     ... and this --name, if it was given one\n"
"      --ctl PATH      the program's control socket, instead of deriving it\n"
"      --json          one JSON object per line (--format json)\n"
"  -f, --format FORMAT text (default), json, or prometheus (stats only: the\n"
"                      Prometheus text exposition format)\n"
"      --timeout SECS  wait at most SECS for the program to take the\n"
"                      connection and for each part of its answer (default 5)\n"
"      --output FILE   with --format prometheus: write FILE (a temporary\n"
"                      file renamed over it), each time with --watch\n"
"      --watch SECS    repeat every SECS seconds (clears a terminal)\n"
"      --sort KEY      pending: age (default, oldest first), expires (the\n"
"                      same order), id, or acks (fewest first)\n"
"      --limit N       pending: the first N rows only (gdpub sends no more)\n"
"      --max-block-size N\n"
"                      decode: the largest payload of a frame (default\n"
"                      1048576 armored, 2^30 binary)\n"
"  -h, --help          show this help\n"
"  -V, --version       show the version\n"
"\n"
"See gdinspect(1).\n";

enum { O_JSON = 256, O_WATCH, O_SORT, O_LIMIT, O_MAXBLOCK, O_OUTPUT,
	O_TIMEOUT, O_NAME };

/* besides the common options (cli.h): -c -f -h -V --ctl */
static const struct option longopts[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "pub", required_argument, NULL, 'P' },
	{ "name", required_argument, NULL, O_NAME },
	{ "json", no_argument, NULL, O_JSON },
	{ "output", required_argument, NULL, O_OUTPUT },
	{ "watch", required_argument, NULL, O_WATCH },
	{ "sort", required_argument, NULL, O_SORT },
	{ "limit", required_argument, NULL, O_LIMIT },
	{ "max-block-size", required_argument, NULL, O_MAXBLOCK },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ NULL, 0, NULL, 0 }
};
#define COMMON (GD_CLI_CONFIG | GD_CLI_FORMAT | GD_CLI_HELP | \
	GD_CLI_VERSION | GD_CLI_CTL)

/* What a command's row says of it: which options apply to it, whether it
 * refuses --watch, whether a wrong count of arguments is always answered
 * with its need (measure: exactly two files) */
enum { C_SORT = 1, C_MAXBLOCK = 2, C_PROM = 4, C_NOWATCH = 8, C_EXACT = 16 };

struct run {
	struct gd_conf *conf;
	struct gd_inspect_opts *opt;
	char **args;		/* the words after the command */
	int nargs;
	uint32_t max_block;	/* decode --max-block-size, 0 the default */
};

/* pending, subs and stats ask the program at the control socket */
static int run_ctl(const struct run *r)
{
	return gd_inspect_run(r->conf, r->opt);
}

static int run_measure(const struct run *r)
{
	struct gd_measure m;
	int rc = gd_measure_files(r->args[0], r->args[1], &m);

	if (rc == 0)
		gd_measure_print(&m, r->opt->json);
	return rc;
}

static int run_decode(const struct run *r)
{
	return gd_decode_file(r->nargs > 0 ? r->args[0] : NULL, r->opt->json,
	    r->max_block);
}

static int run_journal(const struct run *r)
{
	return gd_journal_dump(r->args[0], r->opt->json);
}

static const struct command {
	const char *name;
	const char *args;	/* its words, as --help names them; [ARGS]
				 * when min is 0 */
	int min, max;		/* how many words it takes */
	const char *need;	/* "NAME needs NEED" when fewer than min */
	unsigned flags;		/* C_* */
	int (*run)(const struct run *r);
	const char *help;
} commands[] = {
	{ "pending", NULL, 0, 0, NULL, C_SORT, run_ctl,
	    "each pending block at a gdpub: id, key, acks, needed, age,\n"
	    "            expires_in, resends, size, acked_by" },
	{ "subs", NULL, 0, 0, NULL, 0, run_ctl,
	    "each subscriber connection at a gdpub, or publisher at a gdsub" },
	{ "stats", NULL, 0, 0, NULL, C_PROM, run_ctl,
	    "counters" },
	{ "measure", "SENT RECEIVED", 2, 2, "two files: SENT RECEIVED",
	    C_EXACT | C_NOWATCH, run_measure,
	    "from two files of keys or IDs: reliability R = Ru/S,\n"
	    "            uniqueness UR = Ru/R and the delivery mode achieved" },
	{ "decode", "FILE", 0, 1, NULL, C_MAXBLOCK | C_NOWATCH, run_decode,
	    "a framed stream (gdpub -o, gdsub -f frame), binary or\n"
	    "            armored text lines (GDK1:...), from FILE or stdin, one line per\n"
	    "            frame: key, flags, index, time, size, payload preview" },
	{ "journal", "FILE", 1, 1, "a FILE", C_NOWATCH, run_journal,
	    "the blocks pending in a gdpub journal (GDpub_journal)" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* The names of the commands with every flag of flags (0: all of them),
 * as "a, b or c". */
static const char *command_names(unsigned flags, char *buf, size_t sz)
{
	size_t i, n = 0, k = 0, len = 0;

	for (i = 0; i < NCOMMANDS; i++)
		n += (commands[i].flags & flags) == flags;
	buf[0] = '\0';
	for (i = 0; i < NCOMMANDS && len < sz; i++) {
		if ((commands[i].flags & flags) != flags)
			continue;
		len += (size_t)snprintf(buf + len, sz - len, "%s%s",
		    k == 0 ? "" : k + 1 == n ? " or " : ", ", commands[i].name);
		k++;
	}
	return buf;
}

static const char *usage(void)
{
	static char buf[4096];
	size_t i, len;

	len = (size_t)snprintf(buf, sizeof(buf), "%s", usage_head);
	for (i = 0; i < NCOMMANDS && len < sizeof(buf); i++) {
		const struct command *c = &commands[i];
		if (c->args == NULL)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len,
			    "  %-10s%s\n", c->name, c->help);
		else
			len += (size_t)snprintf(buf + len, sizeof(buf) - len,
			    "  %s %s%s%s\n            %s\n", c->name,
			    c->min == 0 ? "[" : "", c->args,
			    c->min == 0 ? "]" : "", c->help);
	}
	if (len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len, "%s", usage_tail);
	return buf;
}

static void mark(char *which, int k)
{
	if (strchr(which, k) == NULL)
		which[strlen(which)] = (char)k;	/* room for all four */
}

/* The options after the prepass (-c, -h and -V are its): 0, or an exit
 * code. which: the options that name the program, as check_target
 * reads them. */
static int parse_options(int argc, char **argv, struct gd_cli *cli,
    struct gd_conf *conf, struct gd_inspect_opts *opt, char *which,
    uint32_t *max_block)
{
	int ch, rc;
	int64_t n;

	while ((ch = gd_cli_next(cli, argc, argv)) != -1) {
		switch (ch) {
		case 'p':	/* finds the socket as gdpub derives it */
		case 'P':	/* -P and --name: as gdsub and gdack derive it */
		case O_NAME:
			if ((rc = gd_cli_other(cli, conf, ch, argv)) != 0)
				return rc;
			mark(which, ch == O_NAME ? 'N' : ch);
			break;
		case GD_OPT_CTL:
			opt->ctl = optarg;
			mark(which, 'C');
			break;
		case O_TIMEOUT:
			if ((rc = gd_cli_seconds("--timeout", optarg, 0.001, 86400,
			    "seconds above 0", &opt->timeout)) != 0)
				return rc;
			break;
		case O_JSON:
			opt->json = 1;
			break;
		case 'f':
			opt->json = strcmp(optarg, "json") == 0;
			opt->prom = strcmp(optarg, "prometheus") == 0;
			if (!opt->json && !opt->prom && strcmp(optarg, "text") != 0) {
				gd_usage_err("invalid value '%s' for --format: expected text, json or prometheus",
				    optarg);
				return GD_EX_USAGE;
			}
			break;
		case O_OUTPUT:
			opt->output = optarg;
			break;
		case O_WATCH:
			if ((rc = gd_cli_seconds("--watch", optarg, 0.05, 86400,
			    "seconds from 0.05", &opt->watch)) != 0)
				return rc;
			break;
		case O_SORT:
			if ((opt->sort = gd_inspect_sort(optarg)) < 0) {
				gd_usage_err("invalid value '%s' for --sort: expected age, expires, id or acks",
				    optarg);
				return GD_EX_USAGE;
			}
			break;
		case O_LIMIT:
			if (gd_parse_i64(optarg, 1, INT64_MAX, &n) != 0) {
				gd_usage_err("invalid value '%s' for --limit: expected a row count from 1",
				    optarg);
				return GD_EX_USAGE;
			}
			opt->limit = (uint64_t)n;
			break;
		case O_MAXBLOCK:
			if (gd_parse_i64(optarg, 1, 1 << 30, &n) != 0) {
				gd_usage_err("invalid value '%s' for --max-block-size: expected an integer from 1 to 1073741824",
				    optarg);
				return GD_EX_USAGE;
			}
			*max_block = (uint32_t)n;
			break;
		default:
			return gd_cli_bad_option(ch, argv);
		}
	}
	return 0;
}

/* -p, -P (with --name or not) and --ctl each name the program: one of
 * them. which holds 'p', 'P', 'N' (--name) and 'C' (--ctl) as given. */
static int check_target(const char *which)
{
	static const struct { char k; const char *name; } t[] = {
		{ 'p', "-p" }, { 'P', "-P" }, { 'N', "--name" }, { 'C', "--ctl" },
	};
	size_t i, j;

	for (i = 0; i < 4; i++)
		for (j = i + 1; j < 4; j++)
			if (strchr(which, t[i].k) && strchr(which, t[j].k) &&
			    !(t[i].k == 'P' && t[j].k == 'N')) {
				gd_usage_err("cannot use %s and %s: each names the "
				    "socket", t[i].name, t[j].name);
				return GD_EX_USAGE;
			}
	return 0;
}

/* An option given to a command it does not apply to, or a wrong count
 * of words after the command: its message and GD_EX_USAGE, else 0. */
static int check_command(const struct command *c, const struct run *r)
{
	const struct gd_inspect_opts *opt = r->opt;
	const char *cmd = opt->cmd;
	unsigned has = c != NULL ? c->flags : 0;
	char names[128];

	if (opt->prom && !(has & C_PROM))
		gd_usage_err("--format prometheus applies to %s only, not to %s",
		    command_names(C_PROM, names, sizeof(names)), cmd);
	else if (opt->output && !opt->prom)
		gd_usage_err("--output applies to --format prometheus only");
	else if (r->max_block && !(has & C_MAXBLOCK))
		gd_usage_err("--max-block-size applies to %s only, not to %s",
		    command_names(C_MAXBLOCK, names, sizeof(names)), cmd);
	else if ((opt->sort >= 0 || opt->limit > 0) && !(has & C_SORT))
		gd_usage_err("--sort and --limit apply to %s only, not to %s",
		    command_names(C_SORT, names, sizeof(names)), cmd);
	else if (c != NULL && (r->nargs < c->min ||
	    ((c->flags & C_EXACT) && r->nargs > c->max)))
		gd_usage_err("%s needs %s", cmd, c->need);
	else if (r->nargs > (c != NULL ? c->max : 0))
		gd_usage_err("unexpected argument '%s' after %s%s%s",
		    r->args[c != NULL ? c->max : 0], cmd,
		    c != NULL && c->args ? " " : "",
		    c != NULL && c->args ? c->args : "");
	else if (c == NULL)
		gd_usage_err("unknown command '%s' (%s)", cmd,
		    command_names(0, names, sizeof(names)));
	else if (opt->watch > 0 && (c->flags & C_NOWATCH))
		gd_usage_err("cannot use --watch with %s", cmd);
	else
		return 0;
	return GD_EX_USAGE;
}

int main(int argc, char **argv)
{
	struct gd_conf conf;
	struct gd_inspect_opts opt;
	const struct command *c;
	struct run r = { &conf, &opt, NULL, 0, 0 };
	char names[128];
	struct gd_cli cli;
	char which[8] = "";
	int rc;

	gd_conf_init(&conf, GD_FAM_ANY);
	memset(&opt, 0, sizeof(opt));
	opt.sort = -1;
	opt.timeout = 5;
	rc = gd_cli_begin(&cli, argc, argv, COMMON, "p:P:", longopts, &conf,
	    usage());
	if (rc != 0) {
		gd_conf_free(&conf);
		return rc < 0 ? 0 : rc;
	}
	if ((rc = parse_options(argc, argv, &cli, &conf, &opt, which,
	    &r.max_block)) != 0 || (rc = check_target(which)) != 0)
		goto out;
	if (optind >= argc) {
		gd_usage_err("no command given (%s)",
		    command_names(0, names, sizeof(names)));
		rc = GD_EX_USAGE;
		goto out;
	}
	opt.cmd = argv[optind];
	r.args = argv + optind + 1;
	r.nargs = argc - optind - 1;
	c = find_command(opt.cmd);
	if ((rc = check_command(c, &r)) == 0)
		rc = c->run(&r);
out:
	gd_conf_free(&conf);
	return rc;
}
