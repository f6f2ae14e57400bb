#!/usr/bin/env bats
# Engines in the middle (SPEC §4, gdkit(7) ENGINES): the armored stream of
# gdpub -o - --armor carried by a real MQTT broker, mosquitto, at QoS 0,
# which may drop lines; gdpub's resend and gdsub's dedup turn that into
# exactly-once. Each test starts its own broker on a free port with a
# config it writes, waits in a bounded loop until the subscriber's
# SUBSCRIBE is in the broker's log before anything is published, and
# stops everything it started.
load helpers
bats_require_minimum_version 1.5.0

TOPIC=gdkit/test

# need_mosquitto: skip, naming the tool, where it cannot be had (mk/deps.sh
# check installs the Debian packages mosquitto and mosquitto-clients)
need_mosquitto() {
	MOSQUITTO=$(command -v mosquitto || echo /usr/sbin/mosquitto)
	[ -x "$MOSQUITTO" ] || skip "mosquitto is not installed (Debian package mosquitto)"
	command -v mosquitto_pub >/dev/null && command -v mosquitto_sub >/dev/null ||
		skip "mosquitto_pub and mosquitto_sub are not installed (Debian package mosquitto-clients)"
}

# broker: start mosquitto on a held port of 127.0.0.1 (MQ_PORT), logging
# subscriptions to broker.log; no persistence, no limit on the messages
# queued for a subscriber. Run as root, it would switch to its own user,
# who cannot write the test's directory: 'user root' keeps it (and is
# ignored when the tests do not run as root).
broker() {
	need_mosquitto
	hold_port MQ_PORT
	cat > broker.conf <<EOF
listener $MQ_PORT 127.0.0.1
allow_anonymous true
persistence false
user root
log_dest file $BATS_TEST_TMPDIR/broker.log
log_type error
log_type warning
log_type notice
log_type subscribe
max_queued_messages 1000000000
EOF
	spawn "exec $MOSQUITTO -c broker.conf > broker.out 2>&1"
	MQ_PID=$SPAWNED
	wait_until 10 listening "$MQ_PORT"
}

# subscriber NAME PORT... [-- GDSUB-OPTS]: spawn `mosquitto_sub -t TOPIC >
# NAME.fifo` (its PID in NAME_MQ) and `gdsub -i NAME.fifo | gdack --tee >
# NAME.out` for the gdpubs on PORT...; wait until the broker logged the
# subscription. "SUB ACK" statuses go to NAME.rc once both ended.
subscriber() {
	local name=$1 p pubs= opts=
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		pubs="$pubs -P 127.0.0.1:$1"
		shift
	done
	[ $# -eq 0 ] || { shift; opts="$*"; }
	rm -f "$name.rc"
	[ -p "$name.fifo" ] || mkfifo "$name.fifo"
	spawn "gdsub -i $name.fifo $pubs --name $name --retry-interval 0.05 --max-retries 400 $opts 2>> $name.sub.err | gdack $pubs --name $name --tee >> $name.out 2>> $name.ack.err; echo \${PIPESTATUS[*]} > $name.rc"
	# -i ID: the broker logs "ID 0 TOPIC" once it has the subscription
	spawn "exec mosquitto_sub -h 127.0.0.1 -p $MQ_PORT -i $name -t $TOPIC > $name.fifo 2> $name.mq.err"
	eval "${name}_MQ=\$SPAWNED"
	wait_until 10 has_line broker.log " $name 0 $TOPIC\$"
}

# stop_subscriber NAME: end mosquitto_sub; gdsub reads the end of its input,
# waits for gdack to acknowledge what it wrote, and exits
stop_subscriber() {
	local pid
	eval "pid=\$${1}_MQ"
	kill -TERM "$pid"
	wait_until 30 test -s "$1.rc"
}

# publish NAME COUNT [GDPUB-OPTS]: spawn seq COUNT | gdpub -o - --armor
# | mosquitto_pub -l -q 0, gdpub on port 0 (--port-file NAME.port), its
# input held until `go NAME` (once the subscriber has the topic: the broker
# keeps nothing for nobody); status in NAME.st, "PUB MQPUB" in NAME.rc
publish() {
	gate "$1"
	spawn "{ read -r _ < $1.gate; seq $2; } | gdpub -p 0 --port-file $1.port -n 1 -o - --armor --status $1.st ${3:-} 2> $1.err | mosquitto_pub -h 127.0.0.1 -p $MQ_PORT -t $TOPIC -l -q 0 2> $1.mq.err; echo \${PIPESTATUS[*]} > $1.rc"
}

# gate NAME: make the fifo NAME.gate that a spawned input waits on; go NAME
# lets it through
gate() {
	rm -f "$1.gate"
	mkfifo "$1.gate"
}

go() {
	timeout 10 sh -c "echo go > $1.gate"
}

# all_acked NAME COUNT [STATUSES]: gdpub NAME's pipeline exited with
# STATUSES (default "0 0 0"), gdpub with READY and ACK 1..COUNT
all_acked() {
	assert_equal "$(cat "$1.rc")" "${3:-0 0 0}"
	assert_equal "$(grep -c '^ACK ' "$1.st")" "$2"
	assert_equal "$(grep -vc '^ACK ' "$1.st")" 1
	run diff <(grep '^ACK ' "$1.st" | cut -d' ' -f2 | sort -n) <(seq "$2")
	assert_success
}

# seq_keys PORT N: the keys 127.0.0.1:PORT/1 to N (keys() is a shell loop,
# too slow under bats for 100,000)
seq_keys() {
	seq "$2" | sed "s,^,127.0.0.1:$1/,"
}

# measured SENT SEEN R UR: gdinspect measure's reliability and uniqueness
measured() {
	run --separate-stderr gdinspect measure "$1" "$2"
	assert_success
	assert_line --index 1 --regexp "^([0-9]+ +){6}$3 +$4 +exactly-once$"
}

@test "100,000 blocks: gdpub -o - --armor | mosquitto_pub -l -q 0 -> mosquitto_sub | gdsub -i - | gdack: frames batched into lines, every block ACKed, R = UR = 1.000" {
	broker
	publish pub 100000 "-t 5 --resend 5 --wait-ready=30"
	port=$(port_of pub.port)
	subscriber s "$port"
	t0=$(date +%s.%N)
	go pub
	wait_until 50 test -s pub.rc
	elapsed=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	all_acked pub 100000
	seq_keys "$port" 100000 > sent.keys
	wait_until 10 lines_at_least s.out 100000
	cut -f1 s.out | sed 's,/r$,,' > seen.keys
	measured sent.keys seen.keys 1.0000 1.0000
	run --separate-stderr gdinspect --ctl "$(sub_sock)" --json stats
	assert_success
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["unique"] == 100000 and d["bad_lines"] == 0, d
# the frames ready at once share a line: far fewer broker messages
assert d["frames"] >= 100000 and d["lines"] * 10 <= d["frames"], d
' <<<"$output"
	stop_subscriber s
	assert_equal "$(cat s.rc)" "0 0"
	# gdsub tried to connect before gdpub listened; nothing else
	assert_equal "$(grep -v 'cannot connect to' s.sub.err; cat s.ack.err)" ""
	echo "# 100,000 blocks through mosquitto in ${elapsed}s" >&3
	awk -v e="$elapsed" 'BEGIN { exit !(e < 40) }'
}

@test "the subscriber pipeline stopped midway and started again: resend fills the gap, --state keeps it exactly-once" {
	broker
	# the first 5,000 blocks, then the rest while nobody is subscribed
	# (batched lines go out faster than the subscriber can be stopped)
	feed_open pub.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -o - --armor --status pub.st -t 1 --resend 20 --wait-ready=30 < pub.fifo 2> pub.err | mosquitto_pub -h 127.0.0.1 -p $MQ_PORT -t $TOPIC -l -q 0 2> pub.mq.err; echo \${PIPESTATUS[*]} > pub.rc" 7>&-
	port=$(port_of pub.port)
	subscriber s "$port" -- --state s.state 7>&-
	seq 5000 >&7
	wait_until 30 lines_at_least s.out 5000
	stop_subscriber s
	assert_equal "$(cat s.rc)" "0 0"
	first=$(nlines s.out)
	seq 5001 30000 >&7
	feed_close
	subscriber s "$port" -- --state s.state
	wait_until 50 test -s pub.rc
	all_acked pub 30000 "0 0"
	seq_keys "$port" 30000 > sent.keys
	cut -f1 s.out | sed 's,/r$,,' > seen.keys
	measured sent.keys seen.keys 1.0000 1.0000
	# blocks published while nobody was subscribed came again, resent
	[ "$(grep -c '/r	' s.out)" -gt 0 ]
	[ "$first" -lt 30000 ]
	stop_subscriber s
	assert_equal "$(cat s.rc)" "0 0"
}

@test "two publishers on one topic, one batching lines, one a frame a line (--armor-batch 1): one gdsub -i acknowledges each block to its own publisher" {
	broker
	publish a 5000 "-t 5 --resend 5 --wait-ready=30"
	publish b 3000 "-t 5 --resend 5 --wait-ready=30 --armor-batch 1"
	p1=$(port_of a.port)
	p2=$(port_of b.port)
	subscriber s "$p1" "$p2"
	go a
	go b
	wait_until 40 test -s a.rc
	wait_until 40 test -s b.rc
	all_acked a 5000
	all_acked b 3000
	{ seq_keys "$p1" 5000; seq_keys "$p2" 3000; } > sent.keys
	cut -f1 s.out | sed 's,/r$,,' > seen.keys
	measured sent.keys seen.keys 1.0000 1.0000
	stop_subscriber s
	assert_equal "$(cat s.rc)" "0 0"
}

@test "a line damaged in the engine (--armor-batch 1) is skipped with its line number, counted in gdinspect stats, and its block recovered by resend" {
	broker
	# one character of the third line changed (sed -u: line by line, as
	# gdpub waits for acks before it writes more): its CRC32C no longer
	# matches
	gate pub
	spawn "{ read -r _ < pub.gate; seq 10; } | gdpub -p 0 --port-file pub.port -n 1 -o - --armor --armor-batch 1 --status pub.st -t 0.5 --resend 3 --wait-ready=30 2> pub.err |
		sed -u -E '3{s/^(.{30})A/\\1B/;t;s/^(.{30})./\\1A/}' |
		mosquitto_pub -h 127.0.0.1 -p $MQ_PORT -t $TOPIC -l -q 0; echo \${PIPESTATUS[*]} > pub.rc"
	port=$(port_of pub.port)
	subscriber s "$port"
	go pub
	wait_until 30 test -s pub.rc
	all_acked pub 10 "0 0 0 0"
	assert_equal "$(grep -v 'cannot connect to' s.sub.err)" "gdsub: s.fifo: line 3: bad armored line skipped: frame CRC32C mismatch (header or payload damaged)"
	run --separate-stderr gdinspect --ctl "$(sub_sock)" --json stats
	assert_success
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
assert (d["bad_lines"], d["unique"], d["duplicates"]) == (1, 10, 0), d
assert d["lines"] == d["frames"] + 1, d
' <<<"$output"
	assert_equal "$(cut -f1 s.out)" "$(keys "$port" 1 2 4 5 6 7 8 9 10; echo "127.0.0.1:$port/3/r")"
	stop_subscriber s
	assert_equal "$(cat s.rc)" "0 0"
}

@test "a batched line damaged in the engine loses only its own frames: reported once, every other block arrives once, the line's blocks come back by resend, all ACKed exactly once" {
	broker
	# lines of at most 2000 bytes (about 20 frames); what gdpub wrote is
	# kept (sent.txt), then line 3 is damaged as above
	gate pub
	spawn "{ read -r _ < pub.gate; seq 1000; } | gdpub -p 0 --port-file pub.port -n 1 -o - --armor --armor-batch 2000 --status pub.st -t 2 --resend 5 --wait-ready=30 2> pub.err |
		tee sent.txt |
		sed -u -E '3{s/^(.{30})A/\\1B/;t;s/^(.{30})./\\1A/}' |
		mosquitto_pub -h 127.0.0.1 -p $MQ_PORT -t $TOPIC -l -q 0; echo \${PIPESTATUS[*]} > pub.rc"
	port=$(port_of pub.port)
	subscriber s "$port"
	go pub
	wait_until 60 test -s pub.rc
	all_acked pub 1000 "0 0 0 0 0"
	assert_equal "$(grep -v 'cannot connect to' s.sub.err)" "gdsub: s.fifo: line 3: bad armored line skipped: frame CRC32C mismatch (header or payload damaged)"
	# the blocks of line 3 as gdpub wrote it: exactly the ones resent
	sed -n 3p sent.txt > line3.txt
	gdinspect decode line3.txt | awk 'NR > 1 && $1 ~ /\/[0-9]+$/ { print $1 }' | sort > lost.keys
	[ "$(nlines lost.keys)" -ge 2 ]
	grep '/r	' s.out | cut -f1 | sed 's,/r$,,' | sort > resent.keys
	assert_equal "$(cat resent.keys)" "$(cat lost.keys)"
	seq_keys "$port" 1000 > sent.keys
	cut -f1 s.out | sed 's,/r$,,' > seen.keys
	measured sent.keys seen.keys 1.0000 1.0000
	run --separate-stderr gdinspect --ctl "$(sub_sock)" --json stats
	assert_success
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
assert (d["bad_lines"], d["unique"], d["duplicates"]) == (1, 1000, 0), d
' <<<"$output"
	stop_subscriber s
	assert_equal "$(cat s.rc)" "0 0"
}

@test "with a key: a client of the broker without it reads one line, then publishes frames for IDs 2 and 3; they are counted as bad tags, never written or acknowledged, and the real blocks 2 and 3 are" {
	broker
	head -c 32 /dev/urandom | base64 > k
	chmod 600 k
	feed_open pub.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -o - --armor --auth-key-file k --status pub.st --wait-ready=30 < pub.fifo 2> pub.err |
		mosquitto_pub -h 127.0.0.1 -p $MQ_PORT -t $TOPIC -l -q 0; echo \${PIPESTATUS[*]} > pub.rc" 7>&-
	port=$(port_of pub.port)
	subscriber s "$port" -- --auth-key-file k 7>&-
	# the intruder: subscribed before the first line, reads one
	spawn "exec mosquitto_sub -h 127.0.0.1 -p $MQ_PORT -i evil -t $TOPIC -C 1 > evil.line 2> evil.err" 7>&-
	wait_until 10 has_line broker.log " evil 0 $TOPIC\$"
	echo 1 >&7
	wait_until 30 has_lines s.out 1
	wait_until 10 test -s evil.line
	python "$BATS_TEST_DIRNAME/tagforge.py" forge --only 2:EVIL-2 3:EVIL-3 < evil.line |
		mosquitto_pub -h 127.0.0.1 -p "$MQ_PORT" -t "$TOPIC" -l -q 0
	wait_until 30 bash -c "timeout 10 gdinspect --ctl '$(sub_sock)' --json stats | grep -q '\"bad_tags\":2[,}]'"
	printf '2\n3\n' >&7
	feed_close
	wait_until 30 test -s pub.rc
	all_acked pub 3 "0 0"
	assert_equal "$(cat s.out)" "$(printf '127.0.0.1:%s/%s\t%s\n' "$port" 1 1 "$port" 2 2 "$port" 3 3)"
	# their line numbers: after the first block's, and its floor's if
	# gdpub wrote that first
	grep -v 'cannot connect to' s.sub.err > errs
	assert_equal "$(wc -l < errs)" 2
	for id in 2 3; do
		has_line errs "^gdsub: s.fifo: line [0-9]+: frame 127.0.0.1:$port/$id skipped: it carries no authentication tag; not written, not acknowledged\$"
	done
	run --separate-stderr gdinspect --ctl "$(sub_sock)" --json stats
	assert_success
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
assert (d["bad_tags"], d["unique"], d["duplicates"], d["acked"]) == (2, 3, 0, 3), d
' <<<"$output"
	stop_subscriber s
	assert_equal "$(cat s.rc)" "0 0"
}
