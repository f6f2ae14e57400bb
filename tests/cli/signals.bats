#!/usr/bin/env bats
# Stopping and losing peers, as a script sees it: the first SIGINT/SIGTERM
# stops the input and says how much that was read is left unpublished, the
# second reports every pending block NACK and removes the control socket;
# a block published while GD subscribers are missing, and a GD subscriber
# that drops, are reported at the default level; gdsub says why it
# lingered.
load helpers
bats_require_minimum_version 1.5.0

# held NAME PORT: spawn gdsub | hold | gdack: nothing gets past the middle
# stage (so every block stays pending) until the test writes to NAME.gate
held() {
	mkfifo "$1.gate"
	spawn "gdsub -P 127.0.0.1:$2 --name $1 --retry-interval 0.05 --max-retries 200 --linger 5 2> $1.sub.err |
		{ read -r _ < $1.gate; exec cat; } |
		gdack -P 127.0.0.1:$2 --name $1 > /dev/null 2> $1.ack.err" 7>&-
}

# pending_count PORT: blocks pending at the gdpub on PORT
pending_count() {
	timeout 10 gdinspect --ctl "$(pub_sock "$1")" --json stats |
		python -c 'import json,sys; print(json.loads(sys.stdin.read())["pending"])'
}

pending_at_least() {
	[ "$(pending_count "$1")" -ge "$2" ]
}

@test "first SIGTERM: input stops, what was read but not published is counted; every published block gets its status line" {
	seq 1 300000 > in.txt
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 2 --wait-ready=10 < in.txt > st 2> pub.err & echo \$! > pub.pid; wait \$!; echo \$? > pub.rc"
	port=$(port_of pub.port)
	held s "$port"
	wait_until 10 test -s pub.pid
	pid=$(cat pub.pid)
	wait_until 10 pending_at_least "$port" 64
	kill -TERM "$pid"
	wait_until 20 test -s pub.rc
	assert_equal "$(cat pub.rc)" 1
	run cat pub.err
	assert_line --regexp '^gdpub: warning: SIGTERM: [0-9]+ records already read from standard input were not published \(no status line\); the last published was record [0-9]+$'
	assert_line --regexp '^gdpub: SIGTERM: no more input; waiting for [0-9]+ pending blocks$'
	last=$(sed -n 's/.*the last published was record \([0-9]*\)$/\1/p' pub.err)
	# one status line for each of records 1..last, in order, and no more
	assert_equal "$(grep -E '^(ACK|NACK) ' st | cut -d' ' -f2)" "$(seq 1 "$last")"
	echo go > s.gate
}

@test "second SIGINT: every pending block is reported NACK, the control socket is removed, exit 130" {
	seq 1 10 > in.txt
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 60 --wait-ready=10 < in.fifo > st 2> pub.err & echo \$! > pub.pid; wait \$!; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	held s "$port" 7>&-
	wait_until 10 test -s pub.pid
	pid=$(cat pub.pid)
	wait_until 10 has_line st '^READY$'
	cat in.txt >&7
	wait_until 10 pending_at_least "$port" 10
	[ -S "$(pub_sock "$port")" ]
	kill -INT "$pid"
	wait_until 10 has_line pub.err 'SIGINT: no more input; waiting for 10 pending blocks$'
	kill -INT "$pid"
	wait_until 10 test -s pub.rc
	assert_equal "$(cat pub.rc)" 130
	assert_equal "$(cat st)" "$(echo READY; statuses NACK $(seq 1 10))"
	run cat pub.err
	assert_line "gdpub: second SIGINT: reporting the 10 pending blocks as NACK and exiting"
	[ ! -e "$(pub_sock "$port")" ]
	feed_close
	echo go > s.gate
}

@test "second SIGTERM: exit 143, NACK for what was pending" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 60 --wait-ready=10 < in.fifo > st 2> pub.err & echo \$! > pub.pid; wait \$!; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	held s "$port" 7>&-
	wait_until 10 test -s pub.pid
	pid=$(cat pub.pid)
	wait_until 10 has_line st '^READY$'
	seq 1 3 >&7
	wait_until 10 pending_at_least "$port" 3
	kill -TERM "$pid"
	wait_until 10 has_line pub.err 'SIGTERM: no more input'
	kill -TERM "$pid"
	wait_until 10 test -s pub.rc
	assert_equal "$(cat pub.rc)" 143
	assert_equal "$(cat st)" "$(echo READY; statuses NACK 1 2 3)"
	feed_close
	echo go > s.gate
}

@test "a block published while fewer than numSubs GD subscribers are connected: one warning, at the default level, and the run's summary" {
	run --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 1 -t 0.3 < <(seq 1 3)
	assert_failure 1
	assert_output "$(statuses NACK 1 2 3)"
	assert_equal "$(stderr_before_summary)" "gdpub: warning: block 1 published while 0 of 1 GD subscribers are connected: it is NACKed after 0.3 seconds, since a subscriber that connects later is not sent it (--wait-ready holds input until READY; --resend sends it again)"
	summary_is 0 3 0
	# with --resend a subscriber connected by then gets it: said so
	run --separate-stderr timeout 20 gdpub -p 0 --port-file pub2.port -n 1 -t 0.3 --resend 1 < <(seq 1 3)
	assert_failure 1
	assert_output "$(statuses NACK 1 2 3)"
	[ "${stderr_lines[0]}" = "gdpub: warning: block 1 published while 0 of 1 GD subscribers are connected: it is sent again after 0.3 seconds to those connected then, and NACKed if still short when its resends run out (--wait-ready holds input until READY)" ]
}

@test "a GD subscriber that disconnects mid-stream is reported without -v" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 30 --wait-ready=10 < in.fifo > st 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	touch cmds
	spawn "python $BATS_TEST_DIRNAME/fakesub.py 127.0.0.1 $port fake cmds ev 2> fake.err" 7>&-
	wait_until 10 has_line st '^READY$'
	seq 1 2 >&7
	wait_until 10 has_line ev '^block 2 '
	echo quit >> cmds
	wait_until 10 has_line pub.err 'disconnected'
	run cat pub.err
	assert_line --regexp '^gdpub: warning: GD subscriber fake \(127\.0\.0\.1:[0-9]+\) disconnected: connection closed; 0 of 1 connected, 2 blocks pending$'
	feed_close
}

@test "gdsub --linger: when every block is acknowledged but gdack keeps its input open, gdsub says so" {
	pub_bg --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -n 1 --wait-ready=10 < <(seq 1 3)
	mkfifo gate
	spawn "{ gdsub -P 127.0.0.1:$port --retry-interval 0.05 --max-retries 200 --linger 0.5 2> sub.err; echo \$? > sub.rc; } |
		{ cat; read -r _ < gate; } |
		gdack -P 127.0.0.1:$port > /dev/null 2> ack.err"
	pub_wait
	assert_success
	wait_until 10 test -s sub.rc
	assert_equal "$(cat sub.rc)" 0
	assert_equal "$(grep -v 'cannot connect' sub.err)" "gdsub: warning: gdack is still connected with its input open 0.5 seconds (--linger) after standard output closed; exiting"
	echo go > gate
}

# sub_unique_is N: the one gdsub of this test has received N unique blocks
sub_unique_is() {
	[ "$(timeout 10 gdinspect --ctl "$(sub_sock)" --json stats |
		python -c 'import json,sys; print(json.loads(sys.stdin.read())["unique"])')" = "$1" ]
}

# sub_twice REDIRECT SIG N: a gdpub -n 1 on port 0 fed by in.fifo (fd
# 7) once gdsub is connected, a gdsub -v whose stdout goes REDIRECT, N
# blocks received; then SIG, seen by gdsub, and SIG again; gdsub's status
# in sub.rc
sub_twice() {
	local pid
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 60 --wait-ready=10 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	spawn "{ gdsub -v -P 127.0.0.1:$port --retry-interval 0.05 --max-retries 200 --linger 60 2> sub.err & echo \$! > sub.pid; wait \$!; echo \$? > sub.rc; } $1" 7>&-
	wait_until 10 test -s sub.pid
	pid=$(cat sub.pid)
	feed_blocks >&7
	wait_until 10 sub_unique_is "$3"
	kill -"$2" "$pid"
	wait_until 10 has_line sub.err "closing standard output: SIG$2\$"
	kill -"$2" "$pid"
	wait_until 5 test -s sub.rc
	feed_close
}

@test "gdsub, second SIGINT while its stdout is stuck: exit 130 at once, the unacknowledged blocks counted, the control socket removed" {
	# nothing reads gdsub's stdout: 3.6 MB of blocks fill the pipe
	feed_blocks() {
		python -c 'import sys; [sys.stdout.write("x" * 900000 + "\n") for _ in range(4)]'
	}
	sub_twice "| sleep 600" INT 4
	assert_equal "$(cat sub.rc)" 130
	run cat sub.err
	assert_line --regexp "gdsub: second SIGINT: exiting with 4 blocks unacknowledged\$"
	run ! sub_sock
}

@test "gdsub, second SIGTERM while blocks wait for gdack: exit 143, the control socket removed" {
	feed_blocks() {
		seq 1 3
	}
	sub_twice "> out" TERM 3
	assert_equal "$(cat sub.rc)" 143
	run cat sub.err
	assert_line --regexp "gdsub: second SIGTERM: exiting with 3 blocks unacknowledged\$"
	assert_equal "$(cut -f2 out)" "$(seq 1 3)"
	run ! sub_sock
}
