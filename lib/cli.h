/* What every main does first, the options the four programs share (one
 * table) and the option-parsing glue around getopt_long. */
#ifndef GD_CLI_H
#define GD_CLI_H

#include <getopt.h>

#include "conf.h"

#define GD_VERSION "0.1.0"

/* The options the programs share, from one table (cli.c); a main names
 * the ones it takes and lists only its own beside them. */
enum gd_cli_common {
	GD_CLI_CONFIG = 1 << 0,		/* -c, --config FILE */
	GD_CLI_FORMAT = 1 << 1,		/* -f, --format F: returned, the values are
					 * the main's */
	GD_CLI_NULL = 1 << 2,		/* -0, --null: delim '\0' */
	GD_CLI_VERBOSE = 1 << 3,	/* -v, --verbose (counted) */
	GD_CLI_QUIET = 1 << 4,		/* -q, --quiet */
	GD_CLI_HELP = 1 << 5,		/* -h, --help */
	GD_CLI_VERSION = 1 << 6,	/* -V, --version */
	GD_CLI_CTL = 1 << 7,		/* --ctl PATH: returned as GD_OPT_CTL */
};
#define GD_CLI_ALL_OF_THEM 0xff
/* The value getopt gives --ctl; a main's own values stay below it. */
#define GD_OPT_CTL 0x4000
#define GD_CLI_MAXOPTS 64

struct gd_cli {
	struct option longopts[GD_CLI_MAXOPTS];	/* the main's, then the common */
	char shortopts[96];
	int verbose, quiet;	/* -v count, -q */
	char delim;		/* '\n', or '\0' after -0 */
};
/* Name the program, ignore SIGPIPE, make sure fds 0-2 are open; then
 * join the main's options (shorts: its short letters,
 * "+" first to stop at the first argument; own: its long options, ended
 * by a zero row) with the common ones it takes, then the prepass (-c,
 * --help with usage, --version). 0, -1 for "exit 0", or an exit code. */
int gd_cli_begin(struct gd_cli *cli, int argc, char **argv, unsigned common,
    const char *shorts, const struct option *own, struct gd_conf *c,
    const char *usage);
/* The next option for the main's switch, -1 at the end: what the common
 * table takes alone (-c, -h, -V, -v, -q, -0) is taken here. */
int gd_cli_next(struct gd_cli *cli, int argc, char **argv);
/* The default of a main's switch: an option that sets a config key of
 * c's family (which option sets which key is conf.c's key table, so a
 * main lists an option once, in its longopts), else the getopt failure.
 * 0, or GD_EX_USAGE. */
int gd_cli_other(struct gd_cli *cli, struct gd_conf *c, int ch, char **argv);
/* A duration option's value, seconds from min to max, into *out: 0, or
 * GD_EX_USAGE after "invalid value 'ARG' for OPT: expected EXPECT". */
int gd_cli_seconds(const char *opt, const char *arg, double min, double max,
    const char *expect, double *out);
/* Apply -v (count) and -q; returns 0 or GD_EX_USAGE when both. */
int gd_cli_verbosity(int verbose, int quiet);
/* Report a getopt failure ('?' or ':'); returns GD_EX_USAGE. */
int gd_cli_bad_option(int ch, char **argv);
/* Report argv[i], an argument no option took, as "unexpected argument
 * 'ARG': why"; when it follows a long option whose argument is optional
 * ("--wait-ready 5", where getopt gives 5 to no option), add the hint
 * "(did you mean --wait-ready=5?)". argv must be in its original order:
 * parse with a '+' in front of the short options, which stops at the
 * first argument instead of moving it to the end. Returns GD_EX_USAGE. */
int gd_cli_unexpected(char **argv, int i, const struct option *longopts,
    const char *why);

#endif
