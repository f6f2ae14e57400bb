#!/usr/bin/env bats
# Flow control (gdpub(1) FLOW CONTROL): with the default settings a
# subscriber pipeline slower than the publisher, but keeping up with its
# own steady speed, gets every block ACKed, because gdpub keeps no more
# blocks in flight than the pipelines acknowledge within a quarter of the
# timeout; gdinspect stats shows that window.
load helpers
bats_require_minimum_version 1.5.0

# throttled NAME PORT RATE: spawn gdsub | throttle.py RATE | gdack
throttled() {
	spawn "gdsub -P 127.0.0.1:$2 --name $1 --retry-interval 0.05 --max-retries 200 2> $1.sub.err |
		python $BATS_TEST_DIRNAME/throttle.py $3 |
		gdack -P 127.0.0.1:$2 --name $1 > /dev/null 2> $1.ack.err; echo \${PIPESTATUS[*]} > $1.rc"
}

@test "defaults: 20,000 blocks through a pipeline throttled to 2,000 blocks/s are all ACKed" {
	port=$(free_port)
	seq 1 20000 > in.txt
	throttled s "$port" 2000
	run --separate-stderr timeout 120 gdpub -p "$port" -n 1 --wait-ready=10 < in.txt
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 20000 ]
	[ "$(grep -c '^NACK ' <<<"$output")" -eq 0 ]
	wait_until 10 file_is s.rc "0 0 0"
}

# 2,000 blocks: 10 s at 200/s, five timeouts of steady state after the
# window settles (it moves every 32 ACKs, 0.16 s here); 5 times what
# rate x timeout (400) lets through without flow control
@test "defaults and -t 2: 2,000 blocks through a pipeline throttled to 200 blocks/s are all ACKed" {
	port=$(free_port)
	seq 1 2000 > in.txt
	throttled s "$port" 200
	run --separate-stderr timeout 120 gdpub -p "$port" -n 1 -t 2 --wait-ready=10 < in.txt
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 2000 ]
	wait_until 10 file_is s.rc "0 0 0"
}

# 4,500 blocks: more than the slower pipeline gets through in a timeout
# (3,000), so without flow control the last ones would be NACKed
@test "two pipelines of different speeds: every block ACKed, at the slower one's pace" {
	port=$(free_port)
	seq 1 4500 > in.txt
	throttled a "$port" 3000
	throttled b "$port" 1000
	run --separate-stderr timeout 120 gdpub -p "$port" -n 2 -t 3 --wait-ready=10 < in.txt
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 4500 ]
}

@test "gdinspect stats shows the window: it stays near rate x timeout/4 for a slow pipeline, '-' with GD off" {
	port=$(free_port)
	feed_open in.fifo
	spawn "gdpub -p $port -n 1 -t 4 --wait-ready=10 < in.fifo > st 2> pub.err; echo \$? > pub.rc" 7>&-
	throttled s "$port" 500 7>&-
	wait_until 10 has_line st '^READY$'
	# 2,000: the window is read at 1,000 ACKs (2 s), while it still limits
	seq 1 2000 >&7
	wait_until 20 lines_at_least st 1001
	run timeout 10 gdinspect --ctl "$(pub_sock "$port")" --json stats
	assert_success
	w=$(python -c 'import json,sys; print(json.loads(sys.stdin.read())["window"])' <<<"$output")
	# 500/s x 1 s = 500: allow for the measuring
	[ "$w" -ge 100 ] && [ "$w" -le 1500 ]
	feed_close
	wait_until 30 file_is pub.rc 0
	port2=$(free_port)
	feed_open in2.fifo
	spawn "gdpub -p $port2 < in2.fifo > st2 2> pub2.err" 7>&-
	wait_until 10 listening "$port2"
	run timeout 10 gdinspect --ctl "$(pub_sock "$port2")" --json stats
	assert_success
	assert_output --partial '"window":null'
	feed_close
}
