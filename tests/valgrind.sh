#!/bin/sh
# make valgrind: the core scenarios with every program under valgrind
# (memcheck: invalid accesses, uninitialised values, definite leaks, and
# file descriptors left open); any error fails the run. Slow, so not part
# of make check.
#   1. seq | gdpub -n 2 -> two gdsub | gdack pipelines: every block ACKed
#   2. stream mode: gdpub -o - | gdsub -i - | gdack
#   3. gdinspect pending and stats at a gdpub holding a pending block,
#      stats and subs at a gdsub
#   4. gdack KEY... acknowledging keys given as arguments
# Programs from $GDKIT_BIN. Prints one line per scenario and a summary.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${GDKIT_BIN:-$top/bin}
work=$(mktemp -d "${TMPDIR:-/tmp}/gdkit-vg.XXXXXX")
export XDG_RUNTIME_DIR="$work/run"
mkdir -m 700 "$XDG_RUNTIME_DIR"
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 1

vg() { # vg NAME PROG ARGS...: PROG under valgrind, its report in NAME.vg
	n=$1
	shift
	p=$1
	shift
	valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite --track-fds=no \
		--log-file="$work/$n.vg" "$bin/$p" "$@"
}
# hold_port: set port to a port of 127.0.0.1 the kernel chose, which a
# sleep keeps bound (SO_REUSEADDR, not listening) until cleanup, for a
# scenario whose subscriber starts before gdpub: gdpub (libuv sets
# SO_REUSEADDR) binds it and listens, and no connect(2) on the machine
# takes it as its own port meanwhile, as it could a port bound, closed
# and bound again
hold_port() {
	held=$(python3 -c 'import socket, subprocess
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
p = subprocess.Popen(["sleep", "3600"], pass_fds=[s.fileno()],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(s.getsockname()[1], p.pid)') || { echo "valgrind: cannot hold a port"; exit 1; }
	port=${held% *}
	pids="$pids ${held#* }"
}
# wait_for SECONDS CMD...: run CMD every 100 ms until it succeeds
wait_for() {
	n=$(($1 * 10))
	shift
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.1
	done
}
fails=0
check() { # check SCENARIO EXPECTED-STATUS... : compare rc files, logs
	name=$1
	shift
	bad=
	for f in "$work"/*.vg; do
		[ -s "$f" ] && bad="$bad ${f##*/}"
	done
	got=$(cat "$work"/rc.* 2>/dev/null | tr '\n' ' ')
	if [ -n "$bad" ] || [ "$got" != "$* " ]; then
		fails=$((fails + 1))
		echo "valgrind $name: FAILED (exit statuses: $got; expected: $*)"
		for f in $bad; do echo "--- $f"; cat "$work/$f"; done
		for f in "$work"/*.err; do
			[ -s "$f" ] && { echo "--- ${f##*/}"; cat "$f"; }
		done
	else
		echo "valgrind $name: ok (no errors, no definite leaks)"
	fi
	mkdir -p "$work/done.$name"
	mv "$work"/*.vg "$work"/rc.* "$work"/*.err "$work/done.$name/" 2>/dev/null
}

# 1. publish -> two subscribers -> ack
hold_port
for s in a b; do
	( vg sub-$s gdsub -P 127.0.0.1:$port --name $s --retry-interval 0.2 \
		--max-retries 300 2> sub-$s.err | vg ack-$s gdack -P 127.0.0.1:$port \
		--name $s --wait 60 > /dev/null 2> ack-$s.err; echo $? > rc.3ack-$s ) &
	pids="$pids $!"
done
seq 1 20 | vg pub gdpub -p $port -n 2 -t 120 --wait-ready=120 > pub.out 2> pub.err
echo $? > rc.1pub
wait_for 120 test -s rc.3ack-a
wait_for 120 test -s rc.3ack-b
[ "$(grep -c '^ACK' pub.out)" = 20 ] || echo 1 > rc.2acks
check pubsub 0 0 0

# 2. stream mode
hold_port
seq 1 20 | vg pub gdpub -p $port -n 1 -t 120 -o - 2> pub.err |
	vg sub gdsub -i - -P 127.0.0.1:$port --name s --linger 5 2> sub.err |
	vg ack gdack -P 127.0.0.1:$port --name s --wait 60 > /dev/null 2> ack.err
echo $? > rc.ack
[ "$(grep -c '^ACK' pub.err)" = 20 ] || echo 1 > rc.acks
check stream 0

# 3. gdinspect at a gdpub with a pending block, and at its gdsub; then
# the block is acknowledged and everything ends cleanly
mkfifo in
( vg pub gdpub -p 0 --port-file pub.port -n 1 -t 300 --wait-ready=120 < in \
	> pub.out 2> pub.err; echo $? > rc.9pub ) &
pids="$pids $!"
exec 7> in
wait_for 120 test -s pub.port
port=$(cat pub.port)
wait_for 120 test -S "$XDG_RUNTIME_DIR/gdkit/pub-$port.sock"
( vg sub gdsub -P 127.0.0.1:$port --name s --ctl "$work/s.sock" \
	--retry-interval 0.2 --max-retries 300 > sub.out 2> sub.err 7>&-
	echo $? > rc.8sub ) 7>&- &
pids="$pids $!"
echo pending >&7	# read once READY: the block reaches gdsub
wait_for 120 grep -q pending sub.out || echo 1 > rc.0wait
vg insp-pending gdinspect -p $port pending > insp1.out 2> insp1.err; echo $? > rc.1
vg insp-json gdinspect -p $port --json stats > insp2.out 2> insp2.err; echo $? > rc.2
vg insp-sub gdinspect --ctl "$work/s.sock" stats > insp3.out 2> insp3.err
echo $? > rc.3
vg insp-subs gdinspect --ctl "$work/s.sock" subs > insp4.out 2> insp4.err
echo $? > rc.4
awk 'NR == 2 && $1 == 1 { ok = 1 } END { exit !ok }' insp1.out || echo 1 > rc.5pending
vg ack gdack --ctl "$work/s.sock" --wait 60 "127.0.0.1:$port/1" 2> ack.err
echo $? > rc.6ack
exec 7>&-
wait_for 300 test -s rc.9pub
wait_for 120 test -s rc.8sub
grep -q '^ACK 1$' pub.out || echo 1 > rc.7acked
check inspect 0 0 0 0 0 0 0

# 4. gdack with keys given as arguments
hold_port
( vg sub gdsub -P 127.0.0.1:$port --name k --retry-interval 0.2 \
	--max-retries 300 > sub.out 2> sub.err; echo $? > rc.9sub ) &
pids="$pids $!"
( printf 'x\ny\n' | vg pub gdpub -p $port -n 1 -t 300 --wait-ready=120 > pub.out \
	2> pub.err; echo $? > rc.8pub ) &
pids="$pids $!"
wait_for 120 sh -c 'test "$(wc -l < sub.out)" -ge 2' || echo 1 > rc.0wait
vg ack gdack -P 127.0.0.1:$port --name k --wait 60 \
	"127.0.0.1:$port/1" "127.0.0.1:$port/2" 2> ack.err; echo $? > rc.1ack
wait_for 300 test -s rc.8pub
wait_for 120 test -s rc.9sub
check gdack-keys 0 0 0

echo "valgrind: $((4 - fails)) scenarios passed, $fails failed"
[ "$fails" -eq 0 ]
