#!/usr/bin/env bats
# The control socket against other users and silent peers (issue 33,
# items 6 and 7; issue 34): a socket path is removed only when it is ours
# and refuses the connection; a runtime directory another user created
# first is left for ~/.gdkit/HOST, which every program finds; gdinspect
# waits a bounded time (--timeout) and escapes what a peer says; it finds
# a gdsub from the options it was started with (-P, --name).

load helpers
bats_require_minimum_version 1.5.0

# root_ok: tests that give a file to another user (chown) run as root
root_ok() {
	[ "$(id -u)" -eq 0 ] || skip "needs root to give files to another user"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
}

# nobody_ok: RUNAS runs a command as nobody, who can reach this test's
# directory
nobody_ok() {
	root_ok
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	RUNAS="setpriv --reuid=$(id -u nobody) --regid=$(id -g nobody) --clear-groups"
	$RUNAS true || skip "setpriv cannot switch users here"
	local d=$BATS_TEST_TMPDIR
	while [ "$d" != / ] && [ "$d" != /tmp ]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
}

nobody_name() {
	echo "nobody (uid $(id -u nobody))"
}

me_name() {
	echo "$(id -un) (uid $(id -u))"
}

# bind_sock PATH: a unix socket bound at PATH that nothing serves (the
# process that bound it is gone): connecting is refused
bind_sock() {
	python -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$1"
}

# ---- removing a socket path: only ours, only stale ----

@test "a stale control socket of another user is left alone: 69, naming its owner (before: removed)" {
	root_ok
	mkdir -m 777 shared
	bind_sock shared/pub.sock
	chown nobody shared/pub.sock
	expect_fail 69 "gdpub: cannot use control socket $BATS_TEST_TMPDIR/shared/pub.sock: nothing serves it, but it belongs to $(nobody_name), not to you, $(me_name): not removing it (give --ctl or a different config)" -- gdpub -q -p 0 --ctl "$BATS_TEST_TMPDIR/shared/pub.sock"
	[ -S shared/pub.sock ]
	[ "$(stat -c %U shared/pub.sock)" = nobody ]
	expect_fail 69 "gdsub: cannot use control socket $BATS_TEST_TMPDIR/shared/pub.sock: nothing serves it, but it belongs to $(nobody_name), not to you, $(me_name): not removing it (give --ctl or a different config)" -- gdsub -P 127.0.0.1:1 --ctl "$BATS_TEST_TMPDIR/shared/pub.sock"
	[ -S shared/pub.sock ]
}

@test "a stale control socket of ours is still replaced, at a path given with --ctl" {
	bind_sock mine.sock
	spawn "exec gdpub -p 0 --port-file pub.port --ctl $BATS_TEST_TMPDIR/mine.sock < <(sleep 300) > pub.out 2> pub.err"
	port_of pub.port
	wait_until 20 timeout 5 gdinspect --ctl mine.sock stats
	run ! grep -q . pub.err
}

@test "another user's gdpub cannot remove a live socket it may not connect to (EACCES): 69, the socket serves on (before: removed)" {
	nobody_ok
	mkdir -m 777 shared	# writable by all, not sticky
	spawn "exec gdpub -p 0 --port-file pub.port --ctl $BATS_TEST_TMPDIR/shared/pub.sock < <(sleep 300) > pub.out 2> pub.err"
	port_of pub.port
	wait_until 20 test -S shared/pub.sock
	[ "$(stat -c %a shared/pub.sock)" = 600 ]
	run --separate-stderr timeout 30 $RUNAS "$GDKIT_BIN/gdpub" -q -p 0 --ctl "$BATS_TEST_TMPDIR/shared/pub.sock" </dev/null
	assert_failure 69
	assert_equal "$stderr" "gdpub: cannot use control socket $BATS_TEST_TMPDIR/shared/pub.sock: cannot tell whether a program serves it: Permission denied (give --ctl or a different config)"
	[ -S shared/pub.sock ]
	run --separate-stderr timeout 30 gdinspect --ctl shared/pub.sock --json stats
	assert_success
	[[ "$output" == '{"published":0,'* ]]
}

# ---- a runtime directory another user created first ----

@test "a control socket directory another user created first: a warning naming the owner, ~/.gdkit/HOST instead, and gdinspect and gdack find it (before: 69)" {
	root_ok
	export HOME=$BATS_TEST_TMPDIR/home
	mkdir -m 700 "$HOME" "$XDG_RUNTIME_DIR/gdkit"
	chown nobody "$XDG_RUNTIME_DIR/gdkit"
	host=$(hostname)
	alt="$HOME/.gdkit/$host"
	warn="warning: control socket directory $XDG_RUNTIME_DIR/gdkit belongs to $(nobody_name), not to you, $(me_name): using $alt instead"
	feed_open in.fifo
	spawn "exec gdpub -p 0 --port-file pub.port -n 1 -t 60 < in.fifo > pub.out 2> pub.err" 7>&-
	port=$(port_of pub.port)
	wait_until 20 test -S "$alt/pub-$port.sock"
	[ "$(stat -c %a "$HOME/.gdkit")" = 700 ]
	[ "$(stat -c %a "$alt")" = 700 ]
	grep -qxF "gdpub: $warn" pub.err
	run --separate-stderr timeout 30 gdinspect -p "$port" --json stats
	assert_success
	[[ "$output" == '{"published":0,'* ]]
	assert_equal "$stderr" "gdinspect: $warn"
	# a pipeline started with -P: gdsub and gdack meet in the same place
	spawn "gdsub -P 127.0.0.1:$port --retry-interval 0.05 --max-retries 200 2> sub.err | gdack -P 127.0.0.1:$port 2> ack.err" 7>&-
	wait_until 20 compgen -G "$alt/sub-*.sock"
	wait_until 20 has_line pub.out '^READY$'
	printf 'a\nb\n' >&7
	wait_until 30 has_line pub.out '^ACK 2$'
	has_line pub.out '^ACK 1$'
	grep -qxF "gdsub: $warn" sub.err
	# nothing was put in the other user's directory
	[ -z "$(ls -A "$XDG_RUNTIME_DIR/gdkit")" ]
	feed_close
}

@test "the default /tmp/gdkit-UID created first by another user: ~/.gdkit/HOST instead, found by gdinspect" {
	root_ok
	command -v unshare >/dev/null || skip "no unshare"
	unshare -m true 2>/dev/null || skip "cannot make a mount namespace here"
	mkdir -m 1777 ftmp
	mkdir -m 700 home "ftmp/gdkit-$(id -u)"
	chown nobody "ftmp/gdkit-$(id -u)"
	# the programs go along: a checkout under /tmp is hidden below
	mkdir bin
	cp "$GDKIT_BIN/gdpub" "$GDKIT_BIN/gdinspect" bin/
	# in a mount namespace of its own: this test's directory at /mnt, its
	# ftmp over /tmp, so that the real /tmp is left alone
	cat > run.sh <<'EOF'
mount --bind "$1" /mnt && mount --bind /mnt/ftmp /tmp && cd /mnt || exit 99
PATH=/mnt/bin:$PATH
unset XDG_RUNTIME_DIR
export HOME=/mnt/home
gdpub -p 0 --port-file pub.port < <(sleep 60) > pub.out 2> pub.err &
pid=$!
for _ in $(seq 600); do [ -s pub.port ] && break; sleep 0.05; done
timeout 30 gdinspect -p "$(cat pub.port)" --json stats > insp.out 2> insp.err
echo $? > insp.rc
kill "$pid"
EOF
	run timeout 60 unshare -m bash run.sh "$BATS_TEST_TMPDIR"
	[ "$status" -ne 99 ] || skip "cannot bind-mount here"
	assert_equal "$(cat insp.rc)" 0
	[[ "$(cat insp.out)" == '{"published":0,'* ]]
	warn="warning: control socket directory /tmp/gdkit-$(id -u) belongs to $(nobody_name), not to you, $(me_name): using /mnt/home/.gdkit/$(hostname) instead"
	grep -qxF "gdpub: $warn" pub.err
	grep -qxF "gdinspect: $warn" insp.err
	[ -d "home/.gdkit/$(hostname)" ]
	[ -z "$(ls -A "ftmp/gdkit-$(id -u)")" ]
}

@test "a control socket directory of ours with mode 0755 is still refused, not replaced (69)" {
	mkdir -m 755 "$XDG_RUNTIME_DIR/gdkit"
	hold_port port
	expect_fail 69 "gdpub: refusing control socket directory $XDG_RUNTIME_DIR/gdkit: it must be a directory of yours with mode 0700" -- gdpub -p "$port"
}

# ---- gdinspect: a bounded wait, escaped answers ----

@test "gdinspect --timeout: a stopped gdpub -> 69 naming the socket, in about the time given (before: waited forever)" {
	spawn "exec gdpub -p 0 --port-file pub.port < <(sleep 300) > pub.out 2> pub.err"
	port=$(port_of pub.port)
	wait_until 20 timeout 5 gdinspect -p "$port" stats
	kill -STOP "$SPAWNED"
	expect_fail 69 "gdinspect: no answer from $(pub_sock "$port") within 0.5 seconds: is its program stopped or stuck?" -- gdinspect -p "$port" --timeout 0.5 stats
	# the default: 5 seconds
	expect_fail 69 "gdinspect: no answer from $(pub_sock "$port") within 5 seconds: is its program stopped or stuck?" -- gdinspect -p "$port" pending
	kill -CONT "$SPAWNED"
	run --separate-stderr timeout 30 gdinspect -p "$port" --timeout 10 stats
	assert_success
}

@test "gdinspect --timeout: a stopped gdsub, found by -P, -> 69" {
	spawn "exec gdpub -p 0 --port-file pub.port < <(sleep 300) > pub.out 2> pub.err"
	port=$(port_of pub.port)
	spawn "exec gdsub -P 127.0.0.1:$port > sub.out 2> sub.err"
	sub=$SPAWNED
	wait_until 20 timeout 5 gdinspect -P "127.0.0.1:$port" subs
	kill -STOP "$sub"
	expect_fail 69 "gdinspect: no answer from $(sub_sock) within 0.3 seconds: is its program stopped or stuck?" -- gdinspect -P "127.0.0.1:$port" --timeout 0.3 subs
	kill -CONT "$sub"
}

@test "gdinspect --timeout: a socket whose program says nothing -> 69" {
	fake_ctl "$BATS_TEST_TMPDIR/quiet.sock" ""
	expect_fail 69 "gdinspect: no answer from quiet.sock within 0.2 seconds: is its program stopped or stuck?" -- gdinspect --ctl quiet.sock --timeout 0.2 stats
}

@test "gdinspect: control bytes in an answer are printed escaped, never raw (before: echoed to the terminal)" {
	fake_ctl "$BATS_TEST_TMPDIR/junk.sock" $'hello \x1b[2J\x07 gdpub 2'
	expect_fail 69 'gdinspect: unexpected answer from junk.sock: hello \x1b[2J\x07 gdpub 2' -- gdinspect --ctl junk.sock stats
	fake_ctl "$BATS_TEST_TMPDIR/no.sock" $'error go \x1b]0;away\x07'
	expect_fail 69 'gdinspect: no.sock refused the connection: go \x1b]0;away\x07' -- gdinspect --ctl no.sock stats
	fake_ctl "$BATS_TEST_TMPDIR/tab.sock" 'hello gdpub 2' $'stats 1\nname:s\tx:n\nev\x1b[31mil\t1'
	run --separate-stderr timeout 30 gdinspect --ctl tab.sock stats
	assert_success
	assert_line --index 1 'ev\x1b[31mil  1'
	run --separate-stderr timeout 30 gdinspect --ctl tab.sock --json stats
	assert_success
	assert_output '{"name":"ev\u001b[31mil","x":1}'
}

@test "gdinspect --timeout: bad values -> 64" {
	expect_usage gdinspect "invalid value '0' for --timeout: expected seconds above 0" -- gdinspect -p 7001 --timeout 0 stats
	expect_usage gdinspect "invalid value 'x' for --timeout: expected seconds above 0" -- gdinspect -p 7001 --timeout x stats
}

# ---- gdinspect finds a gdsub from its options ----

@test "gdinspect -P HOST:PORT --name N finds the gdsub started with -P HOST:PORT --name N (before: no such options)" {
	spawn "exec gdpub -p 0 --port-file pub.port < <(sleep 300) > pub.out 2> pub.err"
	port=$(port_of pub.port)
	spawn "exec gdsub -P 127.0.0.1:$port --name alpha --retry-interval 0.05 --max-retries 200 > a.out 2> a.err"
	spawn "exec gdsub -P 127.0.0.1:$port --retry-interval 0.05 --max-retries 200 > b.out 2> b.err"
	check='import json, sys; d = json.loads(sys.stdin.read()); assert d["state"] == "connected", d'
	wait_until 20 timeout 5 gdinspect -P "127.0.0.1:$port" --name alpha subs
	run --separate-stderr timeout 30 gdinspect -P "127.0.0.1:$port" --name alpha --json subs
	assert_success
	python -c "$check" <<<"$output"
	# --name alone: the name is the whole identity
	run --separate-stderr timeout 30 gdinspect --name alpha --json subs
	assert_success
	python -c "$check" <<<"$output"
	# the gdsub without --name: its name derived from its -P, as gdack's
	wait_until 20 timeout 5 gdinspect -P "127.0.0.1:$port" subs
	run --separate-stderr timeout 30 gdinspect --pub "127.0.0.1:$port" --json subs
	assert_success
	python -c "$check" <<<"$output"
	run --separate-stderr timeout 30 gdinspect -P "127.0.0.1:$port" --name beta subs
	assert_failure 69
	[[ "$stderr" == "gdinspect: nothing answers at "*", the control socket of the gdsub named 'beta': No such file or directory (is it running, as this user?)" ]]
}

@test "gdinspect: -p, -P or --name, and --ctl name the socket: one of them (64)" {
	expect_usage gdinspect "cannot use -p and -P: each names the socket" -- gdinspect -p 7001 -P 127.0.0.1:7001 stats
	expect_usage gdinspect "cannot use -p and --name: each names the socket" -- gdinspect --name x -p 7001 stats
	expect_usage gdinspect "cannot use -P and --ctl: each names the socket" -- gdinspect -P 127.0.0.1:7001 --ctl x.sock stats
	expect_usage gdinspect "cannot use --name and --ctl: each names the socket" -- gdinspect --name x --ctl x.sock stats
	expect_usage gdinspect "cannot use -p and --ctl: each names the socket" -- gdinspect -p 7001 --ctl x.sock stats
}

# ---- gdack says hello too ----

@test "gdack: a socket served by gdpub, not gdsub -> 69 naming it" {
	spawn "exec gdpub -p 0 --port-file pub.port < <(sleep 300) > pub.out 2> pub.err"
	port=$(port_of pub.port)
	wait_until 20 test -S "$(pub_sock "$port")"
	expect_fail 69 "gdack: cannot use $(pub_sock "$port"): gdpub serves it, not gdsub (give --ctl or the options gdsub was started with)" -- gdack --ctl "$(pub_sock "$port")" "127.0.0.1:$port/1"
}

@test "a new gdsub whose predecessor on the socket is stopped: 69 after 10 s, naming the socket (before: waited forever)" {
	spawn "exec gdpub -p 0 --port-file pub.port < <(sleep 300) > pub.out 2> pub.err"
	port=$(port_of pub.port)
	spawn "exec gdsub -P 127.0.0.1:$port --name same > a.out 2> a.err"
	old=$SPAWNED
	wait_until 20 timeout 5 gdinspect -P "127.0.0.1:$port" --name same subs
	sock=$(sub_sock)
	kill -STOP "$old"
	EXPECT_TIMEOUT=60 expect_fail 69 "gdsub: no answer from $sock within 10 seconds: is its program stopped or stuck?" -- gdsub -P "127.0.0.1:$port" --name same
	kill -CONT "$old"
	kill -0 "$old"
	[ -S "$sock" ]
}
