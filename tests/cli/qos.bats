#!/usr/bin/env bats
# IceStorm QoS per subscription (SPEC §3, §8): reliability=ordered,
# retryCount, the discard interval, sendTimeout, the send queue limit and
# its policies, explicit unsubscribe, bad QoS refused. Subscribers are
# scripted (fakesub.py: disconnect, stall, reconnect as the same gdsub
# run) or real gdsub pipelines; durations are fractions of a second.

load helpers
bats_require_minimum_version 1.5.0

# fake NAME [ENV...]: spawn fakesub.py as subscriber NAME of the gdpub on
# $port, commands from NAME.cmd, events in NAME.ev; FAKE is its pid
fake() {
	local name=$1
	shift
	spawn "exec env $* python $BATS_TEST_DIRNAME/fakesub.py 127.0.0.1 $port $name $name.cmd $name.ev 2> $name.err" 7>&-
	FAKE=$SPAWNED
}

# field NAME KEY: KEY of subscriber NAME's first row in gdinspect --json subs
field() {
	gdinspect -p "$port" --json subs | python -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if d["name"] == sys.argv[1]:
        v = d[sys.argv[2]]
        print("-" if v is None else v)
        break
' "$1" "$2"
}

# field_is NAME KEY VALUE
field_is() {
	[ "$(field "$1" "$2")" = "$3" ]
}

# stall NAME: the fake subscriber NAME stops reading its socket
stall() {
	echo stall >> "$1.cmd"
	wait_until 10 has_line "$1.ev" "^stalled$"
}

# stat KEY: a counter of gdinspect stats at the gdpub on $port
stat() {
	gdinspect -p "$port" --json stats | python -c 'import json, sys; print(int(float(json.load(sys.stdin)[sys.argv[1]])))' "$1"
}

# stat_over KEY N: true when stat KEY is N or more
stat_over() {
	[ "$(stat "$1")" -ge "$2" ]
}

# state_is NAME REGEX: subscriber NAME's state matches REGEX
state_is() {
	[[ "$(field "$1" state)" =~ $2 ]]
}

# pub [CONF-LINE...]: spawn gdpub -vv on $port with those GDpub_ lines,
# input from the fifo on fd 7, status in pub.out
pub() {
	printf 'GDpub_port=0\n' > p.ini
	[ $# -eq 0 ] || printf '%s\n' "$@" >> p.ini
	feed_open in.fifo
	spawn "gdpub -c p.ini --port-file pub.port ${PUBOPTS:-} -vv < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
}

# big N: N blocks of 64 KiB on fd 7
big() {
	python -c 'import sys
for i in range(int(sys.argv[1])): sys.stdout.write("%06d" % i + "x" * 65530 + "\n")' "$1" >&7
}

@test "bad QoS: gdpub refuses the subscription and says why; the subscriber is told" {
	pub
	fake bad FAKESUB_QOS="'reliability=sorted'"
	wait_until 10 has_line bad.ev "^refused "
	assert_equal "$(cat bad.ev)" "refused bad QoS 'reliability=sorted': expected 'ordered' or nothing (an empty value, the default)"
	fake odd FAKESUB_QOS="'colour=red'"
	wait_until 10 has_line odd.ev "^refused bad QoS 'colour=red': unknown QoS name$"
	has_line pub.err "gdpub: refused subscriber bad \(127\.0\.0\.1:[0-9]+\): bad QoS 'reliability=sorted': expected 'ordered' or nothing \(an empty value, the default\)$"
	feed_close
	wait_until 10 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
}

@test "bad QoS: gdsub reports the publisher's refusal and exits 78; bad values of its own are usage or config errors" {
	hold_port port
	# a publisher that refuses every subscription
	spawn "exec python -c '
import socket, struct, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"127.0.0.1\", $port)); s.listen(1)
c, _ = s.accept(); c.recv(4096)
why = b\"bad QoS test\"
import gdwire
c.sendall(gdwire.Seal(\"crc\").wrap(struct.pack(\"<IBBH\", len(why), 11, 0, 0) + why)); c.recv(10)
'"
	wait_until 10 listening "$port"
	expect_fail 78 "gdsub: publisher 127.0.0.1:$port refused the subscription: bad QoS test" -- gdsub -P "127.0.0.1:$port"
	expect_usage gdsub "invalid value 'x' for --qos: expected an integer from -1 to 1073741824" -- gdsub -P 127.0.0.1:1 --qos retryCount=x
	expect_usage gdsub "invalid value 'sorted' for --qos: expected 'ordered' or nothing (an empty value, the default)" -- gdsub -P 127.0.0.1:1 --qos reliability=sorted
	printf 'GDsub_pub=127.0.0.1:1\nGDsub_retryCount=-2\n' > bad.ini
	expect_fail 78 "gdsub: bad.ini:2: GDsub_retryCount: invalid value '-2': expected an integer from -1 to 1073741824" -- gdsub -c bad.ini
}

@test "reliability=ordered: one block in flight until the subscriber confirms it" {
	pub
	fake ord FAKESUB_QOS="reliability=ordered"
	wait_until 10 has_line ord.ev "^welcome "
	printf 'b%s\n' 1 2 3 >&7
	wait_until 10 has_line ord.ev "^block 1 1 0 b1$"
	wait_until 10 field_is ord queue 2
	assert_equal "$(count_lines ord.ev '^block')" 1
	state_is ord '^online$'
	assert_equal "$(field ord qos)" "reliability=ordered,retryCount=0"
	echo "confirm 1" >> ord.cmd
	wait_until 10 has_line ord.ev "^block 2 2 0 b2$"
	wait_until 10 field_is ord queue 1
	assert_equal "$(count_lines ord.ev '^block')" 2
	echo "confirm 2" >> ord.cmd
	wait_until 10 has_line ord.ev "^block 3 3 0 b3$"
	echo "confirm 3" >> ord.cmd
	feed_close
	wait_until 10 has_line ord.ev "^end$"
	wait_until 10 test -s pub.rc
	assert_equal "$(grep -c '^block' ord.ev)" 3
}

@test "reliability=ordered with a gdsub | gdack pipeline: every block, in order" {
	pub GDpub_numSubs=1
	sub_conf s.ini "$port" "GDsub_reliability=ordered"
	ack_pipeline s 7>&-
	wait_until 10 has_line pub.err "connected: GD slot 0"
	seq 1 300 | sed 's/^/b/' >&7
	feed_close
	wait_until 30 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	assert_equal "$(cut -f2 s.out)" "$(seq 1 300 | sed 's/^/b/')"
	assert_equal "$(grep -c '^ACK' pub.out)" 300
}

@test "retryCount=0 (default): removed at the first failure; a gdsub that comes back is a new subscription" {
	pub
	fake z
	wait_until 10 has_line z.ev "^welcome "
	echo b1 >&7
	wait_until 10 has_line z.ev "^block 1 "
	kill -KILL "$FAKE"
	wait_until 10 state_is z '^removed: 1 consecutive delivery failure \(retryCount 0\), the last: connection closed$'
	assert_equal "$(field z address)" "-"
	has_line pub.err "gdpub: subscription z: removed: 1 consecutive delivery failure"
	fake z
	wait_until 10 has_line z.ev "^welcome .*"
	wait_until 10 state_is z '^subscribed$'
}

@test "retryCount=2: offline, online, offline, then removed after 3 consecutive failures while its gdsub is away" {
	pub GDpub_discardInterval=0.3
	fake r FAKESUB_QOS=retryCount=2
	wait_until 10 has_line r.ev "^welcome "
	echo b1 >&7
	wait_until 10 has_line r.ev "^block 1 "
	kill -KILL "$FAKE"
	wait_until 10 state_is r '^offline until [0-9:.]+: connection closed$'
	assert_equal "$(field r failures)" 1
	# blocks keep coming: each one after the interval is a delivery that
	# fails (no connection)
	wait_until 20 bash -c "echo x >&7; sleep 0.1; [[ \"\$(gdinspect -p $port --json subs)\" == *'\"state\":\"removed: 3 consecutive delivery failures (retryCount 2), the last: its gdsub is not connected\"'* ]]"
	run grep -Eo 'subscription r: [a-z]+' pub.err
	assert_equal "$(printf '%s\n' "${lines[@]}" | uniq | tr '\n' ' ')" \
	    "subscription r: subscribed subscription r: online subscription r: offline subscription r: online subscription r: offline subscription r: online subscription r: removed "
}

@test "retryCount=-1: never removed by failures; an explicit unsubscribe removes it at once" {
	pub GDpub_discardInterval=0.1
	sub_conf s.ini "$port" "GDsub_retryCount=-1" "GDsub_name=never" "GDsub_gd=0"
	fake never FAKESUB_QOS=retryCount=-1
	wait_until 10 has_line never.ev "^welcome "
	echo b1 >&7
	wait_until 10 has_line never.ev "^block 1 "
	kill -KILL "$FAKE"
	wait_until 20 bash -c "echo x >&7; sleep 0.1; f=\$(gdinspect -p $port --json subs | sed -n 's/.*\"failures\":\([0-9]*\).*/\1/p'); [ \"\${f:-0}\" -ge 5 ]"
	state_is never '^(offline until|online)'
	# a new gdsub run under the name: the old subscription is unknown to
	# it (removed); the new one's clean exit is an explicit unsubscribe
	gdsub -c s.ini -C 1 > s.out 2> s.err &
	wait_until 10 bash -c "echo y >&7; sleep 0.05; test -s s.out"
	wait $!
	run gdinspect -p "$port" subs
	assert_line --regexp '^never +- +- +removed: unknown to its subscriber: a new gdsub run subscribed under this name '
	assert_line --regexp '^never +- +- +removed: unsubscribed \(gdsub exited\) +retryCount=-1 '
}

@test "a delivery resets the failure count: retryCount=1 survives one failure after each success" {
	pub GDpub_discardInterval=0.2
	FAKESUB_RUN=7
	fake one FAKESUB_QOS=retryCount=1 FAKESUB_RUN=7
	wait_until 10 has_line one.ev "^welcome "
	echo b1 >&7
	wait_until 10 has_line one.ev "^block 1 "
	kill -KILL "$FAKE"
	wait_until 10 state_is one '^offline until'
	assert_equal "$(field one failures)" 1
	# the same gdsub run reconnects: the subscription continues
	fake one FAKESUB_QOS=retryCount=1 FAKESUB_RUN=7
	wait_until 10 bash -c "! grep -q \"\\\"address\\\":\\\"-\\\"\" <(gdinspect -p $port --json subs)"
	wait_until 10 bash -c "echo x >&7; sleep 0.1; grep -q '^block .* x$' one.ev"
	wait_until 10 field_is one failures 0
	state_is one '^online$'
	kill -KILL "$FAKE"
	wait_until 10 state_is one '^offline until'
	assert_equal "$(field one failures)" 1
}

# The interval must outlast the reconnection below (a python start and a
# few gdinspect polls: seconds on a loaded machine, under the sanitizers),
# or b2 would find the subscription online again.
@test "discard interval: blocks published while offline are discarded for it (NACKed), delivery resumes after" {
	PUBOPTS="-n 1 -t 1" pub GDpub_discardInterval=8
	fake d FAKESUB_QOS=retryCount=1 FAKESUB_RUN=9
	wait_until 10 has_line d.ev "^welcome "
	echo b1 >&7
	wait_until 10 has_line d.ev "^block 1 1 0 b1$"
	echo "ack 1 1" >> d.cmd
	wait_until 10 has_line pub.out "^ACK 1$"
	kill -KILL "$FAKE"
	wait_until 10 state_is d '^offline until'
	up=$(stat uptime)
	fake d FAKESUB_QOS=retryCount=1 FAKESUB_RUN=9
	wait_until 10 bash -c "[ \$(grep -c '^welcome ' d.ev) -eq 2 ]"
	wait_until 10 bash -c "! grep -q '\"address\":\"-\"' <(gdinspect -p $port --json subs)"
	echo b2 >&7
	wait_until 10 field_is d discarded 1
	wait_until 10 has_line pub.out "^NACK 2$"
	wait_until 10 state_is d '^offline until'
	run ! has_line d.ev "^block 2 "
	# past the interval the next block puts it online
	wait_until 20 stat_over uptime $((up + 9))
	state_is d '^offline until'
	echo b3 >&7
	wait_until 10 has_line d.ev "^block 3 3 0 b3$"
	echo "ack 3 3" >> d.cmd
	wait_until 10 has_line pub.out "^ACK 3$"
	state_is d '^online$'
	feed_close
	wait_until 10 test -s pub.rc
	assert_equal "$(cat pub.out)" "$(printf 'READY\nACK 1\nNACK 2\nACK 3')"
	assert_equal "$(cat pub.rc)" 1
}

@test "sendTimeout: a stalled subscriber whose send blocks past it is a failure (removed at retryCount 0)" {
	pub GDpub_sendTimeout=0.4
	fake st FAKESUB_RCVBUF=4096
	wait_until 10 has_line st.ev "^welcome "
	stall st
	big 200
	wait_until 20 state_is st '^removed: 1 consecutive delivery failure \(retryCount 0\), the last: a send blocked for more than GDpub_sendTimeout=0\.4s$'
	has_line pub.err "subscription st: removed: .*GDpub_sendTimeout=0\.4s"
}

@test "sendTimeout=-1: a stalled subscriber is never a failure" {
	pub GDpub_sendTimeout=-1
	fake st FAKESUB_RCVBUF=4096
	wait_until 10 has_line st.ev "^welcome "
	stall st
	big 100
	wait_until 10 stat_over published 100
	# well past the 0.4 s that removes it with GDpub_sendTimeout=0.4
	up=$(stat uptime)
	wait_until 10 stat_over uptime $((up + 2))
	state_is st '^(subscribed|online)$'
	assert_equal "$(field st failures)" 0
}

@test "sendQueueSizeMax under RemoveSubscriber: a full queue removes the subscription at once" {
	pub GDpub_sendTimeout=-1 GDpub_sendQueueSizeMax=5
	fake q FAKESUB_RCVBUF=4096 FAKESUB_QOS=retryCount=-1
	wait_until 10 has_line q.ev "^welcome "
	stall q
	big 200
	wait_until 20 state_is q '^removed: send queue full: [0-9]+ blocks over GDpub_sendQueueSizeMax=5 \(RemoveSubscriber\)$'
	has_line pub.err "gdpub: subscriber q \(127\.0\.0\.1:[0-9]+\) removed: send queue full"
}

@test "sendQueueSizeMax under DropEvents: the oldest queued blocks are dropped, the subscription stays" {
	pub GDpub_sendTimeout=-1 GDpub_sendQueueSizeMax=5 GDpub_sendQueueSizeMaxPolicy=DropEvents
	fake q FAKESUB_RCVBUF=4096
	wait_until 10 has_line q.ev "^welcome "
	stall q
	big 200
	wait_until 20 stat_over published 200
	wait_until 10 bash -c "[ \"\$(gdinspect -p $port --json subs | sed -n 's/.*\"dropped\":\([0-9]*\).*/\1/p')\" -gt 0 ]"
	state_is q '^(subscribed|online)$'
	q=$(field q queue)
	[ "$q" -le 5 ]
	echo resume >> q.cmd
	feed_close
	wait_until 20 has_line q.ev "^end$"
	n=$(count_lines q.ev '^block')
	[ "$n" -lt 200 ]
	# the last block published is never the one dropped
	has_line q.ev "^block 200 200 0 000199x"
}

@test "connectionCached, locatorCacheTimeout: the resolved address is reused, or resolved for each attempt" {
	hold_port port
	gdsub -P "localhost:$port" --max-retries 3 --retry-interval 0.05 -vv > /dev/null 2> a.err || true
	assert_equal "$(grep -c 'resolving localhost' a.err)" 1
	assert_equal "$(grep -c 'reusing the address resolved' a.err)" 2
	gdsub -P "localhost:$port" --max-retries 3 --retry-interval 0.05 -vv --qos connectionCached=0 > /dev/null 2> b.err || true
	assert_equal "$(grep -c 'resolving localhost' b.err)" 3
	gdsub -P "localhost:$port" --max-retries 3 --retry-interval 0.05 -vv --qos locatorCacheTimeout=0 > /dev/null 2> c.err || true
	assert_equal "$(grep -c 'resolving localhost' c.err)" 3
}
