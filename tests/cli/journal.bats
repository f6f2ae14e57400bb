#!/usr/bin/env bats
# gdpub --journal (GDpub_journal, GDpub_fsync): blocks recorded before they
# are sent survive a kill -9 and go out again, with their own id and
# sequence index, flagged resent, when gdpub restarts; ids go on; a torn
# tail is cut and said; corruption before the end and I/O errors are exit
# 74 and lose nothing already recorded; the file stays proportional to
# what is pending; gdinspect journal shows it.
load helpers
bats_require_minimum_version 1.5.0

# jrows FILE: the ids gdinspect journal lists, one a line (its last
# line, the highest ID, aside)
jrows() {
	gdinspect --json journal "$1" | python -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    if "highest_id" not in d:
        print(d["id"])'
}

@test "kill -9 with blocks pending: the restarted gdpub sends them again (same id and index, resent) before new input; ids go on; the journal empties" {
	# held to the end: the restart below binds it again, the subscriber
	# reconnects
	hold_port port
	touch cmds
	spawn "exec gdpub -p $port --port-file pub.port -n 1 -t 60 --journal j.gdj --wait-ready=20 < <(seq 1 3; sleep 60) > st1 2> p1.err"
	pid=$SPAWNED
	[ "$(port_of pub.port)" = "$port" ]
	spawn "python $BATS_TEST_DIRNAME/fakesub.py 127.0.0.1 $port fake cmds ev 2> fake.err"
	wait_until 10 has_line ev '^block 3 3 0 3$'
	assert_equal "$(jrows j.gdj)" "$(seq 1 3)"
	# block 2 is acknowledged, then gdpub dies
	echo 'ack 2 2' >> cmds
	wait_until 10 has_line st1 '^ACK 2$'
	wait_until 10 bash -c "[ \"\$(gdinspect --json journal j.gdj | grep -vc highest_id)\" -eq 2 ]"
	kill -KILL "$pid"
	assert_equal "$(jrows j.gdj)" "$(printf '1\n3')"
	gdinspect journal j.gdj | tail -n 1 | grep -Eq '^highest ID 3, index 3, epoch [0-9]+; 2 pending$'
	# the subscriber reconnects to the new gdpub: 1 and 3 again, flagged
	# resent (1), with their indexes; then the new input as 4 and 5
	run --separate-stderr timeout 30 bash -c "seq 10 11 | gdpub -p $port -n 1 -t 60 --journal j.gdj --wait-ready=20 2> p2.err & pid=\$!
		for i in \$(seq 200); do grep -q '^block 5 ' ev && break; sleep 0.05; done
		echo 'ack 1 1 3 3 4 4 5 5' >> cmds; wait \$pid"
	assert_success
	assert_output "$(echo READY; statuses ACK 1 3 4 5)"
	assert_equal "$(grep '^block' ev)" "$(printf 'block 1 1 0 1\nblock 2 2 0 2\nblock 3 3 0 3\nblock 1 1 1 1\nblock 3 3 1 3\nblock 4 4 0 10\nblock 5 5 0 11')"
	assert_equal "$(cat p2.err)" "gdpub: journal 'j.gdj': 2 blocks pending from before; sending them again first"
	# nothing pending: the journal is its header and the highest id,
	# which gdinspect shows (a producer giving IDs goes on after it)
	assert_equal "$(jrows j.gdj)" ""
	assert_equal "$(gdinspect --json journal j.gdj)" '{"highest_id":5,"highest_index":5,"epoch":'"$(gdinspect --json journal j.gdj | sed -n 's/.*"epoch":\([0-9]*\).*/\1/p')"',"pending":0}'
	run --separate-stderr gdinspect journal j.gdj
	assert_success
	assert_line --index 0 --regexp '^ID +INDEX +TIME +SIZE +PAYLOAD$'
	assert_line --index 1 --regexp '^highest ID 5, index 5, epoch [0-9]+; 0 pending$'
	[ "${#lines[@]}" -eq 2 ]
	[ "$(stat -c %s j.gdj)" -lt 100 ]
	echo quit >> cmds
}

@test "a torn tail (a crash mid-write) is cut with a warning naming the offset; the records before it are replayed" {
	# held to the end: the restart below binds it again (the same origin)
	hold_port port
	spawn "exec gdpub -p $port --port-file pub.port -n 1 -t 60 --journal j.gdj < <(seq 1 2; sleep 60) > st1 2> p1.err"
	pid=$SPAWNED
	[ "$(port_of pub.port)" = "$port" ]
	wait_until 10 bash -c "[ \"\$(gdinspect --json journal j.gdj 2>/dev/null | grep -vc highest_id)\" -eq 2 ]"
	kill -KILL "$pid"
	size=$(stat -c %s j.gdj)
	truncate -s $((size - 3)) j.gdj
	run --separate-stderr gdinspect journal j.gdj
	assert_success
	[[ "$stderr" == "gdinspect: warning: journal 'j.gdj' ends in a torn record at byte offset "*" (34 bytes, a crash mid-write); gdpub cuts it when it opens the journal" ]]
	off=$((size - 37))
	sub_conf s.ini "$port"
	ack_pipeline s
	run --separate-stderr timeout 30 gdpub -p "$port" -n 1 --journal j.gdj --wait-ready=20 < /dev/null
	assert_success
	assert_output "$(echo READY; statuses ACK 1)"
	assert_line --index 0 READY
	[[ "$stderr" == "gdpub: warning: journal 'j.gdj': a torn record at byte offset $off (34 bytes, a crash mid-write) was cut off"* ]]
}

@test "a second gdpub on a journal in use: exit 74 naming the file and the holder's pid, before touching it; the holder keeps its blocks" {
	hold_port port2
	touch cmds
	spawn "exec gdpub -p 0 --port-file pub.port -n 1 -t 60 --journal j.gdj --wait-ready=20 < <(seq 1 3; sleep 60) > st1 2> p1.err"
	pid=$SPAWNED
	port=$(port_of pub.port)
	spawn "python $BATS_TEST_DIRNAME/fakesub.py 127.0.0.1 $port fake cmds ev 2> fake.err"
	wait_until 10 has_line ev '^block 3 3 0 3$'
	wait_until 10 bash -c "[ \"\$(gdinspect --json journal j.gdj | grep -vc highest_id)\" -eq 3 ]"
	cp j.gdj before.gdj
	# another gdpub, its own port and subscriber, the same journal
	sub_conf s.ini "$port2"
	ack_pipeline s
	expect_fail 74 "gdpub: journal 'j.gdj' is in use by another gdpub (pid $pid)" -- gdpub -p "$port2" -n 1 --journal j.gdj --wait-ready=20
	cmp j.gdj before.gdj
	[ ! -s s.out ]
	# the holder's blocks are its own to resolve and say
	echo 'ack 1 1 2 2 3 3' >> cmds
	wait_until 10 has_line st1 '^ACK 3$'
	assert_equal "$(cat st1)" "$(echo READY; statuses ACK 1 2 3)"
	wait_until 10 bash -c "[ \"\$(gdinspect --json journal j.gdj | grep -vc highest_id)\" -eq 0 ]"
	echo quit >> cmds
}

@test "a gdpub that cannot listen (port in use, 69) has not cut the journal's torn tail nor announced its replay" {
	# held to the end: the gdpubs below bind it again
	hold_port port
	spawn "exec gdpub -p $port --port-file pub.port -n 1 -t 60 --journal j.gdj < <(seq 1 2; sleep 60) > st1 2> p1.err"
	pid=$SPAWNED
	[ "$(port_of pub.port)" = "$port" ]
	wait_until 10 bash -c "[ \"\$(gdinspect --json journal j.gdj 2>/dev/null | grep -vc highest_id)\" -eq 2 ]"
	kill -KILL "$pid"
	truncate -s $(($(stat -c %s j.gdj) - 3)) j.gdj
	cp j.gdj before.gdj
	# something else has the port
	spawn "exec gdpub -p $port -n 0 < <(sleep 60) > /dev/null 2> other.err"
	wait_until 10 listening "$port"
	expect_fail 69 "gdpub: cannot listen on 127.0.0.1 port $port: address already in use" -- gdpub -p "$port" -n 1 --journal j.gdj
	cmp j.gdj before.gdj
}

@test "corruption before the end of the journal: exit 74, nothing replayed or changed" {
	# held to the end: the restart below binds it again (the same origin)
	hold_port port
	spawn "exec gdpub -p $port --port-file pub.port -n 1 -t 60 --journal j.gdj < <(seq 1 3; sleep 60) > st1 2> p1.err"
	pid=$SPAWNED
	[ "$(port_of pub.port)" = "$port" ]
	wait_until 10 bash -c "[ \"\$(gdinspect --json journal j.gdj 2>/dev/null | grep -vc highest_id)\" -eq 3 ]"
	kill -KILL "$pid"
	# flip the payload byte of the first record (offset 32 + 32)
	printf 'X' | dd of=j.gdj bs=1 seek=64 conv=notrunc status=none
	cp j.gdj before.gdj
	expect_fail 74 "gdpub: journal 'j.gdj' is corrupt at byte offset 32, before its end (143 bytes): not replayed" -- gdpub -p "$port" -n 1 --journal j.gdj
	cmp j.gdj before.gdj
	expect_fail 74 "gdinspect: journal 'j.gdj' is corrupt at byte offset 32, before its end (143 bytes): not replayed" -- gdinspect journal j.gdj
}

@test "a journal that cannot be written: exit 74 at start; the disk filling up mid-run: exit 74, the blocks recorded before stay" {
	expect_fail 74 "gdpub: cannot write journal '/dev/full': No space left on device" -- gdpub -p 0 -n 1 --journal /dev/full
	expect_fail 74 "gdpub: cannot open journal 'nosuchdir/j.gdj': No such file or directory" -- gdpub -p 0 -n 1 --journal nosuchdir/j.gdj
	# a file size limit stands for a full disk: past 64 KiB writes fail
	pub_bg --separate-stderr timeout 30 bash -c "trap '' XFSZ; ulimit -f 64; seq 1 5000 | sed 's/\$/ padding padding padding padding padding/' |
		exec gdpub -p 0 --port-file pub.port -n 1 -t 60 --journal j.gdj --fsync always --wait-ready=20"
	sub_conf s.ini "$port"
	ack_pipeline s
	pub_wait
	assert_failure 74
	[[ "$stderr" == *"gdpub: cannot write journal 'j.gdj': File too large; stopping: what was recorded stays in the journal and is sent again when gdpub restarts"* ]]
	[ "$(stat -c %s j.gdj)" -le 65536 ]
	# every block a subscriber got and gdpub did not resolve is in the journal
	cut -f1 s.out | sed 's|.*/||' | sort -n > got
	grep '^ACK' <<<"$output" | cut -d' ' -f2 | sort -n > acked
	jrows j.gdj | sort -n > journaled
	[ -s got ]
	comm -23 got acked > unresolved
	[ -z "$(comm -23 unresolved journaled)" ]
}

@test "--journal needs numSubs above 0; --fsync values" {
	expect_usage gdpub "GDpub_journal needs GDpub_numSubs above 0: with GD off nothing is pending to journal" -- gdpub -p 1 --journal j.gdj
	expect_usage gdpub "invalid value 'sometimes' for --fsync: expected one of 'always', 'batch', 'never'" -- gdpub -p 1 -n 1 --journal j.gdj --fsync sometimes
	[ ! -e j.gdj ]
}

@test "the journal stays proportional to what is pending: 300,000 blocks, at most 1000 pending, never past 2 x their records + 16 MiB" {
	spawn "seq 1 300000 | sed 's/\$/ a payload of about a hundred bytes ............................................/' |
		gdpub -p 0 --port-file pub.port -n 1 -t 600 --max-pending 1000 --journal j.gdj --fsync never --wait-ready=20 > st 2> p.err; echo \$? > p.rc"
	port=$(port_of pub.port)
	# the pipeline drops the first block: it stays pending to the end
	spawn "gdsub -P 127.0.0.1:$port --retry-interval 0.05 --max-retries 200 2> s.err |
		{ IFS= read -r l; exec cat; } | gdack -P 127.0.0.1:$port 2> a.err"
	max=0
	for i in $(seq 600); do
		s=$(stat -c %s j.gdj 2>/dev/null || echo 0)
		[ "$s" -gt "$max" ] && max=$s
		[ "$(grep -c '^ACK' st 2>/dev/null)" -ge 299999 ] && break
		sleep 0.05
	done
	[ "$(grep -c '^ACK' st)" -eq 299999 ]
	# 40 MB went through, at most 1000 blocks pending: the file stays under
	# 2 x their records + 16 MiB
	[ "$max" -lt $((17 * 1024 * 1024)) ]
	# resolutions are recorded once their status lines are out: within
	# a loop turn or a tick of them
	wait_until 10 bash -c "[ \"\$(gdinspect --json journal j.gdj | grep -vc highest_id)\" -eq 1 ]"
	assert_equal "$(jrows j.gdj)" 1
}

@test "kill -9 while the last status lines wait to be written (stdout not read): after the restart every block has its ACK line, none is written twice" {
	seq 1 200000 > in.txt
	# held to the end: the restart below binds it again, the subscriber
	# reconnects
	hold_port port
	# gdpub's stdout: a pipe whose reader is stopped, so that some 2 MB of
	# ACK lines outgrow it and wait inside gdpub
	spawn "sh -c 'echo \$\$ > pub.pid; exec gdpub -p $port --port-file pub.port -n 1 -t 60 --journal j.gdj --wait-ready=20 < in.txt 2> p1.err' |
		{ echo \$BASHPID > cat.pid; kill -STOP \$BASHPID; exec cat > st1; }"
	[ "$(port_of pub.port)" = "$port" ]
	sub_conf s.ini "$port" "GDsub_state=s.state"
	spawn "gdsub -c s.ini 2> s1.err | gdack -c s.ini --tee > s.out 2> a1.err; echo \${PIPESTATUS[*]} > s1.rc"
	wait_until 10 test -s pub.pid
	wait_until 10 test -s cat.pid
	pub=$(cat pub.pid)
	cat_pid=$(cat cat.pid)
	# every block acknowledged and the stream ended: the subscriber is done
	wait_until 60 file_is s1.rc "0 0"
	[ "$(nlines s.out)" -eq 200000 ]
	kill -KILL "$pub"
	kill -CONT "$cat_pid"
	wait_until 10 bash -c "! kill -0 $cat_pid 2>/dev/null"
	[ "$(grep -c '^ACK' st1)" -lt 200000 ]
	# the journal still has what was not said: sent again, acknowledged
	# again from the state file (not written again), said now
	spawn "gdsub -c s.ini 2> s2.err | gdack -c s.ini --tee > s2.out 2> a2.err"
	run --separate-stderr timeout 60 gdpub -p "$port" -n 1 -t 60 --journal j.gdj --wait-ready=20 < /dev/null
	assert_success
	# a line cut short by the kill (no newline) says nothing
	cp st1 whole
	[ -z "$(tail -c 1 whole)" ] || sed -i '$d' whole
	{ cat whole; printf '%s\n' "$output"; } | awk '$1 == "ACK" { print $2 }' | sort -n | uniq > said
	assert_equal "$(wc -l < said)" 200000
	assert_equal "$(head -n 1 said) $(tail -n 1 said)" "1 200000"
	[ "$(nlines s2.out)" -eq 0 ]
}

@test "status output broken (| head -3) with a journal: no more input, exit 74, one line; the outcomes not written stay in the journal and the next start says them" {
	# held to the end: the next start below binds it again
	hold_port port
	pub_bg --separate-stderr timeout 60 bash -c "seq 1 100000 | gdpub -p $port --port-file pub.port -n 1 -t 5 --wait-ready=20 --journal j.gdj 2> p.err | head -3; echo \${PIPESTATUS[*]} > ps"
	sub_conf s.ini "$port" "GDsub_state=s.state"
	ack_pipeline s
	pub_wait
	assert_output "$(echo READY; statuses ACK 1 2)"
	assert_equal "$(cat ps)" "0 74 0"
	assert_equal "$(cat p.err)" "gdpub: cannot write status lines on standard output: broken pipe; no more input is read, and the outcomes not written stay in journal 'j.gdj' and are said when gdpub starts again with it"
	# input stopped: the subscriber has far from all of it
	got=$(nlines s.out)
	[ "$got" -gt 0 ]
	[ "$got" -lt 100000 ]
	# what the subscriber got and gdpub could not say is in the journal
	jrows j.gdj > journaled
	[ -s journaled ]
	cut -f1 s.out | sed 's|.*/||' | sort > gotids
	[ -z "$(comm -13 gotids <(sort journaled))" ]
	# said by the next start: acknowledged again from the state file, not
	# written again
	wait_until 30 test -s s.rc
	sub_conf s2.ini "$port" "GDsub_state=s.state"
	ack_pipeline s2
	run --separate-stderr timeout 60 gdpub -p "$port" -n 1 -t 5 --wait-ready=20 --journal j.gdj < /dev/null
	assert_success
	assert_equal "$(grep '^ACK' <<<"$output" | cut -d' ' -f2 | sort -n)" "$(sort -n journaled)"
	[ "$(nlines s2.out)" -eq 0 ]
	assert_equal "$(jrows j.gdj)" ""
}

@test "status output broken without a journal: like a broken -o, no more input, exit 1, one line; the pending blocks still reach the end" {
	pub_bg --separate-stderr timeout 60 bash -c "seq 1 100000 | gdpub -p 0 --port-file pub.port -n 1 -t 5 --wait-ready=20 2> p.err | head -3; echo \${PIPESTATUS[*]} > ps"
	sub_conf s.ini "$port"
	ack_pipeline s
	pub_wait
	assert_equal "$(cat ps)" "0 1 0"
	assert_equal "$(cat p.err)" "gdpub: cannot write status lines on standard output: broken pipe; no more input is read, and the outcomes not written go unreported"
	wait_until 30 file_is s.rc "0 0"
	[ "$(nlines s.out)" -lt 100000 ]
}

@test "input ended, every block resolved, standard output not read: gdpub says so after 5 s, its control socket answers to the end; SIGTERM ends the wait, exit 74, the outcomes not written in the journal" {
	# held to the end: the next start below binds it again
	hold_port port
	# some 2 MB of ACK lines, a pipe of 1 MiB that nobody reads
	spawn "{ seq 1 200000 | sh -c 'echo \$\$ > pub.pid; exec gdpub -p $port --port-file pub.port -n 1 -t 60 --journal j.gdj --wait-ready=20 2> p.err'; echo \$? > p.rc; } | sleep 600"
	[ "$(port_of pub.port)" = "$port" ]
	sub_conf s.ini "$port" "GDsub_state=s.state"
	ack_pipeline s
	wait_until 10 test -s pub.pid
	pub=$(cat pub.pid)
	wait_until 60 file_is s.rc "0 0"
	wait_until 30 has_line p.err 'has not taken'
	[[ "$(cat p.err)" =~ ^"gdpub: warning: standard output has not taken the last status lines ("[0-9]+" bytes) for 5 s: waiting for its reader; on SIGINT or SIGTERM gdpub stops waiting, and the outcomes not written stay in journal 'j.gdj' and are said when gdpub starts again with it"$ ]]
	run --separate-stderr gdinspect -p "$port" --json stats
	assert_success
	[[ "$output" == *'"published":200000,'* ]]
	kill -TERM "$pub"
	wait_until 10 test -s p.rc
	assert_equal "$(cat p.rc)" 74
	[[ "$(tail -n 1 p.err)" =~ ^"gdpub: SIGTERM: exiting with "[0-9]+" bytes of status lines not taken by standard output; the outcomes not written stay in journal 'j.gdj' and are said when gdpub starts again with it"$ ]]
	[ ! -e "$(pub_sock "$port")" ]
	jrows j.gdj > journaled
	[ "$(wc -l < journaled)" -gt 1000 ]
	# the next start says them; none is written again
	sub_conf s2.ini "$port" "GDsub_state=s.state"
	ack_pipeline s2
	run --separate-stderr timeout 60 gdpub -p "$port" -n 1 -t 60 --journal j.gdj --wait-ready=20 < /dev/null
	assert_success
	assert_equal "$(grep -c '^ACK' <<<"$output")" "$(wc -l < journaled)"
	[ "$(nlines s2.out)" -eq 0 ]
}

@test "a second SIGTERM while standard output is not read: exit 143 a second later (it aborted in the teardown, 134)" {
	spawn "{ seq 1 200000 | sh -c 'echo \$\$ > pub.pid; exec gdpub -p 0 --port-file pub.port -n 1 -t 600 --wait-ready=20 2> p.err'; echo \$? > p.rc; } | sleep 600"
	port=$(port_of pub.port)
	# the pipeline drops the first block: it stays pending to the end
	spawn "gdsub -P 127.0.0.1:$port --retry-interval 0.05 --max-retries 200 2> s.err |
		{ IFS= read -r l; exec cat; } | gdack -P 127.0.0.1:$port 2> a.err"
	wait_until 10 test -s pub.pid
	pub=$(cat pub.pid)
	wait_until 60 bash -c "gdinspect -p $port --json stats | grep -q '\"ack\":199999,'"
	kill -TERM "$pub"
	wait_until 10 has_line p.err 'waiting for 1 pending'
	kill -TERM "$pub"
	wait_until 10 test -s p.rc
	assert_equal "$(cat p.rc)" 143
	grep -Fxq "gdpub: standard output did not take the last status lines within a second; exiting" p.err
}

# acked_ids FILE: the IDs of FILE's ACK lines, sorted, each once
acked_ids() {
	awk '$1 == "ACK" { print $2 }' "$1" | sort -n -u
}

@test "--status FILE with a journal, kill -9 mid-run: the file is appended to, not truncated; after the restart every published ID's ACK is in it (at least once)" {
	seq 1 200000 > in.txt
	# held to the end: the restart below binds it again
	hold_port port
	sub_conf s.ini "$port" "GDsub_state=s.state"
	ack_pipeline s
	spawn "exec gdpub -p $port --port-file pub.port -n 1 -t 60 --window 64 --journal j.gdj --status st --wait-ready=20 < in.txt > p1.out 2> p1.err"
	pid=$SPAWNED
	[ "$(port_of pub.port)" = "$port" ]
	wait_until 60 lines_at_least st 2000
	kill -KILL "$pid"
	# nothing on standard output: the lines go to the file
	[ ! -s p1.out ]
	high=$(gdinspect --json journal j.gdj | sed -n 's/.*"highest_id":\([0-9]*\).*/\1/p')
	[ "$high" -ge 1999 ]
	[ "$high" -lt 200000 ]
	run --separate-stderr timeout 60 gdpub -p "$port" -n 1 -t 60 --journal j.gdj --status st --wait-ready=20 < /dev/null
	assert_success
	assert_output ""
	# the first run's lines kept, the second's appended
	[ "$(head -n 1 st)" = READY ]
	[ "$(grep -c '^READY$' st)" -eq 2 ]
	assert_equal "$(acked_ids st)" "$(seq 1 "$high")"
	# GDpub_status is the option's key
	printf 'GDpub_port=0\nGDpub_numSubs=1\nGDpub_timeout=60\nGDpub_journal=j.gdj\nGDpub_status=st\n' > p.ini
	sub_conf s2.ini 0
	pub_bg --separate-stderr bash -c "seq 1 3 | gdpub -c p.ini --port-file pub.port --wait-ready=20"
	sub_conf s2.ini "$port"
	ack_pipeline s2
	pub_wait
	assert_success
	assert_output ""
	assert_equal "$(acked_ids st)" "$(seq 1 "$((high + 3))")"
}

@test "--status FILE with a journal: a last line cut short (a kill mid-write) is cut off with a warning and said again; without a journal the file is truncated" {
	printf 'READY\nACK 1\nACK 2\nAC' > st
	pub_bg --separate-stderr bash -c "seq 1 2 | gdpub -p 0 --port-file pub.port -n 1 -t 60 --journal j.gdj --status st --wait-ready=20"
	sub_conf s.ini "$port"
	ack_pipeline s
	pub_wait
	assert_success
	assert_equal "$stderr" "gdpub: warning: the status file 'st' ended in a line cut short (2 bytes, a kill mid-write): cut off; its outcome is said again"
	assert_equal "$(cat st)" "$(printf 'READY\nACK 1\nACK 2\nREADY\nACK 1\nACK 2')"
	pub_bg --separate-stderr bash -c "seq 1 2 | gdpub -p 0 --port-file pub.port -n 1 -t 60 --status st --wait-ready=20"
	sub_conf s2.ini "$port"
	ack_pipeline s2
	pub_wait
	assert_success
	assert_equal "$(cat st)" "$(printf 'READY\nACK 1\nACK 2')"
}
