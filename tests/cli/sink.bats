#!/usr/bin/env bats
# gdack --sink FILE: the pipeline's records appended and synced before
# their acknowledgement; a restarted pipeline acknowledges the resent
# blocks the file already ends with instead of appending them again; a
# torn last record is cut; every refusal and a write failure.
load helpers
bats_require_minimum_version 1.5.0

# ids FILE: the IDs of the keys in FILE, in order
ids() {
	cut -f1 "$1" | sed 's|/r$||; s|.*/||'
}

@test "gdack --sink: every block appended once, before its acknowledgement; all ACKed; --tee still copies after" {
	pub_bg --separate-stderr timeout 30 bash -c "seq 1 3000 | sed 's/^/block /' | gdpub -p 0 --port-file pub.port -n 1 --wait-ready=20"
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini 2> sub.err | tee seen.txt | gdack -c s.ini --sink out.txt --tee > tee.txt 2> ack.err; echo \${PIPESTATUS[*]} > pipe.rc"
	pub_wait
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 3000 ]
	wait_until 20 file_is pipe.rc "0 0 0"
	cmp out.txt seen.txt
	cmp tee.txt seen.txt
	assert_equal "$(ids out.txt | tr '\n' ' ')" "$(seq 1 3000 | tr '\n' ' ')"
	assert_equal "$(cat ack.err)" ""
}

@test "gdack -0 --sink: NUL-terminated records, newlines in payloads, kept whole" {
	pub_bg --separate-stderr timeout 30 bash -c "printf 'one\nline two\0three\0' | gdpub -p 0 --port-file pub.port -n 1 -0 --wait-ready=20"
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini -0 2> sub.err | tee seen.bin | gdack -c s.ini -0 --sink out.bin 2> ack.err; echo \${PIPESTATUS[*]} > pipe.rc"
	pub_wait
	assert_success
	assert_output "$(printf 'READY\nACK 1\nACK 2')"
	wait_until 20 file_is pipe.rc "0 0 0"
	cmp out.bin seen.bin
	[ "$(tr -cd '\0' < out.bin | wc -c)" -eq 2 ]
	assert_equal "$(tr '\0' '|' < out.bin)" "$(printf '127.0.0.1:%s/1\tone\nline two|127.0.0.1:%s/2\tthree|' "$port" "$port")"
}

@test "gdack --sink started again: a torn last record is cut; resent blocks the file ends with are acknowledged, not appended again; the rest are appended" {
	spawn "seq 1 20 | gdpub -p 0 --port-file pub.port -n 1 -t 1 --resend 10 --wait-ready=20 > pub.out 2> pub.err; echo \$? > pub.rc"
	port=$(port_of pub.port)
	sub_conf s.ini "$port" "GDsub_state=s.state"
	# a first pipeline got blocks 1..10 and died: its sink holds 1..5 and
	# the start of 6, none acknowledged
	timeout 20 gdsub -c s.ini -C 10 --linger 0 > first.txt 2> first.err
	[ "$(nlines first.txt)" -eq 10 ]
	head -n 5 first.txt > out.txt
	whole=$(stat -c %s out.txt)
	sed -n 6p first.txt | head -c 12 >> out.txt
	run --separate-stderr timeout 30 bash -c "gdsub -c s.ini 2> sub.err | gdack -c s.ini --sink out.txt"
	assert_success
	wait_until 20 file_is pub.rc 0
	[ "$(grep -c '^ACK ' pub.out)" -eq 20 ]
	# each block once, 1..5 from the first pipeline, whole
	assert_equal "$(ids out.txt | sort -n | tr '\n' ' ')" "$(seq 1 20 | tr '\n' ' ')"
	assert_equal "$(cut -f2 out.txt | sort -n | tr '\n' ' ')" "$(seq 1 20 | tr '\n' ' ')"
	assert_equal "$(head -n 5 out.txt)" "$(head -n 5 first.txt)"
	assert_equal "$stderr" "gdack: warning: sink file 'out.txt': a torn record at offset $whole (12 bytes, written when gdack was stopped, never acknowledged) was cut
gdack: 5 resent blocks already at the end of sink file 'out.txt' were acknowledged, not appended again"
}

@test "gdack --sink started again: a resend whose record differs from the one at the file's end only after 4 KiB is appended, not taken for it" {
	pad=$(head -c 5000 /dev/zero | tr '\0' x)
	printf '1\t%sB\n' "$pad" > in.txt
	spawn "gdpub -p 0 --port-file pub.port -I -n 1 -t 1 --resend 10 --wait-ready=20 < in.txt > pub.out 2> pub.err; echo \$? > pub.rc"
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	# a first pipeline got block 1 and died before acknowledging it
	timeout 20 gdsub -c s.ini -C 1 --linger 0 > first.txt 2> first.err
	[ "$(nlines first.txt)" -eq 1 ]
	# the sink ends with an earlier block of that ID: the same key and
	# length, the same first 4 KiB, another last byte
	printf '127.0.0.1:%s/1\t%sA\n' "$port" "$pad" > out.txt
	run --separate-stderr timeout 30 bash -c "gdsub -c s.ini 2> sub.err | gdack -c s.ini --sink out.txt"
	assert_success
	wait_until 20 file_is pub.rc 0
	assert_equal "$(grep -c '^ACK 1$' pub.out)" 1
	# both records: the earlier one kept, the resend appended whole
	[ "$(nlines out.txt)" -eq 2 ]
	assert_equal "$(cut -f2 out.txt | sed -n 1p)" "${pad}A"
	assert_equal "$(cut -f2 out.txt | sed -n 2p)" "${pad}B"
	assert_equal "$(cut -f1 out.txt | sed -n 2p)" "127.0.0.1:$port/1/r"
	refute_output --partial "not appended again"
}

@test "gdack --sink refusals: with -f frame or status, with keys, empty; a file that cannot be used is exit 74 naming it" {
	expect_usage gdack "--sink cannot be combined with -f frame: the sink holds the records of -f line (or -0)" -- gdack -P 127.0.0.1:1 --sink x -f frame
	expect_usage gdack "--sink cannot be combined with -f status: the sink holds the records of -f line (or -0)" -- gdack -P 127.0.0.1:1 --sink x -f status
	expect_usage gdack "unexpected argument '127.0.0.1:1/1': with --sink the records are read on stdin" -- gdack -P 127.0.0.1:1 --sink x 127.0.0.1:1/1
	expect_usage gdack "invalid value '' for --sink: expected a file name" -- gdack -P 127.0.0.1:1 --sink ''
	[ ! -e x ]
	expect_fail 74 "gdack: cannot use sink file 'nosuch/x': No such file or directory" -- gdack -P 127.0.0.1:1 --sink nosuch/x
	expect_fail 74 "gdack: cannot use sink file '/dev/null': not a regular file (a sink is appended to and read back when gdack starts again)" -- gdack -P 127.0.0.1:1 --sink /dev/null
	mkdir d
	expect_fail 74 "gdack: cannot use sink file 'd': Is a directory" -- gdack -P 127.0.0.1:1 --sink d
	# a second gdack on the same sink would break the rule: refused
	: > out.txt
	spawn "exec flock out.txt sleep 60"
	wait_until 10 bash -c '! flock -n out.txt true'
	expect_fail 74 "gdack: cannot use sink file 'out.txt': in use by another gdack (waited 0.5 seconds)" -- gdack -P 127.0.0.1:1 --wait 0.5 --sink out.txt
}

# A pipeline started again at once after a kill: the gdack before may
# still hold the sink for a moment (before: exit 74 at once).
@test "gdack --sink waits up to --wait for the gdack before it to let go of the sink file" {
	: > out.txt
	# a holder that lets go after a second
	spawn "exec flock out.txt sleep 1"
	wait_until 10 bash -c '! flock -n out.txt true'
	spawn "seq 1 3 | gdpub -p 0 --port-file pub.port -n 1 --wait-ready=30 > st 2> pub.err; echo \$? > pub.rc"
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	run --separate-stderr timeout 60 bash -c "gdsub -c s.ini | gdack -c s.ini --sink out.txt"
	assert_success
	assert_equal "$stderr" ""
	wait_until 30 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	assert_equal "$(cut -f2 out.txt)" "$(seq 1 3)"
}

@test "gdack --sink that cannot be written: exit 74 naming the file; the batch is not acknowledged and its blocks are NACKed, none ACKed and missing" {
	# 60 blocks, fewer than gdpub's first window: all go out at once
	spawn "seq 1 60 | sed 's/\$/ padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding/' |
		gdpub -p 0 --port-file pub.port -n 1 -t 2 --wait-ready=20 > pub.out 2> pub.err; echo \$? > pub.rc"
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	# a file size limit stands for a full disk: past 4 KiB writes fail
	run --separate-stderr timeout 30 bash -c "gdsub -c s.ini --linger 1 2> sub.err |
		{ trap '' XFSZ; ulimit -f 4; exec gdack -c s.ini --sink out.txt; }"
	assert_failure 74
	[[ "$stderr" =~ ^"gdack: cannot write sink file 'out.txt': File too large; the "([0-9]+" keys of this batch were not acknowledged (the publisher resends or NACKs them)"|"1 key of this batch was not acknowledged (the publisher resends or NACKs it)")$ ]]
	wait_until 20 file_is pub.rc 1
	[ "$(stat -c %s out.txt)" -le 4096 ]
	# whole lines only (what failed was cut back), each ACKed; everything
	# else NACKed
	[ -z "$(tail -c 1 out.txt | tr -d '\n')" ]
	ids out.txt | sort -n > in_sink
	grep '^ACK ' pub.out | cut -d' ' -f2 | sort -n > acked
	grep '^NACK ' pub.out | cut -d' ' -f2 | sort -n > nacked
	cmp in_sink acked
	[ "$(sort -n acked nacked | tr '\n' ' ')" = "$(seq 1 60 | tr '\n' ' ')" ]
	[ "$(nlines nacked)" -gt 0 ]
}
