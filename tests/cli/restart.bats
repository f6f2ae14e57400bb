#!/usr/bin/env bats
# A publisher that restarts, and --dedup none.
load helpers
bats_require_minimum_version 1.5.0

# has_lines FILE N: FILE has exactly N lines
has_lines() {
	[ "$(wc -l < "$1" 2>/dev/null)" -eq "$2" ]
}

@test "a restarted publisher's new blocks are written, not taken for duplicates" {
	# held to the end: the restart below binds it again, the subscriber
	# reconnects
	hold_port port
	spawn "(seq 1 3; sleep 60) | gdpub -p $port --port-file pub.port -n 1 -t 60 --wait-ready > st1.txt 2> pub1.err"
	pub1=$SPAWNED
	[ "$(port_of pub.port)" = "$port" ]
	spawn "gdsub -P 127.0.0.1:$port --max-retries -1 --retry-interval 0.05 > out.txt 2> sub.err"
	wait_until 30 has_lines out.txt 3
	run gdack -P "127.0.0.1:$port" "127.0.0.1:$port/1" "127.0.0.1:$port/2" "127.0.0.1:$port/3"
	assert_success
	wait_until 30 has_lines st1.txt 4	# READY and 3 ACKs
	kill -KILL -- "-$pub1"
	printf 'new1\nnew2\nnew3\n' > in2.txt
	spawn "gdpub -p $port -n 1 -t 20 --wait-ready=10 < in2.txt > st2.txt 2> pub2.err; echo \$? > pub2.rc"
	wait_until 30 has_lines out.txt 6
	tail -n 3 out.txt | cut -f2 | cmp - in2.txt
	run gdack -P "127.0.0.1:$port" "127.0.0.1:$port/1" "127.0.0.1:$port/2" "127.0.0.1:$port/3"
	assert_success
	wait_until 30 test -s pub2.rc
	[ "$(cat pub2.rc)" -eq 0 ]
	[ "$(grep -c '^ACK' st2.txt)" -eq 3 ]
	grep -q "publisher 127.0.0.1:$port restarted; forgetting its earlier blocks" sub.err
}

@test "a gdsub whose name a departing connection still holds at the publisher tries again and takes the slot (a restart racing the old close)" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 60 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	spawn "gdsub -P 127.0.0.1:$port --name x --ctl a.sock > a.out 2> a.err" 7>&-
	a=$SPAWNED
	wait_until 30 test -S a.sock
	# the second one, own socket (no takeover): refused while a holds x
	spawn "gdsub -P 127.0.0.1:$port --name x --ctl b.sock --retry-interval 0.1 --max-retries -1 2> b.err | gdack --ctl b.sock --tee > b.out 2> g.err" 7>&-
	wait_until 30 has_line b.err "^gdsub: cannot connect to 127\.0\.0\.1:$port: refused: a subscriber with this name is already connected \(attempt 1\)$"
	kill -TERM -- "-$a"
	wait_until 30 bash -c "! kill -0 $a 2>/dev/null"
	wait_until 30 sub_accepted b.sock
	echo one >&7
	wait_until 30 lines_at_least b.out 1
	wait_until 30 has_line st '^ACK 1$'
	[ "$(cut -f2 b.out)" = one ]
	# before: b stayed connected without a slot, wrote the block, and
	# could not acknowledge it
	run ! grep -q "cannot be acknowledged" b.err
	feed_close
}

@test "--dedup none: resent copies are written too and each needs its acknowledgement" {
	seq 1 3 > in.txt
	pub_bg gdpub -p 0 --port-file pub.port -n 1 -t 0.3 --resend 5 --wait-ready=30 < in.txt
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.05\nGDsub_maxRetries=200\nGDsub_dedup=none\n' "$port" > s.ini
	# a slow stage: it holds the first line until gdpub has resent a copy
	# (at the 0.3 s timeout), so copies go through the pipeline too
	spawn "gdsub -c s.ini | { IFS= read -r l; $(until_resent "$port" 1); printf '%s\n' \"\$l\"; exec cat; } | gdack -c s.ini --tee > out.txt 2> ack.err; echo \$? > ack.rc"
	pub_wait
	assert_success
	wait_until 30 test -s ack.rc
	[ "$(cat ack.rc)" -eq 0 ]
	# more lines than blocks: the copies went through the pipeline
	[ "$(wc -l < out.txt)" -gt 3 ]
	grep -q '/r	' out.txt
	[ "$(cut -f2 out.txt | sort -u | wc -l)" -eq 3 ]
}

# ---- a gdsub started again while the one before still runs ----

# clients_at_least SOCK N: the program serving SOCK holds N connections
# it accepted, or more
clients_at_least() {
	[ "$(ss -Hx state connected src "$1" 2>/dev/null | wc -l)" -ge "$2" ]
}

# A pipeline started again at once after its gdack was killed finds the
# old gdsub still there (lingering, or idle with nothing to write). The
# new one takes the socket over: the old one finishes (its state
# recorded) and the new one serves. A gdack that reached the old one at
# its start connects again to the new one. (Before: the new gdsub exited
# 69, "another program is serving it".)
@test "a new gdsub of the same config takes over from the one still running; a gdack connected to the old one goes on with the new" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 60 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini > a.out 2> a.err; echo \$? > a.rc" 7>&-
	wait_until 10 sub_sock
	sock=$(sub_sock)
	# a gdack whose keys come later: connected to the old gdsub now
	spawn "(while [ ! -s keys ]; do sleep 0.05; done; cat keys) | gdack -c s.ini -v 2> g.err; echo \$? > g.rc" 7>&-
	wait_until 10 clients_at_least "$sock" 1
	# the new gdsub
	spawn "gdsub -c s.ini > b.out 2> b.err; echo \$? > b.rc" 7>&-
	wait_until 20 test -s a.rc
	assert_equal "$(cat a.rc)" 0
	grep -q "^gdsub: warning: a new gdsub of the same name takes over control socket $sock: finishing now; 0 blocks written and not acknowledged" a.err
	wait_until 20 has_line b.err "^gdsub: warning: took over control socket $sock from the gdsub \(pid [0-9]+\) that served it: it has finished$"
	# a block through the new gdsub, acknowledged by the gdack that had
	# connected to the old one; fed once the new gdsub holds the slot (a
	# block read before goes to nobody and is NACKed at the timeout)
	wait_until 20 sub_accepted "$sock"
	echo one >&7
	wait_until 20 lines_at_least b.out 1
	cut -f1 b.out > keys
	wait_until 20 has_line st '^ACK 1$'
	grep -q "the gdsub at $sock went before answering; connecting again" g.err
	# a gdsub of another name on the same socket is refused, the one
	# serving it goes on
	run --separate-stderr timeout 20 gdsub -P "127.0.0.1:$port" --name other --ctl "$sock"
	assert_failure 69
	[[ "$stderr" == "gdsub: cannot use control socket $sock: the gdsub (pid "*") serving it does not give it up: this gdsub is named '"*"', not 'other'" ]]
	run ! test -s b.rc
	feed_close
	wait_until 30 test -s b.rc
	assert_equal "$(cat b.rc)" 0
}

# gdsub's exit status when blocks it wrote were never acknowledged, as
# gdsub(1) and gdkit(7) EXIT STATUS say: 0 once --linger passes after its
# standard output closed with no gdack ever connected (a warning counts
# them; their publisher resends or NACKs them), 1 when a new gdsub takes
# its socket over. (Its reader gone, or its gdack killed: 1, ending.bats.)
@test "gdsub's status with blocks written and never acknowledged: 0 after --linger, 1 at a takeover" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 60 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	# no gdack: -C 1 closes standard output after one block, read on
	spawn "gdsub -c s.ini -C 1 --linger 1 2> a.err | cat > a.out; echo \${PIPESTATUS[0]} > a.rc" 7>&-
	wait_until 10 sub_sock
	wait_until 20 sub_accepted "$(sub_sock)"
	seq 1 3 >&7
	wait_until 30 test -s a.rc
	assert_equal "$(cat a.rc)" 0
	assert_equal "$(cut -f2 a.out)" 1
	grep -q '^gdsub: warning: [1-3] blocks\? written on stdout w[a-z]* not acknowledged within --linger 1 seconds$' a.err
	# a takeover of a gdsub that wrote blocks nobody acknowledged
	spawn "gdsub -c s.ini > b.out 2> b.err; echo \$? > b.rc" 7>&-
	wait_until 10 sub_sock
	wait_until 20 sub_accepted "$(sub_sock)"
	seq 5 6 >&7
	wait_until 20 lines_at_least b.out 2
	spawn "gdsub -c s.ini > c.out 2> c.err; echo \$? > c.rc" 7>&-
	wait_until 20 test -s b.rc
	assert_equal "$(cat b.rc)" 1
	grep -q "^gdsub: warning: a new gdsub of the same name takes over control socket .*: finishing now; [0-9]* blocks\? written and not acknowledged will be sent again by their publishers$" b.err
	feed_close
}
