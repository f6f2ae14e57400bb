/* gdpub: read event blocks on stdin, publish them with guaranteed
 * delivery, report READY, ACK, NACK and REJECT on stdout. */
#include "gdkit.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
"usage: gdpub [-c FILE] [-p PORT] [options] < blocks\n"
"Publish blocks read on stdin; one status line per outcome on stdout:\n"
"READY, ACK ID, NACK ID, REJECT ID|- REASON.\n"
"\n"
"  -c, --config FILE        read GDpub_* keys from FILE (options override)\n"
"  -p, --port PORT          TCP port for subscribers (GDpub_port, required\n"
"                           unless a service manager passes a socket)\n"
"  -t, --timeout SECONDS    NACK a block not acked in time (default 10)\n"
"  -n, --num-subs N         acks needed per block; 0 turns GD off (default 0)\n"
"      --bind ADDR          listen address (default 127.0.0.1)\n"
"      --host NAME          host written into keys (default: bind address)\n"
"      --max-pending N      stop reading stdin at N pending (default 65536)\n"
"      --window N|auto      blocks in flight to the pipelines: fixed at N, or\n"
"                           adapted to their speed (auto, the default)\n"
"      --max-block-size N   REJECT larger blocks (default 1048576)\n"
"      --resend N           resend a timed-out block N times first (default 0)\n"
"      --snapshot N         replay the last N blocks to new subscribers\n"
"      --ctl PATH           control socket for gdinspect (default derived)\n"
"      --journal FILE       write-ahead journal of pending blocks\n"
"      --fsync MODE         always, batch (default) or never\n"
"      --auth-key-file FILE refuse subscribers that cannot prove this\n"
"                           pre-shared key (mode 0600 or stricter)\n"
"      --max-connections N  close connections beyond N at once (default 256)\n"
"      --tls-cert FILE      serve subscribers over TLS with this certificate\n"
"      --tls-key FILE       ... and its private key (PEM files)\n"
"      --tls-ca FILE        mutual TLS: subscribers must show a certificate\n"
"                           signed by this CA\n"
"      --tls-min-version V  1.3 (the default) or 1.2\n"
"      --metrics ADDR:PORT  serve GET /metrics (Prometheus) on ADDR:PORT\n"
"      --cluster NAME       member of multisend cluster NAME: keys @NAME/ID,\n"
"                           IDs from the input (-I or -f frame)\n"
"      --role ROLE          primary (sends at once, the default) or secondary\n"
"                           (holds each block until a pre-ack drops it or\n"
"                           GDpub_tentativePreAckTimeout forwards it)\n"
"  -f, --format FORMAT      input: line (default), or frame (a framed stream\n"
"                           as gdpub -o or gdsub -f frame write it; IDs kept)\n"
"  -I, --ids                input lines are ID<TAB>payload\n"
"  -0, --null               records end with NUL instead of newline\n"
"      --wait-ready[=SECS]  read no input before READY (exit 69 after SECS)\n"
"      --port-file FILE     write the bound port to FILE once listening (for\n"
"                           -p 0: the port the system chose)\n"
"  -o, --output FILE|-      write the framed stream there instead of serving\n"
"                           blocks over TCP (acks still come back on PORT)\n"
"      --armor              with -o: frames as text lines (GDK1:BASE64), for\n"
"                           line-oriented engines (mosquitto_pub -l, kcat)\n"
"      --armor-batch BYTES  the frames ready at once share lines up to BYTES\n"
"                           long (1 to 1048576, default 65536; 1: one frame\n"
"                           a line)\n"
"      --status FILE|-      status lines there (default stdout; stderr with -o -)\n"
"      --progress[=SECS]    a status line on stderr, 4 times a second; with\n"
"                           SECS, a line every SECS seconds instead (for logs)\n"
"      --no-progress        none (the default unless stderr is a terminal)\n"
"  -v, --verbose            trace connections on stderr (-vv more)\n"
"  -q, --quiet              errors only\n"
"  -h, --help               show this help\n"
"  -V, --version            show the version\n"
"\n"
"See gdpub(1), gdkit.conf(5).\n";

/* Options that set a config key (conf.c's table says which) need only a
 * distinct value here; the switch in main takes the others. */
enum { O_BIND = 256, O_HOST, O_MAXPEND, O_MAXBLOCK, O_RESEND, O_SNAPSHOT,
	O_JOURNAL, O_FSYNC, O_AUTH, O_CLUSTER, O_ROLE, O_WAIT, O_STATUS,
	O_PROGRESS, O_NO_PROGRESS, O_ARMOR, O_MAXCONN, O_WINDOW, O_PORT_FILE,
	O_ARMOR_BATCH, O_TLSCERT, O_TLSKEY, O_TLSCA, O_TLSMIN, O_METRICS };

/* '+': stop at the first argument, in place, so that an unexpected one
 * is reported with the option before it (gd_cli_unexpected) */
static const char shortopts[] = "+p:t:n:Io:";
/* besides the common options (cli.h): -c -f -0 -v -q -h -V --ctl */
static const struct option longopts[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "timeout", required_argument, NULL, 't' },
	{ "num-subs", required_argument, NULL, 'n' },
	{ "bind", required_argument, NULL, O_BIND },
	{ "host", required_argument, NULL, O_HOST },
	{ "max-pending", required_argument, NULL, O_MAXPEND },
	{ "window", required_argument, NULL, O_WINDOW },
	{ "max-block-size", required_argument, NULL, O_MAXBLOCK },
	{ "resend", required_argument, NULL, O_RESEND },
	{ "snapshot", required_argument, NULL, O_SNAPSHOT },
	{ "journal", required_argument, NULL, O_JOURNAL },
	{ "fsync", required_argument, NULL, O_FSYNC },
	{ "auth-key-file", required_argument, NULL, O_AUTH },
	{ "max-connections", required_argument, NULL, O_MAXCONN },
	{ "tls-cert", required_argument, NULL, O_TLSCERT },
	{ "tls-key", required_argument, NULL, O_TLSKEY },
	{ "tls-ca", required_argument, NULL, O_TLSCA },
	{ "tls-min-version", required_argument, NULL, O_TLSMIN },
	{ "metrics", required_argument, NULL, O_METRICS },
	{ "cluster", required_argument, NULL, O_CLUSTER },
	{ "role", required_argument, NULL, O_ROLE },
	{ "ids", no_argument, NULL, 'I' },
	{ "wait-ready", optional_argument, NULL, O_WAIT },
	{ "port-file", required_argument, NULL, O_PORT_FILE },
	{ "output", required_argument, NULL, 'o' },
	{ "armor", no_argument, NULL, O_ARMOR },
	{ "armor-batch", required_argument, NULL, O_ARMOR_BATCH },
	{ "status", required_argument, NULL, O_STATUS },
	{ "progress", optional_argument, NULL, O_PROGRESS },
	{ "no-progress", no_argument, NULL, O_NO_PROGRESS },
	{ NULL, 0, NULL, 0 }
};

/* The options after the prepass (-c, -h and -V are its): opt and the
 * config keys they set; 0, or an exit code. */
static int parse_options(int argc, char **argv, struct gd_cli *cli,
    struct gd_conf *conf, struct gd_pub_opts *opt)
{
	int ch, rc;

	while ((ch = gd_cli_next(cli, argc, argv)) != -1) {
		switch (ch) {
		case 'f':
			if (strcmp(optarg, "line") == 0 ||
			    strcmp(optarg, "frame") == 0) {
				opt->frame = optarg[0] == 'f';
				break;
			}
			gd_usage_err("invalid value '%s' for --format: expected 'line' or 'frame'",
			    optarg);
			return GD_EX_USAGE;
		case 'I':
			opt->ids = 1;
			break;
		case O_WAIT:
			opt->wait_ready = 1;
			if (optarg) {
				if ((rc = gd_cli_seconds("--wait-ready", optarg,
				    0.001, 86400.0 * 365, "seconds",
				    &opt->wait_ready_s)) != 0)
					return rc;
				opt->wait_ready = 2;
			}
			break;
		case 'o':
			opt->out = optarg;
			break;
		case O_PORT_FILE:
			if (optarg[0] == '\0') {
				gd_usage_err("--port-file needs a file name");
				return GD_EX_USAGE;
			}
			opt->port_file = optarg;
			break;
		case O_ARMOR:
			opt->armor = 1;
			break;
		case O_ARMOR_BATCH: {
			int64_t v;
			if (gd_parse_i64(optarg, 1, GD_PUB_ARMOR_BATCH_MAX,
			    &v) != 0) {
				gd_usage_err("invalid value '%s' for --armor-batch: "
				    "expected bytes from 1 to %u (the longest "
				    "armored line of several frames; 1: one frame "
				    "a line)", optarg, GD_PUB_ARMOR_BATCH_MAX);
				return GD_EX_USAGE;
			}
			opt->armor_batch = (size_t)v;
			break;
		}
		case O_PROGRESS:
			opt->progress = 1;
			opt->progress_every = 0;
			if (optarg && (rc = gd_cli_seconds("--progress", optarg,
			    0.25, 86400.0 * 365, "seconds from 0.25",
			    &opt->progress_every)) != 0)
				return rc;
			break;
		case O_NO_PROGRESS:
			opt->progress = 0;
			opt->progress_every = 0;
			break;
		default:
			if ((rc = gd_cli_other(cli, conf, ch, argv)) != 0)
				return rc;
			break;
		}
	}
	opt->delim = cli->delim;
	if (optind < argc)
		return gd_cli_unexpected(argv, optind, cli->longopts,
		    "blocks are read on stdin");
	return 0;
}

/* Options that do not go together, and the config as a whole: 0, or an
 * exit code after one message. */
static int check_options(struct gd_conf *conf, struct gd_pub_opts *opt,
    int verbose, int quiet)
{
	int rc, serr;

	if ((rc = gd_cli_verbosity(verbose, quiet)) != 0)
		return rc;
	opt->status = conf->pub_status;	/* GDpub_status, --status */
	/* status lines on stderr: -o - without --status */
	serr = opt->out && strcmp(opt->out, "-") == 0 && opt->status == NULL;
	if (opt->progress < 0)	/* a status line only for a person watching */
		opt->progress = !quiet && isatty(2) && !serr;
	if (opt->progress && serr) {
		gd_usage_err("--progress would mix with the status lines on "
		    "standard error (-o -); give --status a file");
		return GD_EX_USAGE;
	}
	if ((rc = gd_conf_check(conf, GD_FAM_PUB)) != 0)
		return rc;
	if (opt->frame && (opt->ids || opt->delim != '\n')) {
		gd_usage_err("-f frame cannot be combined with %s: frames carry "
		    "their IDs and lengths", opt->ids ? "--ids" : "-0");
		return GD_EX_USAGE;
	}
	if (opt->armor_batch && !opt->armor) {
		gd_usage_err("--armor-batch needs --armor: it sizes the armored "
		    "lines");
		return GD_EX_USAGE;
	}
	if (opt->armor && opt->out == NULL) {
		gd_usage_err("--armor needs -o: it armors the stream that -o "
		    "writes");
		return GD_EX_USAGE;
	}
	if (opt->out && opt->status && strcmp(opt->out, "-") == 0 &&
	    strcmp(opt->status, "-") == 0) {
		gd_usage_err("-o - and --status - would both write on standard "
		    "output; give --status a file");
		return GD_EX_USAGE;
	}
	if (opt->out && opt->out[0] == '\0') {
		gd_usage_err("-o needs a file name, or - for standard output");
		return GD_EX_USAGE;
	}
	return gd_conf_check_keys(conf, opt->ids || opt->frame,
	    opt->out != NULL);
}

/* What the service manager passed (socket activation): the listening
 * socket instead of binding GDpub_port, which it stands for; the FIFO
 * instead of stdin. 0, or an exit code after one message. */
static int take_passed(struct gd_conf *conf, struct gd_pub_opts *opt)
{
	struct gd_act a;
	int rc;

	if ((rc = gd_act_take(&a)) != 0)
		return rc;
	if (a.listen_fd >= 0) {
		if ((rc = gd_conf_check_passed(conf, a.port, a.addr,
		    a.listen_what)) != 0)
			return rc;
		conf->port = a.port;	/* the control socket's path follows */
		opt->listen_fd = a.listen_fd;
	}
	if (a.fifo_fd >= 0)
		opt->input_fd = a.fifo_fd;
	return 0;
}

int main(int argc, char **argv)
{
	struct gd_conf conf;
	struct gd_pub_opts opt;
	struct gd_cli cli;
	int rc;

	memset(&opt, 0, sizeof(opt));
	opt.progress = -1;
	gd_conf_init(&conf, GD_FAM_PUB);
	rc = gd_cli_begin(&cli, argc, argv, GD_CLI_ALL_OF_THEM, shortopts,
	    longopts, &conf, usage);
	if (rc != 0) {
		gd_conf_free(&conf);
		return rc < 0 ? 0 : rc;
	}
	if ((rc = parse_options(argc, argv, &cli, &conf, &opt)) == 0 &&
	    (rc = take_passed(&conf, &opt)) == 0 &&
	    (rc = check_options(&conf, &opt, cli.verbose, cli.quiet)) == 0)
		rc = gd_pub_run(&conf, &opt);
	gd_conf_free(&conf);
	return rc;
}
