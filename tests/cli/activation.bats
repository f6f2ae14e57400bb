#!/usr/bin/env bats
# Socket activation (gdpub(1) SOCKET ACTIVATION): gdpub serves on the
# listening TCP socket a service manager passes ($LISTEN_FDS, $LISTEN_PID)
# and reads a passed FIFO instead of stdin. The TCP part runs under
# systemd-socket-activate; tests/cli/sockact.py passes fds the same way,
# a FIFO too, and starts gdpub again when it exits, as a service
# manager's Restart= does, holding both while it is down.
load helpers
bats_require_minimum_version 1.5.0

need_ssa() {
	command -v systemd-socket-activate > /dev/null ||
		skip "systemd-socket-activate is not installed (Debian package systemd)"
}

# sockact [OPTIONS] -- CMD...: spawn tests/cli/sockact.py, which logs
# "port N", "start PID", "exit STATUS" to sa.log; what the program writes
# goes to st (stdout: the status lines) and pub.err; wait for its start
# and set port when it listens for it
sockact() {
	spawn "exec python $BATS_TEST_DIRNAME/sockact.py $* >> st 2>> pub.err" 7>&-
	wait_until 20 has_line sa.log '^start '
	port=$(sed -n 's/^port //p' sa.log)
}

# the pid of the program's latest start in sockact's LOG
started() {
	sed -n 's/^start //p' "$1" | tail -n 1
}

@test "systemd-socket-activate: gdpub serves on the passed socket; a subscriber that connects before gdpub runs is served" {
	need_ssa
	hold_port port
	feed_open in.fifo
	# gdpub starts at the first connection, as a socket unit starts its
	# service; -p is left out: the socket says which port
	spawn "systemd-socket-activate -l 127.0.0.1:$port gdpub -n 1 -t 30 --port-file pub.port < in.fifo > st 2> pub.err; echo \$? > pub.rc" 7>&-
	wait_until 10 listening "$port"
	[ ! -e pub.port ]
	sub_conf a.ini "$port"
	ack_pipeline a 7>&-
	wait_until 20 has_line st '^READY$'
	assert_equal "$(cat pub.port)" "$port"
	seq 1 3 >&7
	feed_close
	wait_until 30 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	assert_equal "$(cat st)" "$(printf 'READY\nACK 1\nACK 2\nACK 3')"
	# keys carry the socket's address and port; no "listening on" line
	assert_equal "$(cut -f1 a.out)" "$(keys "$port" 1 2 3)"
	assert_equal "$(grep -v '^Listening on\|^Communication attempt\|^Execing ' pub.err)" ""
}

@test "systemd-socket-activate: a datagram socket, or a second listener, is refused (78) with what it is" {
	need_ssa
	hold_port port
	spawn "systemd-socket-activate -d -l 127.0.0.1:$port gdpub -n 1 < /dev/null > st 2> pub.err; echo \$? > pub.rc"
	wait_until 10 bash -c "ss -Hlun 'sport = :$port' | grep -q ."
	# a datagram wakes it
	echo x > "/dev/udp/127.0.0.1/$port"
	wait_until 20 test -s pub.rc
	assert_equal "$(cat pub.rc)" 78
	run grep '^gdpub:' pub.err
	assert_output "gdpub: socket activation: fd 3 is a datagram socket (ListenDatagram=?); gdpub takes one listening TCP socket (ListenStream=PORT) and one FIFO (ListenFIFO=PATH)"
	assert_equal "$(cat st)" ""
	hold_port p2
	spawn "systemd-socket-activate -l 127.0.0.1:$port -l 127.0.0.1:$p2 --fdname=one:two gdpub -n 1 < /dev/null > st2 2> pub2.err; echo \$? > pub2.rc"
	wait_until 10 listening "$p2"
	exec 9<>"/dev/tcp/127.0.0.1/$p2"
	wait_until 20 test -s pub2.rc
	exec 9>&-
	assert_equal "$(cat pub2.rc)" 78
	run grep '^gdpub:' pub2.err
	assert_output "gdpub: socket activation: fd 4 (two) is a second listening socket (the first is fd 3 (one)); gdpub listens on one: give the socket unit one ListenStream="
}

@test "a passed FIFO: writers come and go without an end of input; SIGTERM publishes what was read and exits 0" {
	sockact --listen 127.0.0.1:0 --fifo "$PWD/in.fifo" sa.log -- gdpub -n 1 -t 30 --wait-ready
	pid=$(started sa.log)
	sub_conf a.ini "$port"
	ack_pipeline a
	wait_until 20 has_line st '^READY$'
	# three writers, one after the other: the FIFO never ends
	seq 1 3 > in.fifo
	wait_until 20 has_line st '^ACK 3$'
	seq 4 6 > in.fifo
	printf '7\n' > in.fifo
	wait_until 20 has_line st '^ACK 7$'
	kill -0 "$pid"
	kill -TERM "$pid"
	wait_until 30 has_line sa.log '^exit '
	assert_equal "$(sed -n 's/^exit //p' sa.log)" 0
	run cat pub.err
	assert_output "gdpub: SIGTERM: reading no more from the FIFO once the records already read are published; then waiting for the pending blocks"
	assert_equal "$(cut -f2 a.out)" "$(seq 1 7)"
	assert_equal "$(cat st)" "$(printf 'READY\n'; statuses ACK $(seq 1 7))"
}

# What socket activation is for: the service manager holds the port and
# the FIFO while gdpub is down, so a restarted gdpub with its journal
# loses no connection attempt and no block. The harness starts gdpub again
# only when the test says (--hold), so "down" is a state, not a moment.
@test "gdpub killed and started again on the passed socket: a subscriber that connects meanwhile is served, every block ACKed, the sink exact" {
	sockact --listen 127.0.0.1:0 --fifo "$PWD/in.fifo" --restart on-failure --hold "$PWD/go" sa.log -- gdpub -n 1 -t 10 --resend 5 --journal "$PWD/pub.journal" --wait-ready
	sub_conf a.ini "$port" "GDsub_state=$PWD/a.state"
	# a slow stage, so that blocks are pending when gdpub is killed
	spawn "gdsub -c a.ini 2> a.sub.err | while read -r l; do printf '%s\n' \"\$l\"; sleep 0.002; done | gdack -c a.ini --sink '$PWD/sink.txt' 2> a.ack.err"
	wait_until 20 has_line st '^READY$'
	seq 1 1000 > in.fifo
	# every record read is published (none waits in gdpub's memory, where
	# a kill would lose it), and some are not acknowledged yet
	wait_until 60 bash -c "gdinspect -p $port --json stats | grep -q '\"published\":1000,'"
	run gdinspect -p "$port" --json stats
	[[ "$output" =~ \"pending\":([0-9]+) ]]
	echo "pending at the kill: ${BASH_REMATCH[1]}"
	kill -KILL "$(started sa.log)"
	wait_until 20 has_line sa.log '^exit -9$'
	# down: a subscriber allowed one attempt connects, and is not refused
	spawn "gdsub -P 127.0.0.1:$port --name late --no-gd --max-retries 1 -C 1 > late.out 2> late.err; echo \$? > late.rc"
	wait_until 20 bash -c "ss -Htn state established '( dport = :$port )' | grep -q ."
	seq 1001 1100 > in.fifo
	[ "$(grep -c '^start ' sa.log)" -eq 1 ]
	[ ! -e late.rc ]
	touch go
	wait_until 30 bash -c "[ \$(grep -c '^start ' sa.log) -eq 2 ]"
	wait_until 30 bash -c "gdinspect -p $port subs | grep -q '^late '"
	seq 1101 1110 > in.fifo
	wait_until 30 test -s late.rc
	assert_equal "$(cat late.rc)" 0
	assert_equal "$(cat late.err)" ""
	# every block ACKed (a kill may repeat the ACK of a block whose line
	# was out and its record not), none NACKed, the sink exact
	wait_until 120 bash -c "[ \$(sed -n 's/^ACK //p' st | sort -u | wc -l) -eq 1110 ]"
	assert_equal "$(sed -n 's/^ACK //p' st | sort -n | uniq)" "$(seq 1 1110)"
	run ! grep -q '^NACK' st
	wait_until 60 bash -c "[ \$(wc -l < sink.txt) -ge 1110 ]"
	assert_equal "$(cut -f2 sink.txt)" "$(seq 1 1110)"
}

# A stop (systemctl stop, restart) while a writer writes: gdpub publishes
# the records it took out of the FIFO, and reads no byte past the record
# it has begun, so the next gdpub starts at a record's edge. seq writes
# 4 KiB at a time, not a line at a time: most reads end inside a line.
@test "SIGTERM while a writer writes into the passed FIFO: every record published once across the restarts, none cut" {
	sockact --listen 127.0.0.1:0 --fifo "$PWD/in.fifo" --restart always --hold "$PWD/go" sa.log -- gdpub -n 1 -t 10 --resend 5 --journal "$PWD/pub.journal" --wait-ready
	sub_conf a.ini "$port" "GDsub_state=$PWD/a.state"
	# a stopped gdpub ends its stream, and the pipeline with it: started
	# again, as its unit's Restart=always does
	spawn "while :; do gdsub -c a.ini 2>> a.sub.err | gdack -c a.ini --sink '$PWD/sink.txt' 2>> a.ack.err; done"
	wait_until 20 has_line st '^READY$'
	spawn "seq 1 200000 > in.fifo; echo done > writer.rc"
	for n in 2 3 4; do
		wait_until 60 bash -c "[ \$(grep -c '^ACK ' st) -ge $(( (n - 1) * 20000 )) ] || [ -e writer.rc ]"
		kill -TERM "$(started sa.log)"
		wait_until 60 bash -c "[ \$(grep -c '^exit ' sa.log) -eq $((n - 1)) ]"
		touch go
		wait_until 30 bash -c "[ \$(grep -c '^start ' sa.log) -eq $n ]"
	done
	wait_until 120 test -e writer.rc
	wait_until 120 bash -c "[ \$(sed -n 's/^ACK //p' st | sort -u | wc -l) -ge 200000 ]"
	assert_equal "$(sed -n 's/^exit //p' sa.log | sort -u)" 0
	assert_equal "$(grep -c 'SIGTERM: reading no more from the FIFO' pub.err)" 3
	run ! grep -q '^NACK\|^REJECT' st
	wait_until 60 bash -c "[ \$(wc -l < sink.txt) -ge 200000 ]"
	assert_equal "$(cut -f2 sink.txt | sort -n)" "$(seq 1 200000)"
	# one ID per line, in order: no record was cut in two, none repeated
	assert_equal "$(sed -n 's/^ACK //p' st | sort -n | uniq -d)" ""
}

@test "socket activation and the config disagree: -p (64), GDpub_port (78); LISTEN_FDS for another process is said" {
	hold_port other
	sockact --listen 127.0.0.1:0 sa.log -- gdpub -p "$other"
	wait_until 20 has_line sa.log '^exit '
	assert_equal "$(sed -n 's/^exit //p' sa.log)" 64
	assert_equal "$(cat pub.err)" "$(printf '%s\n' "gdpub: GDpub_port is $other, and the service manager passed a socket listening on port $port (fd 3): leave GDpub_port out, or make them agree" "try 'gdpub --help'")"
	rm sa.log pub.err
	printf 'GDpub_numSubs=1\nGDpub_port=%s\n' "$other" > pub.ini
	sockact --listen 127.0.0.1:0 --names port sa.log -- gdpub -c pub.ini
	wait_until 20 has_line sa.log '^exit '
	assert_equal "$(sed -n 's/^exit //p' sa.log)" 78
	assert_equal "$(cat pub.err)" "gdpub: pub.ini:2: GDpub_port is $other, and the service manager passed a socket listening on port $port (fd 3 (port)): leave GDpub_port out, or make them agree"
	# the same port agrees; GDpub_bind is moot: a warning
	rm sa.log pub.err
	hold_port p2
	sockact --listen "127.0.0.1:$p2" --fifo "$PWD/in.fifo" sa.log -- gdpub -p "$p2" --bind 0.0.0.0 --port-file pub.port
	wait_until 20 test -s pub.port
	assert_equal "$(cat pub.err)" "gdpub: warning: GDpub_bind=0.0.0.0 is not used: gdpub serves its subscribers on the socket the service manager passed (fd 3, address 127.0.0.1)"
	# a shell between the manager and gdpub: its pid is not gdpub's, the
	# fds are not taken, and the port the manager holds is in use
	run --separate-stderr env LISTEN_FDS=1 LISTEN_PID=1 gdpub -p "$p2" < /dev/null
	assert_failure 69
	[[ "${stderr_lines[0]}" =~ ^"gdpub: warning: socket activation: LISTEN_FDS=1 is for pid 1, not this gdpub (pid "[0-9]+"): the file descriptors it counts are not taken (a shell between the service manager and gdpub? start gdpub with exec)"$ ]]
	assert_equal "${stderr_lines[1]}" "gdpub: cannot listen on 127.0.0.1 port $p2: address already in use"
	kill -TERM "$(started sa.log)"
	wait_until 20 has_line sa.log '^exit 0$'
}
