#!/usr/bin/env bats
# End-to-end publish -> subscribe -> acknowledge.
load helpers
bats_require_minimum_version 1.5.0

@test "1000 blocks reach a GD pipeline in order and are all ACKed" {
	seq 1 1000 > in.txt
	pub_bg gdpub -p 0 --port-file pub.port -n 1 --wait-ready=10 < in.txt
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.05\nGDsub_maxRetries=200\n' "$port" > s.ini
	spawn "gdsub -c s.ini | gdack -c s.ini --tee > out.txt 2> ack.err; echo \$? > ack.rc"
	pub_wait
	assert_success
	assert_line --index 0 READY
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 1000 ]
	wait_until 10 test -s ack.rc
	[ "$(cat ack.rc)" -eq 0 ]
	cut -f2- out.txt | cmp - in.txt
	[ "$(head -n 1 out.txt | cut -f1)" = "127.0.0.1:$port/1" ]
}

@test "1000 blocks through two GD pipelines (numSubs=2): each ACKed once, both get all" {
	seq 1 1000 > in.txt
	pub_bg --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 2 --wait-ready=10 < in.txt
	sub_conf s1.ini "$port"
	sub_conf s2.ini "$port"
	ack_pipeline s1
	ack_pipeline s2
	pub_wait
	assert_success
	assert_line --index 0 READY
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 1000 ]
	[ -z "$(grep '^ACK ' <<<"$output" | sort | uniq -d)" ]
	diff <(grep '^ACK ' <<<"$output" | cut -d' ' -f2 | sort -n) in.txt
	refute_line --regexp '^(NACK|REJECT)'
	wait_until 10 test -s s1.rc
	wait_until 10 test -s s2.rc
	[ "$(cat s1.rc)" = "0 0" ]
	[ "$(cat s2.rc)" = "0 0" ]
	cut -f2- s1.out | cmp - in.txt
	cut -f2- s2.out | cmp - in.txt
}

@test "blocks that no subscriber acknowledges are NACKed after the timeout; exit 1" {
	seq 1 5 > in.txt
	pub_bg --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 1 -t 0.3 --wait-ready=10 < in.txt
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini > out.txt 2> sub.err"	# no gdack: nothing is acked
	pub_wait
	assert_failure 1
	assert_equal "$output" "$(printf 'READY\nNACK 1\nNACK 2\nNACK 3\nNACK 4\nNACK 5')"
	# the subscriber did receive them: it is the acknowledgement that lacked
	wait_until 5 lines_at_least out.txt 5
	cut -f2- out.txt | cmp - in.txt
}

@test "--ids: a block whose ID is already pending is REJECTed, the first one is NACKed" {
	pub_bg --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 1 -t 1 --ids --wait-ready=10 \
		< <(printf '5\ta\n5\tb\n')
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini > out.txt 2> sub.err"	# never acks
	pub_wait
	assert_failure 1
	assert_equal "$output" "$(printf 'READY\nREJECT 5 invalid event block ID: 5 is already pending\nNACK 5')"
	assert_equal "$(stderr_before_summary)" "gdpub: REJECT 5: invalid event block ID: 5 is already pending"
	summary_is 0 1 1
	# only the first block was published
	wait_until 5 lines_at_least out.txt 1
	assert_equal "$(cat out.txt)" "$(printf '127.0.0.1:%s/5\ta' "$port")"
}

@test "--ids: a malformed line is REJECTed as '-', the rest goes on; exit 1" {
	printf '7\tseven\nno tab here\nx1\tbad id\n9\tnine\n' > in.txt
	pub_bg --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 1 --ids --wait-ready=10 < in.txt
	sub_conf s.ini "$port"
	ack_pipeline s
	pub_wait
	assert_failure 1
	assert_line --index 0 READY
	assert_line 'REJECT - malformed line 2: expected ID<TAB>payload with a decimal ID'
	assert_line 'REJECT - malformed line 3: expected ID<TAB>payload with a decimal ID'
	assert_line 'ACK 7'
	assert_line 'ACK 9'
	[ "${#lines[@]}" -eq 5 ]
	assert_equal "$(stderr_before_summary)" "$(printf 'gdpub: REJECT -: malformed line 2: expected ID<TAB>payload with a decimal ID\ngdpub: REJECT -: malformed line 3: expected ID<TAB>payload with a decimal ID')"
	summary_is 2 0 2
	wait_until 10 file_is s.rc "0 0"
	assert_equal "$(cat s.out)" "$(printf '127.0.0.1:%s/7\tseven\n127.0.0.1:%s/9\tnine' "$port" "$port")"
}

# "0001" would be published as ID 1, and its REJECT/ACK line could not be
# told from the line "1"'s: an ID is 0 or a decimal without leading zero.
@test "--ids: an ID with a leading zero is a malformed line, REJECTed as '-'" {
	local port why="expected ID<TAB>payload with a decimal ID without leading zeros"
	printf '0001\ta\n1\tb\n00\tc\n0\td\n010\te\n10\tf\n' > in.txt
	run --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port --ids -o s.gds < in.txt
	assert_failure 1
	assert_equal "$output" "$(printf 'REJECT - malformed line %s: %s\n' 1 "$why" 3 "$why" 5 "$why")"
	assert_equal "$(stderr_before_summary)" "$(printf 'gdpub: REJECT -: malformed line %s: %s\n' 1 "$why" 3 "$why" 5 "$why")"
	[[ "$(tail -n 1 <<<"$stderr")" =~ ^"gdpub: warning: 6 blocks in "[0-9.]+" s: 3 published (GD off), 3 REJECT (each REJECT line says why)"$ ]]
	run gdinspect decode --json s.gds
	assert_success
	assert_equal "$(python -c 'import json, sys
print(" ".join("%s=%s" % (r["id"], r["preview"]) for r in map(json.loads, sys.stdin) if r["type"] == "block"))' <<<"$output")" "1=b 0=d 10=f"
}

@test "a block over --max-block-size is REJECTed with its ID, the rest goes on; exit 1" {
	# block 4 (3 MB) is also longer than gdpub's input buffer
	{
		printf 'short\n0123456789ABCDEFG\nexactly-16-bytes\n'
		head -c 3000000 /dev/zero | tr '\0' x
		printf '\nok\n'
	} > in.txt
	pub_bg --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 1 --max-block-size 16 --wait-ready=10 < in.txt
	sub_conf s.ini "$port"
	ack_pipeline s
	pub_wait
	assert_failure 1
	assert_line --index 0 READY
	# REJECT comes when the block is read, ACKs when acks come: sort
	assert_equal "$(sort <<<"$output")" "$(printf 'ACK 1\nACK 3\nACK 5\nREADY\nREJECT 2 block larger than GDpub_maxBlockSize (16 bytes)\nREJECT 4 block larger than GDpub_maxBlockSize (16 bytes)')"
	assert_equal "$(stderr_before_summary)" "$(printf 'gdpub: REJECT 2: block larger than GDpub_maxBlockSize (16 bytes)\ngdpub: REJECT 4: block larger than GDpub_maxBlockSize (16 bytes)')"
	summary_is 3 0 2
	wait_until 10 file_is s.rc "0 0"
	assert_equal "$(cut -f2- s.out)" "$(printf 'short\nexactly-16-bytes\nok')"
}

@test "an acknowledgement connection beyond numSubs is refused; the first subscriber ACKs every block" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf s1.ini "$port"
	sub_conf s2.ini "$port"
	ack_pipeline s1 7>&-
	wait_until 10 has_line pub.out '^READY$'
	spawn "gdsub -c s2.ini > s2.out 2> s2.err; echo \$? > s2.rc" 7>&-
	wait_until 10 has_line s2.err 'refused the acknowledgement connection'
	seq 1 5 >&7
	feed_close
	wait_until 10 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	assert_equal "$(cat pub.out)" "$(echo READY; statuses ACK 1 2 3 4 5)"
	# the subscriber's name is HOSTNAME:CONFIG-PATH, its address 127.0.0.1:ITS-PORT
	[ "$(nlines pub.err)" -eq 1 ]
	[[ "$(cat pub.err)" == "gdpub: refused acknowledgement connection from $(hostname):$(realpath s2.ini) (127.0.0.1:"[0-9]*"): numSubs GD subscribers are already connected" ]]
	wait_until 10 test -s s2.rc
	{
		printf 'gdsub: publisher 127.0.0.1:%s refused the acknowledgement connection: the publisher already has numSubs GD subscribers\n' "$port"
		for i in 1 2 3 4 5; do
			printf 'gdsub: block 127.0.0.1:%s/%s received but cannot be acknowledged: publisher 127.0.0.1:%s refused: the publisher already has numSubs GD subscribers\n' "$port" "$i" "$port"
		done
	} > s2.expected
	diff s2.expected s2.err
	# the refused subscriber still receives the blocks
	cut -f2- s2.out | cmp - <(seq 1 5)
	wait_until 10 file_is s1.rc "0 0"
	cut -f2- s1.out | cmp - <(seq 1 5)
}

@test "a subscriber started before its publisher retries, then connects and acknowledges" {
	hold_port port
	sub_conf s.ini "$port"
	ack_pipeline s
	wait_until 10 has_line s.sub.err "^gdsub: cannot connect to 127\.0\.0\.1:$port: connection refused \(attempt 2 of 200\)$"
	seq 1 100 > in.txt
	run --separate-stderr timeout 20 gdpub -p "$port" -n 1 --wait-ready=10 < in.txt
	assert_success
	assert_line --index 0 READY
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 100 ]
	wait_until 10 file_is s.rc "0 0"
	cut -f2- s.out | cmp - in.txt
	# every line gdsub logged is a connection attempt, numbered from 1
	n=$(wc -l < s.sub.err)
	[ "$n" -ge 2 ]
	diff s.sub.err <(for i in $(seq 1 "$n"); do
		printf 'gdsub: cannot connect to 127.0.0.1:%s: connection refused (attempt %s of 200)\n' "$port" "$i"
	done)
}

@test "an unreachable publisher: gdsub logs each attempt, gives up after maxRetries, exit 69" {
	hold_port port
	run --separate-stderr timeout 20 gdsub -P "127.0.0.1:$port" --retry-interval 0.05 --max-retries 4
	assert_failure 69
	assert_equal "$output" ""
	assert_equal "$stderr" "$(for i in 1 2 3 4; do
		printf 'gdsub: cannot connect to 127.0.0.1:%s: connection refused (attempt %s of 4)\n' "$port" "$i"
	done; printf 'gdsub: giving up on publisher 127.0.0.1:%s after 4 attempts' "$port")"
	# the same from a config file, where the option overrides GDsub_maxRetries
	sub_conf s.ini "$port"
	run --separate-stderr timeout 20 gdsub -c s.ini --max-retries 2
	assert_failure 69
	assert_equal "$stderr" "$(for i in 1 2; do
		printf 'gdsub: cannot connect to 127.0.0.1:%s: connection refused (attempt %s of 2)\n' "$port" "$i"
	done; printf 'gdsub: giving up on publisher 127.0.0.1:%s after 2 attempts' "$port")"
}

@test "gdsub gives up after 1 attempt, in the singular (--max-retries 1 and 0)" {
	hold_port port
	for n in 1 0; do
		run --separate-stderr timeout 20 gdsub -P "127.0.0.1:$port" --max-retries "$n"
		assert_failure 69
		assert_equal "$stderr" "$(printf 'gdsub: cannot connect to 127.0.0.1:%s: connection refused (attempt 1 of 1)\ngdsub: giving up on publisher 127.0.0.1:%s after 1 attempt' "$port" "$port")"
	done
}

@test "GD and --no-gd subscribers mixed: the receive-only one gets every block, its acks are not needed" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -v < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf g.ini "$port"
	sub_conf n.ini "$port"
	ack_pipeline g 7>&-
	spawn "gdsub -c n.ini --no-gd > n.out 2> n.err; echo \$? > n.rc" 7>&-
	wait_until 10 has_line pub.out '^READY$'
	wait_until 10 has_line pub.err 'connected: receive only$'
	seq 1 200 > in.txt
	cat in.txt >&7
	feed_close
	wait_until 10 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	[ "$(grep -c '^ACK ' pub.out)" -eq 200 ]
	run grep -E '^(NACK|REJECT)' pub.out
	assert_failure 1
	wait_until 10 test -s n.rc
	assert_equal "$(cat n.rc)" 0
	cut -f2- n.out | cmp - in.txt
	# nothing but the attempts made before gdpub listened
	run grep -v 'cannot connect to' n.err
	assert_output ''
	wait_until 10 file_is g.rc "0 0"
	cut -f2- g.out | cmp - in.txt
}

@test "--resend: a slow pipeline's blocks are resent at the timeout and end ACKed; no NACK, no duplicate" {
	seq 1 5 > in.txt
	pub_bg --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 2 -t 2 --resend 1 --wait-ready=10 -v < in.txt
	sub_conf fast.ini "$port"
	sub_conf slow.ini "$port"
	ack_pipeline fast
	# the slow stage holds the first block until gdpub has resent all five
	# (at the 2 s timeout), 2 s before they would be NACKed
	spawn "gdsub -c slow.ini 2> slow.sub.err |
		{ IFS= read -r l; $(until_resent "$port" 5); printf '%s\n' \"\$l\"; exec cat; } |
		gdack -c slow.ini --tee > slow.out 2> slow.ack.err; echo \${PIPESTATUS[*]} > slow.rc"
	pub_wait
	assert_success
	assert_equal "$output" "$(echo READY; statuses ACK 1 2 3 4 5)"
	[[ "$stderr" == *"gdpub: published 5, ACK 5, NACK 0, REJECT 0, resent 5" ]]
	# the fast pipeline had acked them: it acks the copies again, silently
	wait_until 10 file_is fast.rc "0 0"
	diff fast.out <(keys "$port" 1 2 3 4 5 | paste - in.txt)
	# the slow one still held them: the copies are dropped as duplicates
	wait_until 10 file_is slow.rc "0 0 0"
	diff slow.out <(keys "$port" 1 2 3 4 5 | paste - in.txt)
}

@test "--resend with --dedup none: the resent copies come out flagged /r and acknowledging them succeeds" {
	seq 1 5 > in.txt
	pub_bg timeout 20 bash -c "gdpub -p 0 --port-file pub.port -n 2 -t 2 --resend 1 --wait-ready=10 < in.txt > pub.out 2> pub.err"
	sub_conf fast.ini "$port"
	sub_conf slow.ini "$port" 'GDsub_dedup=none'
	ack_pipeline fast
	# as above, the first block is held until all five were resent (at the
	# 2 s timeout); once it is ACKed the rest, the resent copies among
	# them, follow
	spawn "gdsub -c slow.ini 2> slow.sub.err |
		{ IFS= read -r l; $(until_resent "$port" 5); printf '%s\n' \"\$l\"
		  for i in \$(seq 100); do grep -q '^ACK 1\$' pub.out && break; sleep 0.05; done
		  exec cat; } |
		gdack -c slow.ini --tee > slow.out 2> slow.ack.err; echo \${PIPESTATUS[*]} > slow.rc"
	pub_wait
	assert_success
	assert_equal "$(cat pub.out)" "$(echo READY; statuses ACK 1 2 3 4 5)"
	wait_until 10 file_is fast.rc "0 0"
	diff fast.out <(keys "$port" 1 2 3 4 5 | paste - in.txt)
	wait_until 10 test -s slow.rc
	diff slow.out <(keys "$port" 1 2 3 4 5 | paste - in.txt;
		keys "$port" 1 2 3 4 5 | sed 's|$|/r|' | paste - in.txt)
	assert_equal "$(cat slow.ack.err)" ""
	assert_equal "$(cat slow.rc)" "0 0 0"
}

@test "--resend: a GD subscriber that missed a block gets the resent copy flagged /r and ACKs it" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 2 -t 2 --resend 1 -v < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf first.ini "$port"
	sub_conf late.ini "$port"
	ack_pipeline first 7>&-
	wait_until 10 has_line pub.err 'connected: GD slot 0, 1 of 2$'
	printf '%s\n' 1 2 3 >&7
	feed_close
	# sent, acked by the first subscriber: 1 ack of 2, pending until the resend
	wait_until 10 lines_at_least first.out 3
	ack_pipeline late
	wait_until 10 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	assert_equal "$(cat pub.out)" "$(echo READY; statuses ACK 1 2 3)"
	wait_until 10 file_is late.rc "0 0"
	diff late.out <(keys "$port" 1 2 3 | sed 's|$|/r|' | paste - <(seq 1 3))
	wait_until 10 file_is first.rc "0 0"
	diff first.out <(keys "$port" 1 2 3 | paste - <(seq 1 3))
}

@test "payload bytes are kept: tabs, spaces, empty lines, CR, UTF-8, control bytes, no final newline" {
	printf 'a\tb\t\tc\n\n  lead and trail  \n\t\n\n\r\ncr\r\nmid\rcr\nh\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac\n\x01\x1b[0m\x7f\xff\n\\n \\t %%s\nlast without newline ' > in.bin
	pub_bg --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 1 --wait-ready=10 < in.bin
	sub_conf s.ini "$port"
	ack_pipeline s
	pub_wait
	assert_success
	assert_equal "$output" "$(echo READY; statuses ACK $(seq 1 12))"
	wait_until 10 file_is s.rc "0 0"
	# the last block had no newline: gdsub ends it with one
	cut -f2- s.out | cmp - <(cat in.bin; echo)
	cut -f1 s.out | cmp - <(keys "$port" $(seq 1 12))
}

@test "-0: NUL-terminated payloads with newlines go through gdpub -0, gdsub -0, gdack -0" {
	printf 'one\nline two\0two\n\nlines\n\0tab\there\0\0last' > in.bin
	pub_bg --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 1 -0 --wait-ready=10 < in.bin
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini -0 2> s.sub.err | gdack -c s.ini -0 --tee > s.out 2> s.ack.err; echo \${PIPESTATUS[*]} > s.rc"
	pub_wait
	assert_success
	assert_equal "$output" "$(echo READY; statuses ACK 1 2 3 4 5)"
	wait_until 10 file_is s.rc "0 0"
	cut -z -f2- s.out | cmp - <(cat in.bin; printf '\0')
	cut -z -f1 s.out | tr '\0' '\n' | cmp - <(keys "$port" 1 2 3 4 5)
}

@test "a payload with a newline cannot be written in line format: error naming the key, not acked, NACK" {
	printf 'fine\0bad\npayload\0also fine\0' > in.bin
	pub_bg --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 1 -0 -t 1 --wait-ready=10 < in.bin
	sub_conf s.ini "$port"
	ack_pipeline s
	pub_wait
	assert_failure 1
	assert_equal "$(sort <<<"$output")" "$(printf 'ACK 1\nACK 3\nNACK 2\nREADY')"
	assert_line --index 0 READY
	wait_until 10 test -s s.rc
	assert_equal "$(grep -v 'cannot connect to' s.sub.err)" "$(printf '%s\n%s' "gdsub: block 127.0.0.1:$port/2 cannot be written in line format: its payload contains a newline (use -0); not acknowledged" "gdsub: 1 blocks could not be written in the output format and were not acknowledged")"
	assert_equal "$(cat s.out)" "$(printf '127.0.0.1:%s/1\tfine\n127.0.0.1:%s/3\talso fine' "$port" "$port")"
	# gdsub's own status says a block was lost to the format; gdack's is fine
	assert_equal "$(cat s.rc)" "1 0"
}

@test "--snapshot 3: a late subscriber gets the last 3 blocks flagged /s, gdack skips them" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 --snapshot 3 --wait-ready=10 -v < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf first.ini "$port"
	sub_conf late.ini "$port"
	# the first GD subscriber leaves after 5 blocks, freeing the one GD slot
	ack_pipeline first "-C 5" 7>&-
	printf 'b%s\n' 1 2 3 4 5 >&7
	wait_until 10 file_is first.rc "0 0"
	wait_until 10 has_line pub.err "first\.ini \(127\.0\.0\.1:[0-9]+\) disconnected: unsubscribed; "
	spawn "gdsub -c late.ini 2> late.sub.err |
		gdack -c late.ini -v --tee > late.out 2> late.ack.err; echo \${PIPESTATUS[*]} > late.rc" 7>&-
	wait_until 10 lines_at_least late.out 3
	assert_equal "$(cat late.out)" "$(keys "$port" 3 4 5 | sed 's|$|/s|' | paste - <(printf 'b%s\n' 3 4 5))"
	echo b6 >&7
	feed_close
	wait_until 10 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	# the snapshot blocks were not acknowledged again; block 6 was
	assert_equal "$(cat pub.out)" "$(echo READY; statuses ACK 1 2 3 4 5 6)"
	wait_until 10 file_is late.rc "0 0"
	assert_equal "$(sed -n 4p late.out)" "$(printf '127.0.0.1:%s/6\tb6' "$port")"
	[ "$(nlines late.out)" -eq 4 ]
	has_line late.ack.err 'gdack: acknowledged 1, failed 0, snapshot skipped 3$'
	assert_equal "$(cut -f2- first.out)" "$(printf 'b%s\n' 1 2 3 4 5)"
}

@test "--snapshot with numSubs=0: a late subscriber gets the last blocks flagged /s" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port --snapshot 2 -v < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf w.ini "$port"
	sub_conf late.ini "$port"
	# a receive-only watcher tells when the blocks are published
	spawn "gdsub -c w.ini --no-gd > w.out 2> w.err" 7>&-
	wait_until 10 has_line pub.err 'connected: receive only$'
	printf 'b%s\n' 1 2 3 4 >&7
	wait_until 10 lines_at_least w.out 4
	spawn "gdsub -c late.ini > late.out 2> late.err; echo \$? > late.rc" 7>&-
	wait_until 10 lines_at_least late.out 2
	feed_close
	wait_until 10 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	[ ! -s pub.out ]
	wait_until 10 file_is late.rc 0
	assert_equal "$(cat late.out)" "$(keys "$port" 3 4 | sed 's|$|/s|' | paste - <(printf 'b%s\n' 3 4))"
}

@test "first SIGTERM: gdpub stops reading, the pending blocks resolve, exit 0" {
	feed_open in.fifo
	spawn "exec gdpub -p 0 --port-file pub.port -n 1 -t 30 --wait-ready=10 < in.fifo > pub.out 2> pub.err" 7>&-
	pid=$SPAWNED
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	mkfifo gate.fifo
	# the pipeline holds the acks until the test opens the gate
	spawn "gdsub -c s.ini 2> s.sub.err | tee seen.txt |
		{ IFS= read -r l; read -r _ < gate.fifo; printf '%s\n' \"\$l\"; exec cat; } |
		gdack -c s.ini > /dev/null 2> s.ack.err; echo \${PIPESTATUS[*]} > s.rc" 7>&-
	printf '%s\n' 1 2 3 >&7
	wait_until 10 lines_at_least seen.txt 3
	kill -TERM "$pid"
	wait_until 10 has_line pub.err 'gdpub: SIGTERM: no more input; waiting for 3 pending blocks$'
	echo 4 >&7	# not read any more
	timeout 10 sh -c 'echo go > gate.fifo'
	rc=0
	wait_pid 10 "$pid" || rc=$?
	[ "$rc" -eq 0 ]
	assert_equal "$(cat pub.out)" "$(echo READY; statuses ACK 1 2 3)"
	wait_until 10 test -s s.rc
	[ "$(cut -d' ' -f1,4 s.rc)" = "0 0" ]
	[ "$(cut -f2- seen.txt)" = "$(printf '%s\n' 1 2 3)" ]
}

@test "first SIGTERM with blocks that are never acked: they are NACKed at their timeout, exit 1" {
	feed_open in.fifo
	spawn "exec gdpub -p 0 --port-file pub.port -n 1 -t 1 --wait-ready=10 < in.fifo > pub.out 2> pub.err" 7>&-
	pid=$SPAWNED
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini > seen.txt 2> s.err" 7>&-	# never acks
	printf '%s\n' 1 2 >&7
	wait_until 10 lines_at_least seen.txt 2
	kill -TERM "$pid"
	rc=0
	wait_pid 10 "$pid" || rc=$?
	[ "$rc" -eq 1 ]
	assert_equal "$(cat pub.out)" "$(printf 'READY\nNACK 1\nNACK 2')"
}

@test "second SIGTERM: gdpub reports the pending blocks NACK and exits 143" {
	feed_open in.fifo
	spawn "exec gdpub -p 0 --port-file pub.port -n 1 -t 60 --wait-ready=10 < in.fifo > pub.out 2> pub.err" 7>&-
	pid=$SPAWNED
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini > seen.txt 2> s.err" 7>&-	# never acks
	printf '%s\n' 1 2 >&7
	wait_until 10 lines_at_least seen.txt 2
	kill -TERM "$pid"
	wait_until 10 has_line pub.err 'gdpub: SIGTERM: no more input; waiting for 2 pending blocks$'
	kill -TERM "$pid"
	rc=0
	wait_pid 5 "$pid" || rc=$?
	[ "$rc" -eq 143 ]
	has_line pub.err '^gdpub: second SIGTERM: reporting the 2 pending blocks as NACK and exiting$'
	assert_equal "$(cat pub.out)" "$(echo READY; statuses NACK 1 2)"
}

@test "second SIGINT: gdpub reports the pending block NACK and exits 130" {
	feed_open in.fifo
	spawn "exec gdpub -p 0 --port-file pub.port -n 1 -t 60 --wait-ready=10 < in.fifo > pub.out 2> pub.err" 7>&-
	pid=$SPAWNED
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini > seen.txt 2> s.err" 7>&-	# never acks
	echo 1 >&7
	wait_until 10 lines_at_least seen.txt 1
	kill -INT "$pid"
	wait_until 10 has_line pub.err 'gdpub: SIGINT: no more input; waiting for 1 pending blocks$'
	kill -INT "$pid"
	rc=0
	wait_pid 5 "$pid" || rc=$?
	[ "$rc" -eq 130 ]
	has_line pub.err '^gdpub: second SIGINT: reporting the 1 pending blocks as NACK and exiting$'
	assert_equal "$(cat pub.out)" "$(echo READY; statuses NACK 1)"
}

@test "gdsub -C 5 exits after 5 unique blocks, acknowledged; the later ones are NACKed" {
	seq 1 10 > in.txt
	pub_bg --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 1 -t 1 --wait-ready=10 < in.txt
	sub_conf s.ini "$port"
	ack_pipeline s "-C 5"
	pub_wait
	assert_failure 1
	assert_equal "$output" "$(echo READY; statuses ACK 1 2 3 4 5; statuses NACK 6 7 8 9 10)"
	wait_until 10 file_is s.rc "0 0"
	cut -f2- s.out | cmp - <(seq 1 5)
}

@test "numSubs=0: no status line at all, exit 0; a subscriber still gets every block" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -v < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini > s.out 2> s.err; echo \$? > s.rc" 7>&-
	wait_until 10 has_line pub.err 'connected: GD off at this publisher$'
	seq 1 50 > in.txt
	cat in.txt >&7
	feed_close
	wait_until 10 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	[ ! -s pub.out ]
	# nothing to acknowledge: gdsub ends with the stream
	wait_until 10 file_is s.rc 0
	cut -f2- s.out | cmp - in.txt
	assert_equal "$(grep -v 'cannot connect to' s.err)" "gdsub: warning: publisher 127.0.0.1:$port runs with numSubs=0: its blocks need no acknowledgement"
}

# gdack_connected: the one gdsub of this test has a control connection
gdack_connected() {
	local sock
	sock=$(sub_sock) && ss -xH state established | grep -qF "$sock "
}

@test "numSubs=0: a gdsub | gdack pipeline succeeds, its blocks need no acknowledgement" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -v < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	ack_pipeline s 7>&-
	wait_until 10 has_line pub.err 'connected: GD off at this publisher$'
	# gdack is connected before the stream ends: gdsub waits for it (the
	# next test has a gdack that comes after gdsub has gone)
	wait_until 10 gdack_connected
	seq 1 50 > in.txt
	cat in.txt >&7
	feed_close
	wait_until 10 file_is pub.rc 0
	[ ! -s pub.out ]
	wait_until 10 test -s s.rc
	cut -f2- s.out | cmp - in.txt
	assert_equal "$(cat s.ack.err)" ""
	assert_equal "$(cat s.rc)" "0 0"
}

@test "numSubs=0: a gdack that starts after its gdsub has exited still succeeds: the blocks needed no acknowledgement" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -v < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	# a short stream ends before the next stage has started gdack: here
	# gdack starts only once gdsub has exited
	spawn "{ gdsub -c s.ini 2> s.sub.err; echo \$? > s.sub.rc; } |
		{ while [ ! -s s.sub.rc ]; do sleep 0.05; done
		  gdack -c s.ini --tee --wait 30 > s.out 2> s.ack.err; echo \$? > s.ack.rc; }" 7>&-
	wait_until 10 has_line pub.err 'connected: GD off at this publisher$'
	seq 1 50 > in.txt
	cat in.txt >&7
	feed_close
	wait_until 10 file_is pub.rc 0
	wait_until 10 file_is s.sub.rc 0
	# before gdsub left its end note, gdack waited --wait seconds and exited 69
	wait_until 20 test -s s.ack.rc
	assert_equal "$(cat s.ack.err)" ""
	assert_equal "$(cat s.ack.rc)" 0
	cut -f2- s.out | cmp - in.txt
	# keys given later as arguments too; a publisher the note does not
	# name still needs a gdsub
	run --separate-stderr timeout 20 gdack -c s.ini "127.0.0.1:$port/3" "127.0.0.1:$port/50"
	assert_success
	assert_equal "$stderr" ""
	hold_port other
	run --separate-stderr timeout 20 gdack -c s.ini --wait 0.2 "127.0.0.1:$port/3" "127.0.0.1:$other/1"
	assert_failure 69
	[[ "$stderr" =~ ^"gdack: no gdsub answers at $XDG_RUNTIME_DIR/gdkit/sub-"[0-9a-f]{16}".sock: No such file or directory (waited 0.2 seconds)"$ ]]
	# the next gdsub of this config removes the note as it starts
	compgen -G "$XDG_RUNTIME_DIR/gdkit/sub-*.sock.ended"
	spawn "gdsub -c s.ini > /dev/null 2> s2.err"
	wait_until 10 sub_sock
	run ! compgen -G "$XDG_RUNTIME_DIR/gdkit/sub-*.sock.ended"
}

@test "numSubs=0: a slow pipeline still acknowledges its blocks after the publisher ended" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -v < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	# the middle stage holds the first block until gdpub has exited
	spawn "gdsub -c s.ini 2> s.sub.err |
		{ IFS= read -r l
		  for i in \$(seq 200); do [ -s pub.rc ] && break; sleep 0.05; done
		  printf '%s\n' \"\$l\"; exec cat; } |
		gdack -c s.ini --tee > s.out 2> s.ack.err; echo \${PIPESTATUS[*]} > s.rc" 7>&-
	wait_until 10 has_line pub.err 'connected: GD off at this publisher$'
	# as above: a GD-off gdsub ends with the stream unless gdack is there
	wait_until 10 gdack_connected
	seq 1 5 >&7
	feed_close
	wait_until 10 file_is pub.rc 0
	[ ! -s pub.out ]
	wait_until 15 test -s s.rc
	assert_equal "$(cat s.ack.err)" ""
	cut -f2- s.out | cmp - <(seq 1 5)
	assert_equal "$(cat s.rc)" "0 0 0"
}

@test "numSubs=0 without any subscriber: no status line, exit 0, a warning" {
	run --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port < <(seq 1 3)
	assert_success
	assert_equal "$output" ""
	assert_equal "$stderr" "gdpub: warning: 3 of 3 blocks were published while no subscriber was connected"
}

@test "--wait-ready=0.3 with no subscriber: exit 69, no READY within" {
	run --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 1 --wait-ready=0.3 < <(seq 1 3)
	assert_failure 69
	assert_equal "$output" ""
	assert_equal "$stderr" "gdpub: no READY within 0.3 seconds: 0 of 1 GD subscribers connected"
}

@test "--max-pending 10: no more than 10 blocks are out until one resolves" {
	seq 1 25 > in.txt
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 30 --max-pending 10 --wait-ready=10 < in.txt > pub.out 2> pub.err"
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini > seen.txt 2> s.err"	# acked by hand below
	wait_until 10 lines_at_least seen.txt 10
	# were gdpub not holding back, blocks 11-25 would be in the same batch
	wait_until 10 has_line pub.out '^READY$'
	[ "$(nlines seen.txt)" -eq 10 ]
	run timeout 20 gdack -c s.ini "127.0.0.1:$port/1" "127.0.0.1:$port/2"
	assert_success
	wait_until 10 lines_at_least seen.txt 12
	wait_until 10 has_line pub.out '^ACK 2$'
	[ "$(nlines seen.txt)" -eq 12 ]
	[ "$(cut -f2- seen.txt)" = "$(seq 1 12)" ]
	assert_equal "$(cat pub.out)" "$(printf 'READY\nACK 1\nACK 2')"
}

@test "gdpub -p 0: the system picks the port; gdpub says which, stats shows it, subscribers and gdinspect use it" {
	spawn "seq 1 3 | gdpub -p 0 -n 1 --wait-ready=20 > pub.out 2> pub.err; echo \$? > pub.rc"
	wait_until 10 has_line pub.err '^gdpub: listening on 127\.0\.0\.1:[0-9]+$'
	port=$(sed -n 's/^gdpub: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' pub.err)
	[ "$port" -gt 0 ]
	listening "$port"
	run timeout 10 gdinspect -p "$port" --json stats
	assert_success
	assert_output --partial "\"port\":$port,"
	sub_conf s.ini "$port"
	ack_pipeline s
	wait_until 20 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	assert_equal "$(cat pub.out)" "$(echo READY; statuses ACK 1 2 3)"
	diff <(cut -f1 s.out) <(keys "$port" 1 2 3)
}

# issue 23: a script learns the port of -p 0 from a file, not by parsing
# stderr (before: no such option, free_port's bind-close-reuse race)
@test "gdpub --port-file: the bound port, whole, once gdpub listens and answers gdinspect; no 'listening on' line then; an unwritable file is exit 74" {
	spawn "seq 1 3 | gdpub -p 0 --port-file pub.port -n 1 --wait-ready=20 > pub.out 2> pub.err; echo \$? > pub.rc"
	port=$(port_of pub.port)
	[[ "$(cat pub.port)" =~ ^[1-9][0-9]*$ ]]
	[ ! -e pub.port.tmp ]
	listening "$port"
	run timeout 10 gdinspect -p "$port" --json stats
	assert_success
	assert_output --partial "\"port\":$port,"
	sub_conf s.ini "$port"
	ack_pipeline s
	wait_until 20 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	assert_equal "$(cat pub.out)" "$(echo READY; statuses ACK 1 2 3)"
	assert_equal "$(cat pub.err)" ""
	diff <(cut -f1 s.out) <(keys "$port" 1 2 3)
	expect_fail 74 "gdpub: cannot write the port to 'no/dir/p': No such file or directory" -- gdpub -p 0 --port-file no/dir/p
	[ ! -e no ]
}

# issue 26: like mosquitto_sub -W, for cron jobs and tests (before: no such
# option; gdsub ran until its publishers ended the stream)
@test "gdsub --idle-timeout: ends with status 0 once no block arrived for SECONDS while connected, everything written acknowledged; blocks before keep it going" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 60 --wait-ready=30 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	spawn "gdsub -P 127.0.0.1:$port --idle-timeout 3 2> sub.err | gdack -P 127.0.0.1:$port --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > rc" 7>&-
	wait_until 20 has_line st '^READY$'
	# twenty blocks 0.25 s apart, over more than the timeout: each arrives
	# well within the timeout of the one before
	t0=$(date +%s.%N)
	for i in $(seq 1 20); do
		last=$(date +%s.%N)	# before it can arrive
		echo "$i" >&7
		wait_until 20 lines_at_least out.txt "$i"
		[ "$i" -eq 20 ] || sleep 0.25	# the producer's pace
	done
	wait_until 60 test -s rc
	end=$(date +%s.%N)
	assert_equal "$(cat rc)" "0 0"
	assert_equal "$(cut -f2 out.txt)" "$(seq 1 20)"
	# the blocks spanned more than the timeout, and it ended no earlier
	# than the timeout after the last
	python -c 'import sys; t0, last, end = map(float, sys.argv[1:]); assert last - t0 > 3 and end - last >= 3, sys.argv' "$t0" "$last" "$end"
	assert_equal "$(cat sub.err)" "gdsub: no block arrived for 3 seconds (--idle-timeout); ending after 20 blocks"
	wait_until 20 has_line st '^ACK 20$'
	assert_equal "$(grep -c '^ACK' st)" 20
	feed_close
	# the idle time counts while connected: a publisher that is down is
	# still --max-retries' to report
	hold_port down
	run --separate-stderr timeout 30 gdsub -P "127.0.0.1:$down" --idle-timeout 0.2 --max-retries 4 --retry-interval 0.3
	assert_failure 69
	expect_usage gdsub "invalid value '0' for --idle-timeout: expected seconds above 0" -- gdsub -P 127.0.0.1:1 --idle-timeout 0
	expect_usage gdsub "invalid value 'x' for --idle-timeout: expected seconds above 0" -- gdsub -P 127.0.0.1:1 --idle-timeout x
}

# issue 26: a template like kcat -f (before: only line, payload, frame)
@test "gdsub -f TEMPLATE: %k %i %o %s %r %t %% and \\t \\n \\0 \\\\; gdack reads the key back (the template starts with %k and a TAB); a resent block says %r 1; bad templates 64" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 1.5 --resend 3 --wait-ready=30 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	# block 2 is acknowledged only when it comes again (resent: --dedup
	# none writes it again)
	spawn "gdsub -c s.ini --dedup none -f '%k\\t%i|%o|%r|%t|%s|100%%|a\\\\b' 2> sub.err | tee out.txt |
		sed -u '/\\/2\t[^|]*|[^|]*|0|/d' | gdack -c s.ini 2> ack.err" 7>&-
	wait_until 20 has_line st '^READY$'
	t0=$(date +%s)
	printf 'one\ntwo two\nthree\n' >&7
	wait_until 30 has_line st '^ACK 2$'
	t1=$(date +%s)
	wait_until 10 has_line st '^ACK 3$'
	python -c '
import re, sys
port, t0, t1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [l.rstrip("\n") for l in open("out.txt")]
seen = []
for l in rows:
    key, rest = l.split("\t", 1)
    i, origin, r, t, s, pct, bs = rest.split("|")
    seen.append((key, i, r, s))
    assert origin == "127.0.0.1:" + port, l
    assert key.startswith(origin + "/" + i), l
    assert pct == "100%" and bs == "a\\b", l
    assert re.fullmatch(r"\d+\.\d{6}", t) and t0 - 1 <= float(t) <= t1 + 1, l
want = [("127.0.0.1:%s/1" % port, "1", "0", "one"), ("127.0.0.1:%s/2" % port, "2", "0", "two two"),
        ("127.0.0.1:%s/3" % port, "3", "0", "three"), ("127.0.0.1:%s/2/r" % port, "2", "1", "two two")]
assert seen[:3] == want[:3] and want[3] in seen[3:], seen
' "$port" "$t0" "$t1"
	assert_equal "$(grep -c '^NACK' st)" 0
	feed_close
	# \t \n \0 with -0 and --no-gd: any template; gdack is not involved
	printf 'set origin=127.0.0.1:7001\nblock 4 1 - x\n' | python "$BATS_TEST_DIRNAME/mkstream.py" > s.gds
	timeout 30 gdsub -i s.gds -P 127.0.0.1:7001 --no-gd -0 -f '%s\n%i\t%o' > t.out
	assert_equal "$(od -An -c t.out | tr -s ' ')" "$(printf 'x\n4\t127.0.0.1:7001\0' | od -An -c | tr -s ' ')"
	# templates gdack could not read back, or unknown escapes: 64
	local why="gdack reads the key from the start of each record up to a TAB: start it with %k\\t (or %k alone), or give --no-gd when nothing acknowledges"
	expect_usage gdsub "invalid template '%s' for --format: $why" -- gdsub -P 127.0.0.1:1 -f '%s'
	expect_usage gdsub "invalid template '%i\\t%k' for --format: $why" -- gdsub -P 127.0.0.1:1 -f '%i\t%k'
	expect_usage gdsub "invalid template '%k\\n%s' for --format: it would end the record inside it (records end with a newline), and gdack reads one record per key; use -0, or --no-gd" -- gdsub -P 127.0.0.1:1 -f '%k\n%s'
	expect_usage gdsub "invalid template '%k%x' for --format: unknown %x (expected %k key, %i ID, %o origin, %s payload, %r resent, %t arrival time or %%)" -- gdsub -P 127.0.0.1:1 -f '%k%x'
	expect_usage gdsub "invalid template '%k\\q' for --format: unknown \\q (expected \\t, \\n, \\0 or \\\\)" -- gdsub -P 127.0.0.1:1 -f '%k\q'
	expect_usage gdsub "invalid value 'json' for --format: expected 'line', 'payload', 'frame' or a template with %k, %s ..." -- gdsub -P 127.0.0.1:1 -f json
}
