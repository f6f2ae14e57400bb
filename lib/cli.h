/* What every main does first and the option-parsing glue they share. */
#ifndef GD_CLI_H
#define GD_CLI_H

#include <getopt.h>

#include "conf.h"

#define GD_VERSION "0.1.0"

/* Name the program, ignore SIGPIPE, make sure fds 0-2 are open. */
void gd_cli_init(const char *argv0);
/* First pass over argv: load -c FILE into c (options are applied by the
 * caller's second pass). Handles --help (prints usage, returns -1 for
 * "exit 0") and --version. Returns 0, -1 (exit 0) or an exit code. */
int gd_cli_prepass(int argc, char **argv, const char *shortopts,
    const struct option *longopts, struct gd_conf *c, const char *usage);
/* If ch (what getopt_long returned) is an option of longopts that sets
 * a config key of c's family, set the key from arg: returns 0 or
 * GD_EX_USAGE. Returns -1 when ch sets no key. Which option sets which
 * key is conf.c's key table, so a main lists an option once, in its
 * longopts, and calls this for the options its switch does not take. */
int gd_cli_keyopt(struct gd_conf *c, const struct option *longopts, int ch,
    const char *arg);
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
