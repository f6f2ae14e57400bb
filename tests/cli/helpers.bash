# Shared bats helpers: programs from $GDKIT_BIN, a private control socket
# directory per test, held ports, bounded waits, and cleanup of every
# process a test started (each in its own process group).
GDKIT_BIN=${GDKIT_BIN:-$BATS_TEST_DIRNAME/../../bin}
PATH="$GDKIT_BIN:$PATH"
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

# Tests that carry 10^5 to 10^6 blocks for confidence, where fewer blocks
# would show the same: make check-long runs them (GDKIT_CHECK=long, and
# nothing else), make check leaves them out; run.sh counts neither skip.
# A test whose point needs the volume (a bound on a file's growth, a pipe
# that must fill) stays in make check. "FILE:NAME", NAME as after @test.
LONG_TESTS=(
	"engines.bats:100,000 blocks: gdpub -o - --armor | mosquitto_pub -l -q 0 -> mosquitto_sub | gdsub -i - | gdack: frames batched into lines, every block ACKed, R = UR = 1.000"
	"chaos.bats:chaos: the service recipe, 50,000 blocks, each of gdpub, gdsub, the stage and gdack killed three times: 0 NACK, the sink exact"
)

setup() {
	local t long=0
	for t in "${LONG_TESTS[@]}"; do
		[ "$t" != "${BATS_TEST_FILENAME##*/}:$BATS_TEST_DESCRIPTION" ] || long=1
	done
	if [ "${GDKIT_CHECK:-}" = long ]; then
		[ "$long" -eq 1 ] || skip "not in make check-long"
	elif [ "$long" -eq 1 ]; then
		skip "in make check-long"
	fi
	export XDG_RUNTIME_DIR="$BATS_TEST_TMPDIR/run"
	# the tests' fakes import gdwire.py (the wire protocol, its seals)
	export PYTHONPATH="$BATS_TEST_DIRNAME${PYTHONPATH:+:$PYTHONPATH}"
	mkdir -p -m 700 "$XDG_RUNTIME_DIR"
	cd "$BATS_TEST_TMPDIR" || return 1
	BG_PIDS=()
}

teardown() {
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
	done
	return 0
}

# python: the real interpreter, found once per run (a pyenv shim in front
# of python3 takes a second to start, two on a busy machine); python_bin
# prints its path, for the command lines of spawn (a new bash, which has
# not this function)
python_bin() {
	local cache="${BATS_RUN_TMPDIR:-/tmp}/gdkit-python"
	[ -s "$cache" ] || python3 -c 'import sys; print(sys.executable)' > "$cache"
	cat "$cache"
}
python() {
	"$(python_bin)" "$@"
}

# hold_port VAR: set VAR to a TCP port of 127.0.0.1 that the kernel chose
# and that a process of this test keeps bound, without listening, until
# the test ends. A connection there is refused, as if nobody were there;
# no other bind(2) or connect(2) is given the port; yet a listener that
# sets SO_REUSEADDR binds it and listens (gdpub through libuv, mosquitto,
# nats-server, socat's reuseaddr, a python relay that sets it): Linux lets
# sockets that both set it share a port while neither listens. For a test
# that must know the port before its listener starts (a subscriber that
# retries until its publisher appears, a port written in a page's recipe,
# a control socket named after the port), with no moment in which another
# test could take the port, as it could between the bind, close and
# reuse of a port merely found free. A listener that does not set
# SO_REUSEADDR fails on it with "address already in use", every time.
hold_port() {
	local held
	held=$(python -c '
import socket, subprocess
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
# the holder: a sleep in a session of its own (teardown kills its group)
# that has the socket and nothing else; bounded if teardown never runs
p = subprocess.Popen(["sleep", "3600"], pass_fds=[s.fileno()],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
print(s.getsockname()[1], p.pid)') || return 1
	BG_PIDS+=("${held#* }")
	printf -v "$1" '%s' "${held% *}"
}

# spawn CMD: run the shell command line CMD in the background, in its own
# process group, without bats' fd 3; $! is saved for teardown. Sets SPAWNED.
spawn() {
	setsid bash -c "$1" 3>&- &
	SPAWNED=$!
	BG_PIDS+=("$SPAWNED")
}

# wait_until SECONDS CMD...: run CMD every 50 ms until it succeeds; fail
# after SECONDS.
wait_until() {
	local limit=$1 i=0 n
	shift
	n=$(awk -v s="$limit" 'BEGIN { printf "%d", s * 20 }')
	while ! "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -ge "$n" ]; then
			echo "timed out after ${limit}s waiting for: $*" >&2
			return 1
		fi
		sleep 0.05
	done
}

# wait_pid SECONDS PID: wait for PID to exit within SECONDS, print its status
wait_pid() {
	wait_until "$1" bash -c "! kill -0 $2 2>/dev/null" || return 1
	wait "$2"
}

# until_resent PORT N: a shell command (for a pipeline stage) that waits,
# up to 20 s, until the gdpub on PORT has resent N blocks or more: a stage
# that holds a block until the publisher has given up on it once, instead
# of sleeping past its timeout.
until_resent() {
	local c='for _ in $(seq 400); do v=$(gdinspect -p @P@ --json stats 2>/dev/null | sed -n "s/.*\"resent\":\([0-9]*\).*/\1/p"); [ "${v:-0}" -ge @N@ ] && break; sleep 0.05; done'
	c=${c//@P@/$1}
	printf '%s' "${c//@N@/$2}"
}

# listening PORT: true when something listens on 127.0.0.1:PORT
listening() {
	ss -Hltn "sport = :$1" | grep -q .
}

# has_line FILE REGEX: true when FILE has a line matching REGEX
has_line() {
	grep -Eq -- "$2" "$1" 2>/dev/null
}

# count_lines FILE REGEX
count_lines() {
	grep -Ec -- "$2" "$1" 2>/dev/null || true
}

# sub_conf FILE PORT [LINE...]: a subscriber config for the gdpub on
# 127.0.0.1:PORT that retries quickly for a long time, plus extra LINEs
sub_conf() {
	local f=$1 port=$2
	shift 2
	{
		printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.05\nGDsub_maxRetries=200\n' "$port"
		[ $# -eq 0 ] || printf '%s\n' "$@"
	} > "$f"
}

# ack_pipeline NAME [GDSUB-OPTS]: spawn `gdsub -c NAME.ini | gdack -c NAME.ini
# --tee > NAME.out`; stderr goes to NAME.sub.err and NAME.ack.err, and
# "SUB-STATUS ACK-STATUS" to NAME.rc once both have exited.
ack_pipeline() {
	spawn "gdsub -c $1.ini ${2:-} 2> $1.sub.err | gdack -c $1.ini --tee > $1.out 2> $1.ack.err; echo \${PIPESTATUS[*]} > $1.rc"
}

# feed_open FIFO: make FIFO and hold it open read-write on fd 7 (which does
# not wait for a reader), so a gdpub reading FIFO gets input when the test
# writes to fd 7 and end of input at feed_close. Commands spawned while it
# is open must not keep a copy: spawn them with `spawn CMD 7>&-`.
feed_open() {
	mkfifo "$1"
	exec 7<>"$1"
}

feed_close() {
	exec 7>&-
}

# nlines FILE: number of newline-terminated lines in FILE (0 if missing)
nlines() {
	if [ -e "$1" ]; then wc -l < "$1"; else echo 0; fi
}

# lines_at_least FILE N: true once FILE has N lines or more
lines_at_least() {
	[ "$(nlines "$1")" -ge "$2" ]
}

# file_is FILE TEXT: true when FILE holds exactly TEXT (e.g. an exit status)
file_is() {
	[ -e "$1" ] && [ "$(cat "$1")" = "$2" ]
}

# keys PORT ID...: the keys 127.0.0.1:PORT/ID, one a line
keys() {
	local port=$1 id
	shift
	for id; do
		printf '127.0.0.1:%s/%s\n' "$port" "$id"
	done
}

# statuses WORD ID...: gdpub status lines "WORD ID", one a line
statuses() {
	local w=$1 id
	shift
	for id; do
		printf '%s %s\n' "$w" "$id"
	done
}

# expect_fail CODE LINE... -- CMD...: run CMD with stdin from /dev/null,
# bounded by $EXPECT_TIMEOUT seconds (default 30); check that it exits
# CODE, writes nothing on stdout and exactly the lines LINE... on stderr.
expect_fail() {
	local code=$1 want
	local -a lines=()
	shift
	while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
		lines+=("$1")
		shift
	done
	shift
	want=$(printf '%s\n' "${lines[@]}")
	run --separate-stderr timeout "${EXPECT_TIMEOUT:-30}" "$@" </dev/null
	if [ "$status" -ne "$code" ] || [ -n "$output" ] || [ "$stderr" != "$want" ]; then
		printf 'command: %s\nexpected status %s, got %s\n' "$*" "$code" "$status"
		printf 'expected stderr:\n%s\ngot stderr:\n%s\n' "$want" "$stderr"
		printf 'got stdout:\n%s\n' "$output"
		return 1
	fi
}

# expect_usage PROG LINE -- CMD...: a command-line error: exit 64, LINE
# then "try 'PROG --help'" on stderr, nothing on stdout.
expect_usage() {
	local prog=$1 line=$2
	shift 3
	expect_fail 64 "$prog: $line" "try '$prog --help'" -- "$@"
}

# pub_sock PORT: the control socket gdpub derives for PORT
pub_sock() {
	echo "$XDG_RUNTIME_DIR/gdkit/pub-$1.sock"
}

# sub_sock: the one gdsub control socket in this test's directory
sub_sock() {
	local s
	s=$(compgen -G "$XDG_RUNTIME_DIR/gdkit/sub-*.sock") || return 1
	[ "$(wc -l <<<"$s")" -eq 1 ] && [ -S "$s" ] && echo "$s"
}

# sub_accepted SOCK: the gdsub serving control socket SOCK is connected to
# its publisher with its acknowledgement connection accepted (a GD slot
# there): blocks read by gdpub from now on are sent to it. A block read
# before that goes to the subscribers connected then (gdpub(1)).
sub_accepted() {
	gdinspect --ctl "$1" subs 2>/dev/null | grep -Eq ' connected +[0-9]+ +accepted '
}

# has_lines FILE N: true when FILE has exactly N lines
has_lines() {
	[ -f "$1" ] && [ "$(wc -l <"$1")" -eq "$2" ]
}

# ctl_talk SOCKET [LINES]: send stdin to a control socket and print the
# reply, up to LINES lines (default: until the server closes), for at most
# 10 seconds; a reset by the server counts as its close.
ctl_talk() {
	python -c '
import socket, sys, time
want = int(sys.argv[2]) if len(sys.argv) > 2 else -1
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
try:
    s.sendall(sys.stdin.buffer.read())
except (BrokenPipeError, ConnectionResetError):
    pass
got, end = b"", time.monotonic() + 10
while want < 0 or got.count(b"\n") < want:
    if time.monotonic() > end:
        sys.exit("ctl_talk: timed out; got %r" % got)
    try:
        b = s.recv(65536)
    except ConnectionResetError:
        break
    if not b:
        break
    got += b
sys.stdout.buffer.write(got)
' "$@"
}

# fake_ctl SOCKET HELLO [STATS]: a control server on SOCKET, run with
# ${PY:-python} as $RUNAS if set, that answers each "hello" with the line
# HELLO and "stats" with the lines STATS (default a one-field table), and
# with HELLO empty answers nothing at all; ready once SOCKET.ready exists.
# The answers may hold any bytes but NUL and a final newline.
fake_ctl() {
	local stats=$'stats 1\nx:n\n1'
	printf '%s' "$2" > "$1.hello"
	printf '%s' "${3:-$stats}" > "$1.stats"
	cat > fake.py <<'EOF'
import socket, sys
path = sys.argv[1]
hello = open(path + ".hello", "rb").read()
stats = open(path + ".stats", "rb").read()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(8)
open(path + ".ready", "w").close()
while True:
    c, _ = s.accept()
    f = c.makefile("rwb")
    for line in f:
        line = line.strip()
        if hello and (line == b"hello" or line.startswith(b"hello ")):
            f.write(hello + b"\n")
        elif hello and line == b"stats":
            f.write(stats + b"\n")
        f.flush()
    c.close()
EOF
	spawn "exec ${RUNAS:-} ${PY:-$(python_bin)} fake.py '$1' 2> fake.err"
	wait_until 10 test -e "$1.ready"
}

# mkstream [OPTIONS] [SPEC]: write a framed block stream (gdkit-stream(5))
# from a text spec on stdin, without gdpub; see tests/cli/mkstream.py.
mkstream() {
	python "$BATS_TEST_DIRNAME/mkstream.py" "$@"
}

# small_mem MB CMD...: run CMD with at most MB MiB of address space
# (ulimit -v), so that allocating what a frame header declares rather
# than what came fails. Under AddressSanitizer, whose shadow memory needs
# terabytes of address space (the programs of $GDKIT_BIN are built with
# it: make SANITIZE=1), each allocation is capped at MB instead. clang
# links ASan's runtime in, so ldd does not show it: look for its entry.
small_mem() {
	local mb=$1
	shift
	if grep -q __asan_init "$GDKIT_BIN/gdinspect" 2>/dev/null; then
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=$mb" "$@"
	else
		(ulimit -v $((mb * 1024)) && exec "$@")
	fi
}

# declares_1g FILE [BYTES]: FILE, a stream header and a block frame of
# origin 127.0.0.1:7001 whose header declares a 2^30-byte payload (the
# most a reader accepts; the whole frame would be 1073741886 bytes), cut
# after its 44-byte header plus BYTES (default 0) bytes of payload
declares_1g() {
	printf 'with plen=0x40000000\nblock 1 1 -\n' | mkstream --cut 60 > "$1"
	[ "${2:-0}" -eq 0 ] || head -c "$2" /dev/zero >> "$1"
}

# summary_is ACK NACK REJECT: the last line of $stderr is gdpub's summary
# of a run in which a block failed, with these counts (gdpub(1) FLOW
# CONTROL); stderr_before_summary prints the lines before it.
summary_is() {
	local last
	last=$(tail -n 1 <<<"$stderr")
	[[ "$last" =~ ^"gdpub: warning: "[0-9]+" blocks in "[0-9]+\.[0-9]" s: $1 ACK, $2 NACK, $3 REJECT"(;| \() ]] ||
		{ echo "not the summary of $1 ACK, $2 NACK, $3 REJECT: $last"; return 1; }
}

stderr_before_summary() {
	head -n -1 <<<"$stderr"
}

# port_of FILE: the port that a gdpub started with "-p 0 --port-file FILE"
# bound, once it has written FILE (30 s at most); by then it listens and
# its control socket answers. A port chosen by the kernel at bind time
# cannot be taken by another test between choice and use, as a port
# found free, released and bound again could.
port_of() {
	wait_until 30 test -s "$1" || return 1
	cat "$1"
}

# port_sh FILE: a command substitution, for a stage of a `bash -c`
# pipeline whose gdpub writes --port-file FILE: it waits (30 s at most)
# for FILE and expands to the port, as port_of would
port_sh() {
	printf '$(for _ in $(seq 600); do [ -s %s ] && break; sleep 0.05; done; cat %s)' "$1" "$1"
}

# pub_ini FILE: wait for the port of the gdpub started with -c FILE
# (GDpub_port=0) --port-file pub.port, set port, and write it into FILE
# for gdinspect -c FILE, which finds that gdpub by its port
pub_ini() {
	port=$(port_of pub.port) || return 1
	sed -i "s/^GDpub_port=0\$/GDpub_port=$port/" "$1"
}

# pub_bg [--separate-stderr] CMD...: start CMD, a gdpub run with
# "-p 0 --port-file pub.port" (or timeout, env or bash -c around one), in
# the background and its own process group, with the caller's stdin; wait
# until it bound its port and set port. pub_wait [SECONDS] then waits for
# it (300 s at most) and sets status, output, stderr and lines as
# `run [--separate-stderr] CMD...` would have: for tests whose subscribers
# need the port before gdpub's run ends.
pub_bg() {
	local err='2>&1'
	if [ "$1" = --separate-stderr ]; then
		err='2> pub.run.err'
		shift
	fi
	rm -f pub.port pub.run.rc pub.run.err
	# <&0: a background job's stdin would be /dev/null
	setsid bash -c '"$@" > pub.run.out '"$err"'; echo $? > pub.run.rc' pub_bg "$@" <&0 3>&- &
	BG_PIDS+=("$!")
	port=$(port_of pub.port)
}

pub_wait() {
	if ! wait_until "${1:-300}" test -s pub.run.rc; then
		# what a run that never ended was doing, for the failure's
		# report: its processes, its counters, its last words
		ps -eo pid,pgid,stat,wchan:20,etime,args 2>/dev/null |
			grep -E ' (gd(pub|sub|ack)|timeout|python3?) ' | grep -v grep >&2
		[ -z "${port:-}" ] || timeout 5 gdinspect -p "$port" stats >&2
		tail -n 5 pub.run.err pub.run.out >&2 2>/dev/null
		return 1
	fi
	status=$(cat pub.run.rc)
	output=$(cat pub.run.out)
	IFS=$'\n' read -d '' -r -a lines <<<"$output" || true
	if [ -e pub.run.err ]; then
		stderr=$(cat pub.run.err)
		IFS=$'\n' read -d '' -r -a stderr_lines <<<"$stderr" || true
	fi
}
