#!/usr/bin/env bats
# Re-published IDs (gdpub -I, -f frame): a block is its ID and its sequence
# index, so an ID published again once the earlier block is resolved is a
# new block: written by every gdsub, acknowledged on its own, and never
# ACKed by an acknowledgement of the earlier block. TCP, stream mode, a
# cascade, and a scripted subscriber whose late ack must not count.
load helpers
bats_require_minimum_version 1.5.0

# gate_pipeline NAME PORT [GDSUB-OPTS]: spawn gdsub | hold | gdack --tee:
# the first block waits in the pipeline until the test writes to
# NAME.gate; everything gdsub wrote is also in NAME.seen
gate_pipeline() {
	mkfifo "$1.gate"
	spawn "gdsub -P 127.0.0.1:$2 --name $1 --retry-interval 0.05 --max-retries 200 --linger 5 ${3:-} 2> $1.sub.err |
		tee $1.seen | { IFS= read -r l; read -r _ < $1.gate; printf '%s\n' \"\$l\"; exec cat; } |
		gdack -P 127.0.0.1:$2 --name $1 --tee > $1.out 2> $1.ack.err; echo \${PIPESTATUS[*]} > $1.rc" 7>&-
}

@test "TCP: ID 1 ACKed, then published again: the second payload is written and ACKed on its own" {
	port=$(free_port)
	spawn "gdsub -P 127.0.0.1:$port --retry-interval 0.05 --max-retries 200 2> sub.err |
		gdack -P 127.0.0.1:$port --tee > out.txt 2> ack.err"
	run --separate-stderr timeout 30 bash -c "printf '1\tfirst\n1\tsecond\n' |
		gdpub -p $port -n 1 -I --max-pending 1 --wait-ready=10 -t 3"
	assert_success
	assert_output "$(echo READY; statuses ACK 1 1)"
	wait_until 10 lines_at_least out.txt 2
	assert_equal "$(cat out.txt)" "$(printf '127.0.0.1:%s/1\tfirst\n127.0.0.1:%s/1\tsecond' "$port" "$port")"
}

@test "TCP: block 1 NACKed while in the pipeline, ID 1 retried: the retry is written, and ACKed only once the pipeline acknowledged it" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -I -t 1 --wait-ready=10 < in.fifo > st 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	gate_pipeline s "$port"
	wait_until 10 has_line st '^READY$'
	printf '1\tfirst\n' >&7
	wait_until 10 has_line st '^NACK 1$'
	printf '1\tsecond\n' >&7
	# the retry reached the pipeline (before: dropped as a duplicate)
	wait_until 10 lines_at_least s.seen 2
	assert_equal "$(cat st)" "$(echo READY; echo NACK 1)"
	echo go > s.gate
	feed_close
	wait_until 20 test -s pub.rc
	assert_equal "$(cat pub.rc)" 1
	assert_equal "$(cat st)" "$(echo READY; echo NACK 1; echo ACK 1)"
	assert_equal "$(cat s.out)" "$(printf '127.0.0.1:%s/1\tfirst\n127.0.0.1:%s/1\tsecond' "$port" "$port")"
	wait_until 10 file_is s.rc "0 0 0 0"
}

@test "TCP: an acknowledgement of the earlier block with a re-published ID does not count for the new one" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -I -t 1 --wait-ready=10 < in.fifo > st 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	touch cmds
	spawn "python $BATS_TEST_DIRNAME/fakesub.py 127.0.0.1 $port fake cmds ev 2> fake.err" 7>&-
	wait_until 10 has_line st '^READY$'
	printf '1\tfirst\n' >&7
	wait_until 10 has_line ev '^block 1 1 0 first$'
	wait_until 10 has_line st '^NACK 1$'
	printf '1\tsecond\n' >&7
	wait_until 10 has_line ev '^block 1 2 0 second$'
	# the first block's acknowledgement arrives late: not the second's
	echo 'ack 1 1' >> cmds
	wait_until 10 late_acks_are "$port" 1
	run timeout 10 gdinspect --ctl "$(pub_sock "$port")" --json pending
	assert_success
	assert_output --regexp '"id":1,.*"acks":0,'
	assert_equal "$(cat st)" "$(echo READY; echo NACK 1)"
	echo 'ack 1 2' >> cmds
	feed_close
	wait_until 20 test -s pub.rc
	assert_equal "$(cat st)" "$(echo READY; echo NACK 1; echo ACK 1)"
	echo quit >> cmds
}

# late_acks_are PORT N: gdinspect stats at the gdpub on PORT shows N late acks
late_acks_are() {
	timeout 10 gdinspect --ctl "$(pub_sock "$1")" --json stats | grep -q "\"late_acks\":$2[,}]"
}

@test "stream: ID 1 ACKed, then published again: the second payload is written and ACKed on its own" {
	port=$(free_port)
	run --separate-stderr timeout 30 bash -c "printf '1\tfirst\n1\tsecond\n' |
		gdpub -p $port -n 1 -I --max-pending 1 -t 3 -o - --status st 2> pub.err |
		gdsub -i - -P 127.0.0.1:$port --retry-interval 0.05 --max-retries 200 2> sub.err |
		gdack -P 127.0.0.1:$port --tee 2> ack.err; echo \${PIPESTATUS[*]} > rc"
	assert_output "$(printf '127.0.0.1:%s/1\tfirst\n127.0.0.1:%s/1\tsecond' "$port" "$port")"
	assert_equal "$(cat rc)" "0 0 0 0"
	assert_equal "$(cat st)" "$(echo READY; statuses ACK 1 1)"
}

@test "stream: block 1 NACKed while in the pipeline, ID 1 retried: the retry is written, and ACKed only once the pipeline acknowledged it" {
	port=$(free_port)
	feed_open in.fifo
	mkfifo s.gate
	spawn "gdpub -p $port -n 1 -I -t 1 -o - --status st < in.fifo 2> pub.err |
		gdsub -i - -P 127.0.0.1:$port --name s --retry-interval 0.05 --max-retries 200 --linger 5 2> s.sub.err |
		tee s.seen | { IFS= read -r l; read -r _ < s.gate; printf '%s\n' \"\$l\"; exec cat; } |
		gdack -P 127.0.0.1:$port --name s --tee > s.out 2> s.ack.err; echo \${PIPESTATUS[*]} > rc" 7>&-
	wait_until 10 listening "$port"
	printf '1\tfirst\n' >&7
	wait_until 10 has_line st '^NACK 1$'
	printf '1\tsecond\n' >&7
	wait_until 10 lines_at_least s.seen 2
	echo go > s.gate
	feed_close
	wait_until 20 test -s rc
	assert_equal "$(cat rc)" "1 0 0 0 0"
	assert_equal "$(cat st)" "$(echo READY; echo NACK 1; echo ACK 1)"
	assert_equal "$(cat s.out)" "$(printf '127.0.0.1:%s/1\tfirst\n127.0.0.1:%s/1\tsecond' "$port" "$port")"
}

@test "cascade: an ID re-published at stage 1 reaches stage 2's pipeline, and stage 1 ACKs it only after stage 2 ACKed it" {
	p1=$(free_port)
	p2=$(free_port)
	spawn "printf '1\tfirst\n1\tsecond\n' | gdpub -p $p1 -n 1 -I --max-pending 1 -t 10 --wait-ready=10 > st1 2> p1.err; echo \$? > p1.rc"
	spawn "gdsub -P 127.0.0.1:$p1 --name s1 -f frame --retry-interval 0.05 --max-retries 200 --linger 5 2> s1.err |
		gdpub -p $p2 -n 1 -t 10 -f frame --wait-ready=10 2> p2.err | tee st2 |
		gdack -P 127.0.0.1:$p1 --name s1 -f status 2> a1.err; echo \${PIPESTATUS[*]} > c.rc"
	spawn "gdsub -P 127.0.0.1:$p2 --name a --retry-interval 0.05 --max-retries 200 --linger 5 2> a.sub.err |
		gdack -P 127.0.0.1:$p2 --name a --tee > outa 2> a.ack.err; echo \${PIPESTATUS[*]} > a.rc"
	wait_until 30 test -s p1.rc
	assert_equal "$(cat p1.rc)" 0
	assert_equal "$(cat st1)" "$(echo READY; statuses ACK 1 1)"
	wait_until 10 test -s c.rc
	assert_equal "$(cat c.rc)" "0 0 0 0"
	assert_equal "$(cat st2)" "$(echo READY; printf 'ACK 1 127.0.0.1:%s/1\n' "$p1" "$p1")"
	assert_equal "$(cat outa)" "$(printf '127.0.0.1:%s/1\tfirst\n127.0.0.1:%s/1\tsecond' "$p2" "$p2")"
}
