/* gdinspect: show what a running gdpub or gdsub holds. */
#include "gdkit.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
"usage: gdinspect [-c FILE | -p PORT | --ctl PATH] [--json] [--watch SECS]\n"
"                 [--format FORMAT] [--output FILE] [--sort KEY] [--limit N]\n"
"                 COMMAND\n"
"Ask a running gdpub or gdsub (found from its config file, or a gdpub from\n"
"its port) what it holds.\n"
"\n"
"Commands:\n"
"  pending   each pending block at a gdpub: id, key, acks, needed, age,\n"
"            expires_in, resends, size, acked_by\n"
"  subs      each subscriber connection at a gdpub, or publisher at a gdsub\n"
"  stats     counters\n"
"  measure SENT RECEIVED\n"
"            from two files of keys or IDs: reliability R = Ru/S,\n"
"            uniqueness UR = Ru/R and the delivery mode achieved\n"
"  decode [FILE]\n"
"            a framed stream (gdpub -o, gdsub -f frame), binary or\n"
"            armored text lines (GDK1:...), from FILE or stdin, one line per\n"
"            frame: key, flags, index, time, size, payload preview\n"
"  journal FILE\n"
"            the blocks pending in a gdpub journal (GDpub_journal)\n"
"\n"
"  -c, --config FILE   a gdpub (GDpub_port) or gdsub (GDsub_pub) config\n"
"  -p, --port PORT     the gdpub listening on PORT, started without -c\n"
"      --ctl PATH      the program's control socket, instead of deriving it\n"
"      --json          one JSON object per line (--format json)\n"
"      --format FORMAT text (default), json, or prometheus (stats only: the\n"
"                      Prometheus text exposition format)\n"
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

enum { O_CTL = 256, O_JSON, O_WATCH, O_SORT, O_LIMIT, O_MAXBLOCK, O_FORMAT,
	O_OUTPUT };

static const char shortopts[] = ":c:p:hV";
static const struct option longopts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "port", required_argument, NULL, 'p' },
	{ "ctl", required_argument, NULL, O_CTL },
	{ "json", no_argument, NULL, O_JSON },
	{ "format", required_argument, NULL, O_FORMAT },
	{ "output", required_argument, NULL, O_OUTPUT },
	{ "watch", required_argument, NULL, O_WATCH },
	{ "sort", required_argument, NULL, O_SORT },
	{ "limit", required_argument, NULL, O_LIMIT },
	{ "max-block-size", required_argument, NULL, O_MAXBLOCK },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

int main(int argc, char **argv)
{
	struct gd_conf conf;
	struct gd_inspect_opts opt;
	int ch, rc, port_opt = 0;
	uint32_t max_block = 0;	/* decode --max-block-size */

	gd_cli_init(argv[0]);
	gd_conf_init(&conf, GD_FAM_ANY);
	memset(&opt, 0, sizeof(opt));
	opt.sort = -1;
	rc = gd_cli_prepass(argc, argv, shortopts, longopts, &conf, usage);
	if (rc != 0) {
		gd_conf_free(&conf);
		return rc < 0 ? 0 : rc;
	}
	while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': case 'h': case 'V':
			break;
		case 'p':	/* finds the socket as gdpub derives it */
			if ((rc = gd_cli_keyopt(&conf, longopts, ch, optarg)) != 0)
				goto out;
			port_opt = 1;
			break;
		case O_CTL:
			opt.ctl = optarg;
			break;
		case O_JSON:
			opt.json = 1;
			break;
		case O_FORMAT:
			opt.json = strcmp(optarg, "json") == 0;
			opt.prom = strcmp(optarg, "prometheus") == 0;
			if (!opt.json && !opt.prom && strcmp(optarg, "text") != 0) {
				gd_usage_err("invalid value '%s' for --format: expected text, json or prometheus",
				    optarg);
				rc = GD_EX_USAGE;
				goto out;
			}
			break;
		case O_OUTPUT:
			opt.output = optarg;
			break;
		case O_WATCH:
			if (gd_parse_dur(optarg, 0.05, 86400, &opt.watch) != 0) {
				gd_usage_err("invalid value '%s' for --watch: expected seconds from 0.05",
				    optarg);
				rc = GD_EX_USAGE;
				goto out;
			}
			break;
		case O_SORT:
			if ((opt.sort = gd_inspect_sort(optarg)) < 0) {
				gd_usage_err("invalid value '%s' for --sort: expected age, expires, id or acks",
				    optarg);
				rc = GD_EX_USAGE;
				goto out;
			}
			break;
		case O_LIMIT: {
			int64_t n;
			if (gd_parse_i64(optarg, 1, INT64_MAX, &n) != 0) {
				gd_usage_err("invalid value '%s' for --limit: expected a row count from 1",
				    optarg);
				rc = GD_EX_USAGE;
				goto out;
			}
			opt.limit = (uint64_t)n;
			break;
		}
		case O_MAXBLOCK: {
			int64_t n;
			if (gd_parse_i64(optarg, 1, 1 << 30, &n) != 0) {
				gd_usage_err("invalid value '%s' for --max-block-size: expected an integer from 1 to 1073741824",
				    optarg);
				rc = GD_EX_USAGE;
				goto out;
			}
			max_block = (uint32_t)n;
			break;
		}
		default:
			rc = gd_cli_bad_option(ch, argv);
			goto out;
		}
	}
	if (port_opt && opt.ctl) {
		gd_usage_err("cannot use -p and --ctl: each names the socket");
		rc = GD_EX_USAGE;
		goto out;
	}
	if (optind >= argc) {
		gd_usage_err("no command given (pending, subs, stats, measure, decode or journal)");
		rc = GD_EX_USAGE;
		goto out;
	}
	opt.cmd = argv[optind];
	if (opt.prom && strcmp(opt.cmd, "stats") != 0) {
		gd_usage_err("--format prometheus applies to stats only, not to %s",
		    opt.cmd);
		rc = GD_EX_USAGE;
		goto out;
	}
	if (opt.output && !opt.prom) {
		gd_usage_err("--output applies to --format prometheus only");
		rc = GD_EX_USAGE;
		goto out;
	}
	if (max_block && strcmp(opt.cmd, "decode") != 0) {
		gd_usage_err("--max-block-size applies to decode only, not to %s",
		    opt.cmd);
		rc = GD_EX_USAGE;
		goto out;
	}
	if ((opt.sort >= 0 || opt.limit > 0) && strcmp(opt.cmd, "pending") != 0) {
		gd_usage_err("--sort and --limit apply to pending only, not to %s",
		    opt.cmd);
		rc = GD_EX_USAGE;
		goto out;
	}
	if (strcmp(opt.cmd, "measure") == 0) {
		struct gd_measure m;
		if (argc - optind != 3) {
			gd_usage_err("measure needs two files: SENT RECEIVED");
			rc = GD_EX_USAGE;
			goto out;
		}
		if ((rc = gd_measure_files(argv[optind + 1], argv[optind + 2],
		    &m)) == 0)
			gd_measure_print(&m, opt.json);
		goto out;
	}
	if (strcmp(opt.cmd, "decode") == 0) {
		if (opt.watch > 0) {
			gd_usage_err("cannot use --watch with decode");
			rc = GD_EX_USAGE;
		} else if (argc - optind > 2) {
			gd_usage_err("unexpected argument '%s' after decode FILE",
			    argv[optind + 2]);
			rc = GD_EX_USAGE;
		} else {
			rc = gd_decode_file(argv[optind + 1], opt.json,
			    max_block);
		}
		goto out;
	}
	if (strcmp(opt.cmd, "journal") == 0) {
		if (argc - optind < 2) {
			gd_usage_err("journal needs a FILE");
			rc = GD_EX_USAGE;
		} else if (argc - optind > 2) {
			gd_usage_err("unexpected argument '%s' after journal FILE",
			    argv[optind + 2]);
			rc = GD_EX_USAGE;
		} else if (opt.watch > 0) {
			gd_usage_err("cannot use --watch with journal");
			rc = GD_EX_USAGE;
		} else {
			rc = gd_journal_dump(argv[optind + 1], opt.json);
		}
		goto out;
	}
	if (argc - optind > 1) {
		gd_usage_err("unexpected argument '%s' after %s", argv[optind + 1],
		    opt.cmd);
		rc = GD_EX_USAGE;
		goto out;
	}
	if (strcmp(opt.cmd, "pending") != 0 && strcmp(opt.cmd, "subs") != 0 &&
	    strcmp(opt.cmd, "stats") != 0) {
		gd_usage_err("unknown command '%s' (pending, subs, stats, measure, decode or journal)", opt.cmd);
		rc = GD_EX_USAGE;
		goto out;
	}
	rc = gd_inspect_run(&conf, &opt);
out:
	gd_conf_free(&conf);
	return rc;
}
