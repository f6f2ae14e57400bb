#!/usr/bin/env bats
# GDpub_authKeyFile and GDsub_authKeyFile: the mutual challenge-response
# of every gdpub-gdsub connection (wire protocol version 3), the refusals
# on either side, and the key file checks.
load helpers
bats_require_minimum_version 1.5.0

# mkkey FILE [MODE]: a fresh random key in FILE, mode 600 unless MODE
mkkey() {
	head -c 32 /dev/urandom | base64 > "$1"
	chmod "${2:-600}" "$1"
}

# pub_with PORT OPTS...: spawn a gdpub -n 1 on PORT (0: one the system
# picks) that keeps running (its input stays open), stderr in pub.err;
# wait until it listens. Sets port.
pub_with() {
	rm -f pub.port
	spawn "sleep 120 | gdpub -p $1 --port-file pub.port -n 1 ${*:2} > pub.out 2> pub.err"
	port=$(port_of pub.port)
}

# auth_refused_is PORT N: gdinspect stats at the gdpub on PORT counts N
# refused authentications
auth_refused_is() {
	timeout 10 gdinspect -p "$1" --json stats | grep -q "\"auth_refused\":$2[,}]"
}

# sub_refused PORT WHY SUB-OPTS...: gdsub with SUB-OPTS, which could try
# 10 times, gives up on the gdpub on PORT at its first refusal for WHY, a
# key that no retry can change: one line, exit 77
sub_refused() {
	local port=$1 why=$2
	shift 2
	expect_fail 77 \
	    "gdsub: cannot connect to 127.0.0.1:$port: $why; giving up at once: retrying cannot help" \
	    -- gdsub -P "127.0.0.1:$port" --name s1 --retry-interval 0.05 \
	    --max-retries 10 "$@"
}

# pub_refusals_are PORT N REGEX: the gdpub on PORT counted N refused
# authentications and logged them: N lines of pub.err, each matching REGEX
pub_refusals_are() {
	wait_until 10 auth_refused_is "$1" "$2"
	wait_until 10 test "$(count_lines pub.err "$3")" -ge "$2"
	[ "$(count_lines pub.err "$3")" -eq "$2" ]
	[ "$(wc -l < pub.err)" -eq "$2" ]
	auth_refused_is "$1" "$2"
}

@test "the same key on both sides: blocks reach a GD pipeline and are ACKed, nothing refused" {
	mkkey k
	seq 1 5 > in.txt
	pub_bg --separate-stderr timeout 30 gdpub -p 0 --port-file pub.port -n 1 --auth-key-file k \
	    --wait-ready=20 < in.txt
	sub_conf s.ini "$port" "GDsub_authKeyFile=k"
	ack_pipeline s
	pub_wait
	assert_success
	assert_output "$(printf 'READY\nACK 1\nACK 2\nACK 3\nACK 4\nACK 5')"
	[ -z "$stderr" ]
	wait_until 20 test -s s.rc
	[ "$(cat s.rc)" = "0 0" ]
	cut -f2- s.out | cmp - in.txt
	run ! grep -q authentication s.sub.err
}

@test "the key from the config files, gdsub -i's acknowledgement connection proves it too" {
	mkkey k
	printf 'GDpub_port=0\nGDpub_numSubs=1\nGDpub_authKeyFile=k\n' > p.ini
	# GDsub_pub: -P, once gdpub has its port
	printf 'GDsub_retryInt=0.05\nGDsub_maxRetries=200\nGDsub_authKeyFile=k\n' > s.ini
	seq 1 3 > in.txt
	# the stream goes through a pipe; acks come back over TCP
	run --separate-stderr timeout 30 bash -c "gdpub -c p.ini --port-file pub.port -o - --status pub.out < in.txt | gdsub -c s.ini -P 127.0.0.1:$(port_sh pub.port) -i - | gdack -c s.ini; echo \${PIPESTATUS[*]}"
	assert_success
	assert_output "0 0 0"
	[ "$(cat pub.out)" = "$(printf 'READY\nACK 1\nACK 2\nACK 3')" ]
}

@test "a wrong key: gdsub gives up at its first attempt (77), gdpub logs and counts one refusal" {
	mkkey k1
	mkkey k2
	pub_with 0 --auth-key-file k1
	sub_refused "$port" "authentication failed: the publisher did not prove the key (its GDpub_authKeyFile differs from GDsub_authKeyFile)" \
	    --auth-key-file k2
	pub_refusals_are "$port" 1 '^gdpub: refused subscriber s1 \(127\.0\.0\.1:[0-9]+\): it closed the connection without proving the key \(its GDsub_authKeyFile differs from GDpub_authKeyFile\?\)$'
}

@test "a wrong key at gdsub -i: its acknowledgement connection is refused once, gdsub exits 77, the blocks are NACKed" {
	mkkey k1
	mkkey k2
	seq 1 3 > in.txt
	run --separate-stderr timeout 60 bash -c "gdpub -p 0 --port-file pub.port -n 1 -t 1 --auth-key-file k1 -o - --status pub.out < in.txt 2> pub.err | gdsub -P 127.0.0.1:$(port_sh pub.port) --name s1 --retry-interval 0.05 --auth-key-file k2 -i - 2> sub.err; echo \${PIPESTATUS[*]}"
	assert_success
	# gdpub: 1, its blocks NACKed; gdsub: 77
	assert_output "1 77"
	port=$(cat pub.port)
	[ "$(cat pub.out)" = "$(printf 'NACK 1\nNACK 2\nNACK 3')" ]
	[ "$(cat sub.err)" = "gdsub: cannot connect to 127.0.0.1:$port: authentication failed: the publisher did not prove the key (its GDpub_authKeyFile differs from GDsub_authKeyFile); giving up at once: retrying cannot help" ]
	[ "$(count_lines pub.err '^gdpub: refused subscriber s1 .*without proving the key')" -eq 1 ]
}

@test "a subscriber with a wrong proof is refused by gdpub: the proof is checked, not only sent" {
	mkkey k
	pub_with 0 --auth-key-file k
	# proves the publisher's key, then sends a proof made with another
	run --separate-stderr python - "$port" k <<'PY'
import hashlib, hmac, os, socket, struct, sys
key = open(sys.argv[2], "rb").read().rstrip()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
nc = os.urandom(32)
body = struct.pack("<HBBB3x", 4, 1, 1, 1) + nc + struct.pack("<QB", 1, 7) + b"mallory"
s.sendall(struct.pack("<IBBH", len(body), 1, 0, 0) + body)
def frame():
    h = b""
    while len(h) < 8:
        c = s.recv(8 - len(h))
        assert c, "closed"
        h += c
    n, t = struct.unpack("<IB", h[:5])
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        assert c, "closed"
        b += c
    return t, b
t, b = frame()
assert t == 8 and len(b) == 64, (t, len(b))
ns = b[:32]
assert hmac.compare_digest(b[32:], hmac.new(key, b"gdkit-auth-v3 pub >" + nc + ns, hashlib.sha256).digest())
bad = hmac.new(key + b"x", b"gdkit-auth-v3 sub <" + nc + ns, hashlib.sha256).digest()
# under a seal it cannot make either (the session keys come from the key)
s.sendall(struct.pack("<IBBH", 32, 9, 0, 0) + bad + struct.pack("<IBBH", 16, 13, 0, 0) + bytes(16))
t, b = frame()
print(t, b[0] | b[1] << 8, b[2])
t, b = frame()	# the refusal's seal
print(t, len(b), repr(s.recv(1)))
PY
	assert_success
	assert_output "$(printf "2 4 6\n13 16 b''")"
	wait_until 10 auth_refused_is "$port" 1
	grep -Eq "^gdpub: refused subscriber mallory \(127\.0\.0\.1:[0-9]+\): authentication failed: its key differs from this gdpub's \(GDpub_authKeyFile\)$" pub.err
}

@test "a key at the publisher only: both refuse once, gdsub exits 77" {
	mkkey k
	pub_with 0 --auth-key-file k
	sub_refused "$port" "refused: the publisher requires authentication (GDpub_authKeyFile) and this subscriber has no key (GDsub_authKeyFile)"
	pub_refusals_are "$port" 1 '^gdpub: refused subscriber s1 \(127\.0\.0\.1:[0-9]+\): it has no authentication key, and this gdpub requires one \(GDpub_authKeyFile\)$'
}

@test "a key at the subscriber only: both refuse once, gdsub exits 77" {
	mkkey k
	pub_with 0
	sub_refused "$port" "refused: this subscriber has a key (GDsub_authKeyFile) but the publisher has none (GDpub_authKeyFile): it cannot prove it" \
	    --auth-key-file k
	pub_refusals_are "$port" 1 '^gdpub: refused subscriber s1 \(127\.0\.0\.1:[0-9]+\): it has an authentication key, but this gdpub has none \(GDpub_authKeyFile is not set\)$'
}

@test "a publisher that welcomes without proving the key is refused by a gdsub with one" {
	hold_port port
	mkkey k
	# a publisher of version 4 that skips the challenge
	spawn "python - $port > fake.out 2>&1 <<'PY'
import socket, struct, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(('127.0.0.1', int(sys.argv[1])))
l.listen(8)
while True:
    c, _ = l.accept()
    c.recv(4096)
    w = struct.pack('<HBBIIIQ', 4, 0, 0, 1, 1 << 20, 10000, 1) + b'127.0.0.1:1'
    c.sendall(struct.pack('<IBBH', len(w), 2, 0, 0) + w)
PY"
	wait_until 10 listening "$port"
	sub_refused "$port" "authentication failed: the publisher did not prove the key of GDsub_authKeyFile (it has no GDpub_authKeyFile?)" \
	    --auth-key-file k
}

@test "an older subscriber (protocol version 2) gets a version 4 welcome that refuses it, and gdpub says why" {
	pub_with 0
	run --separate-stderr python - "$port" <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
body = struct.pack("<HBB", 2, 1, 1) + b"old"
s.sendall(struct.pack("<IBBH", len(body), 1, 0, 0) + body)
d = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    d += b
n, t = struct.unpack("<IB", d[:5])
print(t, d[8] | d[9] << 8, d[10], len(d) == 8 + n)
PY
	assert_success
	assert_output "2 4 8 True"
	grep -Eq '^gdpub: refused subscriber 127\.0\.0\.1:[0-9]+: it speaks protocol version 2, this gdpub 4 \(a different gdkit version\)$' pub.err
}

@test "an older publisher (protocol version 3, no seals) refuses a gdsub of version 4: gdsub says why, with and without a key" {
	hold_port port
	mkkey k
	# a version 3 gdpub: an unsealed welcome refusing the version
	spawn "python - $port > fake.out 2>&1 <<'PY'
import socket, struct, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(('127.0.0.1', int(sys.argv[1])))
l.listen(8)
while True:
    c, _ = l.accept()
    c.recv(4096)
    w = struct.pack('<HBBIIIQ', 3, 8, 0, 1, 1 << 20, 10000, 1) + b'127.0.0.1:1'
    c.sendall(struct.pack('<IBBH', len(w), 2, 0, 0) + w)
    c.close()
PY"
	wait_until 10 listening "$port"
	for key in "" "--auth-key-file k"; do
		run --separate-stderr gdsub -P "127.0.0.1:$port" --max-retries 1 $key
		assert_failure 69
		assert_equal "$stderr" "gdsub: publisher 127.0.0.1:$port speaks protocol version 3, this gdsub 4 (a different gdkit version)"
	done
}

@test "a key file that group or others may read is refused: 64 as an option, 78 in a config file, naming file and mode" {
	mkkey k 644
	expect_usage gdpub "invalid value 'k' for --auth-key-file: key file 'k' has mode 0644: group and others must have no access (chmod 600 'k')" \
	    -- gdpub -p 1 --auth-key-file k
	chmod 640 k
	expect_usage gdsub "invalid value 'k' for --auth-key-file: key file 'k' has mode 0640: group and others must have no access (chmod 600 'k')" \
	    -- gdsub -P 127.0.0.1:1 --auth-key-file k
	printf 'GDpub_port=1\nGDpub_authKeyFile=k\n' > p.ini
	expect_fail 78 "gdpub: p.ini:2: GDpub_authKeyFile: invalid value 'k': key file 'k' has mode 0640: group and others must have no access (chmod 600 'k')" \
	    -- gdpub -c p.ini
	chmod 604 k
	printf 'GDsub_pub=127.0.0.1:1\n# the key\nGDsub_authKeyFile=k\n' > s.ini
	expect_fail 78 "gdsub: s.ini:3: GDsub_authKeyFile: invalid value 'k': key file 'k' has mode 0604: group and others must have no access (chmod 600 'k')" \
	    -- gdsub -c s.ini
	# gdack reads the same config: the same error
	expect_fail 78 "gdack: s.ini:3: GDsub_authKeyFile: invalid value 'k': key file 'k' has mode 0604: group and others must have no access (chmod 600 'k')" \
	    -- gdack -c s.ini
	chmod 400 k
	run --separate-stderr timeout 10 gdpub -p 0 --auth-key-file k < /dev/null
	assert_success
}

@test "a missing, short or non-regular key file is refused" {
	expect_usage gdpub "invalid value 'nokey' for --auth-key-file: cannot open key file 'nokey': No such file or directory" \
	    -- gdpub -p 1 --auth-key-file nokey
	printf 'GDsub_pub=127.0.0.1:1\nGDsub_authKeyFile=nokey\n' > s.ini
	expect_fail 78 "gdsub: s.ini:2: GDsub_authKeyFile: invalid value 'nokey': cannot open key file 'nokey': No such file or directory" \
	    -- gdsub -c s.ini
	echo short > k
	chmod 600 k
	expect_usage gdsub "invalid value 'k' for --auth-key-file: key file 'k' holds 5 bytes: a key has 16 to 4096 (e.g. head -c 32 /dev/urandom | base64 > FILE)" \
	    -- gdsub -P 127.0.0.1:1 --auth-key-file k
	mkdir -m 700 d
	expect_usage gdpub "invalid value 'd' for --auth-key-file: key file 'd' is not a regular file" \
	    -- gdpub -p 1 --auth-key-file d
}
