#!/usr/bin/env bats
# gdack: acknowledging keys through the gdsub started with the same config.
load helpers
bats_require_minimum_version 1.5.0

# start_pub_sub N: a gdpub on $port (numSubs=1, 30 s timeout) fed from
# in.fifo (fd 7), and a gdsub (s.ini) with no gdack that has written the
# N blocks "block 1".."block N" to out.txt, all pending at gdpub
start_pub_sub() {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 30 --wait-ready=10 < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini > out.txt 2> sub.err" 7>&-
	seq 1 "$1" | sed 's/^/block /' >&7
	wait_until 10 lines_at_least out.txt "$1"
}

@test "gdack KEY...: keys given as arguments are acknowledged, flags ignored; exit 0" {
	start_pub_sub 3
	run --separate-stderr timeout 20 gdack -c s.ini "127.0.0.1:$port/1" "127.0.0.1:$port/3/r"
	assert_success
	assert_equal "$output" ""
	assert_equal "$stderr" ""
	wait_until 10 has_line pub.out '^ACK 3$'
	assert_equal "$(cat pub.out)" "$(printf 'READY\nACK 1\nACK 3')"
}

@test "gdack reads the key at the start of each line on stdin" {
	start_pub_sub 3
	run --separate-stderr timeout 20 gdack -c s.ini < <(sed -n '2,3p' out.txt)
	assert_success
	assert_equal "$stderr" ""
	wait_until 10 has_line pub.out '^ACK 3$'
	assert_equal "$(cat pub.out)" "$(printf 'READY\nACK 2\nACK 3')"
}

@test "gdack: an unknown key is an error naming it, exit 1; the other keys are acknowledged" {
	start_pub_sub 2
	run --separate-stderr timeout 20 gdack -c s.ini "127.0.0.1:$port/99" "127.0.0.1:$port/2"
	assert_failure 1
	assert_equal "$stderr" "gdack: cannot acknowledge 127.0.0.1:$port/99: unknown key: no such block is waiting for acknowledgement"
	wait_until 10 has_line pub.out '^ACK 2$'
	assert_equal "$(cat pub.out)" "$(printf 'READY\nACK 2')"
}

@test "gdack: a key of a publisher this gdsub does not subscribe to is an error, exit 1" {
	start_pub_sub 1
	run --separate-stderr timeout 20 gdack -c s.ini "127.0.0.1:1/1"
	assert_failure 1
	assert_equal "$stderr" "gdack: cannot acknowledge 127.0.0.1:1/1: not a publisher of this gdsub"
}

@test "gdack: a malformed line is an error naming the line, exit 1; the other lines are acknowledged" {
	start_pub_sub 2
	printf '%s\tblock 1\nnot a key\tpayload\n127.0.0.1:%s/x\n%s\tblock 2\n' \
		"127.0.0.1:$port/1" "$port" "127.0.0.1:$port/2" > in.txt
	run --separate-stderr timeout 20 gdack -c s.ini < in.txt
	assert_failure 1
	assert_equal "$stderr" "$(printf "gdack: cannot acknowledge line 2: 'not a key' is not a key (HOST:PORT/ID)\ngdack: cannot acknowledge line 3: '127.0.0.1:%s/x' is not a key (HOST:PORT/ID)" "$port")"
	wait_until 10 has_line pub.out '^ACK 2$'
	assert_equal "$(cat pub.out)" "$(printf 'READY\nACK 1\nACK 2')"
}

@test "gdack --tee copies its input to stdout unchanged" {
	start_pub_sub 3
	# the gdsub lines, a snapshot key, odd payloads, no final newline
	{
		cat out.txt
		printf '127.0.0.1:%s/2/s\t  spaced \t tabbed \r\n' "$port"
		printf '127.0.0.1:%s/1/s\t\n' "$port"
		printf '127.0.0.1:%s/3/s\th\xc3\xa9 no newline' "$port"
	} > in.txt
	rc=0
	timeout 20 gdack -c s.ini --tee < in.txt > tee.out 2> ack.err || rc=$?
	[ "$rc" -eq 0 ]
	assert_equal "$(cat ack.err)" ""
	cmp tee.out in.txt
	wait_until 10 has_line pub.out '^ACK 3$'
	assert_equal "$(cat pub.out)" "$(printf 'READY\nACK 1\nACK 2\nACK 3')"
}

@test "gdack skips snapshot keys: nothing is acknowledged" {
	start_pub_sub 2
	run --separate-stderr timeout 20 gdack -c s.ini -v "127.0.0.1:$port/1/s" "127.0.0.1:$port/2/rs"
	assert_success
	[[ "$stderr" == *"gdack: acknowledged 0, failed 0, snapshot skipped 2" ]]
	# block 1 is still pending: acknowledging it for real works
	run timeout 20 gdack -c s.ini "127.0.0.1:$port/1"
	assert_success
	wait_until 10 has_line pub.out '^ACK 1$'
	assert_equal "$(cat pub.out)" "$(printf 'READY\nACK 1')"
}

@test "gdack with no gdsub: exit 69 after --wait, naming the socket" {
	hold_port port
	sub_conf s.ini "$port"
	run --separate-stderr timeout 20 gdack -c s.ini --wait 0.2 <<< "127.0.0.1:1/1"
	assert_failure 69
	assert_equal "$output" ""
	[[ "$stderr" =~ ^"gdack: no gdsub answers at $XDG_RUNTIME_DIR/gdkit/sub-"[0-9a-f]{16}".sock: No such file or directory (waited 0.2 seconds)"$ ]]
	run --separate-stderr timeout 20 gdack --ctl "$BATS_TEST_TMPDIR/none.sock" --wait 0.2 "127.0.0.1:1/1"
	assert_failure 69
	assert_equal "$stderr" "gdack: no gdsub answers at $BATS_TEST_TMPDIR/none.sock: No such file or directory (waited 0.2 seconds)"
}

@test "gdack waits all of --wait for its gdsub, keys as arguments or on stdin, and says how long" {
	local how t0 t1 ms
	hold_port port
	sub_conf s.ini "$port"
	for how in args stdin; do
		t0=$(date +%s%N)
		if [ "$how" = args ]; then
			run --separate-stderr timeout 20 gdack -c s.ini --wait 2.5 "127.0.0.1:1/1"
		else
			run --separate-stderr timeout 20 gdack -c s.ini --wait 2.5 <<< "127.0.0.1:1/1"
		fi
		t1=$(date +%s%N)
		assert_failure 69
		[[ "$stderr" == *"No such file or directory (waited 2.5 seconds)" ]]
		ms=$(( (t1 - t0) / 1000000 ))
		# it once gave up 2 s early with keys as arguments
		[ "$ms" -ge 2450 ] || { echo "$how: gave up after $ms ms"; return 1; }
		[ "$ms" -lt 8000 ] || { echo "$how: took $ms ms"; return 1; }
	done
	run --separate-stderr timeout 20 gdack -c s.ini --wait 1 "127.0.0.1:1/1"
	assert_failure 69
	[[ "$stderr" == *"No such file or directory (waited 1 second)" ]]
}

@test "gdack with no keys to acknowledge needs no gdsub: exit 0" {
	# an empty stream: its gdsub may have finished before gdack started
	run --separate-stderr timeout 20 gdack --ctl "$BATS_TEST_TMPDIR/none.sock" --wait 0.2 < /dev/null
	assert_success
	assert_equal "$stderr" ""
	run --separate-stderr timeout 20 gdack --ctl "$BATS_TEST_TMPDIR/none.sock" --wait 0.2 -f status <<< "READY"
	assert_success
	assert_equal "$stderr" ""
}

@test "gdack without -c, --name, --pub or --ctl: usage error, exit 64" {
	run --separate-stderr timeout 20 gdack "127.0.0.1:1/1"
	assert_failure 64
	assert_equal "$stderr" "$(printf "gdack: cannot find gdsub: give -c FILE, --name, --pub or --ctl as it was started with\ntry 'gdack --help'")"
}

@test "gdack finds a gdsub started with --pub and no config the same way" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 30 --wait-ready=10 < in.fifo > pub.out 2> pub.err" 7>&-
	port=$(port_of pub.port)
	spawn "gdsub --pub 127.0.0.1:$port --retry-interval 0.05 --max-retries 200 > out.txt 2> sub.err" 7>&-
	echo one >&7
	wait_until 10 lines_at_least out.txt 1
	run --separate-stderr timeout 20 gdack --pub "127.0.0.1:$port" < out.txt
	assert_success
	wait_until 10 has_line pub.out '^ACK 1$'
}

@test "gdack for a subscriber whose acknowledgement connection was refused: error per key, exit 1" {
	start_pub_sub 1
	sub_conf s2.ini "$port"
	spawn "gdsub -c s2.ini > out2.txt 2> sub2.err" 7>&-
	wait_until 10 has_line sub2.err 'refused the acknowledgement connection'
	printf 'block %s\n' 2 3 >&7
	wait_until 10 lines_at_least out2.txt 2
	run --separate-stderr timeout 20 gdack -c s2.ini < out2.txt
	assert_failure 1
	assert_equal "$stderr" "$(for i in 2 3; do
		printf 'gdack: cannot acknowledge 127.0.0.1:%s/%s: the publisher refused this gdsub'"'"'s acknowledgement connection\n' "$port" "$i"
	done)"
	# the first subscriber's acknowledgements still count
	run timeout 20 gdack -c s.ini < <(sed -n 2p out.txt)
	assert_success
	wait_until 10 has_line pub.out '^ACK 2$'
	assert_equal "$(cat pub.out)" "$(printf 'READY\nACK 2')"
}

@test "gdack for a refused subscriber, after the GD subscriber acked those blocks: still 'refused'" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 30 < in.fifo > pub.out 2> pub.err" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	sub_conf s2.ini "$port"
	ack_pipeline s 7>&-
	wait_until 10 has_line pub.out '^READY$'
	spawn "gdsub -c s2.ini > out2.txt 2> sub2.err" 7>&-
	wait_until 10 has_line sub2.err 'refused the acknowledgement connection'
	printf 'block %s\n' 1 2 >&7
	wait_until 10 has_line pub.out '^ACK 2$'
	wait_until 10 lines_at_least out2.txt 2
	run --separate-stderr timeout 20 gdack -c s2.ini < out2.txt
	assert_failure 1
	assert_equal "$stderr" "$(for i in 1 2; do
		printf 'gdack: cannot acknowledge 127.0.0.1:%s/%s: the publisher refused this gdsub'"'"'s acknowledgement connection\n' "$port" "$i"
	done)"
}

@test "gdack for a --no-gd subscriber: error per key, exit 1" {
	start_pub_sub 1
	sub_conf n.ini "$port"
	spawn "gdsub -c n.ini --no-gd -v > out2.txt 2> sub2.err" 7>&-
	wait_until 10 has_line sub2.err 'connected to publisher'
	echo 'block 2' >&7
	wait_until 10 lines_at_least out2.txt 1
	run --separate-stderr timeout 20 gdack -c n.ini < out2.txt
	assert_failure 1
	assert_equal "$stderr" "gdack: cannot acknowledge 127.0.0.1:$port/2: gdsub runs with --no-gd"
}

@test "gdack and a gdsub of control protocol 2 (no hello 3, no ackbin): the keys go as lines of ack N" {
	# a gdsub of version 2 as far as gdack sees: "hello 3" unknown, the
	# bare hello answered 2, "ack N" and its N lines taken (kept in got.txt),
	# the last key refused
	cat > v2.py <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(4)
open(sys.argv[1] + ".ready", "w").close()
c, _ = s.accept()
f = c.makefile("rwb")
got = open("got.txt", "wb")
for line in f:
    line = line.rstrip(b"\n")
    if line == b"hello 3":
        f.write(b"error unknown request 'hello 3'\n")
    elif line == b"hello":
        f.write(b"hello gdsub 2\n")
    elif line.startswith(b"ack "):
        keys = [f.readline() for _ in range(int(line[4:]))]
        got.write(line + b"\n" + b"".join(keys))
        got.flush()
        f.write(b"ack %d 1\n%s\tunknown key: no such block is waiting for acknowledgement\n"
                % (len(keys) - 1, keys[-1].rstrip(b"\n")))
    elif line == b"bye":
        break
    else:
        f.write(b"error unknown request\n")
    f.flush()
PY
	spawn "exec $(python_bin) v2.py '$BATS_TEST_TMPDIR/v2.sock' 2> v2.err"
	wait_until 20 test -e "$BATS_TEST_TMPDIR/v2.sock.ready"
	run --separate-stderr timeout 20 gdack --ctl "$BATS_TEST_TMPDIR/v2.sock" < <(printf 'h:1/1\tx\nh:1/2/r\ty\n@c/3\nh:1/4/s\nh:1/5\n')
	assert_failure 1
	assert_equal "$stderr" "gdack: cannot acknowledge h:1/5: unknown key: no such block is waiting for acknowledgement"
	assert_equal "$(cat got.txt)" "$(printf 'ack 4\nh:1/1\nh:1/2\n@c/3\nh:1/5')"
}
