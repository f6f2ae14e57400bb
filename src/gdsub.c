/* gdsub: subscribe to publishers, write their blocks on stdout, hold the
 * acknowledgement connection that gdack uses. */
#include "gdkit.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
"usage: gdsub [-c FILE] [-P HOST:PORT ...] [options] > blocks\n"
"Subscribe to every publisher and write each unique block on stdout as\n"
"KEY[/FLAGS]<TAB>payload; acknowledge with gdack once processed.\n"
"\n"
"  -c, --config FILE          read GDsub_* keys from FILE (options override)\n"
"  -P, --pub HOST:PORT        a publisher (GDsub_pub, repeatable, required)\n"
"      --retry-interval SECS  between connection attempts (default 1)\n"
"      --max-retries N        attempts before giving up; -1 forever (default 10)\n"
"      --max-block-size BYTES refuse larger blocks (default 1048576)\n"
"      --name NAME            identity at the publishers (default derived)\n"
"      --no-gd                receive only: no acknowledgement connection\n"
"      --ctl PATH             control socket for gdack (default derived)\n"
"      --dedup MODE           id (default): drop copies of a block seen;\n"
"                             index: also drop blocks whose sequence index\n"
"                             is not above the last written; none: keep all\n"
"      --consecutive          write each publisher's blocks in sequence-\n"
"                             index order, holding back past a gap\n"
"      --state FILE           remember acknowledged blocks in FILE, so a\n"
"                             restarted gdsub acknowledges their resends\n"
"                             again instead of writing them\n"
"      --auth-key-file FILE   prove this pre-shared key to each publisher and\n"
"                             have it prove it (mode 0600 or stricter)\n"
"      --tls-ca FILE          connect over TLS; the publisher's certificate\n"
"                             must be signed by this CA and name its host\n"
"      --tls-cert FILE        our certificate, for a publisher that asks\n"
"      --tls-key FILE         ... and its private key (PEM files)\n"
"      --tls-min-version V    1.3 (the default) or 1.2\n"
"      --metrics ADDR:PORT    serve GET /metrics (Prometheus) on ADDR:PORT\n"
"  -f, --format FORMAT        line (default), payload, or frame (the framed\n"
"                             stream, binary-safe; see gdkit-stream(5)), or\n"
"                             a template: %k key, %i ID, %o origin, %s\n"
"                             payload, %r resent, %t time, \\t \\n \\0 (starts\n"
"                             with %k\\t for gdack unless --no-gd)\n"
"  -i, --input FILE|-         read blocks from a framed stream (gdpub -o)\n"
"                             instead of TCP; acks still go to each block's\n"
"                             publisher, which must be one of GDsub_pub;\n"
"                             binary, or armored text lines (GDK1:...)\n"
"  -0, --null                 end each record with NUL instead of newline\n"
"  -C, --count N              exit after N unique blocks\n"
"      --linger SECS          wait for acks after stdout closed (default 10)\n"
"      --idle-timeout SECS    end cleanly when no block arrived for SECS\n"
"      --qos NAME=VALUE       IceStorm QoS, repeatable: reliability=ordered,\n"
"                             retryCount=N, connectionCached=0|1,\n"
"                             locatorCacheTimeout=SECS\n"
"  -v, --verbose              trace connections on stderr (-vv more)\n"
"  -q, --quiet                errors only\n"
"  -h, --help                 show this help\n"
"  -V, --version              show the version\n"
"\n"
"See gdsub(1), gdkit.conf(5).\n";

/* Options that set a config key (conf.c's table says which, --qos and
 * the flags --no-gd and --consecutive included) need only a distinct
 * value here; the switch in main takes the others. */
enum { O_RETRY = 256, O_MAXRETRY, O_NAME, O_NOGD, O_STATE, O_DEDUP,
	O_CONSEC, O_AUTH, O_QOS, O_LINGER, O_MAXBLOCK, O_IDLE, O_TLSCA,
	O_TLSCERT, O_TLSKEY, O_TLSMIN, O_METRICS };

/* besides the common options (cli.h): -c -f -0 -v -q -h -V --ctl */
static const struct option longopts[] = {
	{ "pub", required_argument, NULL, 'P' },
	{ "retry-interval", required_argument, NULL, O_RETRY },
	{ "max-retries", required_argument, NULL, O_MAXRETRY },
	{ "max-block-size", required_argument, NULL, O_MAXBLOCK },
	{ "name", required_argument, NULL, O_NAME },
	{ "no-gd", no_argument, NULL, O_NOGD },
	{ "state", required_argument, NULL, O_STATE },
	{ "dedup", required_argument, NULL, O_DEDUP },
	{ "consecutive", no_argument, NULL, O_CONSEC },
	{ "auth-key-file", required_argument, NULL, O_AUTH },
	{ "tls-ca", required_argument, NULL, O_TLSCA },
	{ "tls-cert", required_argument, NULL, O_TLSCERT },
	{ "tls-key", required_argument, NULL, O_TLSKEY },
	{ "tls-min-version", required_argument, NULL, O_TLSMIN },
	{ "metrics", required_argument, NULL, O_METRICS },
	{ "qos", required_argument, NULL, O_QOS },
	{ "count", required_argument, NULL, 'C' },
	{ "linger", required_argument, NULL, O_LINGER },
	{ "idle-timeout", required_argument, NULL, O_IDLE },
	{ "input", required_argument, NULL, 'i' },
	{ NULL, 0, NULL, 0 }
};

int main(int argc, char **argv)
{
	struct gd_conf conf;
	struct gd_sub_opts opt = { GD_OUT_LINE, '\n', 0, 10, NULL, 0, NULL };
	struct gd_cli cli;
	int ch, rc;
	int64_t n;

	gd_conf_init(&conf, GD_FAM_SUB);
	rc = gd_cli_begin(&cli, argc, argv, GD_CLI_ALL_OF_THEM, "P:C:i:",
	    longopts, &conf, usage);
	if (rc != 0) {
		gd_conf_free(&conf);
		return rc < 0 ? 0 : rc;
	}
	while ((ch = gd_cli_next(&cli, argc, argv)) != -1) {
		switch (ch) {
		case 'f':
			if (strcmp(optarg, "line") == 0)
				opt.format = GD_OUT_LINE;
			else if (strcmp(optarg, "payload") == 0)
				opt.format = GD_OUT_PAYLOAD;
			else if (strcmp(optarg, "frame") == 0)
				opt.format = GD_OUT_FRAME;
			else if (strchr(optarg, '%') != NULL) {
				opt.format = GD_OUT_TEMPLATE;
				opt.tmpl = optarg;
			} else {
				gd_usage_err("invalid value '%s' for --format: expected 'line', 'payload', 'frame' or a template with %%k, %%s ...",
				    optarg);
				rc = GD_EX_USAGE;
			}
			break;
		case 'C':
			if (gd_parse_i64(optarg, 1, INT64_MAX, &n) != 0) {
				gd_usage_err("invalid value '%s' for --count: expected a positive integer",
				    optarg);
				rc = GD_EX_USAGE;
			}
			opt.count = (uint64_t)n;
			break;
		case O_LINGER:
			rc = gd_cli_seconds("--linger", optarg, 0, 86400.0 * 365,
			    "seconds", &opt.linger);
			break;
		case O_IDLE:
			rc = gd_cli_seconds("--idle-timeout", optarg, 0.001,
			    86400.0 * 365, "seconds above 0", &opt.idle_timeout);
			break;
		case 'i':
			if (optarg[0] == '\0') {
				gd_usage_err("-i needs a file name, or - for standard input");
				rc = GD_EX_USAGE;
			}
			opt.in = optarg;
			break;
		default:
			rc = gd_cli_other(&cli, &conf, ch, argv);
			break;
		}
		if (rc != 0)
			goto out;
	}
	opt.delim = cli.delim;
	if (optind < argc) {
		gd_usage_err("unexpected argument '%s'", argv[optind]);
		rc = GD_EX_USAGE;
		goto out;
	}
	if ((rc = gd_cli_verbosity(cli.verbose, cli.quiet)) != 0)
		goto out;
	if ((rc = gd_conf_check(&conf, GD_FAM_SUB)) != 0)
		goto out;
	if ((rc = gd_conf_check_keys(&conf, 0, 0)) != 0)
		goto out;
	if (opt.format == GD_OUT_TEMPLATE) {
		char why[256];
		if (gd_sub_template_check(opt.tmpl, conf.gd != 0, opt.delim, why,
		    sizeof(why)) != 0) {
			gd_usage_err("invalid template '%s' for --format: %s",
			    opt.tmpl, why);
			rc = GD_EX_USAGE;
			goto out;
		}
	}
	if (opt.format == GD_OUT_FRAME && opt.delim != '\n') {
		gd_usage_err("-f frame cannot be combined with -0: frames carry "
		    "their lengths");
		rc = GD_EX_USAGE;
		goto out;
	}
	rc = gd_sub_run(&conf, &opt);
out:
	gd_conf_free(&conf);
	return rc;
}
