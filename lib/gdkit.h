/* gdkit's public interface: the one header the programs in src/ include.
 * It gathers the public tier of the library (libuv's uv.h to its
 * uv-common.h): messages and exit codes, strict number parsing, the
 * config keys and their options, the main skeleton, and each program's
 * engine entry point. Every other header in lib/ is internal (the
 * engines' parts, codecs, the control socket, libuv plumbing): a main
 * that needs one of them needs a function added here instead. */
#ifndef GDKIT_H
#define GDKIT_H

#include "log.h"	/* gd_err, gd_usage_err ...; enum gd_exit (SPEC §9) */
#include "parse.h"	/* gd_parse_i64, gd_parse_dur: the mains' own options */
#include "conf.h"	/* struct gd_conf, the key table */
#include "cli.h"	/* gd_cli_*: the main skeleton, key options */
#include "activate.h"	/* gd_act_take: fds from the service manager */

#include "pub/pub.h"	/* gd_pub_run */
#include "sub/sub.h"	/* gd_sub_run */
#include "ack_client.h"	/* gd_ack_run */
#include "inspect.h"	/* gd_inspect_run */
#include "decode.h"	/* gd_decode_file: gdinspect decode */
#include "measure.h"	/* gd_measure_files: gdinspect measure */

#endif
