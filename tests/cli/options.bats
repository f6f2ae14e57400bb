#!/usr/bin/env bats
# Command lines (SPEC §9: 64 bad command line, 69 port or control socket
# unavailable): each error names the option and the value, then
# "try 'PROG --help'"; --help and --version; the control socket's
# directory and modes.
bats_require_minimum_version 1.5.0
load helpers

# ---- --help, --version ----

@test "--help and -h: usage on stdout, exit 0, for every program" {
	local p o
	for p in gdpub gdsub gdack gdinspect; do
		for o in --help -h; do
			run --separate-stderr timeout 30 "$p" "$o" </dev/null
			assert_success
			[ -z "$stderr" ]
			assert_line --index 0 --regexp "^usage: $p "
		done
	done
}

@test "--help wins over a bad config file and other options" {
	printf 'bogus\n' > bad.ini
	run --separate-stderr timeout 30 gdpub -c bad.ini -p 1 --help </dev/null
	assert_success
	assert_line --index 0 --regexp '^usage: gdpub '
}

@test "--version and -V: version on stdout, exit 0, for every program" {
	local p o
	for p in gdpub gdsub gdack gdinspect; do
		for o in --version -V; do
			run --separate-stderr timeout 30 "$p" "$o" </dev/null
			assert_success
			[ -z "$stderr" ]
			assert_output --regexp "^$p \(gdkit\) [0-9]+\.[0-9]+\.[0-9]+$"
		done
	done
}

# ---- unknown options, missing values ----

@test "unknown option, short and long, for every program" {
	local p
	for p in gdpub gdsub gdack gdinspect; do
		expect_usage "$p" "unknown option '-x'" -- "$p" -x
		expect_usage "$p" "unknown option '--bogus'" -- "$p" --bogus
	done
}

@test "missing option value, short and long" {
	expect_usage gdpub "option '-p' needs a value" -- gdpub -p
	expect_usage gdpub "option '--port' needs a value" -- gdpub --port
	expect_usage gdpub "option '--timeout' needs a value" -- gdpub -p 1 --timeout
	expect_usage gdsub "option '-P' needs a value" -- gdsub -P
	expect_usage gdsub "option '--count' needs a value" -- gdsub -P 127.0.0.1:1 --count
	expect_usage gdack "option '--wait' needs a value" -- gdack --wait
	expect_usage gdack "option '-c' needs a value" -- gdack -c
	expect_usage gdinspect "option '--ctl' needs a value" -- gdinspect --ctl
	expect_usage gdinspect "option '--watch' needs a value" -- gdinspect --watch
}

# ---- bad values ----

@test "gdpub: bad numeric values echo the value and the range" {
	expect_usage gdpub "invalid value 'abc' for --port: expected an integer from 0 to 65535" -- gdpub -p abc
	expect_usage gdpub "invalid value '70000' for --port: expected an integer from 0 to 65535" -- gdpub -p 70000
	expect_usage gdpub "invalid value '-1' for --port: expected an integer from 0 to 65535" -- gdpub --port -1
	expect_usage gdpub "invalid value '-1' for --timeout: expected seconds from 0.001 to 3.1536e+07" -- gdpub -p 1 --timeout -1
	expect_usage gdpub "invalid value '33' for --num-subs: expected an integer from 0 to 32" -- gdpub -p 1 -n 33
	expect_usage gdpub "invalid value '-1' for --resend: expected an integer from 0 to 255" -- gdpub -p 1 --resend -1
	expect_usage gdpub "invalid value 'soon' for --wait-ready: expected seconds" -- gdpub -p 1 --wait-ready=soon
	expect_usage gdpub "invalid value 'xml' for --format: expected 'line' or 'frame'" -- gdpub -p 1 -f xml
}

@test "gdsub: bad values echo the value" {
	expect_usage gdsub "invalid value '0' for --count: expected a positive integer" -- gdsub -P 127.0.0.1:1 -C 0
	expect_usage gdsub "invalid value 'many' for --count: expected a positive integer" -- gdsub -P 127.0.0.1:1 --count many
	expect_usage gdsub "invalid value 'nohost' for --pub: expected HOST:PORT with PORT from 1 to 65535 ([ADDR]:PORT for IPv6)" -- gdsub -P nohost
	# a port out of range names the range
	expect_usage gdsub "invalid value 'localhost:99999' for --pub: expected HOST:PORT with PORT from 1 to 65535 ([ADDR]:PORT for IPv6)" -- gdsub -P localhost:99999
	expect_usage gdsub "invalid value '-2' for --max-retries: expected an integer from -1 to 1073741824" -- gdsub -P 127.0.0.1:1 --max-retries -2
	expect_usage gdsub "invalid value '0' for --retry-interval: expected seconds from 0.001 to 3.1536e+07" -- gdsub -P 127.0.0.1:1 --retry-interval 0
	expect_usage gdsub "invalid value 'later' for --linger: expected seconds" -- gdsub -P 127.0.0.1:1 --linger later
	expect_usage gdsub "invalid value 'xml' for --format: expected 'line', 'payload', 'frame' or a template with %k, %s ..." -- gdsub -P 127.0.0.1:1 -f xml
	expect_usage gdsub "invalid value 'bogus=1' for --qos: expected reliability=, retryCount=, connectionCached= or locatorCacheTimeout=" -- gdsub -P 127.0.0.1:1 --qos bogus=1
}

@test "gdack and gdinspect: bad values echo the value" {
	expect_usage gdack "invalid value 'soon' for --wait: expected seconds" -- gdack --ctl x.sock --wait soon
	expect_usage gdack "invalid value 'nohost' for --pub: expected HOST:PORT with PORT from 1 to 65535 ([ADDR]:PORT for IPv6)" -- gdack -P nohost
	expect_usage gdack "invalid value 'xml' for --format: expected 'line', 'frame' or 'status'" -- gdack --ctl x.sock -f xml
	expect_usage gdinspect "invalid value '0' for --watch: expected seconds from 0.05" -- gdinspect --ctl x.sock --watch 0 stats
}

# A host that keys (HOST:PORT/ID) and stream origins cannot carry is
# refused at startup, naming the value and what is allowed; valid ones
# (a name with '_', IPv4, IPv6) are written into the keys as they are.
@test "gdpub --host: a value keys cannot carry is refused (64); names, IPv4 and IPv6 are used" {
	local v port
	local what="expected a host name (at most 253 letters, digits, '-', '.' and '_'), an IPv4 or an IPv6 address"
	for v in a/b 'a b' $'a\tb' 'hé' a:b '::1%lo' '[::1]' "$(printf 'a%.0s' {1..254})"; do
		expect_usage gdpub "invalid value '$v' for --host: $what" -- gdpub -p 1 --host "$v"
	done
	for v in pub_1.example 10.0.0.1 ::1; do
		run --separate-stderr bash -c "echo x | timeout 20 gdpub -p 0 --port-file pub.port --host $v -o - | gdinspect decode --json"
		assert_success
		port=$(cat pub.port)
		assert_equal "$stderr" ""
		[ "$(echo "$output" | head -n 1 | python -c 'import json, sys; print(json.load(sys.stdin)["key"])')" = \
		    "$([ "$v" = ::1 ] && echo "[::1]" || echo "$v"):$port/1" ]
	done
}

# Without --host the key's host is the bind address, or for a wildcard
# bind the host name, which must pass the same check (a private UTS
# namespace gives gdpub a host name with a '/').
@test "gdpub: a host name keys cannot carry is refused (78), telling to set --host" {
	local ns port
	if unshare -u true 2>/dev/null; then ns="unshare -u"
	elif unshare -ur true 2>/dev/null; then ns="unshare -ur"
	else skip "no UTS namespace (unshare -u) to set a host name in"; fi
	run --separate-stderr timeout 20 $ns bash -c "printf 'bad/host' > /proc/sys/kernel/hostname && exec gdpub -p 0 --port-file pub.port --bind 0.0.0.0 -o - < /dev/null"
	assert_equal "$status" 78
	assert_equal "$output" ""
	assert_equal "$stderr" "gdpub: cannot use host name 'bad/host' in block keys: expected a host name (at most 253 letters, digits, '-', '.' and '_'), an IPv4 or an IPv6 address; set --host or GDpub_host"
	# --host overrides the host name
	run --separate-stderr timeout 20 $ns bash -c "printf 'bad/host' > /proc/sys/kernel/hostname && echo x | gdpub -p 0 --port-file pub.port --bind 0.0.0.0 --host pubhost -o - | gdinspect decode --json"
	assert_success
	port=$(cat pub.port)
	assert_line --index 0 --partial "\"key\":\"pubhost:$port/1\""
}

# ---- required keys, arguments, conflicts ----

@test "missing required key: no port, no publisher, no gdsub, no target" {
	expect_usage gdpub "no port given: set GDpub_port in the config file or use --port" -- gdpub -n 1
	printf 'GDpub_timeout=5\n' > p.ini
	expect_usage gdpub "no port given: set GDpub_port in the config file or use --port" -- gdpub -c p.ini
	expect_usage gdsub "no publisher given: set GDsub_pub in the config file or use --pub HOST:PORT" -- gdsub
	printf 'GDsub_retryInt=1\n' > s.ini
	expect_usage gdsub "no publisher given: set GDsub_pub in the config file or use --pub HOST:PORT" -- gdsub -c s.ini
	expect_usage gdack "cannot find gdsub: give -c FILE, --name, --pub or --ctl as it was started with" -- gdack --tee
	expect_usage gdinspect "no target: give -c FILE (a gdpub or gdsub config), -p PORT (a gdpub), -P HOST:PORT or --name NAME (a gdsub) or --ctl PATH" -- gdinspect stats
}

@test "unexpected argument" {
	expect_usage gdpub "unexpected argument 'blocks.txt': blocks are read on stdin" -- gdpub -p 1 blocks.txt
	expect_usage gdsub "unexpected argument 'extra'" -- gdsub -P 127.0.0.1:1 extra
	expect_usage gdinspect "unexpected argument 'extra' after pending" -- gdinspect --ctl x.sock pending extra
	expect_usage gdinspect "no command given (pending, subs, stats, measure, decode or journal)" -- gdinspect --ctl x.sock
}

@test "gdpub --wait-ready 5: the value of an optional argument needs '=', and the error says so" {
	local hint="unexpected argument '5': blocks are read on stdin (did you mean --wait-ready=5?)"
	expect_usage gdpub "$hint" -- gdpub -p 1 --wait-ready 5
	expect_usage gdpub "$hint" -- gdpub --wait-ready 5 -p 1
	expect_usage gdpub "$hint" -- gdpub -p 1 --wait 5	# getopt's prefix
	# no hint where the option had its value or takes a required one
	expect_usage gdpub "unexpected argument 'x': blocks are read on stdin" -- gdpub -p 1 --wait-ready=5 x
	expect_usage gdpub "unexpected argument 'x': blocks are read on stdin" -- gdpub --timeout 5 x -p 1
	expect_usage gdpub "unexpected argument 'x': blocks are read on stdin" -- gdpub -p 1 -- x
}

@test "-v with -q is refused" {
	expect_usage gdpub "cannot use -v and -q together" -- gdpub -p 1 -v -q
	expect_usage gdsub "cannot use -v and -q together" -- gdsub -P 127.0.0.1:1 -q -v
	expect_usage gdack "cannot use -v and -q together" -- gdack --ctl x.sock --verbose --quiet
}

@test "gdsub: --state with --no-gd is refused, from options (64) or keys (78, file and line)" {
	expect_usage gdsub "cannot use --state (GDsub_state) with --no-gd (GDsub_gd=0): nothing is acknowledged" -- gdsub -P 127.0.0.1:1 --state s.state --no-gd
	printf 'GDsub_pub=127.0.0.1:1\nGDsub_state=s.state\nGDsub_gd=0\n' > s.ini
	expect_fail 78 "gdsub: s.ini:2: cannot use --state (GDsub_state) with --no-gd (GDsub_gd=0): nothing is acknowledged (GDsub_gd on line 3)" -- gdsub -c s.ini
	expect_usage gdsub "cannot use --state (GDsub_state) with --no-gd (GDsub_gd=0): nothing is acknowledged" -- gdsub -c s.ini --no-gd
	[ ! -e s.state ]
}

@test "stream mode: options that do not go together are refused" {
	expect_usage gdpub "-f frame cannot be combined with --ids: frames carry their IDs and lengths" -- gdpub -p 1 -f frame --ids
	expect_usage gdpub "-f frame cannot be combined with -0: frames carry their IDs and lengths" -- gdpub -p 1 -f frame -0
	expect_usage gdpub "GDpub_snapshot cannot be used with -o: a stream has no subscribers joining later to replay blocks to" -- gdpub -p 1 -o - --snapshot 3
	expect_usage gdpub "-o needs a file name, or - for standard output" -- gdpub -p 1 -o ''
	expect_usage gdpub "-o - and --status - would both write on standard output; give --status a file" -- gdpub -p 1 -o - --status -
	expect_usage gdsub "-f frame cannot be combined with -0: frames carry their lengths" -- gdsub -P 127.0.0.1:1 -f frame -0
	expect_usage gdsub "-i needs a file name, or - for standard input" -- gdsub -P 127.0.0.1:1 -i ''
	expect_usage gdack "-f frame cannot be combined with -0: frames carry their lengths" -- gdack --ctl x.sock -f frame -0
	expect_usage gdack "unexpected argument 'k': with -f frame the stream is read on stdin" -- gdack --ctl x.sock -f frame k
}

@test "gdinspect: an unknown command, journal without its file or with two" {
	expect_usage gdinspect "unknown command 'frobnicate' (pending, subs, stats, measure, decode or journal)" -- gdinspect --ctl x.sock frobnicate
	expect_usage gdinspect "journal needs a FILE" -- gdinspect journal
	expect_usage gdinspect "unexpected argument 'b' after journal FILE" -- gdinspect journal a b
	expect_usage gdinspect "cannot use --watch with journal" -- gdinspect --watch 1 journal a
	expect_fail 74 "gdinspect: cannot open journal 'nosuch.gdj': No such file or directory" -- gdinspect journal nosuch.gdj
}

# ---- port and control socket ----

@test "gdpub: port already in use -> 69 cannot listen on" {
	hold_port port
	# SO_REUSEADDR: to bind the port hold_port keeps bound
	spawn "exec python -c 'import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"127.0.0.1\", $port)); s.listen(1); time.sleep(300)'"
	wait_until 20 listening "$port"
	expect_fail 69 "gdpub: cannot listen on 127.0.0.1 port $port: address already in use" -- gdpub -p "$port"
	# nothing is left behind: no control socket
	[ ! -e "$(pub_sock "$port")" ]
}

@test "gdsub: a second gdsub with the same config takes the control socket over; one of another name, or a gdpub's socket -> 69" {
	hold_port dead
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.2\nGDsub_maxRetries=-1\n' "$dead" > s.ini
	spawn "gdsub -c s.ini > sub1.out 2> sub1.err; echo \$? > sub1.rc"
	wait_until 20 sub_sock
	sock=$(sub_sock)
	# the same file named another way is the same config: it takes over,
	# the first one finishes (nothing unacknowledged: status 0)
	spawn "gdsub -c $BATS_TEST_TMPDIR/./s.ini > sub2.out 2> sub2.err; echo \$? > sub2.rc"
	wait_until 20 test -s sub1.rc
	assert_equal "$(cat sub1.rc)" 0
	wait_until 20 has_line sub2.err "took over control socket $sock from the gdsub"
	run timeout 30 gdinspect -c s.ini subs
	assert_success
	assert_line --index 1 --regexp "^127\.0\.0\.1:$dead "
	# another name on the same socket: refused, the one there goes on
	run --separate-stderr timeout 30 gdsub -P "127.0.0.1:$dead" --name other --ctl "$sock"
	assert_failure 69
	[[ "$stderr" == "gdsub: cannot use control socket $sock: the gdsub (pid "*") serving it does not give it up: this gdsub is named '"*"', not 'other'" ]]
	run ! test -s sub2.rc
	# a gdpub's socket
	spawn "exec sleep 120 | gdpub -p 0 --port-file pub.port --ctl $BATS_TEST_TMPDIR/pub.sock > pub1.out 2> pub1.err"
	port=$(port_of pub.port)
	wait_until 20 test -S pub.sock
	expect_fail 69 "gdsub: cannot use control socket $BATS_TEST_TMPDIR/pub.sock: another program (gdpub) is serving it (give --ctl or a different config)" -- gdsub -P "127.0.0.1:$dead" --ctl "$BATS_TEST_TMPDIR/pub.sock"
}

@test "gdpub: a control socket another gdpub serves (--ctl) -> 69" {
	spawn "exec sleep 120 | gdpub -p 0 --port-file pub1.port --ctl $BATS_TEST_TMPDIR/pub.sock > pub1.out 2> pub1.err"
	wait_until 20 test -S pub.sock
	expect_fail 69 "gdpub: cannot use control socket $BATS_TEST_TMPDIR/pub.sock: another program is serving it (give --ctl or a different config)" -- gdpub -p 0 --port-file pub2.port --ctl "$BATS_TEST_TMPDIR/pub.sock"
	run timeout 30 gdinspect --ctl pub.sock stats
	assert_success
}

@test "control socket directory is 0700 and the socket 0600, whatever the umask" {
	spawn "umask 000; exec sleep 120 | gdpub -p 0 --port-file pub.port > pub.out 2> pub.err"
	port=$(port_of pub.port)
	wait_until 20 test -S "$(pub_sock "$port")"
	[ "$(stat -c %a "$XDG_RUNTIME_DIR/gdkit")" = 700 ]
	[ "$(stat -c %a "$(pub_sock "$port")")" = 600 ]
	[ "$(stat -c %u "$(pub_sock "$port")")" = "$(id -u)" ]
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.05\nGDsub_maxRetries=400\n' "$port" > s.ini
	spawn "umask 000; exec gdsub -c s.ini > sub.out 2> sub.err"
	wait_until 20 sub_sock
	[ "$(stat -c %a "$(sub_sock)")" = 600 ]
}

@test "a control socket directory with mode 0755 is refused (69)" {
	mkdir -m 755 "$XDG_RUNTIME_DIR/gdkit"
	msg="refusing control socket directory $XDG_RUNTIME_DIR/gdkit: it must be a directory of yours with mode 0700"
	hold_port port
	expect_fail 69 "gdpub: $msg" -- gdpub -p "$port"
	run ! listening "$port"
	expect_fail 69 "gdsub: $msg" -- gdsub -P "127.0.0.1:$port"
	[ -z "$(ls -A "$XDG_RUNTIME_DIR/gdkit")" ]
	[ "$(stat -c %a "$XDG_RUNTIME_DIR/gdkit")" = 755 ]
}

@test "a control socket directory that is a symlink is refused (69)" {
	mkdir -m 700 real
	ln -s "$BATS_TEST_TMPDIR/real" "$XDG_RUNTIME_DIR/gdkit"
	hold_port port
	expect_fail 69 "gdpub: refusing control socket directory $XDG_RUNTIME_DIR/gdkit: it must be a directory of yours with mode 0700" -- gdpub -p "$port"
}

@test "a stale control socket is replaced" {
	hold_port port
	mkdir -m 700 "$XDG_RUNTIME_DIR/gdkit"
	sock=$(pub_sock "$port")
	python -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$sock"
	[ -S "$sock" ]
	spawn "exec sleep 120 | gdpub -p $port > pub.out 2> pub.err"
	wait_until 20 timeout 5 gdinspect --ctl "$sock" stats
	run timeout 30 gdinspect --ctl "$sock" stats
	assert_success
	assert_line --index 0 --regexp '^PUBLISHED +ACK +NACK +REJECT +RESENT'
}

@test "a file that is not a socket in the control socket's place -> 69" {
	hold_port port
	mkdir -m 700 "$XDG_RUNTIME_DIR/gdkit"
	sock=$(pub_sock "$port")
	echo precious > "$sock"
	expect_fail 69 "gdpub: cannot use control socket $sock: a file that is not a socket is in the way" -- gdpub -p "$port"
	[ "$(cat "$sock")" = precious ]
}

# ---- the mains' shape (STYLE: thin mains over the library's public tier) ----

@test "src/: each main includes gdkit.h and no other header of lib/" {
	local src="$BATS_TEST_DIRNAME/../../src" lib="$BATS_TEST_DIRNAME/../../lib" f h
	for f in "$src"/gd*.c; do
		grep -q '^#include "gdkit.h"$' "$f"
		for h in $(grep -oE '^#include "[^"]+"' "$f" | cut -d'"' -f2); do
			[ "$h" = gdkit.h ] || { echo "$f includes $h"; false; }
		done
		# the option -> key map is conf.c's table: no key named in a main
		run ! grep -nE '"GD(pub|sub)_[A-Za-z]+"' "$f"
	done
	[ -f "$lib/gdkit.h" ]
}

# A copy of the sources whose mk/deps.sh takes a second and leaves a mark,
# built with a compiler that refuses to run before the mark is there: the
# Makefile's order, not the speed of the machine, decides who goes first.
# The inner make must not inherit the outer one's variables (make check
# SANITIZE=1 passes SANITIZE=1 down through MAKEFLAGS).
build_copy() {
	local top="$BATS_TEST_DIRNAME/../.." d="$BATS_TEST_TMPDIR/tree"
	mkdir -p "$d/tests"
	cp -R "$top/Makefile" "$top/lib" "$top/src" "$top/mk" "$d/"
	cp -R "$top/tests/unit" "$top/tests/fuzz" "$d/tests/"
	printf '#!/bin/sh\n[ "$1" = build ] || exit 0\nsleep 1\n: > "%s/deps-done"\n' "$d" > "$d/mk/deps.sh"
	printf '#!/bin/sh\n[ -e "%s/deps-done" ] || { echo "cc before deps: $*" >&2; exit 1; }\nexec cc "$@"\n' "$d" > "$d/cc-after-deps"
	chmod +x "$d/cc-after-deps"
	echo "$d"
}

@test "make: every object waits for the dependency step (rel, san, bench)" {
	local d v
	d=$(build_copy)
	for v in rel san bench; do
		case $v in rel) o= ;; san) o=SANITIZE=1 ;; bench) o=BENCH=1 ;; esac
		rm -f "$d/deps-done"
		run timeout 120 env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE -u BENCH -u FUZZ make -C "$d" -j2 --no-print-directory $o CC="$d/cc-after-deps" \
			"build/$v/lib/log.o" "build/$v/lib/parse.o" "build/$v/lib/wire.o"
		assert_success
		refute_output --partial "cc before deps"
		[ -s "$d/build/$v/lib/log.o" ]
		[ -s "$d/build/$v/lib/wire.o" ]
	done
}

@test "make: src/ compiles seeing lib/gdkit.h and no other header of lib/" {
	local d
	d=$(build_copy)
	run timeout 120 env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE -u BENCH -u FUZZ make -C "$d" -j2 --no-print-directory CC="$d/cc-after-deps" build/rel/src/gdack.o
	assert_success
	refute_output --partial "cc before deps"
	echo '#include "pending.h"' >> "$d/src/gdack.c"
	# file times are coarse (a kernel tick): written in the tick the
	# object was, the source would look no newer and nothing be rebuilt
	rm "$d/build/rel/src/gdack.o"
	run timeout 120 env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE -u BENCH -u FUZZ make -C "$d" --no-print-directory CC="$d/cc-after-deps" build/rel/src/gdack.o
	assert_failure
	assert_output --partial 'pending.h'
}
