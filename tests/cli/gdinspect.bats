#!/usr/bin/env bats
# gdinspect (SPEC §7) against a stalled pipeline: a gdpub with numSubs=1
# and a long timeout, a GD subscriber that never acks, five blocks
# pending. Also the control socket's answers to bad requests.
bats_require_minimum_version 1.5.0
load helpers

# stall: publish five blocks (payloads a, bb, ccc, dddd, eeeee) to one GD
# gdsub that never acknowledges; the producer keeps stdin open so gdpub
# stays up. Sets port, pubsock.
stall() {
	printf 'GDpub_port=0\nGDpub_numSubs=1\n' > p.ini
	printf 'a\nbb\nccc\ndddd\neeeee\n' > in.txt
	spawn "(cat in.txt; sleep 300) | gdpub -c p.ini --port-file pub.port -t 60 --wait-ready=60 > pub.out 2> pub.err"
	pubpid=$SPAWNED
	pub_ini p.ini
	pubsock=$(pub_sock "$port")
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.05\nGDsub_maxRetries=400\n' "$port" > s.ini
	spawn "exec gdsub -c s.ini > out.txt 2> sub.err"
	wait_until 60 has_lines out.txt 5
	wait_until 10 has_line pub.out '^READY$'
}

# gdpub_alive: the stalled gdpub still runs and still holds 5 blocks
gdpub_alive() {
	run --separate-stderr timeout 30 gdinspect -c p.ini --json stats
	assert_success
	python -c 'import json, sys; d = json.loads(sys.stdin.read()); assert d["pending"] == 5, d' <<<"$output"
	run ! has_line pub.out '^(ACK|NACK)'
}

# check_pending TEXT|JSON: the five pending rows of `gdinspect pending`
# (stdin) are right: id, key, acks 0, needed 1, age + expires_in = 60,
# resends 0, size = payload length.
check_pending() {
	python -c '
import json, sys
mode, port = sys.argv[1], sys.argv[2]
lines = sys.stdin.read().splitlines()
if mode == "text":
    head = lines[0].split()
    assert head == ["ID", "KEY", "ACKS", "NEEDED", "AGE", "EXPIRES_IN", "RESENDS", "SIZE", "ACKED_BY"], head
    rows = [dict(zip([h.lower() for h in head], l.split())) for l in lines[1:]]
    assert all(len(l.split()) == 9 for l in lines[1:]), lines
    rows = [{k: (v if k in ("key", "acked_by") else float(v)) for k, v in r.items()} for r in rows]
else:
    rows = [json.loads(l) for l in lines]
    for r in rows:
        for k in ("id", "acks", "needed", "age", "expires_in", "resends", "size"):
            assert isinstance(r[k], (int, float)) and not isinstance(r[k], bool), (k, r)
        assert isinstance(r["key"], str) and isinstance(r["acked_by"], str), r
        for k in ("id", "acks", "needed", "resends", "size"):
            assert isinstance(r[k], int), (k, r)
assert len(rows) == 5, rows
assert sorted(r["id"] for r in rows) == [1, 2, 3, 4, 5], rows
for r in rows:
    i = int(r["id"])
    assert r["key"] == "127.0.0.1:%s/%d" % (port, i), r
    assert r["acks"] == 0 and r["needed"] == 1 and r["resends"] == 0, r
    assert r["acked_by"] == "-", r
    assert r["size"] == i, r
    assert 0 <= r["age"] < 60 and 0 < r["expires_in"] <= 60, r
    assert abs(r["age"] + r["expires_in"] - 60) < 0.01, r
' "$1" "$port"
}

@test "pending (text): header and one row per pending block" {
	stall
	run --separate-stderr timeout 30 gdinspect -c p.ini pending
	assert_success
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 6 ]
	assert_line --index 0 --regexp '^ID +KEY +ACKS +NEEDED +AGE +EXPIRES_IN +RESENDS +SIZE +ACKED_BY$'
	check_pending text <<<"$output"
	gdpub_alive
}

@test "pending --json: one JSON object per pending block with the documented fields" {
	stall
	run --separate-stderr timeout 30 gdinspect -c p.ini --json pending
	assert_success
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 5 ]
	python -c 'import json, sys; [json.loads(l) for l in sys.stdin]' <<<"$output"
	check_pending json <<<"$output"
}

@test "pending via --ctl PATH; --ctl wins over -c" {
	stall
	run --separate-stderr timeout 30 gdinspect --ctl "$pubsock" pending
	assert_success
	check_pending text <<<"$output"
	# s.ini alone would reach the gdsub, which has no pending table
	run --separate-stderr timeout 30 gdinspect -c s.ini --ctl "$pubsock" --json pending
	assert_success
	check_pending json <<<"$output"
}

# aged FIRST: true when every block's age in `gdinspect --json pending` is
# more than 0.05 s above its age in FIRST, and its time left below
aged() {
	local now
	now=$(timeout 30 gdinspect -c p.ini --json pending) || return 1
	python -c '
import json, sys
a = {r["id"]: r for r in map(json.loads, sys.argv[1].splitlines())}
b = {r["id"]: r for r in map(json.loads, sys.argv[2].splitlines())}
assert a.keys() == b.keys() and len(a) == 5
for i in a:
    assert b[i]["age"] > a[i]["age"] + 0.05, (a[i], b[i])
    assert b[i]["expires_in"] < a[i]["expires_in"] - 0.05, (a[i], b[i])
' "$1" "$now"
}

@test "ages grow and time left shrinks between two looks" {
	stall
	run --separate-stderr timeout 30 gdinspect -c p.ini --json pending
	assert_success
	check_pending json <<<"$output"
	wait_until 20 aged "$output"
}

@test "stats at a gdpub: published 5, no ACK, NACK, REJECT, resend; 5 pending" {
	stall
	run --separate-stderr timeout 30 gdinspect -c p.ini stats
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 --regexp '^PUBLISHED +ACK +NACK +REJECT +RESENT +PENDING( |$)'
	assert_line --index 1 --regexp '^ *5 +0 +0 +0 +0 +5( |$)'
	run --separate-stderr timeout 30 gdinspect -c p.ini --json stats
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
want = {"published": 5, "ack": 0, "nack": 0, "reject": 0, "resent": 0, "pending": 5}
assert {k: d.get(k) for k in want} == want, d
' <<<"$output"
}

@test "subs at a gdpub: the one GD subscriber, by name and address" {
	stall
	name="$(hostname):$(realpath s.ini)"
	run --separate-stderr timeout 30 gdinspect -c p.ini subs
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 --regexp '^NAME +ADDRESS +GD +STATE( |$)'
	assert_line --index 1 --regexp "^$name +127\.0\.0\.1:[0-9]+ +yes "
	run --separate-stderr timeout 30 gdinspect -c p.ini --json subs
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	python -c '
import json, re, sys
d = json.loads(sys.stdin.read())
assert d["name"] == sys.argv[1], d
assert re.fullmatch(r"127\.0\.0\.1:\d+", d["address"]), d
assert d["gd"] == "yes" and d["queue"] == 0, d
assert isinstance(d["state"], str) and d["state"], d
' "$name" <<<"$output"
}

@test "subs at a gdpub shows SPEC §7's columns: QoS and failures too" {
	stall
	run --separate-stderr timeout 30 gdinspect -c p.ini --json subs
	assert_success
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
missing = [k for k in ("name", "address", "gd", "state", "qos", "queue", "failures") if k not in d]
assert not missing, "missing %s in %s" % (missing, d)
' <<<"$output"
}

@test "subs at a gdsub (found through its config): the publisher, 5 received" {
	stall
	run --separate-stderr timeout 30 gdinspect -c s.ini subs
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 --regexp '^PUBLISHER +ORIGIN +STATE '
	assert_line --index 1 --regexp "^127\.0\.0\.1:$port +127\.0\.0\.1:$port +connected "
	run --separate-stderr timeout 30 gdinspect -c s.ini --json subs
	assert_success
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
p = "127.0.0.1:" + sys.argv[1]
want = {"publisher": p, "origin": p, "state": "connected", "received": 5,
        "unique": 5, "duplicates": 0, "acked": 0}
assert {k: d.get(k) for k in want} == want, d
' "$port" <<<"$output"
}

@test "stats at a gdsub: received, unique, duplicates" {
	stall
	run --separate-stderr timeout 30 gdinspect -c s.ini --json stats
	assert_success
	python -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
assert sum(r["received"] for r in rows) == 5, rows
assert sum(r["unique"] for r in rows) == 5, rows
assert sum(r["duplicates"] for r in rows) == 0, rows
' <<<"$output"
}

# ---- nothing running, bad command lines ----

@test "no gdpub running -> 69 nothing answers at the derived socket" {
	hold_port port
	printf 'GDpub_port=%s\n' "$port" > p.ini
	expect_fail 69 "gdinspect: nothing answers at $(pub_sock "$port"), the control socket of the gdpub on port $port: No such file or directory (is it running, as this user?)" -- gdinspect -c p.ini pending
	expect_fail 69 "gdinspect: nothing answers at $(pub_sock "$port"), the control socket of the gdpub on port $port: No such file or directory (is it running, as this user?)" -- gdinspect -p "$port" pending
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_name=alpha\n' "$port" > s.ini
	run --separate-stderr gdinspect -c s.ini stats
	assert_failure 69
	[[ "$stderr" =~ ^"gdinspect: nothing answers at $XDG_RUNTIME_DIR/gdkit/sub-"[0-9a-f]{16}".sock, the control socket of the gdsub named 'alpha': No such file or directory (is it running, as this user?)"$ ]]
	expect_fail 69 "gdinspect: nothing answers at $BATS_TEST_TMPDIR/none.sock: No such file or directory (is gdpub or gdsub running?)" -- gdinspect --ctl "$BATS_TEST_TMPDIR/none.sock" stats
}

# pending_rows PORT N: gdinspect -p PORT finds N pending blocks
pending_rows() {
	[ "$(timeout 10 gdinspect -p "$1" --json pending | wc -l)" -eq "$2" ]
}

@test "gdinspect -p PORT: a gdpub started without a config, found from its port" {
	feed_open in.fifo
	spawn "exec gdpub -p 0 --port-file pub.port -n 1 -t 60 < in.fifo > pub.out 2> pub.err" 7>&-
	port=$(port_of pub.port)
	printf 'one\ntwo\n' >&7
	wait_until 10 pending_rows "$port" 2
	run --separate-stderr timeout 30 gdinspect -p "$port" pending
	assert_success
	assert_line --index 0 --regexp '^ID +KEY +ACKS +NEEDED '
	assert_line --index 1 --regexp "^ +1 +127\.0\.0\.1:$port/1 +0 +1 "
	run --separate-stderr timeout 30 gdinspect --port "$port" --json stats
	assert_success
	[[ "$output" == '{"published":2,'* ]]
	expect_usage gdinspect "cannot use -p and --ctl: each names the socket" -- gdinspect -p "$port" --ctl x.sock stats
	expect_usage gdinspect "invalid value '70000' for --port: expected an integer from 0 to 65535" -- gdinspect -p 70000 stats
}

@test "a stale socket (its program is gone) -> 69 connection refused" {
	python -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' stale.sock
	expect_fail 69 "gdinspect: nothing answers at stale.sock: Connection refused (is gdpub or gdsub running?)" -- gdinspect --ctl stale.sock subs
}

@test "unknown command -> 64" {
	printf 'GDpub_port=7001\n' > p.ini
	expect_usage gdinspect "unknown command 'list' (pending, subs, stats, measure, decode or journal)" -- gdinspect -c p.ini list
}

@test "no -c and no --ctl -> 64" {
	expect_usage gdinspect "no target: give -c FILE (a gdpub or gdsub config), -p PORT (a gdpub), -P HOST:PORT or --name NAME (a gdsub) or --ctl PATH" -- gdinspect pending
	printf '# nothing\nGDpub_timeout=5\n' > p.ini
	expect_usage gdinspect "no target: give -c FILE (a gdpub or gdsub config), -p PORT (a gdpub), -P HOST:PORT or --name NAME (a gdsub) or --ctl PATH" -- gdinspect -c p.ini pending
}

# ---- bad requests straight to the control socket ----

@test "gdpub: an unknown request gets an error and the connection stays usable" {
	stall
	run ctl_talk "$pubsock" 3 <<<$'bogus\n\nhello'
	assert_success
	assert_output "$(printf "error unknown request 'bogus'\nerror unknown request ''\nhello gdpub 2")"
	run ctl_talk "$pubsock" 1 <<<'pending please'
	assert_success
	assert_output "error unknown argument 'please' (sort=KEY or limit=N)"
	run ctl_talk "$pubsock" 3 <<<$'pending sort=size\npending limit=-1\nhello'
	assert_success
	assert_output "$(printf "error unknown sort 'size' (age, expires, id or acks)\nerror bad limit '-1' (a row count, 0 for all)\nhello gdpub 2")"
	gdpub_alive
}

@test "gdpub: an over-long request line gets an error and gdpub survives" {
	stall
	# 1025 bytes: too long; the connection is closed
	run ctl_talk "$pubsock" < <(printf '%01025d\n' 0)
	assert_success
	assert_output 'error request line longer than 1024 bytes'
	# 5000 bytes and no newline: same
	run ctl_talk "$pubsock" < <(printf '%05000d' 0)
	assert_success
	assert_output 'error request line longer than 1024 bytes'
	gdpub_alive
	run --separate-stderr timeout 30 gdinspect -c p.ini pending
	assert_success
	check_pending text <<<"$output"
}

@test "gdpub: a request of exactly 1024 bytes is a request, not an overflow" {
	stall
	run ctl_talk "$pubsock" 2 < <(printf '%01024d\nhello\n' 0)
	assert_success
	assert_line --index 0 "error unknown request '$(printf '%064d' 0)'"
	assert_line --index 1 'hello gdpub 2'
}

@test "gdsub: unknown, malformed and over-long requests get errors; gdsub survives" {
	stall
	sock=$(sub_sock)
	run ctl_talk "$sock" 2 <<<$'bogus\nhello'
	assert_success
	assert_output "$(printf "error unknown request 'bogus'\nhello gdsub 2")"
	run ctl_talk "$sock" <<<'ack many'
	assert_success
	assert_output "error bad key count in 'ack many'"
	run ctl_talk "$sock" 2 < <(printf 'ack 1\nnot-a-key\n')
	assert_success
	assert_output "$(printf 'ack 0 1\nnot-a-key\tmalformed key (expected HOST:PORT/ID)')"
	run ctl_talk "$sock" < <(printf '%02000d\n' 0)
	assert_success
	assert_output 'error request line longer than 1024 bytes'
	kill -0 "$pubpid"
	run --separate-stderr timeout 30 gdinspect -c s.ini --json subs
	assert_success
	python -c 'import json, sys; d = json.loads(sys.stdin.read()); assert d["state"] == "connected" and d["received"] == 5, d' <<<"$output"
	gdpub_alive
}

# ackbin LEN and its batch (gdinspect(1) CONTROL PROTOCOL): runs of a
# 16-bit origin length, the origin, a 32-bit count and 64-bit IDs
ackbin() {
	python -c '
import struct, sys
body = b""
for run in sys.argv[1:]:
    o, ids = run.split("=")
    ids = [int(i) for i in ids.split(",")]
    body += struct.pack("<H", len(o)) + o.encode() + struct.pack("<I", len(ids))
    body += b"".join(struct.pack("<Q", i) for i in ids)
sys.stdout.buffer.write(b"ackbin %d\n" % len(body) + body)
' "$@"
}

@test "gdsub: hello 3 and ackbin batches, the key text of ack N still taken; a malformed batch gets an error and the connection closed; gdsub survives" {
	stall
	sock=$(sub_sock)
	o="127.0.0.1:$port"
	# a bare hello is a client of version 2; hello 3 gets 3, hello 9 too
	run ctl_talk "$sock" 3 <<<$'hello\nhello 3\nhello 9'
	assert_success
	assert_output "$(printf 'hello gdsub 2\nhello gdsub 3\nhello gdsub 3')"
	# blocks 1 and 2 in a batch with an unknown one and a stranger's
	run ctl_talk "$sock" 3 < <(ackbin "$o=1,99,2" "elsewhere:1=4")
	assert_success
	assert_line --index 0 'ack 2 2'
	assert_line --index 1 "$o/99	unknown key: no such block is waiting for acknowledgement"
	assert_line --index 2 'elsewhere:1/4	not a publisher of this gdsub'
	# the text form, as an older gdack and scripts send it
	run ctl_talk "$sock" 1 < <(printf 'ack 1\n%s/3\n' "$o")
	assert_success
	assert_output 'ack 1 0'
	wait_until 20 has_line pub.out '^ACK 3$'
	# malformed: a run of no IDs (the connection closed: the hello after
	# it is not answered); a bad length
	run ctl_talk "$sock" < <(printf 'ackbin 7\n\001\000a\000\000\000\000hello\n')
	assert_success
	assert_output 'error malformed ackbin batch: a run of no IDs'
	run ctl_talk "$sock" < <(printf 'ackbin x\n')
	assert_output "error bad batch length in 'ackbin x'"
	# blocks 4 and 5 still wait, and gdsub still takes batches
	run ctl_talk "$sock" 1 < <(ackbin "$o=4,5")
	assert_output 'ack 2 0'
	wait_until 20 has_line pub.out '^ACK 5$'
	run ! has_line pub.out '^NACK'
}

@test "stats counts late acknowledgements; gdsub subs counts snapshot blocks" {
	printf 'GDpub_port=0\nGDpub_numSubs=1\n' > p.ini
	# two blocks NACK after 0.3 s; gdpub stays up with stdin open
	spawn "(printf 'a\nb\n'; sleep 300) | gdpub -c p.ini --port-file pub.port -t 0.3 --snapshot 2 --wait-ready=60 > pub.out 2> pub.err"
	pub_ini p.ini
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.05\nGDsub_maxRetries=400\n' "$port" > s.ini
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.05\nGDsub_maxRetries=400\nGDsub_gd=0\n' "$port" > late.ini
	spawn "exec gdsub -c s.ini > out.txt 2> sub.err"
	wait_until 20 has_lines pub.out 3	# READY, NACK 1, NACK 2
	# acknowledging them now is too late: counted, not an ACK
	run --separate-stderr timeout 20 gdack -c s.ini "127.0.0.1:$port/1" "127.0.0.1:$port/2"
	assert_success
	wait_until 10 bash -c "gdinspect -c p.ini --json stats | grep -q '\"late_acks\":2[,}]'"
	run ! has_line pub.out '^ACK'
	# a late receive-only subscriber gets the two as snapshot blocks
	spawn "exec gdsub -c late.ini > late.txt 2> late.err"
	wait_until 20 has_lines late.txt 2
	run --separate-stderr timeout 20 gdinspect -c late.ini --json subs
	assert_success
	python -c 'import json, sys; d = json.loads(sys.stdin.read()); assert d["snapshot"] == 2 and d["unique"] == 0, d' <<<"$output"
}

# ---- wide columns (issue 26 item 9) ----

# no_nul FILE: FILE has no NUL byte (grep would call it binary)
no_nul() {
	[ "$(tr -dc '\000' < "$1" | wc -c)" -eq 0 ]
}

@test "text tables pad a column wider than 64 with spaces, never a NUL byte: pending, subs at both ends" {
	host=$(printf 'h%.0s' $(seq 90)).example
	name=$(printf 'n%.0s' $(seq 120))
	printf 'GDpub_port=0\nGDpub_numSubs=1\nGDpub_host=%s\n' "$host" > p.ini
	spawn "(printf 'a\nbb\n'; sleep 300) | gdpub -c p.ini --port-file pub.port -t 60 --wait-ready=60 > pub.out 2> pub.err"
	pub_ini p.ini
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.05\nGDsub_maxRetries=400\nGDsub_name=%s\n' "$port" "$name" > s.ini
	spawn "exec gdsub -c s.ini > out.txt 2> sub.err"
	wait_until 60 has_lines out.txt 2
	timeout 30 gdinspect -c p.ini pending > pending.txt
	timeout 30 gdinspect -c p.ini subs > psubs.txt
	timeout 30 gdinspect -c s.ini subs > ssubs.txt
	for f in pending.txt psubs.txt ssubs.txt; do
		no_nul "$f" || { echo "$f has a NUL byte:"; od -c "$f" | head; return 1; }
	done
	# the padding is there, as spaces: the header's next column starts
	# after the widest cell and two spaces
	grep -Eq "^ID +KEY {$(( ${#host} - 3 )),}ACKS" pending.txt
	grep -Eq "^NAME {$(( ${#name} - 4 + 2 ))}ADDRESS" psubs.txt
	grep -Eq "^$name  127\.0\.0\.1:" psubs.txt
	grep -Eq "^PUBLISHER +ORIGIN {$(( ${#host} - 6 + 2 )),}STATE" ssubs.txt
}

@test "decode and journal tables: a wide column has no NUL byte either" {
	# an origin of 250 bytes makes decode's KEY column wide
	printf 'set origin=%s:7001\nblock 1 1 - x\nblock 2 2 - y\n' "$(printf 'o%.0s' $(seq 250))" |
		python "$BATS_TEST_DIRNAME/mkstream.py" > s.gds
	timeout 30 gdinspect decode s.gds > decode.txt
	grep -q "^o\{250\}:7001/2  -  " decode.txt
	no_nul decode.txt
	# a journal with two blocks pending, one of them 300 bytes
	touch cmds
	spawn "exec gdpub -p 0 --port-file pub.port -n 1 -t 60 --journal j.gdj --wait-ready=20 < <(echo x; printf 'p%.0s' \$(seq 300); echo; sleep 60) > st 2> p.err"
	port=$(port_of pub.port)
	spawn "python $BATS_TEST_DIRNAME/fakesub.py 127.0.0.1 $port fake cmds ev 2> fake.err"
	wait_until 20 has_line ev '^block 2 '
	timeout 30 gdinspect journal j.gdj > journal.txt
	grep -q '^2 .*"ppp' journal.txt
	no_nul journal.txt
	echo quit >> cmds
}
