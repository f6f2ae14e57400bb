/* gdack: acknowledge the blocks a pipeline has finished with, through the
 * gdsub that emitted them. */
#include "gdkit.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
"usage: gdack [-c FILE] [--ctl PATH] [-f line|frame|status] [-0] [--tee]\n"
"             [--sink FILE] [KEY ...]\n"
"Acknowledge each block whose key (HOST:PORT/ID) starts a line on stdin,\n"
"or the keys given as arguments, through the gdsub started with the same\n"
"config and options.\n"
"\n"
"  -c, --config FILE     the gdsub's config file (finds its control socket)\n"
"      --ctl PATH        gdsub's control socket, instead of deriving it\n"
"      --name NAME       the gdsub's --name, if it was given one\n"
"  -P, --pub HOST:PORT   the gdsub's --pub options, if it ran without -c\n"
"  -f, --format FORMAT   line (default); frame: a framed stream (gdsub -f\n"
"                        frame), every block in it; status: gdpub -f frame\n"
"                        status lines, the key of each ACK (cascades)\n"
"  -0, --null            records end with NUL instead of newline\n"
"      --tee             copy the input to stdout once acknowledged\n"
"      --sink FILE       append each record to FILE, synced, before its\n"
"                        acknowledgement; started again, do not append a\n"
"                        resent block FILE already ends with (exactly once)\n"
"      --wait SECS       wait this long for gdsub (default 10)\n"
"  -v, --verbose         report counts on stderr\n"
"  -q, --quiet           errors only\n"
"  -h, --help            show this help\n"
"  -V, --version         show the version\n"
"\n"
"See gdack(1), gdsub(1), gdkit(7).\n";

enum { O_NAME = 256, O_TEE, O_WAIT, O_SINK };

/* besides the common options (cli.h): -c -f -0 -v -q -h -V --ctl */
static const struct option longopts[] = {
	{ "name", required_argument, NULL, O_NAME },
	{ "pub", required_argument, NULL, 'P' },
	{ "tee", no_argument, NULL, O_TEE },
	{ "sink", required_argument, NULL, O_SINK },
	{ "wait", required_argument, NULL, O_WAIT },
	{ NULL, 0, NULL, 0 }
};

int main(int argc, char **argv)
{
	struct gd_conf conf;
	struct gd_ack_opts opt;
	struct gd_cli cli;
	int ch, rc;

	gd_conf_init(&conf, GD_FAM_SUB);
	memset(&opt, 0, sizeof(opt));
	opt.wait = 10;
	rc = gd_cli_begin(&cli, argc, argv, GD_CLI_ALL_OF_THEM, "P:", longopts,
	    &conf, usage);
	if (rc != 0) {
		gd_conf_free(&conf);
		return rc < 0 ? 0 : rc;
	}
	while ((ch = gd_cli_next(&cli, argc, argv)) != -1) {
		switch (ch) {
		case GD_OPT_CTL:
			opt.ctl = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "line") == 0)
				opt.format = GD_ACK_LINE;
			else if (strcmp(optarg, "frame") == 0)
				opt.format = GD_ACK_FRAME;
			else if (strcmp(optarg, "status") == 0)
				opt.format = GD_ACK_STATUS;
			else {
				gd_usage_err("invalid value '%s' for --format: expected 'line', 'frame' or 'status'",
				    optarg);
				rc = GD_EX_USAGE;
			}
			break;
		case O_TEE:
			opt.tee = 1;
			break;
		case O_SINK:
			if (optarg[0] == '\0') {
				gd_usage_err("invalid value '' for --sink: expected a file name");
				rc = GD_EX_USAGE;
			}
			opt.sink = optarg;
			break;
		case O_WAIT:
			rc = gd_cli_seconds("--wait", optarg, 0, 86400.0 * 365,
			    "seconds", &opt.wait);
			break;
		default:	/* --name, -P: gdsub's keys, to find it */
			rc = gd_cli_other(&cli, &conf, ch, argv);
			break;
		}
		if (rc != 0)
			goto out;
	}
	opt.delim = cli.delim;
	if ((rc = gd_cli_verbosity(cli.verbose, cli.quiet)) != 0)
		goto out;
	if (opt.ctl == NULL && conf.path == NULL && conf.name == NULL &&
	    conf.npubs == 0 && conf.sub_ctl == NULL) {
		gd_usage_err("cannot find gdsub: give -c FILE, --name, --pub or --ctl as it was started with");
		rc = GD_EX_USAGE;
		goto out;
	}
	if (opt.format == GD_ACK_FRAME && opt.delim != '\n') {
		gd_usage_err("-f frame cannot be combined with -0: frames carry "
		    "their lengths");
		rc = GD_EX_USAGE;
		goto out;
	}
	if (opt.format == GD_ACK_FRAME && optind < argc) {
		gd_usage_err("unexpected argument '%s': with -f frame the stream "
		    "is read on stdin", argv[optind]);
		rc = GD_EX_USAGE;
		goto out;
	}
	if (opt.sink != NULL && opt.format != GD_ACK_LINE) {
		gd_usage_err("--sink cannot be combined with -f %s: the sink "
		    "holds the records of -f line (or -0)",
		    opt.format == GD_ACK_FRAME ? "frame" : "status");
		rc = GD_EX_USAGE;
		goto out;
	}
	if (opt.sink != NULL && optind < argc) {
		gd_usage_err("unexpected argument '%s': with --sink the records "
		    "are read on stdin", argv[optind]);
		rc = GD_EX_USAGE;
		goto out;
	}
	opt.keys = argv + optind;
	opt.nkeys = argc - optind;
	rc = gd_ack_run(&conf, &opt);
out:
	gd_conf_free(&conf);
	return rc;
}
