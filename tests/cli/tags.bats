#!/usr/bin/env bats
# Frame tags (gdkit-stream(5) TAGS, issue 24): with GDpub_authKeyFile every
# frame of gdpub -o carries a tag, and gdsub -i with GDsub_authKeyFile
# checks it before it writes, deduplicates or acknowledges anything. The
# engine between them is played by tests/cli/tagforge.py, a client
# without the key: it reads one frame (epoch and origin) and writes
# forged ones, or replays another run's. engines.bats carries tagged
# lines through mosquitto.
load helpers
bats_require_minimum_version 1.5.0

# mkkey FILE: a fresh random key in FILE, mode 600
mkkey() {
	head -c 32 /dev/urandom | base64 > "$1"
	chmod 600 "$1"
}

tagforge() {
	python "$BATS_TEST_DIRNAME/tagforge.py" "$@"
}

# stats_are EXPR: gdinspect --json stats at the one gdsub satisfies the
# Python expression EXPR over its fields d
stats_are() {
	local out
	out=$(timeout 10 gdinspect --ctl "$(sub_sock)" --json stats) || return 1
	python -c 'import json, sys
d = json.loads(sys.argv[1])
assert eval(sys.argv[2]), d' "$out" "$1"
}

# sub_in NAME PORT [GDSUB-OPTS]: spawn gdsub -i in.fifo (made and held
# open on fd 7 by the test with feed_open: the input ends at feed_close)
# for the gdpub on PORT, piped into gdack --tee > NAME.out; "SUB ACK"
# statuses in NAME.rc
sub_in() {
	spawn "gdsub -i in.fifo -P 127.0.0.1:$2 --name $1 --retry-interval 0.05 --max-retries 400 ${3:-} 2> $1.sub.err | gdack -P 127.0.0.1:$2 --name $1 --tee > $1.out 2> $1.ack.err; echo \${PIPESTATUS[*]} > $1.rc" 7>&-
}

@test "forged armored frames for IDs 2 and 3 (no tag) are counted, reported with their line, never written or acknowledged; the real blocks 2 and 3 are" {
	mkkey k
	feed_open in.fifo
	spawn "seq 3 | gdpub -p 0 --port-file pub.port -n 1 -o - --armor --auth-key-file k --status pub.st --wait-ready=30 2> pub.err |
		python $BATS_TEST_DIRNAME/tagforge.py forge 2:EVIL-2 3:EVIL-3 > in.fifo; echo \${PIPESTATUS[*]} > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_in s "$port" "--auth-key-file k"
	wait_until 30 test -s pub.rc
	assert_equal "$(cat pub.rc)" "0 0 0"
	assert_equal "$(cat pub.st)" "$(printf 'READY\nACK 1\nACK 2\nACK 3')"
	assert_equal "$(cat s.out)" "$(printf '127.0.0.1:%s/%s\t%s\n' "$port" 1 1 "$port" 2 2 "$port" 3 3)"
	assert_equal "$(grep -v 'cannot connect to' s.sub.err)" "$(printf '%s\n' \
		"gdsub: in.fifo: line 2: frame 127.0.0.1:$port/2 skipped: it carries no authentication tag; not written, not acknowledged" \
		"gdsub: in.fifo: line 3: frame 127.0.0.1:$port/3 skipped: it carries no authentication tag; not written, not acknowledged")"
	stats_are 'd["bad_tags"] == 2 and d["unique"] == 3 and d["duplicates"] == 0 and d["acked"] == 3 and d["bad_lines"] == 0'
	feed_close
	wait_until 30 test -s s.rc
	assert_equal "$(cat s.rc)" "0 0"
}

@test "binary stream: forged frames with a made-up tag are skipped by byte offset, the real ones, dropped on the way, come by resend and are ACKed" {
	mkkey k
	feed_open in.fifo
	spawn "seq 3 | gdpub -p 0 --port-file pub.port -n 1 -o - --auth-key-file k --status pub.st --wait-ready=30 -t 2 --resend 5 2> pub.err |
		python $BATS_TEST_DIRNAME/tagforge.py forge --tag junk --drop 2:EVIL-2 3:EVIL-3 > in.fifo; echo \${PIPESTATUS[*]} > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_in s "$port" "--auth-key-file k"
	wait_until 60 test -s pub.rc
	assert_equal "$(cat pub.rc)" "0 0 0"
	assert_equal "$(sort pub.st)" "$(printf 'ACK 1\nACK 2\nACK 3\nREADY')"
	assert_equal "$(cut -f1 s.out | sort)" "$(printf '127.0.0.1:%s/%s\n' "$port" 1 "$port" 2/r "$port" 3/r)"
	run grep -c EVIL s.out
	assert_output 0
	# header 16, frame 1: 44 + 1 + origin + 16 + 4
	o=$((16 + 44 + 1 + ${#port} + 10 + 16 + 4))
	assert_equal "$(grep -v 'cannot connect to' s.sub.err)" "$(printf '%s\n' \
		"gdsub: in.fifo: byte offset $o: frame 127.0.0.1:$port/2 skipped: its authentication tag is wrong (forged, or made with another key); not written, not acknowledged" \
		"gdsub: in.fifo: byte offset $((o + 44 + 6 + ${#port} + 10 + 16 + 4)): frame 127.0.0.1:$port/3 skipped: its authentication tag is wrong (forged, or made with another key); not written, not acknowledged")"
	stats_are 'd["bad_tags"] == 2 and d["unique"] == 3 and d["acked"] == 3'
	feed_close
	wait_until 30 test -s s.rc
	assert_equal "$(cat s.rc)" "0 0"
}

# The replay goes in before block 3, so gdpub, which waits for ACK 3,
# cannot end before gdsub has read it (after its end, another run's frames
# could be a restart not yet seen).
@test "frames of another run replayed into this one are not written, and do not make gdsub forget this run: its frames replayed after them stay duplicates" {
	mkkey k
	# the other run on the same port: the same origin HOST:PORT
	hold_port port
	printf 'old-1\nold-2\nold-3\n' | gdpub -p "$port" -o - --armor --auth-key-file k > run1.txt
	feed_open in.fifo
	spawn "printf 'new-1\nnew-2\nnew-3\n' | gdpub -p $port -n 1 -o - --armor --auth-key-file k --status pub.st --wait-ready=30 2> pub.err |
		python $BATS_TEST_DIRNAME/tagforge.py replay run1.txt 2 > in.fifo; echo \${PIPESTATUS[*]} > pub.rc" 7>&-
	sub_in s "$port" "--auth-key-file k"
	wait_until 30 test -s pub.rc
	assert_equal "$(cat pub.rc)" "0 0 0"
	assert_equal "$(cat pub.st)" "$(printf 'READY\nACK 1\nACK 2\nACK 3')"
	wait_until 10 stats_are 'd["received"] >= 5'
	assert_equal "$(cut -f2 s.out)" "$(printf 'new-1\nnew-2\nnew-3')"
	stats_are 'd["bad_tags"] == 0 and d["unique"] == 3 and d["duplicates"] == 2'
	run grep -Ec "^gdsub: the stream holds frames of another run of publisher 127.0.0.1:$port \(epoch [0-9]+\) than the one it answers for \(epoch [0-9]+\): a restart not yet seen, or a replay; not written, not acknowledged$" s.sub.err
	assert_output 1
	feed_close
	wait_until 30 test -s s.rc
	# the other run's three blocks could not be acknowledged
	assert_equal "$(cat s.rc)" "1 0"
	has_line s.sub.err '^gdsub: 3 blocks came from an earlier run of their publisher and were not acknowledged$'
}

# Once the publisher ended its run, gdsub takes no other run from the
# stream either: a replay of an old run's frames, then of this run's,
# wrote this run's blocks a second time (the old run's moved the stream
# and made gdsub forget this one's).
@test "after the publisher ended its run, an old run's frames and then this run's, replayed, are not written: no block twice" {
	mkkey k
	# the old run on the same port: the same origin HOST:PORT
	hold_port port
	printf 'old-1\nold-2\nold-3\n' | gdpub -p "$port" -o - --armor --auth-key-file k > run1.txt
	feed_open in.fifo
	spawn "printf 'new-1\nnew-2\nnew-3\n' | gdpub -p $port -n 1 -o - --armor --auth-key-file k --status pub.st --wait-ready=30 2> pub.err |
		tee run2.txt > in.fifo; echo \${PIPESTATUS[*]} > pub.rc" 7>&-
	sub_in s "$port" "--auth-key-file k -v"
	wait_until 30 test -s pub.rc
	assert_equal "$(cat pub.rc)" "0 0 0"
	assert_equal "$(cat pub.st)" "$(printf 'READY\nACK 1\nACK 2\nACK 3')"
	wait_until 30 has_line s.sub.err "publisher 127.0.0.1:$port ended its stream"
	cat run1.txt run2.txt >&7
	wait_until 10 stats_are 'd["received"] >= 6'
	stats_are 'd["bad_tags"] == 0 and d["unique"] == 3'
	feed_close
	wait_until 30 test -s s.rc
	assert_equal "$(cut -f2 s.out)" "$(printf 'new-1\nnew-2\nnew-3')"
	# -v: each line starts with the time
	has_line s.sub.err " gdsub: the stream holds frames of another run of publisher 127.0.0.1:$port "
}

@test "a stream without tags into a gdsub with a key is refused with 65, in one line" {
	mkkey k
	seq 3 | gdpub -p 0 --port-file pub.port -o - > plain.gds
	port=$(cat pub.port)
	run --separate-stderr timeout 20 gdsub -i plain.gds -P "127.0.0.1:$port" --no-gd --auth-key-file k
	assert_equal "$status" 65
	assert_equal "$output" ""
	assert_equal "$stderr" "gdsub: plain.gds: the stream's frames carry no authentication tags (stream version 1), and this gdsub has a key (GDsub_authKeyFile): it reads only frames it can verify, written by a gdpub with the key"
}

@test "a gdsub with a key refuses, with 65, a publisher whose authenticated welcome says its frames carry no tags (a gdkit before them)" {
	mkkey k
	feed_open in.fifo
	spawn "exec python $BATS_TEST_DIRNAME/tagforge.py oldpub k oldpub.port" 7>&-
	wait_until 10 test -s oldpub.port
	fport=$(cat oldpub.port)
	run --separate-stderr timeout 20 gdsub -i in.fifo -P "127.0.0.1:$fport" --auth-key-file k --max-retries 1 7>&-
	assert_equal "$status" 65
	assert_equal "$output" ""
	assert_equal "$stderr" "gdsub: publisher 127.0.0.1:$fport writes its framed stream without authentication tags (a gdkit before stream version 2); with GDsub_authKeyFile this gdsub reads only frames it can verify"
}

@test "a tagged stream, binary or armored, into a gdsub without a key is refused with 65: it could not verify them" {
	mkkey k
	hold_port port	# the same origin for both runs
	seq 3 | gdpub -p "$port" -o - --auth-key-file k > tagged.gds
	seq 3 | gdpub -p "$port" -o - --armor --auth-key-file k > tagged.txt
	for f in tagged.gds tagged.txt; do
		run --separate-stderr timeout 20 gdsub -i "$f" -P "127.0.0.1:$port" --no-gd
		assert_equal "$status" 65
		assert_equal "$output" ""
		assert_equal "$stderr" "gdsub: $f: the stream's frames carry authentication tags (gdpub --auth-key-file), and this gdsub has no key to verify them (GDsub_authKeyFile, --auth-key-file)"
	done
	# with the key, the same files read
	run --separate-stderr timeout 20 gdsub -i tagged.txt -P "127.0.0.1:$port" --no-gd --auth-key-file k
	assert_success
	assert_equal "$output" "$(printf '127.0.0.1:%s/%s\t%s\n' "$port" 1 1 "$port" 2 2 "$port" 3 3)"
}

@test "a frame tagged with another key fails its check; a tagged stream is version 2, and gdinspect decode reads it" {
	mkkey k
	mkkey k2
	seq 2 | gdpub -p 0 --port-file pub.port -o - --auth-key-file k2 > other.gds
	port=$(cat pub.port)
	head -c 10 other.gds | od -An -tx1 | tr -d ' \n' > hdr.hex
	assert_equal "$(cat hdr.hex)" "8947444b0d0a1a0a0200"
	run --separate-stderr timeout 20 gdsub -i other.gds -P "127.0.0.1:$port" --no-gd --auth-key-file k
	assert_success
	assert_equal "$output" ""
	assert_equal "$(grep -c 'its authentication tag is wrong' <<<"$stderr")" 4
	run --separate-stderr gdinspect decode other.gds
	assert_success
	assert_equal "$(grep -c "^127.0.0.1:$port/" <<<"$output")" 2
}

@test "every frame's tag, binary and armored, is the one gdkit-stream(5) TAGS gives, computed apart (tagcheck.py: HMAC-SHA256 run key, SipHash-2-4-128)" {
	mkkey k
	# payloads of 0 to 23 bytes: the frame's end at every place in a word;
	# and one of 3000
	python -c 'for i in list(range(24)) + [3000]: print("x" * i)' > in.txt
	gdpub -p 0 --port-file 1.port -o - --auth-key-file k < in.txt > t.gds
	gdpub -p 0 --port-file 2.port -o - --armor --auth-key-file k < in.txt > t.txt
	for f in t.gds t.txt; do
		run python "$BATS_TEST_DIRNAME/tagcheck.py" check k < "$f"
		assert_success
		assert_output "27 frames, 27 tags good"	# 25 blocks, floor, end
	done
	# and a tag it does not give is told
	python "$BATS_TEST_DIRNAME/tagforge.py" forge --only --tag junk 7:x < t.txt > forged.txt
	run python "$BATS_TEST_DIRNAME/tagcheck.py" check k < forged.txt
	assert_failure
	assert_output "tagcheck.py: frame 1: tag 5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a is not the one the key gives"
}
