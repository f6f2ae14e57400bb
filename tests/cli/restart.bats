#!/usr/bin/env bats
# A publisher that restarts, and --dedup none.
load helpers

# has_lines FILE N: FILE has exactly N lines
has_lines() {
	[ "$(wc -l < "$1" 2>/dev/null)" -eq "$2" ]
}

@test "a restarted publisher's new blocks are written, not taken for duplicates" {
	port=$(free_port)
	spawn "gdsub -P 127.0.0.1:$port --max-retries -1 --retry-interval 0.05 > out.txt 2> sub.err"
	spawn "(seq 1 3; sleep 60) | gdpub -p $port -n 1 -t 60 --wait-ready > st1.txt 2> pub1.err"
	pub1=$SPAWNED
	wait_until 10 has_lines out.txt 3
	run gdack -P "127.0.0.1:$port" "127.0.0.1:$port/1" "127.0.0.1:$port/2" "127.0.0.1:$port/3"
	assert_success
	wait_until 10 has_lines st1.txt 4	# READY and 3 ACKs
	kill -KILL -- "-$pub1"
	printf 'new1\nnew2\nnew3\n' > in2.txt
	spawn "gdpub -p $port -n 1 -t 20 --wait-ready=10 < in2.txt > st2.txt 2> pub2.err; echo \$? > pub2.rc"
	wait_until 10 has_lines out.txt 6
	tail -n 3 out.txt | cut -f2 | cmp - in2.txt
	run gdack -P "127.0.0.1:$port" "127.0.0.1:$port/1" "127.0.0.1:$port/2" "127.0.0.1:$port/3"
	assert_success
	wait_until 10 test -s pub2.rc
	[ "$(cat pub2.rc)" -eq 0 ]
	[ "$(grep -c '^ACK' st2.txt)" -eq 3 ]
	grep -q "publisher 127.0.0.1:$port restarted; forgetting its earlier blocks" sub.err
}

@test "--dedup none: resent copies are written too and each needs its acknowledgement" {
	port=$(free_port)
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.05\nGDsub_maxRetries=200\nGDsub_dedup=none\n' "$port" > s.ini
	# a slow stage: it holds the first line until gdpub has resent a copy
	# (at the 0.3 s timeout), so copies go through the pipeline too
	spawn "gdsub -c s.ini | { IFS= read -r l; $(until_resent "$port" 1); printf '%s\n' \"\$l\"; exec cat; } | gdack -c s.ini --tee > out.txt 2> ack.err; echo \$? > ack.rc"
	seq 1 3 > in.txt
	run gdpub -p "$port" -n 1 -t 0.3 --resend 5 --wait-ready=30 < in.txt
	assert_success
	wait_until 30 test -s ack.rc
	[ "$(cat ack.rc)" -eq 0 ]
	# more lines than blocks: the copies went through the pipeline
	[ "$(wc -l < out.txt)" -gt 3 ]
	grep -q '/r	' out.txt
	[ "$(cut -f2 out.txt | sort -u | wc -l)" -eq 3 ]
}
