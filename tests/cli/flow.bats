#!/usr/bin/env bats
# Flow control (gdpub(1) FLOW CONTROL): with the default settings a
# subscriber pipeline slower than the publisher, but keeping up with its
# own steady speed, gets every block ACKed, because gdpub keeps no more
# blocks in flight than the pipelines acknowledge within an eighth of the
# timeout; gdinspect stats shows that window.
load helpers
bats_require_minimum_version 1.5.0

# staged NAME PORT STAGE: spawn gdsub | STAGE | gdack
staged() {
	spawn "gdsub -P 127.0.0.1:$2 --name $1 --retry-interval 0.05 --max-retries 200 2> $1.sub.err |
		$3 |
		gdack -P 127.0.0.1:$2 --name $1 > /dev/null 2> $1.ack.err; echo \${PIPESTATUS[*]} > $1.rc"
}

# throttled NAME PORT RATE: spawn gdsub | throttle.py RATE | gdack
throttled() {
	staged "$1" "$2" "$(python_bin) $BATS_TEST_DIRNAME/throttle.py $3"
}

@test "defaults: 20,000 blocks through a pipeline throttled to 2,000 blocks/s are all ACKed" {
	seq 1 20000 > in.txt
	pub_bg --separate-stderr timeout 120 gdpub -p 0 --port-file pub.port -n 1 --wait-ready=10 < in.txt
	throttled s "$port" 2000
	pub_wait
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 20000 ]
	[ "$(grep -c '^NACK ' <<<"$output")" -eq 0 ]
	wait_until 10 file_is s.rc "0 0 0"
}

# 2,000 blocks: 10 s at 200/s, five timeouts of steady state after the
# window settles (it moves every 32 ACKs, 0.16 s here); 5 times what
# rate x timeout (400) lets through without flow control
@test "defaults and -t 2: 2,000 blocks through a pipeline throttled to 200 blocks/s are all ACKed" {
	seq 1 2000 > in.txt
	pub_bg --separate-stderr timeout 120 gdpub -p 0 --port-file pub.port -n 1 -t 2 --wait-ready=10 < in.txt
	throttled s "$port" 200
	pub_wait
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 2000 ]
	wait_until 10 file_is s.rc "0 0 0"
}

# 4,500 blocks: more than the slower pipeline gets through in a timeout
# (3,000), so without flow control the last ones would be NACKed
@test "two pipelines of different speeds: every block ACKed, at the slower one's pace" {
	seq 1 4500 > in.txt
	pub_bg --separate-stderr timeout 120 gdpub -p 0 --port-file pub.port -n 2 -t 3 --wait-ready=10 < in.txt
	throttled a "$port" 3000
	throttled b "$port" 1000
	pub_wait
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 4500 ]
}

@test "gdinspect stats shows the window: it stays near rate x timeout/8 for a slow pipeline, '-' with GD off" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 4 --wait-ready=10 < in.fifo > st 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	throttled s "$port" 500 7>&-
	wait_until 10 has_line st '^READY$'
	# 2,000: the window is read at 1,000 ACKs (2 s), while it still limits
	seq 1 2000 >&7
	wait_until 20 lines_at_least st 1001
	run timeout 10 gdinspect --ctl "$(pub_sock "$port")" --json stats
	assert_success
	w=$(python -c 'import json,sys; print(json.loads(sys.stdin.read())["window"])' <<<"$output")
	# 500/s x 0.5 s = 250: allow for the measuring (two commands: in
	# "A && B" a false A does not fail the test)
	[ "$w" -ge 50 ]
	[ "$w" -le 1000 ]
	feed_close
	wait_until 30 file_is pub.rc 0
	feed_open in2.fifo
	spawn "gdpub -p 0 --port-file port2.port < in2.fifo > st2 2> pub2.err" 7>&-
	port2=$(port_of port2.port)
	run timeout 10 gdinspect --ctl "$(pub_sock "$port2")" --json stats
	assert_success
	assert_output --partial '"window":null'
	feed_close
}

# A stage that drops lines (grep): the blocks it drops are passed over by
# the later ones it lets through, so they hold no place in the window and
# their expiry does not shrink it: the run takes about one timeout, not
# one timeout per window (before: 102 of 2,000 resolved in 60 s).
@test "a stage that filters lines: every block resolved in about one timeout, the NACKs explained on stderr" {
	awk 'BEGIN { for (i = 1; i <= 2000; i++) print (i % 10 == 0 ? "ERROR " : "info ") i }' > in.txt
	pub_bg --separate-stderr timeout 60 gdpub -p 0 --port-file pub.port -n 1 -t 2 --wait-ready=10 < in.txt
	staged f "$port" "grep --line-buffered ERROR"
	pub_wait
	[ "$status" -eq 1 ]
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 200 ]
	[ "$(grep -c '^NACK ' <<<"$output")" -eq 1800 ]
	[ "$(grep -c '^ACK [0-9]*0$' <<<"$output")" -eq 200 ]
	[ "$(grep -c . <<<"$stderr")" -eq 1 ]
	[[ "$stderr" =~ ^"gdpub: warning: 2000 blocks in "[0-9]+\.[0-9]" s: 200 ACK, 1800 NACK, 0 REJECT; NACKed most because the pipelines passed them over " ]]
	[[ "$stderr" == *": 1800 passed over, 0 dropped or held by a stage, 0 with subscribers missing, 0 late (GDpub_timeout=2s), 0 otherwise" ]]
}

# A filter that rarely matches: its first stage reads every block and
# nothing comes back, so the window grows by probing instead of waiting
# for ACKs that a dropped block never gets (before: 129 of 5,000 resolved
# in 130 s, one block a second once the expiries had cut the window to 1).
@test "a filter at 1 in 1,000 of 5,000 lines, -t 2: every block resolved within 20 s, 5 ACK and 4,995 NACK" {
	awk 'BEGIN { for (i = 1; i <= 5000; i++) print (i % 1000 == 0 ? "MATCH " : "line ") i }' > in.txt
	t0=$SECONDS
	pub_bg --separate-stderr timeout 120 gdpub -p 0 --port-file pub.port -n 1 -t 2 --wait-ready=10 < in.txt
	staged f "$port" "grep --line-buffered MATCH"
	pub_wait
	elapsed=$((SECONDS - t0))
	[ "$status" -eq 1 ]
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 5 ]
	[ "$(grep -c '^NACK ' <<<"$output")" -eq 4995 ]
	[ "$(grep -c '^ACK [0-9]*000$' <<<"$output")" -eq 5 ]
	echo "elapsed $elapsed s" >&3
	[ "$elapsed" -le 20 ]
	# most were passed over (a later block ACKed); the first ones may
	# expire before the ACK that passes them: read and held by grep
	[[ "$stderr" =~ ": 5 ACK, 4995 NACK, 0 REJECT; NACKed most because the pipelines passed them over ".*": "([0-9]+)" passed over, "([0-9]+)" dropped or held by a stage, 0 with subscribers missing, 0 late (GDpub_timeout=2s), 0 otherwise"$ ]]
	[ $((BASH_REMATCH[1] + BASH_REMATCH[2])) -eq 4995 ]
}

# A stage that drops every block: nothing is ever ACKed, grep reads all
# (before: one window per timeout, 129 of 2,000 in 130 s).
@test "a filter that drops everything, 2,000 lines, -t 2: all NACKed within 20 s, each 'dropped or held by a stage'" {
	seq 1 2000 > in.txt
	t0=$SECONDS
	pub_bg --separate-stderr timeout 120 gdpub -p 0 --port-file pub.port -n 1 -t 2 --wait-ready=10 < in.txt
	staged d "$port" "grep --line-buffered NEVER"
	pub_wait
	elapsed=$((SECONDS - t0))
	[ "$status" -eq 1 ]
	[ "$(grep -c '^NACK ' <<<"$output")" -eq 2000 ]
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 0 ]
	echo "elapsed $elapsed s" >&3
	[ "$elapsed" -le 20 ]
	[ "$(grep -c . <<<"$stderr")" -eq 1 ]
	[[ "$stderr" =~ ^"gdpub: warning: 2000 blocks in "[0-9]+\.[0-9]" s: 0 ACK, 2000 NACK, 0 REJECT; NACKed most because a stage dropped them or holds them (the first stage read them and nothing came back; a stage must write a line for each line it reads, see gdpub(1) FLOW CONTROL): 0 passed over, 2000 dropped or held by a stage, 0 with subscribers missing, 0 late (GDpub_timeout=2s), 0 otherwise"$ ]]
}

# Blocks a stage drops ahead of many it passes, with a long timeout: the
# window grows past the dropped ones instead of holding them until they
# expire (before: none of the passed ones ACKed in 130 s).
@test "1,000 dropped blocks ahead of 20,000 passed ones, GDpub_timeout=600: the 20,000 ACKed within 60 s" {
	awk 'BEGIN { for (i = 1; i <= 21000; i++) print (i <= 1000 ? "STUCK " : "ok ") i }' > in.txt
	printf 'GDpub_port=0\nGDpub_numSubs=1\nGDpub_timeout=600\n' > p.ini
	t0=$SECONDS
	pub_bg --separate-stderr gdpub -c p.ini --port-file pub.port --wait-ready=10 < in.txt
	staged s "$port" "grep --line-buffered -v STUCK"
	wait_until 90 bash -c "[ \$(grep -c '^ACK ' pub.run.out) -eq 20000 ]"
	elapsed=$((SECONDS - t0))
	echo "elapsed $elapsed s" >&3
	[ "$elapsed" -le 60 ]
	[ "$(grep -c '^NACK ' pub.run.out)" -eq 0 ]
	run timeout 10 gdinspect -p "$port" --json stats
	assert_success
	assert_output --partial '"pending":1000,'
	assert_output --partial '"passed_over":1000,'
}

# Slow healthy pipelines are not sent more than they acknowledge in time:
# an eager first stage (cat) drains gdsub's pipe but ACKs keep coming,
# late, and the delay rule bounds the window as before; a stage reading
# 8 KiB at a time likewise.
@test "cat before a stage of 100 lines/s, 1,500 blocks (1.5 timeouts), defaults: every block ACKed" {
	seq 1 1500 > in.txt
	pub_bg --separate-stderr timeout 120 gdpub -p 0 --port-file pub.port -n 1 --wait-ready=10 < in.txt
	staged e "$port" "cat | $(python_bin) $BATS_TEST_DIRNAME/throttle.py 100"
	pub_wait
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 1500 ]
	[ -z "$stderr" ]
}

@test "a stage reading 8 KiB chunks and writing 200 lines/s, 1,500 blocks, -t 2: every block ACKed" {
	seq 1 1500 > in.txt
	pub_bg --separate-stderr timeout 120 gdpub -p 0 --port-file pub.port -n 1 -t 2 --wait-ready=10 < in.txt
	staged c "$port" "$(python_bin) $BATS_TEST_DIRNAME/throttle.py 200 --read 8192"
	pub_wait
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 1500 ]
	[ -z "$stderr" ]
}

# The summary's causes: a block sent while fewer than numSubs GD
# subscribers were connected is theirs, even when all of them are there
# at its deadline (before: counted late).
@test "blocks sent before the second of numSubs=2 connected: NACKed 'with subscribers missing', not late" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 2 -t 3 < in.fifo > st 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf a.ini "$port" GDsub_name=a
	sub_conf b.ini "$port" GDsub_name=b
	ack_pipeline a 7>&-
	wait_until 20 bash -c "gdinspect -p $port --json stats | grep -q '\"connections\":[1-9]'"
	wait_until 20 bash -c "gdinspect -p $port subs | grep -q '^a '"
	seq 1 5 >&7
	wait_until 20 has_lines a.out 5
	ack_pipeline b 7>&-
	wait_until 20 bash -c "gdinspect -p $port subs | grep -q '^b '"
	seq 6 10 >&7
	wait_until 20 has_lines b.out 5
	feed_close
	wait_until 30 test -s pub.rc
	assert_equal "$(cat pub.rc)" 1
	assert_equal "$(grep -c '^ACK ' st)" 5
	assert_equal "$(grep -c '^NACK ' st)" 5
	run cat pub.err
	assert_output --partial ": 5 ACK, 5 NACK, 0 REJECT; NACKed most because fewer than numSubs GD subscribers were connected when they were sent: 0 passed over, 0 dropped or held by a stage, 5 with subscribers missing, 0 late (GDpub_timeout=3s), 0 otherwise"
}

# A gdpub restarted on its journal while its pipeline was down sends the
# pending blocks again to nobody; the pipeline that connects afterwards
# never had them (before: NACKed late, as if it had been too slow).
@test "a restarted gdpub whose pipeline was down: the blocks it sent again before the pipeline connected are NACKed 'with subscribers missing', not late" {
	hold_port port
	spawn "exec gdpub -p $port --port-file pub.port -n 1 -t 60 --journal j.gdj < <(seq 1 3; sleep 60) > st1 2> p1.err"
	pid=$SPAWNED
	[ "$(port_of pub.port)" = "$port" ]
	wait_until 10 bash -c "gdinspect journal j.gdj 2>/dev/null | grep -q '; 3 pending$'"
	kill -KILL "$pid"
	pub_bg --separate-stderr gdpub -p "$port" --port-file pub.port -n 1 -t 5 --journal j.gdj < /dev/null
	wait_until 10 grep -q 'sending them again first' pub.run.err
	sub_conf s.ini "$port" GDsub_name=s
	ack_pipeline s
	wait_until 20 bash -c "gdinspect -p $port subs | grep -q '^s '"
	pub_wait 30
	[ "$status" -eq 1 ]
	assert_equal "$output" "$(printf 'READY\nNACK 1\nNACK 2\nNACK 3')"
	[[ "$(tail -n 1 <<<"$stderr")" =~ ^"gdpub: warning: 3 blocks (3 from the journal) in "[0-9.]+" s: 0 ACK, 3 NACK, 0 REJECT; NACKed most because fewer than numSubs GD subscribers were connected when they were sent: 0 passed over, 0 dropped or held by a stage, 3 with subscribers missing, 0 late (GDpub_timeout=5s), 0 otherwise"$ ]]
}

# Nobody owes a block while no GD subscriber is connected: input is read
# up to GDpub_maxPending and NACKed at the timeout (before: one NACK per
# timeout, 101 of 100,000 in 20 s).
@test "no GD subscriber: every block NACKed after the timeout, at input speed, and stderr says why" {
	run --separate-stderr timeout 60 bash -c "seq 1 100000 | gdpub -p 0 --port-file run.port -n 1 -t 1 -q"
	[ "$status" -eq 1 ]
	[ "$(grep -c '^NACK ' <<<"$output")" -eq 100000 ]
	[ -z "$stderr" ]
	run --separate-stderr timeout 60 bash -c "seq 1 1000 | gdpub -p 0 --port-file run.port -n 1 -t 0.5"
	[ "$status" -eq 1 ]
	[ "$(grep -c '^NACK ' <<<"$output")" -eq 1000 ]
	[[ "$stderr" == *" s: 0 ACK, 1000 NACK, 0 REJECT; NACKed most because fewer than numSubs GD subscribers were connected when they were sent: 0 passed over, 0 dropped or held by a stage, 1000 with subscribers missing, 0 late (GDpub_timeout=0.5s), 0 otherwise" ]]
	[[ "$stderr" == *"gdpub: warning: 1000 blocks in "* ]]
	# gdinspect stats: owed by nobody, outside the window
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 3600 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	seq 1 300 >&7
	wait_until 10 bash -c "gdinspect -p $port --json stats | grep -q '\"pending\":300[,}]'"
	run timeout 10 gdinspect -p "$port" --json stats
	assert_success
	assert_output --partial '"window":64,'
	assert_output --partial '"passed_over":300,'
	assert_output --partial '"nack_passed":0,"nack_absent":0,"nack_late":0'
	feed_close
}

# Blocks a pipeline never acknowledges (a grep -v stage drops them) beside
# blocks that flow at 1,000/s: the flowing ones (14 s of them) are all
# ACKed before the first stuck one expires (20 s), with 6 s to spare on a
# loaded machine. Before, the stuck ones piled up in the window (5,000 at
# 1,000/s and -t 20) after 10 s, and nothing flowed until they expired.
@test "stuck blocks beside flowing ones: the flowing ones are all ACKed before the stuck ones expire" {
	awk 'BEGIN { for (i = 1; i <= 21000; i++) print (i % 3 == 0 ? "STUCK " : "ok ") i }' > in.txt
	pub_bg --separate-stderr timeout 180 gdpub -p 0 --port-file pub.port -n 1 -t 20 --wait-ready=10 < in.txt
	staged s "$port" "grep --line-buffered -v STUCK | $(python_bin) $BATS_TEST_DIRNAME/throttle.py 1000"
	pub_wait
	[ "$status" -eq 1 ]
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 14000 ]
	[ "$(grep -c '^NACK ' <<<"$output")" -eq 7000 ]
	last_ack=$(grep -n '^ACK ' <<<"$output" | tail -n 1 | cut -d: -f1)
	first_nack=$(grep -n '^NACK ' <<<"$output" | head -n 1 | cut -d: -f1)
	[ "$last_ack" -lt "$first_nack" ]
}

@test "--window N fixes the window, auto (the default) adapts it; a bad value is refused" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 --window 7 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	run timeout 10 gdinspect --ctl "$(pub_sock "$port")" --json stats
	assert_success
	assert_output --partial '"window":7'
	feed_close
	printf 'GDpub_port=0\nGDpub_numSubs=1\nGDpub_window=auto\n' > p.ini
	feed_open in2.fifo
	spawn "gdpub -c p.ini --port-file pub2.port < in2.fifo > st2 2> pub2.err" 7>&-
	port=$(port_of pub2.port)
	run timeout 10 gdinspect --ctl "$(pub_sock "$port")" --json stats
	assert_success
	assert_output --partial '"window":64'
	feed_close
	# refused before it binds: port 0, not the port of the run above
	run --separate-stderr gdpub -p 0 -n 1 --window 0
	[ "$status" -eq 64 ]
	[[ "$stderr" == *"--window"*"expected an integer from 1 to 16777216 or 'auto'"* ]]
}

# gdkit(7) CASCADE CONFIRMATION and Filters, as pasted (work: cat)
@test "gdkit(7) recipes: mawk -W interactive as a stage; a filter that acknowledges what it drops: every block ACKed" {
	awk 'BEGIN { for (i = 1; i <= 2000; i++) print (i % 10 == 0 ? "ERROR " : "info ") i }' > in.txt
	pub_bg --separate-stderr timeout 60 gdpub -p 0 --port-file pub.port -n 1 -t 5 --wait-ready=10 < in.txt
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_name=m\nGDsub_retryInt=0.05\nGDsub_maxRetries=200\n' "$port" > s.ini
	spawn "gdsub -c s.ini 2> m.sub.err |
		mawk -W interactive -F '\t' -v OFS='\t' '{ \$2 = toupper(\$2); print }' |
		gdack -c s.ini --tee > up.txt 2> m.ack.err; echo \${PIPESTATUS[*]} > m.rc"
	pub_wait
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 2000 ]
	wait_until 20 file_is m.rc "0 0 0"
	[ "$(grep -c $'\tINFO [0-9]*$' up.txt)" -eq 1800 ]
	pub_bg --separate-stderr timeout 60 gdpub -p 0 --port-file pub.port -n 1 -t 5 --wait-ready=10 < in.txt
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_name=f\nGDsub_retryInt=0.05\nGDsub_maxRetries=200\n' "$port" > s.ini
	spawn "{ gdsub -c s.ini |
  mawk -W interactive -v ack='gdack -c s.ini' \\
    '/ERROR/ { print; next } { print | ack; fflush(ack) }' |
  cat | gdack -c s.ini --tee > out.txt; } 2> f.err; echo \${PIPESTATUS[*]} > f.rc"
	pub_wait
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 2000 ]
	[ -z "$stderr" ]
	wait_until 20 test -s f.rc
	[ "$(grep -c $'\tERROR [0-9]*0$' out.txt)" -eq 200 ]
	[ "$(wc -l < out.txt)" -eq 200 ]
}

# reject_run NAME INPUT [GDPUB-OPTS]: gdpub -I -n 1 of INPUT through a
# fresh gdsub | gdack pipeline; run's status, output and stderr
reject_run() {
	printf "$2" > "$1.in"
	pub_bg --separate-stderr timeout 60 gdpub -p 0 --port-file pub.port -n 1 -t 30 -I --wait-ready=30 ${3:-} < "$1.in"
	spawn "gdsub -P 127.0.0.1:$port --name $1 --retry-interval 0.05 --max-retries 400 2> $1.sub.err |
		gdack -P 127.0.0.1:$port --name $1 --tee > $1.out 2> $1.ack.err"
	pub_wait
}

# The run in one line at its end whenever a block failed (issue 26):
# counts of ACK, NACK and REJECT and the wall time; nothing when all were
# ACKed; -q silences it (before: REJECTs alone gave no summary).
@test "a run with REJECTs ends with one summary line: blocks, seconds, ACK, NACK, REJECT; none when all ACKed; -q silences it" {
	reject_run a '1\tone\nbad line\n2\ttwo\n'
	[ "$status" -eq 1 ]
	assert_equal "$(sort <<<"$output")" "$(printf 'ACK 1\nACK 2\nREADY\nREJECT - malformed line 2: expected ID<TAB>payload with a decimal ID')"
	[[ "$(tail -n 1 <<<"$stderr")" =~ ^"gdpub: warning: 3 blocks in "[0-9]+\.[0-9]" s: 2 ACK, 0 NACK, 1 REJECT (each REJECT line says why)"$ ]]
	# -q: the REJECT's own error only
	reject_run b '3\tthree\nbad line\n' -q
	[ "$status" -eq 1 ]
	assert_equal "$stderr" "gdpub: REJECT -: malformed line 2: expected ID<TAB>payload with a decimal ID"
	# all ACKed: no summary
	reject_run c '4\tfour\n'
	assert_success
	assert_equal "$stderr" ""
}
