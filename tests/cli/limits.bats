#!/usr/bin/env bats
# What a peer can cost gdpub: a handshake must end within 5 seconds (a
# silent or byte-a-second client is closed), GDpub_maxConnections caps
# the connections (those beyond are closed at accept), and a flood of
# connections and acknowledgements for unknown IDs does not grow memory.
# A subscriber name is at most the 255 bytes the handshake carries.
load helpers
bats_require_minimum_version 1.5.0

# pub_with PORT OPTS...: spawn a gdpub -n 1 on PORT (0: one the system
# picks) that keeps running, stderr in pub.err; wait until it listens.
# Sets port, and PUB (its group's leader).
pub_with() {
	rm -f pub.port
	spawn "sleep 120 | gdpub -p $1 --port-file pub.port -n 1 ${*:2} > pub.out 2> pub.err"
	PUB=$SPAWNED
	port=$(port_of pub.port)
}

# welcomed PORT: a receive-only hello (version 4, no key, sealed) to the
# gdpub on PORT gets its WELCOME
welcomed() {
	python - "$1" <<'PY'
import os, socket, struct, sys
import gdwire
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
b = gdwire.hello_body("probe", gd=0, want=0, nonce=os.urandom(32))
s.sendall(gdwire.Seal("crc").wrap(gdwire.frame(gdwire.F_HELLO, b)))
h = s.recv(8)
sys.exit(0 if len(h) == 8 and h[4] == 2 else 1)
PY
}

# stat_is PORT FIELD N: gdinspect stats at the gdpub on PORT shows FIELD N
stat_is() {
	timeout 10 gdinspect -p "$1" --json stats | grep -q "\"$2\":$3[,}]"
}

@test "a client that sends nothing, or a byte a second, is closed 5 s after connecting, logged and counted" {
	pub_with 0
	run --separate-stderr python - "$port" <<'PY'
import os, socket, struct, sys, threading, time
port = int(sys.argv[1])
import gdwire
# a hello without its seal: never acted on
hello = gdwire.frame(gdwire.F_HELLO, gdwire.hello_body("slow", nonce=os.urandom(32)))
res = {}
def client(name, trickle):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    t0 = time.monotonic()
    s.settimeout(1)
    i = 0
    while True:
        if trickle and i < len(hello):
            try:
                s.send(hello[i:i + 1])
            except OSError:
                pass
            i += 1
        try:
            if s.recv(1) == b"":
                break
        except socket.timeout:
            continue
        except OSError:
            break
        if time.monotonic() - t0 > 15:
            break
    res[name] = time.monotonic() - t0
ts = [threading.Thread(target=client, args=(n, n == "trickle")) for n in ("silent", "trickle")]
for t in ts: t.start()
for t in ts: t.join()
for n in ("silent", "trickle"):
    print(n, "closed" if 4.5 <= res[n] <= 8 else "after %.2f s" % res[n])
PY
	assert_success
	assert_output "$(printf 'silent closed\ntrickle closed')"
	wait_until 5 stat_is "$port" handshake_timeouts 2
	[ "$(count_lines pub.err '^gdpub: warning: closed connection from 127\.0\.0\.1:[0-9]+: no handshake within 5 seconds$')" -eq 2 ]
	stat_is "$port" connections 0
}

@test "GDpub_maxConnections: connections beyond it are closed at accept, logged and counted; the limit frees up" {
	pub_with 0 --max-connections 3
	run --separate-stderr python - "$port" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
def closed_within(s, sec):
    s.settimeout(sec)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
time.sleep(0.2)	# accepted in order
extra = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
print("extra", [closed_within(s, 2) for s in extra])
print("held", [closed_within(s, 0.2) for s in held])
PY
	assert_success
	assert_output "$(printf 'extra [True, True]\nheld [False, False, False]')"
	stat_is "$port" conn_refused 2
	# one line a second at most: the first refusal's
	[ "$(count_lines pub.err '^gdpub: warning: refused connection from 127\.0\.0\.1:[0-9]+: 3 connections already \(GDpub_maxConnections=3\); 1 refused so far$')" -eq 1 ]
	# the held ones were closed by the script's end: a subscriber gets in
	wait_until 10 stat_is "$port" connections 0
	welcomed "$port"
	stat_is "$port" conn_refused 2
}

@test "--max-connections and GDpub_maxConnections take 1 to 65536" {
	expect_usage gdpub "invalid value '0' for --max-connections: expected an integer from 1 to 65536" \
	    -- gdpub -p 1 --max-connections 0
	printf 'GDpub_port=1\nGDpub_maxConnections=65537\n' > p.ini
	expect_fail 78 "gdpub: p.ini:2: GDpub_maxConnections: invalid value '65537': expected an integer from 1 to 65536" \
	    -- gdpub -c p.ini
}

@test "a 5 s flood of connections, handshakes and acks for unknown IDs: gdpub's RSS grows less than 64 MiB and it still serves" {
	echo "$(head -c 32 /dev/urandom | base64)" > k
	chmod 600 k
	pub_with 0 --auth-key-file k
	pid=$(pgrep -s "$PUB" -x gdpub)
	[ -n "$pid" ]
	run --separate-stderr timeout 60 python "$BATS_TEST_DIRNAME/flood.py" \
	    127.0.0.1 "$port" 5 --pid "$pid" --key k --churn 2 --idle 32
	assert_success
	echo "$output" >&3
	[[ "$output" =~ rss_kib\ start=([0-9]+)\ peak=([0-9]+)\ end=([0-9]+) ]]
	start=${BASH_REMATCH[1]} peak=${BASH_REMATCH[2]} end=${BASH_REMATCH[3]}
	[ $((peak - start)) -lt 65536 ]
	[ $((end - start)) -lt 65536 ]
	# the unknown acks were read and counted, nothing else
	timeout 10 gdinspect -p "$port" --json stats | grep -Eq '"late_acks":[1-9][0-9]*,'
	stat_is "$port" pending 0
	kill -0 "$pid"
	run --separate-stderr python "$BATS_TEST_DIRNAME/flood.py" 127.0.0.1 \
	    "$port" 0.5 --key k --name after --churn 0 --idle 0
	assert_success
}

# two_subs_ready A B: gdsub -c A.ini and -c B.ini (ack pipelines), both
# GD subscribers of the gdpub -n 2 that pub_bg started: it gets READY and
# ACKs 3 blocks
two_subs_ready() {
	ack_pipeline "$1"
	ack_pipeline "$2"
	pub_wait
	assert_success
	assert_output "$(printf 'READY\nACK 1\nACK 2\nACK 3')"
	[ -z "$stderr" ]
}

@test "a subscriber name over 255 bytes (what the handshake carries) is refused at start: 64 as --name, 78 as GDsub_name" {
	local n256 n254
	n256=$(printf 'n%.0s' $(seq 256))
	expect_usage gdsub "invalid value '$n256' for --name: a subscriber name has at most 255 bytes" \
	    -- gdsub -P 127.0.0.1:1 --name "$n256"
	# gdack finds gdsub by the same name: the same limit
	expect_usage gdack "invalid value '$n256' for --name: a subscriber name has at most 255 bytes" \
	    -- gdack -P 127.0.0.1:1 --name "$n256"
	printf 'GDsub_pub=127.0.0.1:1\nGDsub_name=%s\n' "$n256" > s.ini
	expect_fail 78 "gdsub: s.ini:2: GDsub_name: invalid value '${n256:0:64}...' (256 bytes): a subscriber name has at most 255 bytes" \
	    -- gdsub -c s.ini
	expect_fail 78 "gdack: s.ini:2: GDsub_name: invalid value '${n256:0:64}...' (256 bytes): a subscriber name has at most 255 bytes" \
	    -- gdack -c s.ini
	# 255 bytes travel whole: names that differ in their last byte are
	# two GD subscribers, not one "already connected"
	seq 1 3 > in.txt
	pub_bg --separate-stderr timeout 60 gdpub -p 0 --port-file pub.port -n 2 --wait-ready=30 < in.txt
	n254=$(printf 'n%.0s' $(seq 254))
	sub_conf a.ini "$port" "GDsub_name=${n254}a"
	sub_conf b.ini "$port" "GDsub_name=${n254}b"
	two_subs_ready a b
}

@test "derived subscriber names over 255 bytes (a deep config path) stay distinct: two configs in one directory are two GD subscribers" {
	local dir n names
	dir="$BATS_TEST_TMPDIR/$(printf 'd%.0s' $(seq 200))/$(printf 'e%.0s' $(seq 100))"
	mkdir -p "$dir"
	cd "$dir"
	spawn "{ seq 1 3; sleep 60; } | gdpub -p 0 --port-file pub.port -n 2 --wait-ready=30 > p.out 2> p.err"
	port=$(port_of pub.port)
	# the same keys, no GDsub_name: the names are HOST:PATH, alike in
	# their first 255 bytes
	sub_conf a.ini "$port"
	sub_conf b.ini "$port"
	ack_pipeline a
	ack_pipeline b
	wait_until 30 file_is p.out "$(printf 'READY\nACK 1\nACK 2\nACK 3')"
	[ ! -s p.err ]
	# each name fits the handshake: its start, '~' and a hash of the whole
	run --separate-stderr timeout 10 gdinspect -p "$port" --json subs
	assert_success
	names=$(grep -o '"name":"[^"]*"' <<<"$output" | sort -u)
	[ "$(wc -l <<<"$names")" -eq 2 ]
	while read -r n; do
		n=${n#\"name\":\"}
		n=${n%\"}
		[ "${#n}" -eq 255 ]
		[[ "$n" == "$(hostname):$BATS_TEST_TMPDIR/"* ]]
		[[ "$n" =~ ~[0-9a-f]{16}$ ]]
	done <<<"$names"
}

# maxrss FILE: the peak resident set (KiB) that /usr/bin/time -v wrote
maxrss() {
	sed -n 's/.*Maximum resident set size (kbytes): //p' "$1"
}

@test "a 64 MiB block: gdpub and gdsub each peak under 1.5 times its size (plus 8 MiB), not twice it; the block arrives whole" {
	[ -x /usr/bin/time ] || skip "/usr/bin/time is not installed"
	{ head -c 67108864 /dev/zero | tr '\0' b; echo; } > big.txt
	pub_bg --separate-stderr /usr/bin/time -v -o pub.time gdpub -p 0 --port-file pub.port -n 1 -t 120 --max-block-size 70000000 --wait-ready=60 < big.txt
	spawn "/usr/bin/time -v -o sub.time gdsub -P 127.0.0.1:$port --max-block-size 70000000 2> sub.err | gdack -P 127.0.0.1:$port --tee > s.out 2> ack.err; echo \${PIPESTATUS[*]} > s.rc"
	pub_wait 120
	assert_success
	assert_output "$(printf 'READY\nACK 1')"
	wait_until 60 file_is s.rc "0 0"
	[ "$(cut -f2 s.out | wc -c)" -eq 67108865 ]
	# before: about 133,000 KiB each (the payload copied into a send
	# batch, and into gdsub's output buffer); now about 70,000
	bound=$((65536 * 3 / 2 + 8192))
	echo "# max RSS (KiB): gdpub $(maxrss pub.time), gdsub $(maxrss sub.time); bound $bound" >&3
	[ "$(maxrss pub.time)" -lt "$bound" ]
	[ "$(maxrss sub.time)" -lt "$bound" ]
}

@test "a 16 MiB block with a key: written from where it was read, under one MAC seal over its head and payload; it arrives whole and neither side holds it twice" {
	[ -x /usr/bin/time ] || skip "/usr/bin/time is not installed"
	echo "$(head -c 32 /dev/urandom | base64)" > k
	chmod 600 k
	{ head -c 16777216 /dev/zero | tr '\0' m; echo; } > big.txt
	pub_bg --separate-stderr /usr/bin/time -v -o pub.time gdpub -p 0 --port-file pub.port -n 1 -t 120 --auth-key-file k --max-block-size 20000000 --wait-ready=60 < big.txt
	spawn "/usr/bin/time -v -o sub.time gdsub -P 127.0.0.1:$port --auth-key-file k --max-block-size 20000000 2> sub.err | gdack -P 127.0.0.1:$port --tee > s.out 2> ack.err; echo \${PIPESTATUS[*]} > s.rc"
	pub_wait 120
	assert_success
	assert_output "$(printf 'READY\nACK 1')"
	wait_until 60 file_is s.rc "0 0"
	[ "$(cut -f2 s.out | wc -c)" -eq 16777217 ]
	[ "$(cut -f2 s.out | tr -d m | wc -c)" -eq 1 ]
	bound=$((16384 * 3 / 2 + 8192 + 8192))	# the libcrypto in both
	echo "# max RSS (KiB): gdpub $(maxrss pub.time), gdsub $(maxrss sub.time); bound $bound" >&3
	if grep -q __asan_init "$GDKIT_BIN/gdsub"; then
		# ASan's quarantine keeps freed buffers resident a while
		bound=$((bound + 65536))
	fi
	[ "$(maxrss pub.time)" -lt "$bound" ]
	[ "$(maxrss sub.time)" -lt "$bound" ]
}
