#!/usr/bin/env bats
# End-to-end publish -> subscribe -> acknowledge.
load helpers

@test "1000 blocks reach a GD pipeline in order and are all ACKed" {
	port=$(free_port)
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.05\nGDsub_maxRetries=200\n' "$port" > s.ini
	spawn "gdsub -c s.ini | gdack -c s.ini --tee > out.txt 2> ack.err; echo \$? > ack.rc"
	seq 1 1000 > in.txt
	run gdpub -p "$port" -n 1 --wait-ready=10 < in.txt
	assert_success
	assert_line --index 0 READY
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 1000 ]
	wait_until 10 test -s ack.rc
	[ "$(cat ack.rc)" -eq 0 ]
	cut -f2- out.txt | cmp - in.txt
	[ "$(head -n 1 out.txt | cut -f1)" = "127.0.0.1:$port/1" ]
}
