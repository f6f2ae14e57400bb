#!/usr/bin/env bats
# NATS in the middle (gdkit(7) ENGINES, issue 25): the NATS recipe of
# gdkit(7), rendered from the page and run as displayed against a
# nats-server of the test's own, core NATS (at-most-once: no subscriber, no
# delivery). Debian does not package the nats CLI: a `nats` in front of
# PATH runs tests/engines/natsline.py, a client of the NATS text protocol
# that takes the recipe's arguments. Only the hosts and ports change, and
# --bind 0.0.0.0 becomes 127.0.0.1 (nothing here listens beyond loopback).
load helpers
bats_require_minimum_version 1.5.0

# need_nats: skip, naming the tool, where it cannot be had (mk/deps.sh
# check installs the Debian package nats-server)
need_nats() {
	NATS_SERVER=$(command -v nats-server || echo /usr/sbin/nats-server)
	[ -x "$NATS_SERVER" ] || skip "nats-server is not installed (Debian package nats-server)"
	command -v mandoc >/dev/null || skip "mandoc is not installed"
}

# server: nats-server on a held port of 127.0.0.1 (NATS_PORT), and the
# `nats` stand-in in ./bin, which notes its pid in nats-MODE.pid
server() {
	need_nats
	hold_port NATS_PORT
	spawn "exec $NATS_SERVER -a 127.0.0.1 -p $NATS_PORT -l nats.log > nats.out 2>&1"
	wait_until 10 listening "$NATS_PORT"
	mkdir -p bin
	cat > bin/nats <<EOF
#!/bin/sh
for a; do case \$a in pub|sub) echo \$\$ > nats-\$a.pid; break ;; esac; done
exec $(python -c 'import sys; print(sys.executable)') $BATS_TEST_DIRNAME/../engines/natsline.py "\$@"
EOF
	chmod +x bin/nats
	PATH="$PWD/bin:$PATH"
}

# recipe PORT: the NATS display of gdkit(7) as sub.sh (the subscriber
# pipeline) and pub.sh (the publisher), for gdpub on 127.0.0.1:PORT; each
# notes its pipeline's statuses in sub.rc / pub.rc
recipe() {
	mandoc -Tascii "$BATS_TEST_DIRNAME/../../man/gdkit.7" | col -bx |
	    awk '/^ +NATS \(nats CLI\)$/ { on = 1 } /^ +Debian does not package the nats CLI/ { on = 0 }
	         on && /^ +(sub|pub)host\$ / { f = ($1 == "subhost$") ? "sub.sh" : "pub.sh"; match($0, /^ +/); ind = RLENGTH; sub(/(sub|pub)host\$ /, "") }
	         on && f && NF { print substr($0, ind + 1) > f }' 
	sed -i -e "s,broker:4222,127.0.0.1:$NATS_PORT,g; s,pubhost:7001,127.0.0.1:$1,g" \
	    -e "s,-p 7001,-p $1,; s,--bind 0.0.0.0,--bind 127.0.0.1,; s,--host pubhost,--host 127.0.0.1," sub.sh pub.sh
	echo 'echo ${PIPESTATUS[*]} > sub.rc' >> sub.sh
	echo 'echo ${PIPESTATUS[*]} > pub.rc' >> pub.sh
	cat sub.sh pub.sh
	# as displayed: the nats CLI on both ends, the recipe's settings
	grep -q "^nats -s nats://127.0.0.1:$NATS_PORT sub gdkit.events --raw |\$" sub.sh
	grep -q "^    gdack -P 127.0.0.1:$1 --tee >> done.txt\$" sub.sh
	grep -q '^    -t 10 --resend 5 --wait-ready=60 -o - --armor \\$' pub.sh
	grep -q "^    nats -s nats://127.0.0.1:$NATS_PORT pub gdkit.events --send-on newline\$" pub.sh
}

# subscribe ERRFILE: start sub.sh; wait until the server has the
# subscription (natsline says so after a PING/PONG round trip)
subscribe() {
	rm -f sub.rc
	spawn "bash sub.sh 2> $1" 7>&-
	wait_until 20 has_line "$1" '^natsline: subscribed to gdkit.events$'
}

# unsubscribe: end the nats subscriber; gdsub reads the end of its input,
# waits until gdack acknowledged what it wrote, and exits
unsubscribe() {
	kill -TERM "$(cat nats-sub.pid)"
	wait_until 60 test -s sub.rc
	assert_equal "$(cat sub.rc)" "0 0 0"
}

# all_acked COUNT: gdpub | nats exited 0, status.txt has READY and ACK
# 1..COUNT, each once
all_acked() {
	assert_equal "$(cat pub.rc)" "0 0"
	assert_equal "$(head -n 1 status.txt)" READY
	assert_equal "$(grep -vc '^ACK ' status.txt)" 1
	run diff <(grep '^ACK ' status.txt | cut -d' ' -f2 | sort -n) <(seq "$1")
	assert_success
}

# exactly_once PORT COUNT: done.txt holds each of 1..COUNT once (R = UR = 1)
exactly_once() {
	seq "$2" | sed "s,^,127.0.0.1:$1/," > sent.keys
	cut -f1 done.txt | sed 's,/r$,,' > seen.keys
	run --separate-stderr gdinspect measure sent.keys seen.keys
	assert_success
	assert_line --index 1 --regexp "^$2 +$2 +$2 +0 +0 +0 +1\.0000 +1\.0000 +exactly-once$"
}

@test "gdkit(7) NATS recipe as displayed, 100,000 blocks through nats-server: every block ACKed once, written once (R = UR = 1)" {
	server
	hold_port port
	recipe "$port"
	seq 100000 > events
	subscribe sub.err
	t0=$(date +%s.%N)
	spawn "bash pub.sh 2> pub.err"
	wait_until 120 test -s pub.rc
	elapsed=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	all_acked 100000
	wait_until 20 lines_at_least done.txt 100000
	exactly_once "$port" 100000
	run --separate-stderr gdinspect --ctl "$(sub_sock)" --json stats
	assert_success
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["unique"] == 100000 and d["bad_lines"] == 0, d
' <<<"$output"
	unsubscribe
	# gdsub tried to connect before gdpub listened; nothing else
	assert_equal "$(grep -v -e 'cannot connect to' -e '^natsline: subscribed' sub.err)" ""
	assert_equal "$(cat pub.err)" ""
	echo "# 100,000 blocks through nats-server in ${elapsed}s, $(grep -c '/r	' done.txt) written from a resend" >&3
}

@test "gdkit(7) NATS recipe, the subscriber stopped midway and started again: what core NATS dropped meanwhile is resent, every block ACKed once and written once" {
	server
	hold_port port
	recipe "$port"
	# the input comes in two parts, the second only once the subscriber
	# is gone (with batched lines the whole of it could be out before)
	feed_open events
	subscribe sub.err
	spawn "bash pub.sh 2> pub.err" 7>&-
	seq 5000 >&7
	wait_until 60 lines_at_least done.txt 5000
	unsubscribe
	first=$(nlines done.txt)
	[ "$first" -eq 5000 ]
	# no subscriber: the server drops what gdpub writes now
	seq 5001 30000 >&7
	feed_close
	subscribe sub2.err
	wait_until 180 test -s pub.rc
	all_acked 30000
	unsubscribe
	exactly_once "$port" 30000
	# the blocks dropped while nobody was subscribed came again, resent
	[ "$(grep -c '/r	' done.txt)" -gt 0 ]
	echo "# stopped after $first blocks written; $(grep -c '/r	' done.txt) written from a resend" >&3
}
