#!/usr/bin/env bats
# gdpub <-> gdsub through a fault-injecting relay (tests/faults/relay.py):
# a connection dropped after N bytes either way, delayed chunks, one-byte
# writes, a duplicated chunk, a corrupted frame header or payload, random
# drops, forged acknowledgements. The SPEC's outcomes: a lost connection
# is said and reconnected, what it carried is resent and every block
# ACKed; a copy is dropped (or acknowledged again) by key, or fails its
# seal; a malformed frame is an error naming the publisher; a frame whose
# seal fails (CRC32C, or the MAC with a key) is never acted on; nothing is
# lost.
load helpers
bats_require_minimum_version 1.5.0

# relay OPTS...: a relay to the gdpub on $port; sets rport
relay() {
	spawn "exec python $BATS_TEST_DIRNAME/../faults/relay.py 0 127.0.0.1:$port --port-file relay.port $* > /dev/null 2> relay.err"
	wait_until 10 test -s relay.port
	rport=$(cat relay.port)
	# what gdsub says of a connection the relay closes at once because
	# gdpub does not listen yet
	# (before its welcome, since the handshake of wire version 3)
	early="^gdsub: (lost connection to publisher 127.0.0.1:$rport: connection closed by the publisher; reconnecting|cannot connect to 127.0.0.1:$rport: connection closed by the publisher before its welcome .*)$"
}

# pipeline [GDSUB-OPTS]: gdsub | gdack --tee > s.out through the relay
pipeline() {
	spawn "gdsub -P 127.0.0.1:$rport --retry-interval 0.05 --max-retries 400 ${1:-} 2> sub.err | gdack -P 127.0.0.1:$rport --tee > s.out 2> ack.err; echo \${PIPESTATUS[*]} > s.rc"
}

# publish N GDPUB-OPTS...: start seq 1 N through gdpub -n 1 on port 0,
# status in st; sets port. published N: wait for it, exit status checked
# 0, every block ACKed
publish() {
	local n=$1
	shift
	pub_bg --separate-stderr timeout 60 bash -c "seq 1 $n | gdpub -p 0 --port-file pub.port -n 1 --wait-ready=20 $* > st 2> pub.err"
}

published() {
	local n=$1
	pub_wait 90
	assert_success
	assert_equal "$(grep -c '^ACK' st)" "$n"
	assert_equal "$(grep -vc '^ACK\|^READY' st)" 0
}

# once N: the pipeline wrote blocks 1..N each exactly once
once() {
	wait_until 20 has_lines s.out "$1"
	assert_equal "$(cut -f2 s.out | sort -n)" "$(seq 1 "$1")"
	seq 1 "$1" > sent
	run gdinspect measure sent s.out
	assert_line --index 1 --regexp "exactly-once$"
}

setup_file() {
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
}

@test "the relay: listens on a free port, says its seed, passes bytes both ways unchanged" {
	publish 2000 -t 10
	relay
	listening "$rport"
	pipeline
	published 2000
	once 2000
	grep -q '^relay: seed [0-9]*$' relay.err
	run ! bash -c "grep -v 'Connection refused' relay.err | grep -q dropped"
}

@test "dropped after 300 bytes towards gdsub: gdsub says so and reconnects, the rest is resent, every block ACKed and written once" {
	publish 50 -t 0.5 --resend 20
	relay --drop-after 300 --dir down
	pipeline
	published 50
	once 50
	grep -q '^relay: connection [0-9]*: dropped (after 300 bytes down)$' relay.err
	has_line sub.err "^gdsub: lost connection to publisher 127.0.0.1:$rport: connection closed by the publisher; reconnecting$"
	grep -q 'disconnected: connection closed' pub.err
}

@test "dropped after 100 bytes towards gdpub (acknowledgements lost): the resends are acknowledged again, not written again" {
	publish 50 -t 0.5 --resend 20
	relay --drop-after 100 --dir up
	pipeline
	published 50
	once 50
	grep -q '^relay: connection [0-9]*: dropped (after 100 bytes up)$' relay.err
}

@test "every chunk delayed past the timeout: blocks are resent, the copies dropped by key, every block ACKed once" {
	pub_bg --separate-stderr timeout 60 bash -c "seq 1 5 | gdpub -p 0 --port-file pub.port -n 1 -t 0.2 --resend 20 --wait-ready=20 -v > st 2> pub.err"
	relay --delay 0.3 --dir both
	pipeline
	pub_wait 90
	assert_success
	assert_equal "$(cat st)" "$(echo READY; statuses ACK 1 2 3 4 5)"
	once 5
	# gdpub's end-of-run summary counts the resends
	[[ "$(cat pub.err)" =~ resent\ ([1-9][0-9]*) ]]
}

@test "one byte per write both ways: frames are put together again, every block ACKed and written once" {
	publish 1000 -t 10
	relay --split --dir both
	pipeline
	published 1000
	once 1000
}

@test "a duplicated chunk towards gdsub: the copy fails its seal, or breaks the framing (a malformed frame): reconnect, resend; written once" {
	publish 200 -t 0.5 --resend 20
	relay --dup-at 200 --dir down
	pipeline
	published 200
	once 200
	grep -q '^relay: connection [0-9]*: duplicated [0-9]* bytes at [0-9]* down$' relay.err
	# either outcome, and nothing else on gdsub's stderr (but the
	# connections the relay closed before gdpub listened)
	run grep -v -E -e "^gdsub: publisher 127.0.0.1:$rport sent a malformed frame; reconnecting$" \
	    -e "^gdsub: lost connection to publisher 127.0.0.1:$rport: frames failed their CRC32C check \(damaged on the way\); nothing they said counts; reconnecting$" \
	    -e "$early" sub.err
	refute_output
}

@test "a duplicated chunk towards gdpub (the hello, or acknowledgements): every block ACKed and written once" {
	publish 200 -t 0.5 --resend 20
	relay --dup-at 0 --dir up
	pipeline
	published 200
	once 200
	grep -q '^relay: connection [0-9]*: duplicated [0-9]* bytes at 0 up$' relay.err
}

@test "a corrupted frame type towards gdsub: gdsub names the publisher and the malformed frame, reconnects; every block ACKed and written once" {
	publish 20 -t 0.5 --resend 20
	relay --corrupt-at 4 --dir down
	pipeline
	published 20
	once 20
	grep -q '^relay: connection [0-9]*: corrupted byte 4 down$' relay.err
	assert_equal "$(grep -v -E -e "$early" sub.err)" "gdsub: publisher 127.0.0.1:$rport sent a malformed frame; reconnecting"
}

@test "the end of the stream lost with its connection: gdsub connects again and gdpub, still waiting for its BYE, tells it the end; both sides exit 0" {
	publish 50 -t 5
	relay --drop-before-type 6 --dir down
	pipeline
	published 50
	once 50
	# without gdpub waiting, gdsub would retry a publisher that is gone
	# until --max-retries (20 s here) and exit 69
	wait_until 10 file_is s.rc "0 0"
	grep -q '^relay: connection [0-9]*: dropped (before a frame of type 6 at byte [0-9]* down)$' relay.err
}

@test "the end lost and the subscriber not back: gdpub waits 3 s for it, says so at -v, exits 0; SIGTERM ends that wait at once" {
	# held to the end: the second gdpub below binds it again
	hold_port port
	pub_bg --separate-stderr timeout 30 bash -c "seq 1 5 | gdpub -p $port --port-file pub.port -n 1 -v --wait-ready=20"
	relay --drop-before-type 6 --dir down --conns 0
	# a subscriber that would try again only after 10 s
	spawn "gdsub -P 127.0.0.1:$rport --retry-interval 10 2> sub.err | gdack -P 127.0.0.1:$rport > /dev/null 2> ack.err"
	sub=$SPAWNED
	pub_wait 60
	assert_success
	assert_equal "$(grep -c '^ACK' <<<"$output")" 5
	[[ "$stderr" == *"gdpub: the stream has ended: waiting up to 3000 ms for the subscribers to say they have the end"* ]]
	[[ "$stderr" == *"gdpub: 1 subscriber lost the connection before the end of the stream reached it, and did not connect again within 3000 ms"* ]]
	# again, on the port the relay forwards to, and a SIGTERM while gdpub
	# waits: it ends at once, without the line above (which would come 3 s
	# later, had it waited)
	kill -KILL -- "-$sub"
	seq 1 5 > in5
	spawn "sh -c 'echo \$\$ > pub.pid; exec gdpub -p $port -n 1 -v --wait-ready=20 < in5 > st2 2> p2.err'; echo \$? > p2.rc"
	wait_until 10 listening "$port"
	spawn "gdsub -P 127.0.0.1:$rport --retry-interval 10 2> sub2.err | gdack -P 127.0.0.1:$rport > /dev/null 2> ack2.err"
	wait_until 20 has_line p2.err 'the stream has ended: waiting up to 3000 ms'
	kill -TERM "$(cat pub.pid)"
	wait_until 10 test -s p2.rc
	assert_equal "$(cat p2.rc)" 0
	assert_equal "$(grep -c '^ACK' st2)" 5
	run ! grep -q 'did not connect again' p2.err
}

@test "random drops either way (seeded), at-least-once (--dedup none): every block written at least once, every block ACKed" {
	publish 3000 -t 0.5 --resend 50
	relay --drop-random 0.05 --dir both --seed 42
	pipeline "--dedup none"
	published 3000
	wait_until 20 file_is s.rc "0 0"
	cut -f2 s.out | sort -nu > got
	assert_equal "$(cat got)" "$(seq 1 3000)"
	grep -q '^relay: seed 42$' relay.err
	grep -q 'dropped (at random' relay.err
}

@test "gdsub --idle-timeout counts the bytes of a block still arriving: a 4 MiB block dripping through the relay for seconds longer than the timeout is written and ACKed, then the idle end" {
	{ head -c 4194304 /dev/zero | tr '\0' x; echo; } > big.txt
	# the input stays open: the stream does not end, the idle time does
	spawn "exec gdpub -p 0 --port-file pub.port -n 1 -t 90 --max-block-size 5000000 --wait-ready=30 < <(cat big.txt; sleep 120) > st 2> pub.err"
	port=$(port_of pub.port)
	# 64 KiB every 0.1 s at most: 6.4 s or more for the block
	relay --delay 0.1
	spawn "gdsub -P 127.0.0.1:$rport --retry-interval 0.05 --max-retries 400 --max-block-size 5000000 --idle-timeout 1.5 2> sub.err | gdack -P 127.0.0.1:$rport --tee > s.out 2> ack.err; echo \${PIPESTATUS[*]} > s.rc"
	wait_until 60 file_is s.rc "0 0"
	wait_until 10 has_line st '^ACK 1$'
	[ "$(nlines s.out)" -eq 1 ]
	[ "$(cut -f2 s.out | wc -c)" -eq 4194305 ]
	# before: "ending after 0 blocks" while the block arrived, then NACK
	grep -Fxq "gdsub: no block arrived for 1.5 seconds (--idle-timeout); ending after 1 block" sub.err
}

# seals_failed PORT: the gdpub on PORT counts connections lost to a seal
seals_failed() {
	timeout 10 gdinspect -p "$1" --json stats | grep -Eq '"seal_failed":[1-9]'
}

# big N: N lines of 501 bytes ("I-000...0"), in big.in
big() {
	seq 1 "$1" | awk '{ printf "%d-%0499d\n", $1, 0 }' > big.in
}

# sealed MSG KEY...: gdpub -n 1 (with KEY... as options) publishes big.in
# through a relay that flips byte 300 towards gdsub, inside the first
# block's payload; gdsub (with KEY...) loses that connection with MSG,
# every block is resent, written intact and ACKed once
sealed() {
	local msg=$1
	shift
	big 20
	pub_bg --separate-stderr timeout 60 bash -c "gdpub -p 0 --port-file pub.port -n 1 -t 0.5 --resend 20 --wait-ready=20 $* < big.in > st 2> pub.err"
	relay --corrupt-at 300 --dir down
	pipeline "$*"
	published 20
	wait_until 20 has_lines s.out 20
	assert_equal "$(cut -f2 s.out | sort -n)" "$(sort -n big.in)"
	grep -q '^relay: connection [0-9]*: corrupted byte 300 down$' relay.err
	run grep -v -E -e "$early" sub.err
	assert_output "gdsub: lost connection to publisher 127.0.0.1:$rport: $msg; nothing they said counts; reconnecting"
}

@test "no key: a payload byte flipped towards gdsub fails the CRC32C seal: the connection is lost, the block resent, written intact and ACKed once" {
	# before seals, the block was written with the flipped byte, and ACKed
	sealed "frames failed their CRC32C check (damaged on the way)"
}

@test "a key: a payload byte flipped towards gdsub fails the MAC: the connection is lost, the block resent, written intact and ACKed once" {
	head -c 32 /dev/urandom | base64 > k
	chmod 600 k
	sealed "frames failed authentication (their seal does not verify under the session key: forged or altered on the way)" --auth-key-file k
}

@test "no key: a byte of the hello flipped towards gdpub fails its CRC32C seal: gdpub acts on nothing, closes, says so once and counts it; gdsub gets in again" {
	publish 20 -t 10
	# byte 20: in the hello's nonce
	relay --corrupt-at 20 --dir up
	pipeline
	published 20
	once 20
	grep -q '^relay: connection [0-9]*: corrupted byte 20 up$' relay.err
	[ "$(grep -c 'failed their CRC32C' pub.err)" -eq 1 ]
	grep -Eq "^gdpub: subscriber \? \(127\.0\.0\.1:[0-9]+\): frames failed their CRC32C check \(damaged on the way\); closing its connection, nothing they said counts$" pub.err
}

@test "a key: a relay that swallows the blocks and forges their ACKs gets none of them ACKed: gdpub closes each such connection, says so, counts it; the blocks are NACKed" {
	head -c 32 /dev/urandom | base64 > k
	chmod 600 k
	# before the seals (wire 3), gdpub reported ACK 1 ... ACK 5 here while
	# the pipeline's output had 0 lines
	pub_bg --separate-stderr timeout 60 bash -c "seq 1 5 | gdpub -p 0 --port-file pub.port -n 1 -t 2 --wait-ready=20 --auth-key-file k > st 2> pub.err"
	relay --forge-acks
	pipeline "--auth-key-file k"
	wait_until 20 grep -q 'forged its ACK' relay.err
	wait_until 20 seals_failed "$port"
	pub_wait 60
	assert_failure 1
	assert_equal "$(cat st)" "$(echo READY; statuses NACK 1 2 3 4 5)"
	grep -Eq "^gdpub: subscriber [^ ]+ \(127\.0\.0\.1:[0-9]+\): frames failed authentication \(their seal does not verify under the session key: forged or altered on the way\); closing its connection, nothing they said counts$" pub.err
	[ ! -s s.out ]
}
