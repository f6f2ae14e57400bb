#!/usr/bin/env bats
# gdsub's GDsub_state (--state), --dedup index and --consecutive (SPEC
# §3, §5): a gdsub killed -9 and restarted acknowledges again the resends
# of what it had acknowledged instead of writing them again; torn,
# corrupt and unusable state files; index dedup and consecutive order on
# crafted streams (tests/cli/mkstream.py).
load helpers
bats_require_minimum_version 1.5.0

# state_records FILE: "OFFSET TYPE LENGTH" of each record of a state file
# (see lib/state.h), read independently of gdsub
state_records() {
	python - "$1" <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
i = 16
while i + 8 <= len(d):
    t, n = d[i], struct.unpack("<I", d[i + 4:i + 8])[0]
    print(i, t, n)
    i += 12 + n
EOF
}

# a GD subscriber of the gdpub on $port named $1, with the options $2,
# blocks in $1.out; SPAWNED is gdsub's pid
start_sub() {
	spawn "exec gdsub -P 127.0.0.1:$port --name $1 $2 --retry-interval 0.05 --max-retries 200 > $1.out 2> $1.err"
}

# restart_sub OPTS: a (with OPTS) and b subscribe to a gdpub of numSubs=2
# that resends every second; a acknowledges 1-3 of blocks 1-4 and is
# killed -9; a2 (with OPTS) takes its place. Under another name it takes
# a's slot and gdpub forgets a's acknowledgements: 1-3 can only be ACKed
# if a2 acknowledges them again. a2 then acknowledges what it wrote, b
# acknowledges 1-4; gdpub must end with 4 ACKs.
restart_sub() {
	spawn "seq 1 4 | gdpub -p 0 --port-file pub.port -n 2 -t 1 --resend 30 --wait-ready=10 > st.txt 2> pub.err; echo \$? > pub.rc"
	port=$(port_of pub.port)
	start_sub a "$1"
	a=$SPAWNED
	start_sub b ""
	wait_until 10 has_lines a.out 4
	run gdack -P "127.0.0.1:$port" --name a $(keys "$port" 1 2 3)
	assert_success
	kill -KILL "$a"
	start_sub a2 "$1"
	# the resends come after gdpub's 1 s timeout
	wait_until 20 has_lines a2.out "$2"
	run gdack -P "127.0.0.1:$port" --name a2 $(cut -f1 a2.out | sed 's,/r$,,')
	assert_success
	run gdack -P "127.0.0.1:$port" --name b $(keys "$port" 1 2 3 4)
	assert_success
	wait_until 30 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	assert_equal "$(grep -c '^ACK' st.txt)" 4
}

@test "state: a gdsub killed -9 and restarted acknowledges the resends of what it had acknowledged and writes only the rest" {
	restart_sub "--state s.state" 1
	assert_equal "$(cat a2.out)" "127.0.0.1:$port/4/r	4"
	[ ! -s a2.err ]
}

@test "state: without --state the restarted gdsub writes the resends of what it had acknowledged again" {
	restart_sub "" 4
	assert_equal "$(cut -f1 a2.out | sort)" "$(keys "$port" 1 2 3 4 | sed 's,$,/r,')"
}

# s.state from a real run: 3 blocks acknowledged through gdsub | gdack
make_state() {
	pub_bg timeout 30 bash -c "seq 1 3 | gdpub -p 0 --port-file pub.port -n 1 --wait-ready=10"
	spawn "gdsub -P 127.0.0.1:$port --name s --state s.state --retry-interval 0.05 --max-retries 200 2> sub.err | gdack -P 127.0.0.1:$port --name s > /dev/null 2> ack.err; echo \${PIPESTATUS[*]} > rc"
	pub_wait
	assert_success
	wait_until 20 test -s rc
	assert_equal "$(cat rc)" "0 0"
	[ "$(state_records s.state | wc -l)" -ge 2 ]
}

# below_floor [GDSUB-CONF-LINE]: issue 21. gdpub --journal with its
# status lines stuck in a pipe whose reader is stopped, so that their
# outcomes wait unrecorded in the journal while the floor it sends goes
# past them; one gdsub | gdack --tee, never restarted, acknowledges all
# 150,001 blocks (their status lines outgrow the 1 MiB pipe gdpub asks
# for). gdpub is killed -9 and started again from its journal: it sends again, with their indexes, the blocks whose outcome it had
# not said, all below the floor the gdsub holds. Each must come back
# ACKed, acknowledged again, not written again, and gdsub run throughout.
below_floor() {
	# held to the end: the restart below binds it again, the subscriber
	# reconnects
	hold_port port
	feed_open in.fifo
	spawn "sh -c 'echo \$\$ > pub.pid; exec gdpub -p $port --port-file pub.port -n 1 -t 60 --resend 255 --journal j.gdj --fsync never --wait-ready=20 < in.fifo 2> p1.err' |
		{ echo \$BASHPID > cat.pid; kill -STOP \$BASHPID; exec cat > st1; }" 7>&-
	[ "$(port_of pub.port)" = "$port" ]
	sub_conf s.ini "$port" "GDsub_maxRetries=-1" "$@"
	spawn "gdsub -c s.ini 2> s.err | gdack -c s.ini --tee > s.out 2> a.err; echo \${PIPESTATUS[*]} > s.rc" 7>&-
	wait_until 10 test -s pub.pid
	wait_until 10 test -s cat.pid
	seq 1 150000 >&7
	wait_until 120 pub_acked "$port" 150000
	# one more once gdpub resolved the others: the floor past them went
	# out before it, on the same connection
	echo 150001 >&7
	wait_until 30 pub_acked "$port" 150001
	[ "$(nlines s.out)" -eq 150001 ]
	kill -KILL "$(cat pub.pid)"
	kill -CONT "$(cat cat.pid)"
	wait_until 10 bash -c "! kill -0 $(cat cat.pid) 2>/dev/null"
	# a line cut short by the kill says nothing
	cp st1 said1
	[ -z "$(tail -c 1 said1)" ] || sed -i '$d' said1
	unsaid=$((150001 - $(grep -c '^ACK' said1)))
	[ "$unsaid" -gt 1000 ]
	run --separate-stderr timeout -k 5 60 gdpub -p "$port" -n 1 -t 5 --resend 255 --journal j.gdj --fsync never --wait-ready=20 < /dev/null
	printf '%s\n' "$stderr" | head -n 5
	assert_success
	# the unsaid ones, and those said whose outcome was not recorded yet
	[ "$(grep -c '^ACK' <<<"$output")" -ge "$unsaid" ]
	assert_equal "$(grep -c '^NACK' <<<"$output")" 0
	{ cat said1; printf '%s\n' "$output"; } | awk '$1 == "ACK" { print $2 }' | sort -n | uniq > said
	assert_equal "$(wc -l < said)" 150001
	# acknowledged again, not written again; the same gdsub to the end
	wait_until 30 test -s s.rc
	assert_equal "$(cat s.rc)" "0 0"
	[ "$(nlines s.out)" -eq 150001 ]
	[ "$(cut -f2- s.out | sort -u | wc -l)" -eq 150001 ]
}

# pub_acked PORT N: the gdpub on PORT resolved N blocks as ACKed and has
# none pending
pub_acked() {
	gdinspect -p "$1" --json stats 2>/dev/null | grep -q "\"ack\":$2,.*\"pending\":0,"
}

@test "state: gdpub restarted from its journal resends blocks below the floor it sent; the gdsub --state that acknowledged them, never restarted, acknowledges them again: all ACKed, none written twice (issue 21)" {
	below_floor "GDsub_state=s.state"
}

@test "state: without --state the same: the gdsub remembers in memory which indexes it acknowledged, past the floor" {
	below_floor
}

@test "state: a torn tail is cut with a warning naming its offset; the file is rewritten whole" {
	make_state
	last=$(state_records s.state | tail -n 1 | cut -d' ' -f1)
	truncate -s -3 s.state
	hold_port port
	run --separate-stderr timeout 20 gdsub -P "127.0.0.1:$port" --name s --state s.state -C 1 --max-retries 1 < /dev/null
	assert_equal "$status" 69	# nobody listens: the state was read first
	[[ "$stderr" == "gdsub: warning: state file 's.state': a torn record at offset $last ("*" bytes, a crash while it was written) was cut"* ]]
	# zeros where a crash left reserved room: a torn tail too
	head -c 64 /dev/zero >> s.state
	size=$(stat -c %s s.state)
	run --separate-stderr timeout 20 gdsub -P "127.0.0.1:$port" --name s --state s.state --max-retries 1 < /dev/null
	[[ "$stderr" == "gdsub: warning: state file 's.state': a torn record at offset $((size - 64)) (64 bytes, a crash while it was written) was cut"* ]]
	run --separate-stderr timeout 20 gdsub -P "127.0.0.1:$port" --name s --state s.state --max-retries 1 < /dev/null
	[[ "$stderr" != *"torn"* ]]
}

@test "state: corruption before the last record, or a file that is no state file: exit 74 naming the file and why" {
	make_state
	size=$(stat -c %s s.state)
	read -r off _ len < <(state_records s.state | head -n 1)
	# every bit of the record's first body byte flipped (a byte set to a
	# value it may already hold would leave it intact)
	python3 -c 'import sys; f = open(sys.argv[1], "r+b"); o = int(sys.argv[2]); f.seek(o); b = f.read(1)[0]; f.seek(o); f.write(bytes([b ^ 0xff]))' s.state $((off + 12))
	expect_fail 74 "gdsub: cannot use state file 's.state': corrupt record at offset $off: CRC mismatch, and $((size - off - 12 - len)) bytes follow it" -- gdsub -P 127.0.0.1:1 --state s.state
	[ "$(stat -c %s s.state)" -eq "$size" ]	# left as it was
	printf 'GDsub_pub=127.0.0.1:7001\n' > conf.state
	expect_fail 74 "gdsub: cannot use state file 'conf.state': not a gdsub state file (bad magic)" -- gdsub -P 127.0.0.1:1 --state conf.state
	printf 'x' > short.state
	expect_fail 74 "gdsub: cannot use state file 'short.state': not a gdsub state file (1 bytes, no header)" -- gdsub -P 127.0.0.1:1 --state short.state
	mkdir d.state
	expect_fail 74 "gdsub: cannot use state file 'd.state': cannot open: Is a directory" -- gdsub -P 127.0.0.1:1 --state d.state
	expect_fail 74 "gdsub: cannot use state file 'no/such/s.state': cannot open: No such file or directory" -- gdsub -P 127.0.0.1:1 --state no/such/s.state
	printf 'GDsub_pub=127.0.0.1:1\nGDsub_state=conf.state\n' > s.ini
	expect_fail 74 "gdsub: cannot use state file 'conf.state': not a gdsub state file (bad magic)" -- gdsub -c s.ini
}

@test "state: a second gdsub on the same state file is refused, exit 74" {
	hold_port port
	start_sub a "--state s.state"
	wait_until 10 test -s s.state
	expect_fail 74 "gdsub: cannot use state file 's.state': in use by another gdsub" -- gdsub -P "127.0.0.1:$port" --name other --state s.state
}

# ---- --dedup index ----

# out-of-order and repeated sequence indexes: 3 comes late, 2 and 4 twice
reordered() {
	mkstream <<-'EOF'
	block 1 1 - a
	block 2 2 - b
	block 4 4 - d
	block 3 3 - c
	block 2 2 r b
	block 5 5 - e
	block 4 4 r d
	block 9 6 - f
	end 7
	EOF
}

@test "--dedup index drops a block whose index is not above the last written, even with a new id; --dedup id keeps it" {
	reordered > s.gds
	run --separate-stderr timeout 10 gdsub -i s.gds -P 127.0.0.1:7001 --no-gd --dedup index -f payload
	assert_success
	assert_output "$(printf 'a\nb\nd\ne\nf')"
	[ -z "$stderr" ]
	run --separate-stderr timeout 10 gdsub -i s.gds -P 127.0.0.1:7001 --no-gd -f payload
	assert_success
	assert_output "$(printf 'a\nb\nd\nc\ne\nf')"
	printf 'GDsub_pub=127.0.0.1:7001\nGDsub_dedup=index\nGDsub_gd=0\n' > s.ini
	run --separate-stderr timeout 10 gdsub -c s.ini -i - -f payload < s.gds
	assert_output "$(printf 'a\nb\nd\ne\nf')"
}

# ---- --consecutive ----

@test "--consecutive and --state over TCP: every block written in order and ACKed, the state file kept" {
	pub_bg timeout 60 bash -c "seq 1 2000 | gdpub -p 0 --port-file pub.port -n 1 --wait-ready=30 | grep -c ^ACK"
	spawn "gdsub -P 127.0.0.1:$port --retry-interval 0.05 --max-retries 200 --consecutive --state s.state --dedup index 2> sub.err | gdack -P 127.0.0.1:$port --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > rc"
	pub_wait
	assert_output 2000
	wait_until 30 test -s rc
	assert_equal "$(cat rc)" "0 0"
	cut -f2 out.txt | cmp - <(seq 1 2000)
	# nothing but the attempts to connect before gdpub listened
	run grep -v 'cannot connect to 127.0.0.1:.*connection refused' sub.err
	assert_failure
	refute_output
	[ "$(state_records s.state | wc -l)" -ge 2 ]
}

@test "--consecutive holds the blocks after a gap until the resend fills it, then writes them in index order" {
	mkstream > s.gds <<-'EOF'
	block 1 1 - a
	block 3 3 - c
	block 4 4 - d
	block 3 3 r c
	block 2 2 r b
	block 5 5 - e
	end 6
	EOF
	run --separate-stderr timeout 10 gdsub -i s.gds -P 127.0.0.1:7001 --no-gd --consecutive
	assert_success
	assert_output "$(printf '127.0.0.1:7001/%s\n' 1$'\ta' 2/r$'\tb' 3$'\tc' 4$'\td' 5$'\te')"
	[ -z "$stderr" ]
	printf 'GDsub_pub=127.0.0.1:7001\nGDsub_consecutive=1\nGDsub_gd=0\n' > s.ini
	run --separate-stderr timeout 10 gdsub -c s.ini -i s.gds -f payload
	assert_output "$(printf 'a\nb\nc\nd\ne')"
}

@test "--consecutive skips a gap below the publisher's floor (the block was NACKed) with a warning naming the missing indexes" {
	mkstream > s.gds <<-'EOF'
	block 1 1 - a
	block 4 4 - d
	block 6 6 - f
	block 7 7 - g
	block 12 12 - l
	floor 7
	block 8 8 - h
	floor 20
	end 20
	EOF
	run --separate-stderr timeout 10 gdsub -i s.gds -P 127.0.0.1:7001 --no-gd --consecutive -f payload
	assert_success
	assert_output "$(printf 'a\nd\nf\ng\nh\nl')"
	assert_equal "$stderr" "gdsub: warning: publisher 127.0.0.1:7001: sequence indexes 2-3, 5 never arrived and were resolved without this subscriber (NACKed); skipped (--consecutive)
gdsub: warning: publisher 127.0.0.1:7001: sequence indexes 9-11, 13-19 never arrived and were resolved without this subscriber (NACKed); skipped (--consecutive)"
}

@test "--consecutive: blocks still held back when the stream ends are not written; exit 1 naming the missing index" {
	printf 'block 1 1 - a\nblock 3 3 - c\nblock 4 4 - d\n' | mkstream > s.gds
	run --separate-stderr timeout 10 gdsub -i s.gds -P 127.0.0.1:7001 --no-gd --consecutive -f payload
	assert_failure 1
	assert_output a
	assert_equal "$stderr" "gdsub: publisher 127.0.0.1:7001: 2 blocks held back behind missing sequence index 2 were not written (--consecutive)"
}

@test "--consecutive: a gap that 65536 indexes pass is reported (publisher, missing index) instead of held forever; exit 1" {
	{
		echo 'block 1 1 - a'
		seq 3 65538 | awk '{ print "block " $1 " " $1 " - x" }'
		echo 'block 2 2 r b'
	} | mkstream > s.gds
	run --separate-stderr timeout 30 gdsub -i s.gds -P 127.0.0.1:7001 --no-gd --consecutive -f payload
	assert_failure 1
	assert_output a
	assert_equal "$stderr" "gdsub: publisher 127.0.0.1:7001: sequence index 2 is missing; 65535 blocks (65535 bytes) held back behind it and block 65538 (index 65538) would pass the --consecutive limit of 65536 indexes or 64 MiB; giving up
gdsub: publisher 127.0.0.1:7001: 65535 blocks held back behind missing sequence index 2 were not written (--consecutive)"
}
