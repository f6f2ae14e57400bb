#!/usr/bin/env bats
# Multisend cluster with pre-acknowledgement (GDpub_cluster, GDpub_role,
# SPEC §8): one producer fed to a primary and two secondaries, a gdsub that
# lists every member. Normal path: the primary delivers, the secondaries
# drop everything on pre-ack. Failover: the primary dies, the secondary with
# the shorter tentative timeout forwards, the other drops on pre-ack, each
# block is written once (R = 1, UR = 1). A pre-ack before its block drops
# the block on arrival. Blocks without an ID of their producer are refused.
load helpers
bats_require_minimum_version 1.5.0

# member NAME VAR ROLE TENTATIVE INPUT: spawn a gdpub of cluster c1 on
# port 0 reading INPUT (a shell redirection target), status in NAME.st,
# stderr in NAME.err, exit status in NAME.rc; set VAR to its port (the
# members need not know each other's)
member() {
	cfg "$1.ini" 'GDpub_port=0' 'GDpub_numSubs=1' 'GDpub_timeout=30' \
	    'GDpub_cluster=c1' "GDpub_role=$3" 'GDpub_preAckTimerInterval=0.1' \
	    "GDpub_tentativePreAckTimeout=$4" 'GDpub_confirmedPreAckTimeout=60'
	spawn "gdpub -c $1.ini --port-file $1.port -I --wait-ready=20 < $5 > $1.st 2> $1.err; echo \$? > $1.rc"
	printf -v "$2" '%s' "$(port_of "$1.port")"
}

cfg() {
	local f=$1
	shift
	printf '%s\n' "$@" > "$f"
}

# subscriber CONF PORT...: a gdsub config listing every member
subscriber() {
	local f=$1 port
	shift
	{
		for port; do printf 'GDsub_pub=127.0.0.1:%s\n' "$port"; done
		printf 'GDsub_retryInt=0.05\nGDsub_maxRetries=-1\n'
	} > "$f"
}

# words FILE WORD: the ids of FILE's status lines "WORD ID", sorted
words() {
	awk -v w="$2" '$1 == w { print $2 }' "$1" | sort -n
}

@test "normal path: the primary delivers 1000 blocks once; both secondaries drop every block on pre-ack and forward none" {
	seq 1 1000 | awk '{ print $1 "\tblock " $1 }' > in.txt
	member a p1 primary 20 in.txt
	member b p2 secondary 20 in.txt
	member c p3 secondary 30 in.txt
	subscriber s.ini "$p1" "$p2" "$p3"
	run --separate-stderr timeout 60 bash -c 'gdsub -c s.ini 2> sub.err | gdack -c s.ini --tee'
	assert_success
	[ -z "$stderr" ]
	[ "$(wc -l <<<"$output")" -eq 1000 ]
	assert_equal "$(cut -f1 <<<"$output" | sort | uniq -d)" ""
	assert_equal "$(head -n 2 <<<"$output")" "$(printf '@c1/1\tblock 1\n@c1/2\tblock 2')"
	for m in a b c; do wait_until 20 file_is $m.rc 0; done
	assert_equal "$(words a.st ACK)" "$(seq 1 1000)"
	assert_equal "$(words b.st PREACK)" "$(seq 1 1000)"
	assert_equal "$(words c.st PREACK)" "$(seq 1 1000)"
	assert_equal "$(grep -vc -e '^PREACK ' -e '^READY$' b.st c.st | cut -d: -f2 | sort -u)" 0
	assert_equal "$(cat sub.err a.err b.err c.err)" ""
}

@test "failover: the primary dies before sending 501-1000; the secondary with the shorter tentative timeout forwards them, the other drops them on pre-ack; each block once, R = 1 and UR = 1" {
	seq 1 1000 | awk '{ print $1 "\tblock " $1 }' > in.txt
	head -n 500 in.txt > first.txt
	# the primary reads the first 500 and then waits on its input
	member a p1 primary 20 '<(cat first.txt; sleep 120)'
	pa=$SPAWNED
	member b p2 secondary 2.5 in.txt
	member c p3 secondary 60 in.txt
	subscriber s.ini "$p1" "$p2" "$p3"
	spawn "gdsub -c s.ini -C 1000 2> sub.err | gdack -c s.ini --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > s.rc"
	wait_until 20 bash -c '[ "$(grep -c "^ACK " a.st)" -eq 500 ]'
	kill -KILL -- "-$pa"
	# b's tentative timeout passes: it forwards what the primary never sent
	wait_until 30 file_is s.rc '0 0'
	assert_equal "$(wc -l < out.txt)" 1000
	cut -f1 out.txt > seen.txt
	sed 's/^/@c1\//' <(seq 1 1000) > sent.txt
	run gdinspect measure sent.txt seen.txt
	assert_success
	assert_line --index 1 --regexp '^1000 +1000 +1000 +0 +0 +0 +1\.0000 +1\.0000 +exactly-once$'
	echo "# failover: $(sed -n 2p <<<"$output")" >&3
	wait_until 20 file_is b.rc 0
	wait_until 20 file_is c.rc 0
	# b forwarded 501-1000 (and any of 1-500 whose pre-ack came late) and
	# every block it forwarded was ACKed; c dropped all 1000 on pre-ack
	assert_equal "$(words b.st FORWARD | awk '$1 > 500')" "$(seq 501 1000)"
	assert_equal "$(words b.st FORWARD)" "$(words b.st ACK)"
	assert_equal "$(sort -n <(words b.st FORWARD) <(words b.st PREACK))" "$(seq 1 1000)"
	assert_equal "$(words c.st PREACK)" "$(seq 1 1000)"
	assert_equal "$(words c.st FORWARD)" ""
	grep -q '^gdpub: forwarding [0-9]* held blocks\? from [0-9]*: no pre-acknowledgement within GDpub_tentativePreAckTimeout (2.5 s)$' b.err
}

@test "confirmed pre-ack: a member that gets a block only after its pre-ack drops it on arrival" {
	seq 1 20 | awk '{ print $1 "\tblock " $1 }' > in.txt
	feed_open late.fifo
	member a p1 primary 20 in.txt 7>&-
	member b p2 secondary 0.5 late.fifo 7>&-
	subscriber s.ini "$p1" "$p2"
	spawn "gdsub -c s.ini 2> sub.err | gdack -c s.ini --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > s.rc" 7>&-
	wait_until 20 file_is a.rc 0
	# every pre-ack reached b before any block did
	wait_until 20 bash -c "gdinspect -p $p2 --json stats | grep -q '\"preacks_kept\":20'"
	cat in.txt >&7
	feed_close
	wait_until 20 file_is b.rc 0
	wait_until 20 file_is s.rc '0 0'
	assert_equal "$(cat b.st)" "$(echo READY; statuses PREACK $(seq 1 20))"
	assert_equal "$(wc -l < out.txt)" 20
}

@test "a secondary's held blocks: gdinspect pending shows them with their tentative deadlines, stats the bounds" {
	seq 1 3 | awk '{ print $1 "\tblock " $1 }' > in.txt
	member b p2 secondary 30 '<(cat in.txt; sleep 60)'
	subscriber s.ini "$p2"
	spawn "gdsub -c s.ini > out.txt 2> sub.err"
	wait_until 20 bash -c "gdinspect -p $p2 --json stats | grep -q '\"held\":3'"
	run gdinspect -p "$p2" --json pending
	assert_success
	assert_line --index 0 --regexp '^\{"id":1,"key":"@c1/1","acks":0,"needed":1,"age":[0-9.]+,"expires_in":(29|30)\.[0-9]+,"resends":0,"size":7,"acked_by":"-","state":"held"\}$'
	[ "${#lines[@]}" -eq 3 ]
	run gdinspect -p "$p2" --json stats
	assert_output --regexp '"held":3,"held_max":65536,"preacks_kept":0,"preacks_max":1048576,'
	# every column its own field (gdinspect split the first 32 only)
	assert_output --regexp '"forwarded":0,"preacks_expired":0,"preacks_evicted":0\}$'
}

@test "a cluster needs the producer's IDs: without -I or -f frame gdpub refuses to start; a line without an ID is REJECTed" {
	expect_usage gdpub "GDpub_cluster needs the block IDs from the input (-I/--ids or -f frame): every member of cluster c1 must give a block the same ID, and gdpub would number them itself" -- gdpub -p 1 --cluster c1
	expect_usage gdpub "GDpub_role=secondary needs GDpub_cluster (--cluster NAME): a secondary of which cluster?" -- gdpub -p 1 --role secondary
	expect_usage gdpub "GDpub_role=secondary needs GDpub_numSubs of 1 or more: pre-acknowledgements come from GD subscribers, and without them every block would wait out its GDpub_tentativePreAckTimeout first" -- gdpub -p 1 -I --cluster c1 --role secondary
	expect_usage gdpub "GDpub_cluster cannot be used with -o: cluster members serve their subscribers over TCP" -- gdpub -p 1 -I --cluster c1 -o -
	expect_usage gdpub "invalid value 'a/b' for --cluster: expected a cluster name of 1 to 64 letters, digits, '.', '_' or '-'" -- gdpub -p 1 -I --cluster a/b
	run --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -I --cluster c1 < <(printf '7\tok\nno id here\n')
	assert_failure 1
	assert_output 'REJECT - malformed line 2: expected ID<TAB>payload with a decimal ID (in a cluster every block needs the ID its producer gave it)'
	assert_equal "$(stderr_before_summary)" "$(printf '%s\n' 'gdpub: REJECT -: malformed line 2: expected ID<TAB>payload with a decimal ID (in a cluster every block needs the ID its producer gave it)' 'gdpub: warning: 1 of 1 blocks were published while no subscriber was connected')"
	[[ "$(tail -n 1 <<<"$stderr")" =~ ^"gdpub: warning: 2 blocks in "[0-9.]+" s: 1 published (GD off), 1 REJECT (each REJECT line says why)"$ ]]
}

# A re-published ID is a new block in a cluster too (issue 21 item 2):
# before, @CLUSTER/ID dedup knew the ID only, so the second block under an
# ID was dropped as a copy of the first and ACKed unwritten.

@test "re-published ID, primary alone: the second block under each ID is written and ACKed once it is, not dropped as a copy of the first" {
	feed_open a.fifo
	member a p1 primary 20 a.fifo 7>&-
	subscriber s.ini "$p1"
	wait_until 20 listening "$p1"
	spawn "gdsub -c s.ini 2> sub.err | gdack -c s.ini --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > s.rc" 7>&-
	printf '%s\tfirst-%s\n' 1 1 2 2 3 3 >&7
	wait_until 20 bash -c '[ "$(grep -c "^ACK " a.st)" -eq 3 ]'
	printf '%s\tsecond-%s\n' 1 1 2 2 3 3 >&7
	feed_close
	wait_until 20 file_is a.rc 0
	wait_until 20 file_is s.rc '0 0'
	assert_equal "$(cut -f2 out.txt)" "$(printf '%s\n' first-1 first-2 first-3 second-1 second-2 second-3)"
	assert_equal "$(cut -f1 out.txt | sort | uniq -c | awk '{ print $1 }' | sort -u)" 2
	assert_equal "$(words a.st ACK)" "$(printf '%s\n' 1 1 2 2 3 3)"
	assert_equal "$(cat sub.err ack.err a.err)" ""
}

@test "re-published ID, primary and secondary: both blocks under each ID written once; the secondary drops both copies on their own pre-acks" {
	feed_open a.fifo
	mkfifo b.fifo
	exec 8<>b.fifo
	member a p1 primary 20 a.fifo 7>&- 8>&-
	member b p2 secondary 20 b.fifo 7>&- 8>&-
	subscriber s.ini "$p1" "$p2"
	spawn "gdsub -c s.ini 2> sub.err | gdack -c s.ini --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > s.rc" 7>&- 8>&-
	wait_until 20 has_line b.st '^READY$'
	printf '%s\tfirst-%s\n' 1 1 2 2 3 3 | tee /dev/fd/8 >&7
	wait_until 20 bash -c '[ "$(grep -c "^PREACK " b.st)" -eq 3 ]'
	printf '%s\tsecond-%s\n' 1 1 2 2 3 3 | tee /dev/fd/8 >&7
	feed_close
	exec 8>&-
	wait_until 20 file_is a.rc 0
	wait_until 20 file_is b.rc 0
	wait_until 20 file_is s.rc '0 0'
	assert_equal "$(cut -f2 out.txt)" "$(printf '%s\n' first-1 first-2 first-3 second-1 second-2 second-3)"
	assert_equal "$(words a.st ACK)" "$(printf '%s\n' 1 1 2 2 3 3)"
	assert_equal "$(words b.st PREACK)" "$(printf '%s\n' 1 1 2 2 3 3)"
	assert_equal "$(words b.st FORWARD)" ""
}

@test "re-published ID through another member: a secondary that was pre-acked for the first block forwards the second, which is written, not taken for a copy of the first" {
	feed_open a.fifo
	mkfifo b.fifo
	exec 8<>b.fifo
	member a p1 primary 20 a.fifo 7>&- 8>&-
	member b p2 secondary 0.5 b.fifo 7>&- 8>&-
	subscriber s.ini "$p1" "$p2"
	spawn "gdsub -c s.ini 2> sub.err | gdack -c s.ini --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > s.rc" 7>&- 8>&-
	wait_until 20 has_line b.st '^READY$'
	printf '1\tfirst-1\n' | tee /dev/fd/8 >&7
	wait_until 20 has_line b.st '^PREACK 1$'
	# the primary never gets the second block (it is gone for it)
	printf '1\tsecond-1\n' >&8
	exec 8>&-
	wait_until 20 file_is b.rc 0
	feed_close
	wait_until 20 file_is a.rc 0
	wait_until 20 file_is s.rc '0 0'
	assert_equal "$(cut -f2 out.txt)" "$(printf '%s\n' first-1 second-1)"
	assert_equal "$(cat a.st)" "$(printf '%s\n' READY 'ACK 1')"
	assert_equal "$(cat b.st)" "$(printf '%s\n' READY 'PREACK 1' 'FORWARD 1' 'ACK 1')"
}

# Failover as gdkit(7) gives it (issue 21 item 4): before, a plain tee died
# of SIGPIPE with the primary and the lines after reached no member; with
# tee -p, gdsub gave up on the dead primary after GDsub_maxRetries (69) and
# the secondaries forwarded to nobody and NACKed.

@test "gdsub does not give up on an unreachable member while another member of its cluster serves it, and counts it ended once that one ended its stream" {
	seq 1 200 | awk '{ print $1 "\tblock " $1 }' > in.txt
	head -n 100 in.txt > first.txt
	member a p1 primary 20 '<(cat first.txt; sleep 120)'
	pa=$SPAWNED
	member b p2 secondary 3 in.txt
	cfg s.ini "GDsub_pub=127.0.0.1:$p1" "GDsub_pub=127.0.0.1:$p2" \
	    'GDsub_retryInt=0.05' 'GDsub_maxRetries=3'
	wait_until 20 listening "$p1"
	wait_until 20 listening "$p2"
	spawn "gdsub -c s.ini 2> sub.err | gdack -c s.ini --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > s.rc"
	wait_until 20 bash -c '[ "$(grep -c "^ACK " a.st)" -eq 100 ]'
	kill -KILL -- "-$pa"
	wait_until 40 file_is s.rc '0 0'
	wait_until 20 file_is b.rc 0
	assert_equal "$(cut -f1 out.txt | sort -t/ -k2n)" "$(seq 1 200 | sed 's|^|@c1/|')"
	assert_equal "$(sort -n <(words b.st ACK) <(words b.st PREACK))" "$(seq 1 200)"
	assert_equal "$(words b.st NACK)" ""
	grep -q "^gdsub: warning: publisher 127.0.0.1:$p1 is unreachable; another member of cluster c1 serves it: trying it again every 0.05 s$" sub.err
	grep -q "^gdsub: warning: giving up on publisher 127.0.0.1:$p1 after [0-9]* attempts: the other members of cluster c1 have ended their streams$" sub.err
	# quiet after the warning: only the three attempts are reported
	[ "$(grep -c "^gdsub: cannot connect to 127.0.0.1:$p1: " sub.err)" -eq 3 ]
	run ! grep -q 'giving up on publisher .* after [0-9]* attempts\?$' sub.err
}

@test "a secondary that connects after the cluster acknowledged its blocks gets their pre-acks first and drops them all, forwarding none" {
	seq 1 20 | awk '{ print $1 "\tblock " $1 }' > in.txt
	member a p1 primary 20 in.txt
	hold_port p2	# b starts after gdsub has its port
	# gdsub tries the secondary every 3 s: it connects well after the
	# secondary's tentative timeout has passed
	cfg s.ini "GDsub_pub=127.0.0.1:$p1" "GDsub_pub=127.0.0.1:$p2" \
	    'GDsub_retryInt=3' 'GDsub_maxRetries=-1'
	spawn "gdsub -c s.ini 2> sub.err | gdack -c s.ini --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > s.rc"
	wait_until 30 file_is a.rc 0
	cfg b.ini "GDpub_port=$p2" 'GDpub_numSubs=1' 'GDpub_timeout=30' \
	    'GDpub_cluster=c1' 'GDpub_role=secondary' 'GDpub_preAckTimerInterval=0.1' \
	    'GDpub_tentativePreAckTimeout=0.3'
	spawn "gdpub -c b.ini -I < in.txt > b.st 2> b.err; echo \$? > b.rc"
	wait_until 30 file_is b.rc 0
	wait_until 20 file_is s.rc '0 0'
	assert_equal "$(words b.st PREACK)" "$(seq 1 20)"
	assert_equal "$(words b.st FORWARD)" ""
	assert_equal "$(words b.st ACK)" ""
	[ "$(wc -l < out.txt)" -eq 20 ]
}

@test "gdkit(7) multisend recipe as pasted, the primary killed mid-stream: every block ACKed at some member, written once (R = UR = 1), gdsub exits 0" {
	command -v mandoc >/dev/null || skip "mandoc is not installed"
	hold_port p1; hold_port p2; hold_port p3
	# the display's commands, the prompt removed; its own ports replaced,
	# the producer's two lines by 100 lines, a pause until the primary is
	# killed, and 200 more; the primary started through a shell that
	# tells its pid; the reading commands at its end dropped
	mandoc -Tascii "$BATS_TEST_DIRNAME/../../man/gdkit.7" | col -bx |
	    awk '/A multisend cluster: a producer/ { on = 1 } /Should the primary fail/ { on = 0 } on && /^ +\$ / { sub(/^ +\$ /, ""); print }' > display.sh
	grep -q "| tee -p to2 to3 | gdpub -c primary.ini -p 20001 " display.sh
	{
		echo 'producer() {'
		echo '	seq 1 100 | awk '\''{ print $1 "\tbuy " $1 }'\'''
		echo '	for _ in $(seq 1200); do [ -e go ] && break; sleep 0.05; done'
		echo '	seq 101 300 | awk '\''{ print $1 "\tsell " $1 }'\'''
		echo '}'
		sed -e "s/20001/$p1/g; s/20002/$p2/g; s/20003/$p3/g" \
		    -e "s/^printf '101\\\\tbuy\\\\n102\\\\tsell\\\\n' |/producer |/" \
		    -e "s/| gdpub -c primary.ini/| sh -c 'echo \$\$ > primary.pid; exec \"\$@\"' sh gdpub -c primary.ini/" \
		    -e '/^cat /d; /^cut /d' display.sh
		echo wait
	} > recipe.sh
	cat recipe.sh
	grep -q '^producer | tee -p to2 to3 | sh -c' recipe.sh
	spawn "timeout 120 bash recipe.sh > recipe.out 2> recipe.err; echo \$? > recipe.rc"
	wait_until 30 bash -c '[ "$(grep -c "^ACK " recipe.out)" -eq 100 ]'
	kill -KILL "$(cat primary.pid)"
	touch go
	# the second member forwards 101-300 ten seconds after reading them
	wait_until 90 file_is recipe.rc 0
	# written once each
	cut -f1 orders.txt > seen.txt
	seq 1 300 | sed 's|^|@orders/|' > sent.txt
	run gdinspect measure sent.txt seen.txt
	assert_success
	assert_line --index 1 --regexp '^300 +300 +300 +0 +0 +0 +1\.0000 +1\.0000 +exactly-once$'
	echo "# recipe failover: $(sed -n 2p <<<"$output")" >&3
	# every block ACKed at some member (PREACK: acknowledged through
	# another member's copy), none NACKed
	assert_equal "$(words recipe.out ACK)" "$(seq 1 100)"
	assert_equal "$(sort -n <(words recipe.out ACK) <(words second.txt ACK) <(words second.txt PREACK) | uniq)" "$(seq 1 300)"
	assert_equal "$(words second.txt FORWARD)" "$(words second.txt ACK)"
	assert_equal "$(words third.txt PREACK)" "$(seq 1 300)"
	assert_equal "$(cat recipe.out second.txt third.txt | grep -c '^NACK ')" 0
	# gdsub waited for the gone primary while the others served, then ended
	grep -q "^gdsub: warning: giving up on publisher 127.0.0.1:$p1 after [0-9]* attempts: the other members of cluster orders have ended their streams$" recipe.err
	run ! grep -q 'giving up on publisher .* after [0-9]* attempts\?$' recipe.err
}

@test "a secondary with no subscriber holds its blocks past the tentative timeout instead of forwarding them to nobody, and NACKs them GDpub_timeout later" {
	seq 1 5 | awk '{ print $1 "\tblock " $1 }' > in.txt
	cfg b.ini 'GDpub_port=0' 'GDpub_numSubs=1' 'GDpub_timeout=1' \
	    'GDpub_cluster=c1' 'GDpub_role=secondary' 'GDpub_preAckTimerInterval=0.1' \
	    'GDpub_tentativePreAckTimeout=0.3'
	run --separate-stderr timeout 30 gdpub -c b.ini --port-file b.port -I < in.txt
	assert_failure 1
	assert_equal "$output" "$(statuses NACK 1 2 3 4 5)"
	grep -q '^gdpub: holding the blocks past GDpub_tentativePreAckTimeout: no GD subscriber has told this member its pre-acknowledgements yet (NACKed if none has within GDpub_timeout, 1 s)$' <<<"$stderr"
	grep -q '^gdpub: NACKing 5 held blocks from 1: no GD subscriber told this member its pre-acknowledgements within GDpub_timeout (1 s) after GDpub_tentativePreAckTimeout$' <<<"$stderr"
}

@test "GDsub_state in a cluster: a restarted gdsub recognises the blocks it wrote from the primary's copies; a secondary that never had their pre-acks gets them first and drops its copies instead of forwarding them again (3 rounds)" {
	seq 1 20 | awk '{ print $1 "\tblock " $1 }' > in.txt
	for round in 1 2 3; do
		rm -f ./*.st ./*.rc ./*.port out1 out2 a.err b.err
		member a p1 primary 20 in.txt
		hold_port p2
		cfg s.ini "GDsub_pub=127.0.0.1:$p1" "GDsub_pub=127.0.0.1:$p2" \
		    'GDsub_retryInt=0.05' 'GDsub_maxRetries=-1' "GDsub_state=s$round.state"
		# the first pipeline: every block written from the primary's
		# copy, acknowledged and recorded; the secondary is not running
		spawn "gdsub -c s.ini 2> sub1.err | gdack -c s.ini --tee > out1 2> ack1.err"
		pipe=$SPAWNED
		wait_until 30 file_is a.rc 0
		assert_equal "$(words a.st ACK)" "$(seq 1 20)"
		[ "$(nlines out1)" -eq 20 ]
		kill -KILL -- "-$pipe"
		# the secondary starts, holding the same blocks; the pipeline
		# again, the primary gone
		cfg b.ini "GDpub_port=$p2" 'GDpub_numSubs=1' 'GDpub_timeout=30' \
		    'GDpub_cluster=c1' 'GDpub_role=secondary' \
		    'GDpub_preAckTimerInterval=0.1' \
		    'GDpub_tentativePreAckTimeout=1' 'GDpub_confirmedPreAckTimeout=60'
		spawn "gdpub -c b.ini -I --wait-ready=20 < in.txt > b.st 2> b.err; echo \$? > b.rc"
		spawn "gdsub -c s.ini 2> sub2.err | gdack -c s.ini --tee > out2 2> ack2.err"
		pipe=$SPAWNED
		wait_until 30 file_is b.rc 0
		kill -KILL -- "-$pipe"
		# before: the secondary forwarded all 20 after a second, and
		# they were written again
		assert_equal "$(words b.st PREACK)" "$(seq 1 20)"
		assert_equal "$(words b.st FORWARD)" ""
		[ "$(nlines out2)" -eq 0 ]
	done
}
