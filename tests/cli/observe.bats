#!/usr/bin/env bats
# Observability (issue 5): gdinspect's typed JSON and documented fields,
# pending acked_by/--sort/--limit, subs in_flight, stats at both ends with
# R and UR, the control protocol's version and who may use a socket,
# gdpub --progress, and -v/-q logging.
bats_require_minimum_version 1.5.0
load helpers

MAN="$BATS_TEST_DIRNAME/../../man/gdinspect.1"
TS='[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}'

# json_ok: every line of stdin is one JSON object
json_ok() {
	python -c '
import json, sys
lines = sys.stdin.read().splitlines()
assert lines, "no output"
for l in lines:
    assert isinstance(json.loads(l), dict), l
'
}

# fields_match SECTION: the --json lines on stdin carry exactly the fields
# that gdinspect(1) documents under ".Ss SECTION", in that order, each of
# the documented type (number: int, float or null; string: str).
fields_match() {
	python -c '
import json, re, sys
section, man = sys.argv[1], open(sys.argv[2]).read().splitlines()
doc, inside = [], False
for l in man:
    if l.startswith(".Ss "):
        inside = l[4:] == section
    elif inside and l.startswith(".It Li "):
        m = re.fullmatch(r"\.It Li ([a-z0-9_]+) Pq (number|string)", l)
        assert m, "undocumented type: %r" % l
        doc.append((m.group(1), m.group(2)))
assert doc, "no fields documented under " + section
for l in sys.stdin.read().splitlines():
    d = json.loads(l)
    assert list(d) == [n for n, _ in doc], (list(d), doc)
    for n, t in doc:
        v = d[n]
        if t == "number":
            assert v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)), (n, v)
        else:
            assert isinstance(v, str), (n, v)
' "$1" "$MAN"
}

# jfield CMD-ARGS... -- PY: run gdinspect --json with CMD-ARGS, evaluate the
# python expression PY over rows (a list of dicts); fails unless true
jcheck() {
	local -a args=()
	while [ "$1" != "--" ]; do args+=("$1"); shift; done
	shift
	local out
	out=$(timeout 30 gdinspect --json "${args[@]}") || return 1
	python -c '
import json, sys
rows = [json.loads(l) for l in sys.argv[2].splitlines()]
ok = eval(sys.argv[1])
if not ok:
    sys.exit("not true: %s\nrows: %s" % (sys.argv[1], rows))
' "$1" "$out"
}

# ids CMD-ARGS...: the ids of `gdinspect --json pending`, comma-separated
ids() {
	timeout 30 gdinspect --json "$@" pending |
		python -c 'import json, sys; print(",".join(str(json.loads(l)["id"]) for l in sys.stdin))'
}

# two_subs: a gdpub (numSubs=2, timeout 60) with GD subscribers named "42"
# and "beta" that hold five blocks with the caller's IDs 5 3 9 1 7; "42"
# then acknowledges 3 and 9. Sets port.
two_subs() {
	printf 'GDpub_port=0\nGDpub_numSubs=2\nGDpub_timeout=60\n' > p.ini
	printf '5\ta\n3\tb\n9\tc\n1\td\n7\te\n' > in.txt
	spawn "(cat in.txt; sleep 300) | gdpub -c p.ini --port-file pub.port -I --wait-ready=60 > pub.out 2> pub.err"
	pub_ini p.ini
	sub_conf a.ini "$port" GDsub_name=42
	sub_conf b.ini "$port" GDsub_name=beta
	spawn "exec gdsub -c a.ini > a.out 2> a.err"
	spawn "exec gdsub -c b.ini > b.out 2> b.err"
	wait_until 30 has_lines a.out 5
	wait_until 30 has_lines b.out 5
	run --separate-stderr timeout 20 gdack -c a.ini "127.0.0.1:$port/3" "127.0.0.1:$port/9"
	assert_success
	wait_until 10 jcheck -c p.ini pending -- 'sum(r["acks"] for r in rows) == 2'
}

@test "pending: acked_by names who acknowledged (a subscriber named 42 stays a string)" {
	two_subs
	run --separate-stderr timeout 30 gdinspect -c p.ini --json pending
	assert_success
	json_ok <<<"$output"
	fields_match 'pending (gdpub)' <<<"$output"
	python -c '
import json, sys
rows = {r["id"]: r for r in map(json.loads, sys.stdin)}
assert sorted(rows) == [1, 3, 5, 7, 9], rows
for i, r in rows.items():
    want = "42" if i in (3, 9) else "-"
    assert r["acked_by"] == want and r["acks"] == (i in (3, 9)) and r["needed"] == 2, r
' <<<"$output"
	run --separate-stderr timeout 30 gdinspect -c p.ini pending
	assert_success
	assert_line --index 0 --regexp '^ID +KEY +ACKS +NEEDED +AGE +EXPIRES_IN +RESENDS +SIZE +ACKED_BY$'
	assert_line --index 2 --regexp "^ 3  127\.0\.0\.1:$port/3 +1 +2 .* 42$"
	assert_line --index 1 --regexp "^ 5  127\.0\.0\.1:$port/5 +0 +2 .* -$"
}

@test "pending --sort age|expires|id|acks and --limit N" {
	two_subs
	assert_equal "$(ids -c p.ini)" "5,3,9,1,7"
	assert_equal "$(ids -c p.ini --sort age)" "5,3,9,1,7"
	assert_equal "$(ids -c p.ini --sort expires)" "5,3,9,1,7"
	assert_equal "$(ids -c p.ini --sort id)" "1,3,5,7,9"
	assert_equal "$(ids -c p.ini --sort acks)" "5,1,7,3,9"
	assert_equal "$(ids -c p.ini --limit 2)" "5,3"
	assert_equal "$(ids -c p.ini --sort id --limit 3)" "1,3,5"
	assert_equal "$(ids -c p.ini --sort acks --limit 4)" "5,1,7,3"
	assert_equal "$(ids -c p.ini --sort id --limit 99)" "1,3,5,7,9"
	# gdpub sends only the rows asked for
	run ctl_talk "$(pub_sock "$port")" 4 <<<'pending sort=id limit=2'
	assert_success
	assert_line --index 0 'pending 2'
	assert_line --index 1 "$(printf 'id:n\tkey:s\tacks:n\tneeded:n\tage:n\texpires_in:n\tresends:n\tsize:n\tacked_by:s')"
	[ "${#lines[@]}" -eq 4 ]
	# text output with the same options
	run --separate-stderr timeout 30 gdinspect -c p.ini --sort id --limit 1 pending
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 1 --regexp "^ 1  127\.0\.0\.1:$port/1 "
}

@test "--sort and --limit: bad values and other commands -> 64" {
	printf 'GDpub_port=7001\n' > p.ini
	expect_usage gdinspect "invalid value 'size' for --sort: expected age, expires, id or acks" -- gdinspect -c p.ini --sort size pending
	expect_usage gdinspect "invalid value '0' for --limit: expected a row count from 1" -- gdinspect -c p.ini --limit 0 pending
	expect_usage gdinspect "invalid value '2x' for --limit: expected a row count from 1" -- gdinspect -c p.ini --limit 2x pending
	expect_usage gdinspect "--sort and --limit apply to pending only, not to subs" -- gdinspect -c p.ini --sort id subs
	expect_usage gdinspect "--sort and --limit apply to pending only, not to stats" -- gdinspect -c p.ini --limit 3 stats
}

@test "subs at a gdpub: in_flight per GD subscriber, a refused third one, documented fields" {
	two_subs
	# a third GD subscriber is refused: numSubs=2 are connected
	sub_conf c.ini "$port" GDsub_name=gamma
	spawn "exec gdsub -c c.ini > c.out 2> c.err"
	wait_until 20 jcheck -c p.ini subs -- 'len(rows) == 3'
	run --separate-stderr timeout 30 gdinspect -c p.ini --json subs
	assert_success
	json_ok <<<"$output"
	fields_match 'subs (gdpub)' <<<"$output"
	python -c '
import json, sys
rows = {r["name"]: r for r in map(json.loads, sys.stdin)}
assert set(rows) == {"42", "beta", "gamma"}, rows
a, b, c = rows["42"], rows["beta"], rows["gamma"]
assert a["gd"] == "yes" and a["state"] == "online" and a["in_flight"] == 3 and a["acks"] == 2, a
assert b["gd"] == "yes" and b["state"] == "online" and b["in_flight"] == 5 and b["acks"] == 0, b
assert c["gd"] == "no" and c["state"] == "refused: numSubs reached" and c["in_flight"] is None, c
for r in rows.values():
    assert r["qos"] == "retryCount=0" and r["failures"] == 0 and r["queue"] == 0, r
    assert r["discarded"] == 0 and r["dropped"] == 0, r
' <<<"$output"
	run --separate-stderr timeout 30 gdinspect -c p.ini subs
	assert_success
	assert_line --index 0 --regexp '^NAME +ADDRESS +GD +STATE +QOS +QUEUE +IN_FLIGHT +FAILURES +ACKS +DISCARDED +DROPPED +TLS$'
	assert_line --regexp '^gamma +127\.0\.0\.1:[0-9]+ +no +refused: numSubs reached +retryCount=0 +0 +- +0 +0 +0 +0 +-$'
	grep -q "gdpub: refused acknowledgement connection from gamma" pub.err
}

@test "stats at a gdpub: NACKs counted, rate and rate_avg, documented fields" {
	printf 'GDpub_port=0\nGDpub_numSubs=1\n' > p.ini
	spawn "(printf 'a\nb\nc\n'; sleep 300) | gdpub -c p.ini --port-file pub.port -t 0.3 --wait-ready=60 > pub.out 2> pub.err"
	pub_ini p.ini
	sub_conf s.ini "$port"
	spawn "exec gdsub -c s.ini > s.out 2> s.err"
	wait_until 20 has_lines pub.out 4	# READY and three NACKs
	run --separate-stderr timeout 30 gdinspect -c p.ini --json stats
	assert_success
	fields_match 'stats (gdpub)' <<<"$output"
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["published"] == 3 and d["nack"] == 3 and d["ack"] == 0 and d["pending"] == 0, d
assert d["uptime"] > 0 and d["rate"] >= 0, d
assert abs(d["rate_avg"] - 3 / d["uptime"]) < 0.2, d
' <<<"$output"
	# nothing published in the last second: the rate falls to 0
	wait_until 10 jcheck -c p.ini stats -- 'rows[0]["rate"] == 0 and rows[0]["uptime"] > 1.5'
}

@test "stats at a gdpub: no latency before the first ACK ('-' in text, null in JSON), microseconds after" {
	printf 'GDpub_port=0\nGDpub_numSubs=1\n' > p.ini
	spawn "(printf 'a\nb\n'; sleep 300) | gdpub -c p.ini --port-file pub.port -t 60 --wait-ready=60 > pub.out 2> pub.err"
	pub_ini p.ini
	sub_conf s.ini "$port"
	spawn "exec gdsub -c s.ini > s.out 2> s.err"	# acks only when told
	wait_until 20 has_lines s.out 2
	run --separate-stderr timeout 30 gdinspect -c p.ini --json stats
	assert_success
	fields_match 'stats (gdpub)' <<<"$output"
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["ack"] == 0 and d["pending"] == 2, d
for f in ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_max_us"):
    assert d[f] is None, (f, d)
' <<<"$output"
	run --separate-stderr timeout 30 gdinspect -c p.ini stats
	assert_success
	assert_line --index 0 --regexp ' LAT_P50_US +LAT_P90_US +LAT_P99_US +LAT_MAX_US +LATE_ACKS +WINDOW +PORT +CONNECTIONS +AUTH_REFUSED +CONN_REFUSED +HANDSHAKE_TIMEOUTS +PASSED_OVER +NACK_PASSED +NACK_ABSENT +NACK_LATE +TLS_REFUSED +NACK_HELD +ACK_RATE +SEAL_FAILED$'
	assert_line --index 1 --regexp " - +- +- +- +0 +[0-9]+ +$port +1 +0 +0 +0 +0 +0 +0 +0 +0 +0 +[0-9.]+ +0\$"
	timeout 20 gdack -c s.ini < s.out
	wait_until 10 has_lines pub.out 3	# READY, ACK 1, ACK 2
	run --separate-stderr timeout 30 gdinspect -c p.ini --json stats
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["ack"] == 2, d
l = [d[f] for f in ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_max_us")]
assert all(isinstance(v, int) and v > 0 for v in l) and l == sorted(l), d
' <<<"$output"
}

@test "stats at a gdsub: R = Ru/S with S from the highest sequence index (a late subscriber missed half)" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -q < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	# three blocks while nobody listens, then a subscriber, then three more
	printf '%s\n' 1 2 3 >&7
	wait_until 10 jcheck --ctl "$(pub_sock "$port")" stats -- 'rows[0]["published"] == 3'
	spawn "exec gdsub -c s.ini > s.out 2> s.err" 7>&-
	wait_until 20 jcheck --ctl "$(pub_sock "$port")" subs -- 'len(rows) == 1 and rows[0]["state"] != "connecting"'
	printf '%s\n' 4 5 6 >&7
	wait_until 20 has_lines s.out 3
	run --separate-stderr timeout 30 gdinspect -c s.ini --json stats
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	fields_match 'stats (gdsub)' <<<"$output"
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
want = {"publishers": 1, "ended": 0, "received": 3, "unique": 3, "duplicates": 0,
        "snapshot": 0, "acked": 0, "unacked": 0, "sent": 6, "reliability": 0.5,
        "uniqueness": 1.0, "lines": None, "frames": None, "bad_lines": None,
        "bad_tags": None, "seal_failed": 0}
assert d == want, d
' <<<"$output"
	run --separate-stderr timeout 30 gdinspect -c s.ini stats
	assert_success
	assert_line --index 0 --regexp '^PUBLISHERS +ENDED +RECEIVED +UNIQUE +DUPLICATES +SNAPSHOT +ACKED +UNACKED +SENT +RELIABILITY +UNIQUENESS +LINES +FRAMES +BAD_LINES +BAD_TAGS +SEAL_FAILED$'
	assert_line --index 1 --regexp '^ +1 +0 +3 +3 +0 +0 +0 +0 +6 +0\.5000 +1\.0000 +- +- +- +- +0$'
	feed_close
	wait_until 10 test -s pub.rc
}

@test "stats at a gdsub: a resent copy is a duplicate, UR = Ru/R = 0.5" {
	printf 'GDpub_port=0\nGDpub_numSubs=1\n' > p.ini
	spawn "(echo a; sleep 300) | gdpub -c p.ini --port-file pub.port -t 0.3 --resend 1 --wait-ready=60 > pub.out 2> pub.err"
	pub_ini p.ini
	sub_conf s.ini "$port"
	spawn "exec gdsub -c s.ini > s.out 2> s.err"
	wait_until 20 has_line pub.out '^NACK 1$'
	run --separate-stderr timeout 30 gdinspect -c s.ini --json stats
	assert_success
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
want = {"received": 2, "unique": 1, "duplicates": 1, "sent": 1, "reliability": 1.0,
        "uniqueness": 0.5, "unacked": 1}
assert {k: d[k] for k in want} == want, d
' <<<"$output"
	run --separate-stderr timeout 30 gdinspect -c s.ini --json subs
	assert_success
	fields_match 'subs (gdsub)' <<<"$output"
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
want = {"state": "connected", "attempts": 0, "ack_conn": "accepted", "received": 2,
        "unique": 1, "duplicates": 1, "acked": 0, "snapshot": 0, "sent": 1}
assert {k: d[k] for k in want} == want, d
' <<<"$output"
}

@test "a gdsub whose publisher refuses connections: subs shows the attempts, stats has no R yet" {
	hold_port port
	sub_conf s.ini "$port"
	spawn "exec gdsub -c s.ini > s.out 2> s.err"
	wait_until 20 jcheck -c s.ini subs -- 'rows[0]["attempts"] >= 2'
	run --separate-stderr timeout 30 gdinspect -c s.ini --json subs
	assert_success
	fields_match 'subs (gdsub)' <<<"$output"
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["origin"] == "-" and d["ack_conn"] == "-" and d["sent"] == 0, d
assert d["state"] in ("waiting", "resolving", "connecting"), d
' <<<"$output"
	run --separate-stderr timeout 30 gdinspect -c s.ini --json stats
	assert_success
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["reliability"] is None and d["uniqueness"] is None and d["received"] == 0, d
' <<<"$output"
	grep -Eq "^gdsub: cannot connect to 127\.0\.0\.1:$port: connection refused \(attempt 2 of 200\)$" s.err
}

@test "--watch repeats the request until interrupted" {
	two_subs
	run --separate-stderr timeout 1.5 gdinspect -c p.ini --watch 0.2 stats
	[ "$status" -eq 124 ]
	[ "$(grep -c '^PUBLISHED ' <<<"$output")" -ge 3 ]
}

# ---- the control protocol ----

PY=python3

@test "protocol version: gdinspect refuses a program of a version it does not speak (69), speaks 2 and 3" {
	PY=$(python -c 'import sys; print(sys.executable)')
	fake_ctl "$BATS_TEST_TMPDIR/old.sock" "hello gdpub 1"
	expect_fail 69 "gdinspect: gdpub at $BATS_TEST_TMPDIR/old.sock speaks control protocol 1, this gdinspect 2 to 3: use programs of the same gdkit version" -- gdinspect --ctl "$BATS_TEST_TMPDIR/old.sock" stats
	fake_ctl "$BATS_TEST_TMPDIR/newer.sock" "hello gdpub 4"
	expect_fail 69 "gdinspect: gdpub at $BATS_TEST_TMPDIR/newer.sock speaks control protocol 4, this gdinspect 2 to 3: use programs of the same gdkit version" -- gdinspect --ctl "$BATS_TEST_TMPDIR/newer.sock" stats
	# version 2 (a gdpub of the release before) and 3 are both spoken
	for v in 2 3; do
		fake_ctl "$BATS_TEST_TMPDIR/v$v.sock" "hello gdpub $v"
		run --separate-stderr timeout 10 gdinspect --ctl "$BATS_TEST_TMPDIR/v$v.sock" --json stats
		assert_success
		assert_output '{"x":1}'
	done
}

@test "a client that half-closes after its request still gets the whole reply (20000 pending rows)" {
	spawn "(seq 1 40000; sleep 300) | gdpub -p 0 --port-file pub.port -n 1 -t 600 -q --wait-ready=10 > pub.out 2> pub.err"
	port=$(port_of pub.port)
	# the pipeline acknowledges the even blocks only: the window grows
	# with their ACKs while the 20000 odd ones stay pending
	spawn "gdsub -P 127.0.0.1:$port --retry-interval 0.05 --max-retries 200 2> sub.err |
		sed -u -n 'n;p' | gdack -P 127.0.0.1:$port 2> ack.err"
	wait_until 30 jcheck --ctl "$(pub_sock "$port")" stats -- 'rows[0]["pending"] == 20000 and rows[0]["ack"] == 20000'
	run python -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(20)
s.connect(sys.argv[1])
s.sendall(b"pending sort=id\n")
s.shutdown(socket.SHUT_WR)	# as printf ... | socat does
got = b""
while True:
    b = s.recv(1 << 16)
    if not b:
        break
    got += b
lines = got.decode().splitlines()
assert lines[0] == "pending 20000", lines[:2]
assert len(lines) == 20002, len(lines)
assert lines[-1].startswith("39999\t"), lines[-1]
print("ok")
' "$(pub_sock "$port")"
	assert_success
	assert_output ok
}

# other users: tests run as root; `nobody` acts through setpriv
as_nobody_ok() {
	[ "$(id -u)" -eq 0 ] || skip "needs root to act as another user"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 for the nobody user"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	RUNAS="setpriv --reuid=$(id -u nobody) --regid=$(id -g nobody) --clear-groups"
	$RUNAS true || skip "setpriv cannot switch users here"
	PY=/usr/bin/python3
	# nobody must be able to reach this test's directory
	local d=$BATS_TEST_TMPDIR
	while [ "$d" != / ] && [ "$d" != /tmp ]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
}

@test "gdpub serves only its own uid and root: another user's request is refused, gdpub goes on" {
	as_nobody_ok
	mkdir -m 711 ctl
	spawn "sleep 300 | gdpub -p 0 --port-file pub.port --ctl $BATS_TEST_TMPDIR/ctl/pub.sock > pub.out 2> pub.err"
	port=$(port_of pub.port)
	wait_until 10 test -S ctl/pub.sock
	chmod 666 ctl/pub.sock	# as if --ctl had put it where others can write
	run $RUNAS $PY -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
try:
    s.sendall(b"hello\nstats\n")
except (BrokenPipeError, ConnectionResetError):
    pass	# refused already: the reply is waiting
got = b""
while True:
    try:
        b = s.recv(4096)
    except ConnectionResetError:
        break
    if not b:
        break
    got += b
sys.stdout.write(got.decode())
' "$BATS_TEST_TMPDIR/ctl/pub.sock"
	assert_success
	assert_output "error permission denied: uid $(id -u nobody) may not use this socket, only root"
	grep -Eq "^gdpub: warning: refused a control connection from uid $(id -u nobody) \(pid [0-9]+\): only root may connect$" pub.err
	run --separate-stderr timeout 10 gdinspect --ctl "$BATS_TEST_TMPDIR/ctl/pub.sock" --json stats
	assert_success
	json_ok <<<"$output"
}

@test "gdinspect and gdack refuse a socket that belongs to another user (69)" {
	as_nobody_ok
	mkdir -m 1777 pub
	fake_ctl "$BATS_TEST_TMPDIR/pub/s.sock" "hello gdpub 2"
	[ "$(stat -c %U pub/s.sock)" = nobody ]
	expect_fail 69 "gdinspect: refusing control socket $BATS_TEST_TMPDIR/pub/s.sock: it belongs to nobody (uid $(id -u nobody)) and you are root (uid 0)" -- gdinspect --ctl "$BATS_TEST_TMPDIR/pub/s.sock" stats
	expect_fail 69 "gdack: refusing control socket $BATS_TEST_TMPDIR/pub/s.sock: it belongs to nobody (uid $(id -u nobody)) and you are root (uid 0)" -- gdack --ctl "$BATS_TEST_TMPDIR/pub/s.sock" 127.0.0.1:1/1
	# the file handed over to root: the program behind it still is nobody's
	chown root pub/s.sock
	expect_fail 69 "gdinspect: refusing control socket $BATS_TEST_TMPDIR/pub/s.sock: the program serving it runs as nobody (uid $(id -u nobody)) and you are root (uid 0)" -- gdinspect --ctl "$BATS_TEST_TMPDIR/pub/s.sock" stats
	expect_fail 69 "gdack: refusing control socket $BATS_TEST_TMPDIR/pub/s.sock: the program serving it runs as nobody (uid $(id -u nobody)) and you are root (uid 0)" -- gdack --ctl "$BATS_TEST_TMPDIR/pub/s.sock" 127.0.0.1:1/1
}

@test "gdinspect refuses a socket in another user's directory (69)" {
	as_nobody_ok
	mkdir -m 700 theirs
	RUNAS= PY=$(python -c 'import sys; print(sys.executable)') fake_ctl "$BATS_TEST_TMPDIR/theirs/s.sock" "hello gdpub 2"
	run --separate-stderr timeout 10 gdinspect --ctl "$BATS_TEST_TMPDIR/theirs/s.sock" --json stats
	assert_success
	chown nobody theirs
	expect_fail 69 "gdinspect: refusing control socket $BATS_TEST_TMPDIR/theirs/s.sock: its directory $BATS_TEST_TMPDIR/theirs belongs to nobody (uid $(id -u nobody)), neither to you, root (uid 0), nor to root" -- gdinspect --ctl "$BATS_TEST_TMPDIR/theirs/s.sock" stats
}

# ---- gdpub --progress ----

# status_lines FILE: check that FILE (gdpub's stderr) holds status lines
# drawn in place and erased at the end; print how many were drawn
status_lines() {
	python -c '
import re, sys
data = open(sys.argv[1], "rb").read().decode()
assert data.endswith("\r\x1b[K"), repr(data[-80:])
parts = [p for p in data.split("\r\x1b[K") if p]
for p in parts:
    assert re.fullmatch(r"gdpub: \d+ read, \d+ ACK, \d+ NACK, \d+ pending, \d+ read/s, \d+ ACK/s", p), repr(p)
print(len(parts))
' "$1"
}

@test "gdpub --progress on a pipe: status lines at most 4 a second, erased at exit" {
	feed_open in.fifo
	t0=$(date +%s.%N)
	spawn "gdpub -p 0 --port-file pub.port -q --progress < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	printf '%s\n' 1 2 3 >&7
	wait_until 10 has_line pub.err 'gdpub: 3 read, 0 ACK, 0 NACK, 0 pending, [0-9]+ read/s, [0-9]+ ACK/s'
	wait_until 10 jcheck --ctl "$(pub_sock "$port")" stats -- 'rows[0]["uptime"] > 1.2'
	feed_close
	wait_until 10 test -s pub.rc
	t1=$(date +%s.%N)
	assert_equal "$(cat pub.rc)" 0
	n=$(status_lines pub.err)
	python -c 'import sys; n, t = int(sys.argv[1]), float(sys.argv[3]) - float(sys.argv[2]); assert 2 <= n <= 4 * t + 1, (n, t)' "$n" "$t0" "$t1"
}

# For logs (issue 26): before, --progress drew only a line redrawn in
# place, and took no interval.
@test "gdpub --progress=SECONDS: a whole line every SECONDS on stderr, also at -q and without a terminal; bad values 64" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -q --progress=0.5 < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	printf '%s\n' 1 2 3 >&7
	wait_until 20 lines_at_least pub.err 3
	feed_close
	wait_until 10 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	# whole lines, no carriage return or terminal escape, and each of the
	# documented form, the times growing by about 0.5 s
	run ! grep -q $'[\r\033]' pub.err
	python -c '
import re, sys
lines = open("pub.err").read().splitlines()
pat = re.compile(r"gdpub: progress: (\d+\.\d) s, (\d+) read, (\d+) ACK, (\d+) NACK, (\d+) REJECT, (\d+) pending, \d+ read/s, \d+ ACK/s")
ts = []
for l in lines:
    m = pat.fullmatch(l)
    assert m, l
    ts.append(float(m.group(1)))
assert len(ts) >= 3 and ts == sorted(ts), ts
assert all(t2 - t1 >= 0.45 for t1, t2 in zip(ts, ts[1:])), ts
assert ts[0] >= 0.45, ts
assert "3 read" in lines[-1], lines
'
	expect_usage gdpub "invalid value '0.1' for --progress: expected seconds from 0.25" -- gdpub -p 1 --progress=0.1
	expect_usage gdpub "invalid value 'x' for --progress: expected seconds from 0.25" -- gdpub -p 1 --progress=x
}

# The ACK rate beside the read rate (issue 32): with all the input read
# and the window full, the one rate it showed (blocks published per
# second) read 0 while the ACKs flowed.
@test "gdpub --progress=SECONDS shows ACK/s: ACKs flowing while nothing more is read" {
	seq 1 2000 > in.txt
	pub_bg --separate-stderr timeout 60 gdpub -p 0 --port-file pub.port -n 1 --window 2000 --progress=0.25 --wait-ready=10 < in.txt
	spawn "gdsub -P 127.0.0.1:$port --name s --retry-interval 0.05 --max-retries 200 2> s.err |
		$(python_bin) $BATS_TEST_DIRNAME/throttle.py 400 |
		gdack -P 127.0.0.1:$port --name s > /dev/null 2> a.err"
	pub_wait
	assert_success
	# a line after the input was all read (2000 read, 0 read/s), while
	# the 2,000 were still being ACKed at 400/s
	python -c '
import re, sys
pat = re.compile(r"gdpub: progress: [\d.]+ s, 2000 read, (\d+) ACK, 0 NACK, 0 REJECT, (\d+) pending, 0 read/s, (\d+) ACK/s")
seen = [m for m in map(pat.fullmatch, sys.stdin.read().splitlines()) if m]
assert any(0 < int(m.group(1)) < 2000 and int(m.group(3)) >= 100 for m in seen), seen
' <<<"$stderr"
}

# ontty.py OUT CMD: run the shell command CMD with its stderr on a new
# terminal; what it writes there goes to OUT
write_ontty_py() {
	cat > ontty.py <<'EOF'
import os, pty, subprocess, sys
m, s = pty.openpty()
p = subprocess.Popen(["bash", "-c", sys.argv[2]], stderr=s)
os.close(s)
with open(sys.argv[1], "wb") as out:
    while True:
        try:
            b = os.read(m, 4096)
        except OSError:
            break
        if not b:
            break
        out.write(b)
        out.flush()
sys.exit(p.wait())
EOF
}

@test "gdpub on a terminal shows progress by default; --no-progress and -q hide it; a pipe never gets it" {
	write_ontty_py
	py=$(python -c 'import sys; print(sys.executable)')
	for mode in tty no-progress quiet pipe; do
		rm -f in.fifo pub.rc pub.port
		feed_open in.fifo
		case $mode in
		tty) spawn "$py ontty.py pub.err 'gdpub -p 0 --port-file pub.port < in.fifo > pub.out'; echo \$? > pub.rc" 7>&- ;;
		no-progress) spawn "$py ontty.py pub.err 'gdpub -p 0 --port-file pub.port --no-progress < in.fifo > pub.out'; echo \$? > pub.rc" 7>&- ;;
		quiet) spawn "$py ontty.py pub.err 'gdpub -p 0 --port-file pub.port -q < in.fifo > pub.out'; echo \$? > pub.rc" 7>&- ;;
		pipe) spawn "gdpub -p 0 --port-file pub.port < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&- ;;
		esac
		port=$(port_of pub.port)
		printf '%s\n' 1 2 >&7
		wait_until 10 jcheck --ctl "$(pub_sock "$port")" stats -- 'rows[0]["published"] == 2 and rows[0]["uptime"] > 0.8'
		feed_close
		wait_until 10 test -s pub.rc
		assert_equal "$(cat pub.rc)" 0
		if [ "$mode" = tty ]; then
			has_line pub.err 'gdpub: 2 read, 0 ACK, 0 NACK, 0 pending, [0-9]+ read/s, [0-9]+ ACK/s'
			# erased at exit: the terminal is left with the warning alone
			# (the pty ends lines with \r\n; $(...) drops the \n)
			[[ "$(cat pub.err)" == *$'\r\e[Kgdpub: warning: 2 of 2 blocks were published while no subscriber was connected\r' ]]
		else
			if grep -q $'ACK/s\|\r\e' pub.err; then
				echo "$mode: a status line on stderr"; return 1
			fi
		fi
	done
}

# ---- logging ----

@test "gdpub -v: a subscriber's connect and disconnect, with timestamps" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -v < in.fifo > pub.out 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port" GDsub_name=watcher
	spawn "exec gdsub -c s.ini > s.out 2> s.err" 7>&-
	subpid=$SPAWNED
	wait_until 10 has_line pub.err "^$TS gdpub: subscriber watcher \(127\.0\.0\.1:[0-9]+\) connected: GD slot 0, 1 of 1$"
	kill -TERM "$subpid"
	# a GD subscriber leaving mid-stream is a warning (timestamped at -v)
	wait_until 10 has_line pub.err "^$TS gdpub: warning: GD subscriber watcher \(127\.0\.0\.1:[0-9]+\) disconnected: unsubscribed; 0 of 1 connected, 0 blocks pending$"
	has_line pub.err "^$TS gdpub: listening on 127\.0\.0\.1:$port, numSubs=1"
	feed_close
	wait_until 10 test -s pub.rc
	# every line of -v output carries a timestamp
	run grep -Evc "^$TS gdpub: " pub.err
	assert_output 0
}

@test "gdsub -v: each connection attempt and retry, with timestamps; the lost publisher too" {
	hold_port port
	sub_conf s.ini "$port"
	spawn "exec gdsub -c s.ini -v > s.out 2> s.err"
	wait_until 10 has_line s.err "^$TS gdsub: connecting to publisher 127\.0\.0\.1:$port \(attempt 2\)$"
	has_line s.err "^$TS gdsub: connecting to publisher 127\.0\.0\.1:$port \(attempt 1\)$"
	has_line s.err "^$TS gdsub: cannot connect to 127\.0\.0\.1:$port: connection refused \(attempt 1 of 200\)$"
	spawn "sleep 300 | exec gdpub -p $port -n 1 > pub.out 2> pub.err"
	pubgrp=$SPAWNED
	wait_until 10 has_line s.err "^$TS gdsub: connected to publisher 127\.0\.0\.1:$port \(127\.0\.0\.1:$port\), acknowledgements accepted$"
	kill -KILL -- "-$pubgrp"
	wait_until 10 has_line s.err "^$TS gdsub: lost connection to publisher 127\.0\.0\.1:$port: .*; reconnecting$"
}

@test "without -v no line has a timestamp: gdpub's first-SIGTERM message starts with its name" {
	feed_open in.fifo
	spawn "exec gdpub -p 0 --port-file pub.port < in.fifo > pub.out 2> pub.err" 7>&-
	port=$(port_of pub.port)
	pid=$SPAWNED
	wait_until 10 listening "$port"
	kill -TERM "$pid"
	wait_until 10 has_line pub.err 'SIGTERM'
	wait_pid 10 "$pid"
	# the message itself is gdpub's to word; no line may start with a time
	has_line pub.err '^gdpub: SIGTERM: '
	run grep -Ec "^$TS" pub.err
	assert_output 0
}

@test "-q: warnings hidden, errors kept" {
	run --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port <<<'a'
	assert_success
	assert_equal "$stderr" "gdpub: warning: 1 of 1 blocks were published while no subscriber was connected"
	run --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -q <<<'a'
	assert_success
	assert_equal "$stderr" ""
	# an error still shows under -q
	run --separate-stderr timeout 20 gdpub -p 0 --port-file pub.port -q --max-block-size 1 <<<'toolong'
	assert_failure 1
	assert_equal "$stderr" "gdpub: REJECT 1: block larger than GDpub_maxBlockSize (1 bytes)"
}

# prom FILE: the exposition in FILE read by the Prometheus client's own
# parser (Debian's python3-prometheus-client), one "name{labels} value"
# line per sample, sorted; fails on anything the parser refuses
prom() {
	/usr/bin/python3 - "$1" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    assert fam.documentation, fam.name
    for s in fam.samples:
        labels = ",".join('%s="%s"' % kv for kv in sorted(s.labels.items()))
        out.append("%s{%s} %g" % (s.name, labels, s.value))
print("\n".join(sorted(out)))
PY
}

@test "stats --format prometheus at a gdpub and a gdsub: the text exposition format, read back by a real parser, with the run's counts" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 1 -t 30 < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini 2> sub.err | sed -u '/^[^\t]*\t13$/d' | gdack -c s.ini > /dev/null 2> ack.err" 7>&-
	wait_until 10 has_line st '^READY$'
	seq 1 1000 >&7
	wait_until 10 bash -c "[ \$(grep -c '^ACK ' st) -eq 999 ]"
	run --separate-stderr timeout 10 gdinspect -p "$port" --format prometheus stats
	assert_success
	printf '%s\n' "$output" > pub.prom
	run prom pub.prom
	assert_success
	assert_line 'gdkit_pub_published_total{} 1000'
	assert_line 'gdkit_pub_acked_total{} 999'
	assert_line 'gdkit_pub_pending{} 1'
	assert_line 'gdkit_pub_passed_over{} 1'
	assert_line --regexp '^gdkit_pub_subscriber_acks_total\{name="[^"]+"\} 999$'
	assert_line 'gdkit_pub_ack_latency_seconds_count{} 999'
	assert_line --regexp '^gdkit_pub_ack_latency_seconds_bucket\{le="\+Inf"\} 999$'
	assert_line --regexp '^gdkit_pub_ack_latency_seconds_sum\{\} [0-9.e+-]+$'
	# the TYPE lines
	grep -qx '# TYPE gdkit_pub_ack_latency_seconds histogram' pub.prom
	grep -qx '# TYPE gdkit_pub_pending gauge' pub.prom
	grep -qx '# TYPE gdkit_pub_acked_total counter' pub.prom
	run --separate-stderr timeout 10 gdinspect -c s.ini --format prometheus stats
	assert_success
	printf '%s\n' "$output" > sub.prom
	run prom sub.prom
	assert_success
	assert_line 'gdkit_sub_received_total{} 1000'
	assert_line 'gdkit_sub_acked_total{} 999'
	assert_line 'gdkit_sub_unacked{} 1'
	assert_line "gdkit_sub_publisher_received_total{publisher=\"127.0.0.1:$port\"} 1000"
	feed_close
}

@test "stats --format prometheus --watch N --output FILE: FILE rewritten whole every N seconds; bad uses refused" {
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	spawn "exec gdinspect -p $port --format prometheus --watch 0.2 --output m.prom stats 2> w.err" 7>&-
	wait_until 10 test -s m.prom
	run prom m.prom
	assert_success
	assert_line 'gdkit_pub_published_total{} 0'
	seq 1 5 >&7
	wait_until 10 bash -c "grep -qx 'gdkit_pub_published_total 5' m.prom"
	run prom m.prom
	assert_success
	assert_line 'gdkit_pub_published_total{} 5'
	expect_usage gdinspect "--format prometheus applies to stats only, not to pending" -- gdinspect -p "$port" --format prometheus pending
	expect_usage gdinspect "--output applies to --format prometheus only" -- gdinspect -p "$port" --output x stats
	expect_usage gdinspect "invalid value 'xml' for --format: expected text, json or prometheus" -- gdinspect -p "$port" --format xml stats
	feed_close
}
