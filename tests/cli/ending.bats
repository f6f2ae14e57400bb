#!/usr/bin/env bats
# gdsub ends when nothing can acknowledge what it writes (gdsub(1)
# ACKNOWLEDGEMENT, EXIT STATUS): its standard output's reader has gone,
# or its gdack went without finishing (killed) and none connected within
# a second. It records its state, exits 1 when blocks it wrote were not
# acknowledged, and so the whole pipeline ends, as a service manager
# needs before it starts it again; the publisher resends those blocks to
# the next pipeline. A gdack that finishes cleanly (its bye) leaves
# gdsub waiting for the next one.
load helpers
bats_require_minimum_version 1.5.0

# pipeline K: spawn the exactly-once pipeline of gdkit(7), run K: gdsub
# --state | cat | gdack --sink, as a service runs it; the pids of gdsub
# and gdack in sub.K.pid and ack.K.pid, the statuses of the three in
# pipe.K.rc once every one has exited.
pipeline() {
	spawn "sh -c 'echo \$\$ > sub.$1.pid; exec gdsub -c s.ini --state s.state' 2> sub.$1.err | cat | sh -c 'echo \$\$ > ack.$1.pid; exec gdack -c s.ini --sink sink' 2> ack.$1.err; echo \${PIPESTATUS[*]} > pipe.$1.rc" 7>&-
	wait_until 10 test -s "ack.$1.pid"
	wait_until 10 test -s "sub.$1.pid"
}

# unacked SOCK N: the gdsub on SOCK has N or more blocks written and not
# acknowledged
unacked() {
	[ "$(gdinspect --ctl "$1" --json stats | sed -n 's/.*"unacked":\([0-9]*\).*/\1/p')" -ge "$2" ]
}

@test "gdsub | head -1: standard output's reader gone and no gdack: gdsub exits 1 a second later, saying how many blocks went unacknowledged; 0 when none was" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 60 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini 2> sub.err | head -n 1 > head.out; echo \${PIPESTATUS[0]} > sub.rc" 7>&-
	wait_until 10 sub_sock
	wait_until 20 sub_accepted "$(sub_sock)"
	# head reads one and goes: gdsub finds out by a write that fails, or
	# by its look at the pipe when nothing more is written
	seq 1 3 >&7
	# before: --linger (10 s), then 0
	wait_until 20 test -s sub.rc
	assert_equal "$(cat sub.rc)" 1
	assert_equal "$(cut -f2 head.out)" 1
	run grep -v '^gdsub: cannot connect' sub.err
	assert_output --regexp "^gdsub: standard output's reader has gone and no gdack connected within 1 second: exiting; [1-3] blocks? written on stdout w(as|ere) not acknowledged \((its|their) publishers send (it|them) again or NACK (it|them)\)$"
	# a reader gone before anything was written: nothing is lost, and
	# nothing waits (before: it waited for a block to write)
	run --separate-stderr timeout 20 bash -c "gdsub -c s.ini | true; echo \${PIPESTATUS[0]}"
	assert_output 0
	assert_equal "$(grep -v '^gdsub: cannot connect' <<<"$stderr")" ""
	run --separate-stderr timeout 20 bash -c "gdsub -c s.ini --no-gd | true; echo \${PIPESTATUS[0]}"
	assert_output 0
	feed_close
}

@test "kill -9 gdack in an exactly-once pipeline: gdsub exits 1 at once, the pipeline ends; started again, every block is in the sink once and ACKed, none NACKed" {
	feed_open in.fifo
	hold_port port
	spawn "gdpub -p $port -n 1 -t 2 --resend 30 --journal pub.journal < in.fifo > st 2> pub.err; echo \$? > pub.rc" 7>&-
	sub_conf s.ini "$port"
	pipeline 1
	seq 1 1000 >&7
	wait_until 30 lines_at_least sink 100
	# gdack stops acknowledging, blocks keep coming: some are written
	# and not acknowledged when it is killed
	kill -STOP "$(cat ack.1.pid)"
	seq 1001 2000 >&7
	wait_until 30 unacked "$(sub_sock)" 1
	kill -KILL "$(cat ack.1.pid)"
	# before: gdsub lingered 10 s or more and exited 0
	wait_until 20 test -s pipe.1.rc
	run cat pipe.1.rc
	assert_output --regexp '^1 [0-9]+ 137$'
	run grep -E "^gdsub: (the gdack acknowledging its blocks went without finishing \(killed\)|standard output's reader has gone) and no gdack connected within 1 second: exiting; [0-9]+ blocks? written on stdout w(as|ere) not acknowledged" sub.1.err
	assert_success
	# what it acknowledged is recorded: the next gdsub opens the state
	# file and takes no control socket over
	pipeline 2
	feed_close
	wait_until 120 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	wait_until 30 file_is pipe.2.rc "0 0 0"
	[ "$(grep -c '^ACK ' st)" -eq 2000 ]
	run grep -c '^NACK ' st
	assert_output 0
	[ "$(nlines sink)" -eq 2000 ]
	[ "$(cut -f2 sink | sort -u | wc -l)" -eq 2000 ]
	run ! grep -q 'takes over\|took over' sub.2.err
}

@test "a killed gdack whose stage still reads (tee -p): gdsub ends a second later all the same, exit 1" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 60 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini 2> sub.err | tee -p copy | sh -c 'echo \$\$ > ack.pid; exec gdack -c s.ini' 2> ack.err; echo \${PIPESTATUS[*]} > pipe.rc" 7>&-
	wait_until 10 test -s ack.pid
	wait_until 20 sub_accepted "$(sub_sock)"
	seq 1 3 >&7
	wait_until 20 has_line st '^ACK 3$'
	kill -STOP "$(cat ack.pid)"
	seq 4 5 >&7
	wait_until 20 lines_at_least copy 5
	kill -KILL "$(cat ack.pid)"
	wait_until 20 test -s pipe.rc
	assert_equal "$(cat pipe.rc)" "1 0 137"
	assert_equal "$(grep -v '^gdsub: cannot connect' sub.err)" "gdsub: the gdack acknowledging its blocks went without finishing (killed) and no gdack connected within 1 second: exiting; 2 blocks written on stdout were not acknowledged (their publishers send them again or NACK them)"
	feed_close
}

@test "a gdack that finishes cleanly while gdsub's output is read on: gdsub waits for the next one, past the second" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 60 < in.fifo > st 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini 2> sub.err | cat > out.txt; echo \${PIPESTATUS[0]} > sub.rc" 7>&-
	wait_until 10 sub_sock
	wait_until 20 sub_accepted "$(sub_sock)"
	seq 1 2 >&7
	wait_until 20 lines_at_least out.txt 2
	# one key, then the other once more than the grace has passed: the
	# first gdack said bye, so gdsub did not take it for a killed one
	run gdack -c s.ini "127.0.0.1:$port/1"
	assert_success
	sleep 1.5
	run gdack -c s.ini "127.0.0.1:$port/2"
	assert_success
	wait_until 20 has_line st '^ACK 2$'
	feed_close
	wait_until 30 test -s sub.rc
	assert_equal "$(cat sub.rc)" 0
	assert_equal "$(grep -v '^gdsub: cannot connect' sub.err)" ""
}

@test "a gdack killed while gdsub writes to a file: gdsub waits for the next one (run by hand), past the second" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 60 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini > out.txt 2> sub.err; echo \$? > sub.rc" 7>&-
	wait_until 10 sub_sock
	wait_until 20 sub_accepted "$(sub_sock)"
	seq 1 2 >&7
	wait_until 20 lines_at_least out.txt 2
	# a gdack that acknowledges the first block, then is killed
	spawn "{ echo 127.0.0.1:$port/1; exec sleep 60; } | sh -c 'echo \$\$ > ack.pid; exec gdack -c s.ini' 2> ack.err" 7>&-
	wait_until 20 has_line st '^ACK 1$'
	kill -KILL "$(cat ack.pid)"
	sleep 1.5
	run gdack -c s.ini "127.0.0.1:$port/2"
	assert_success
	wait_until 20 has_line st '^ACK 2$'
	run ! test -s sub.rc
	feed_close
	wait_until 30 test -s sub.rc
	assert_equal "$(cat sub.rc)" 0
}
