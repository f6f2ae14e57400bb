#!/usr/bin/env bats
# A catalogue of bad input (SPEC §9, §10): options, config files, stdin
# lines, framed streams, and raw bytes on gdpub's port, from a scripted
# publisher to gdsub, and on the control sockets. Each case asserts the
# exact exit code and the message that names the problem. Cases the other
# files cover are not repeated here; some are covered differently.
load helpers
bats_require_minimum_version 1.5.0

mkstream() {
	python "$BATS_TEST_DIRNAME/mkstream.py" "$@"
}

# bad CODE TEXT -- CMD...: CMD (stdin from /dev/null) exits CODE and its
# stderr contains TEXT
bad() {
	local code=$1 text=$2
	shift 3
	run --separate-stderr "$@" < /dev/null
	assert_equal "$status" "$code"
	[[ "$stderr" == *"$text"* ]] || {
		echo "stderr: $stderr" >&2
		echo "expected to contain: $text" >&2
		return 1
	}
}

# conf PROG LINE TEXT: a config file "# comment\nLINE" is refused by PROG
# with 78, naming c.ini:2 and TEXT
conf() {
	printf '# a config\n%s\n' "$2" > c.ini
	bad 78 "$1: c.ini:2: $3" -- "$1" -c c.ini
}

# pubin INPUT ARGS...: printf INPUT | gdpub -p 0 -o /dev/null ARGS
pubin() {
	local input=$1
	shift
	run --separate-stderr bash -c 'printf "$0" | gdpub -p 0 -o /dev/null "$@"' "$input" "$@"
}

# ---- options (64) ----

@test "option: gdpub --max-block-size -1" {
	bad 64 "gdpub: invalid value '-1' for --max-block-size: expected an integer from 0 to 1073741824" -- gdpub -p 7001 --max-block-size -1
}
@test "option: gdpub --max-pending 0" {
	bad 64 "gdpub: invalid value '0' for --max-pending: expected an integer from 1 to 16777216" -- gdpub -p 7001 --max-pending 0
}
@test "option: gdpub --resend 256" {
	bad 64 "gdpub: invalid value '256' for --resend: expected an integer from 0 to 255" -- gdpub -p 7001 --resend 256
}
@test "option: gdpub -t 0 (below the smallest timeout)" {
	bad 64 "gdpub: invalid value '0' for --timeout: expected seconds from 0.001" -- gdpub -p 7001 -t 0
}
@test "option: gdpub --fsync sometimes lists the choices" {
	bad 64 "gdpub: invalid value 'sometimes' for --fsync: expected one of 'always', 'batch', 'never'" -- gdpub -p 7001 --fsync sometimes
}
@test "option: gdsub --max-block-size 0 and 2^30+1" {
	bad 64 "gdsub: invalid value '0' for --max-block-size: expected an integer from 1 to 1073741824" -- gdsub -P 127.0.0.1:7001 --max-block-size 0
	bad 64 "gdsub: invalid value '1073741825' for --max-block-size" -- gdsub -P 127.0.0.1:7001 --max-block-size 1073741825
}
@test "option: gdsub --dedup hash lists the choices" {
	bad 64 "gdsub: invalid value 'hash' for --dedup: expected one of 'id', 'index', 'none'" -- gdsub -P 127.0.0.1:7001 --dedup hash
}
@test "option: gdsub -C 0" {
	bad 64 "gdsub: invalid value '0' for --count: expected a positive integer" -- gdsub -P 127.0.0.1:7001 -C 0
}
@test "option: gdsub --linger -1" {
	bad 64 "gdsub: invalid value '-1' for --linger: expected seconds" -- gdsub -P 127.0.0.1:7001 --linger -1
}
@test "option: gdsub -P with a port that is not a number" {
	bad 64 "gdsub: invalid value '127.0.0.1:http' for --pub: expected HOST:PORT" -- gdsub -P 127.0.0.1:http
}
@test "option: gdsub -f xml" {
	bad 64 "gdsub: invalid value 'xml' for --format: expected 'line', 'payload', 'frame' or a template with %k, %s ..." -- gdsub -P 127.0.0.1:7001 -f xml
}
@test "option: gdack --wait abc" {
	bad 64 "gdack: invalid value 'abc' for --wait: expected seconds" -- gdack -P 127.0.0.1:7001 --wait abc
}
@test "option: gdinspect --watch -1" {
	bad 64 "gdinspect: invalid value '-1' for --watch: expected seconds from 0.05" -- gdinspect -p 7001 --watch -1 stats
}

# ---- config files (78, FILE:LINE: KEY) ----

@test "config: GDsub_maxBlockSize=0" {
	conf gdsub GDsub_maxBlockSize=0 "GDsub_maxBlockSize: invalid value '0': expected an integer from 1 to 1073741824"
}
@test "config: GDpub_port with trailing junk" {
	conf gdpub GDpub_port=7001x "GDpub_port: invalid value '7001x'"
}
@test "config: GDpub_port in exponent form" {
	conf gdpub GDpub_port=1e3 "GDpub_port: invalid value '1e3'"
}
@test "config: GDpub_maxBlockSize in hex" {
	conf gdpub GDpub_maxBlockSize=0x100 "GDpub_maxBlockSize: invalid value '0x100'"
}
@test "config: GDpub_timeout=inf" {
	conf gdpub GDpub_timeout=inf "GDpub_timeout: invalid value 'inf': expected seconds"
}
@test "config: GDsub_retryInt=nan" {
	conf gdsub GDsub_retryInt=nan "GDsub_retryInt: invalid value 'nan': expected seconds"
}
@test "config: GDpub_numSubs with no value" {
	conf gdpub GDpub_numSubs= "GDpub_numSubs: invalid value '': expected an integer from 0 to 32"
}
@test "config: GDsub_pub with an unclosed IPv6 bracket" {
	conf gdsub 'GDsub_pub=[::1:7001' "GDsub_pub: invalid value '[::1:7001': expected HOST:PORT"
}
@test "config: a line that starts with '=' says there is no key" {
	conf gdpub ' = 5' "a value without a key: the line starts with '=' (expected KEY=VALUE)"
}
@test "config: GDsub_maxBlockSize is read by gdack too, and a bad one refused there" {
	printf 'GDsub_pub=127.0.0.1:7001\nGDsub_maxBlockSize=-3\n' > c.ini
	bad 78 "gdack: c.ini:2: GDsub_maxBlockSize: invalid value '-3'" -- gdack -c c.ini 127.0.0.1:7001/1
}

# ---- stdin lines (gdpub: REJECT, exit 1) ----

@test "stdin --ids: an ID of 21 digits is a malformed line" {
	pubin '123456789012345678901\tx\n' -I
	assert_equal "$status" 1
	assert_equal "$output" "REJECT - malformed line 1: expected ID<TAB>payload with a decimal ID"
	[[ "$stderr" == *"gdpub: REJECT -: malformed line 1: expected ID<TAB>payload with a decimal ID"* ]]
}
@test "stdin --ids: 2^64 is out of range" {
	pubin '1\tok\n18446744073709551616\tx\n' -I
	assert_equal "$status" 1
	assert_equal "$output" "REJECT - malformed line 2: expected ID<TAB>payload with a decimal ID"
}
@test "stdin --ids: 2^64-1 is the largest ID and is published" {
	pubin '18446744073709551615\tmax\n' -I
	assert_equal "$status" 0
	assert_equal "$output" ""
}
@test "stdin --ids: a signed ID is malformed" {
	pubin '+5\tx\n' -I
	assert_equal "$status" 1
	assert_equal "$output" "REJECT - malformed line 1: expected ID<TAB>payload with a decimal ID"
}
@test "stdin --ids: a line without a TAB, an empty line" {
	pubin 'notab\n\n' -I
	assert_equal "$status" 1
	assert_equal "$output" "$(printf 'REJECT - malformed line 1: expected ID<TAB>payload with a decimal ID\nREJECT - malformed line 2: expected ID<TAB>payload with a decimal ID')"
}
@test "stdin --ids: leading zeros are named" {
	pubin '007\tx\n' -I
	assert_equal "$status" 1
	assert_equal "$output" "REJECT - malformed line 1: expected ID<TAB>payload with a decimal ID without leading zeros"
}
@test "stdin --ids -0: a NUL-ended record without a TAB, the next one published" {
	pubin 'bad\0002\tok\000' -I -0
	assert_equal "$status" 1
	assert_equal "$output" "REJECT - malformed line 1: expected ID<TAB>payload with a decimal ID"
}
@test "stdin: a line over --max-block-size 0 is REJECTed, an empty one published" {
	pubin '\nx\n' --max-block-size 0
	assert_equal "$status" 1
	assert_equal "$output" "REJECT 2 block larger than GDpub_maxBlockSize (0 bytes)"
}

# ---- streams (65 corrupt, 74 files) ----

@test "stream: gdsub -i refuses a frame over --max-block-size with 65, naming the size and the limit" {
	printf 'block 1 1 - short\nblock 2 2 - 0123456789abcdef\n' | mkstream > big.gds
	run --separate-stderr gdsub -i big.gds -P 127.0.0.1:7001 --no-gd --max-block-size 8
	assert_equal "$status" 65
	assert_equal "$output" "127.0.0.1:7001/1	short"
	assert_equal "$stderr" "gdsub: big.gds: corrupt stream at byte offset 83: frame payload of 16 bytes is over the limit of 8 bytes (GDsub_maxBlockSize, --max-block-size)"
}
@test "stream: GDsub_maxBlockSize in the config file limits gdsub -i - too; the default 1 MiB lets 16 bytes pass" {
	printf 'block 1 1 - 0123456789abcdef\n' | mkstream > big.gds
	printf 'GDsub_pub=127.0.0.1:7001\nGDsub_gd=0\nGDsub_maxBlockSize=15\n' > c.ini
	run --separate-stderr bash -c 'gdsub -c c.ini -i - < big.gds'
	assert_equal "$status" 65
	[[ "$stderr" == *"frame payload of 16 bytes is over the limit of 15 bytes (GDsub_maxBlockSize, --max-block-size)" ]]
	run --separate-stderr bash -c 'gdsub -P 127.0.0.1:7001 --no-gd -i - -f payload < big.gds'
	assert_equal "$status" 0
	assert_equal "$output" "0123456789abcdef"
}
@test "stream: a frame declaring 1 GiB is refused by gdsub's 1 MiB default before anything is read" {
	printf 'with plen=0x40000000\nblock 1 1 - x\n' | mkstream > huge.gds
	bad 65 "frame payload of 1073741824 bytes is over the limit of 1048576 bytes (GDsub_maxBlockSize, --max-block-size)" -- gdsub -i huge.gds -P 127.0.0.1:7001 --no-gd
}
@test "stream: gdsub -i, an origin of length 0" {
	printf 'with olen=0\nblock 1 1 - x\n' | mkstream > o0.gds
	bad 65 "gdsub: o0.gds: corrupt stream at byte offset 16: origin length 0 is outside 1..300" -- gdsub -i o0.gds -P 127.0.0.1:7001 --no-gd
}
@test "stream: gdsub -i, frame type 9" {
	printf 'with type=9\nblock 1 1 - x\n' | mkstream > t9.gds
	bad 65 "gdsub: t9.gds: corrupt stream at byte offset 16: unknown frame type 9" -- gdsub -i t9.gds -P 127.0.0.1:7001 --no-gd
}
@test "stream: gdsub -i, a stream cut inside its header" {
	printf 'block 1 1 - x\n' | mkstream --cut 10 > cut.gds
	bad 65 "gdsub: cut.gds: corrupt stream at byte offset 0: truncated stream header: 10 of 16 bytes" -- gdsub -i cut.gds -P 127.0.0.1:7001 --no-gd
}
@test "stream: gdpub -f frame, a payload length of 2^31" {
	printf 'with plen=0x80000000\nblock 1 1 - x\n' | mkstream > pl.gds
	run --separate-stderr bash -c 'gdpub -p 0 -f frame -o /dev/null < pl.gds'
	assert_equal "$status" 65
	[[ "$stderr" == *"gdpub: standard input: corrupt stream at byte offset 16: frame payload of 2147483648 bytes is over the limit of 1073741824; no more input is read" ]]
}
@test "stream: gdack -f frame, a flipped payload byte" {
	printf 'block 1 1 - hello\n' | mkstream --flip 60 > flip.gds
	run --separate-stderr bash -c 'gdack -P 127.0.0.1:7001 --name x -f frame < flip.gds'
	assert_equal "$status" 65
	assert_equal "$stderr" "gdack: standard input: corrupt stream at byte offset 16: frame CRC32C mismatch (header or payload damaged)"
}
@test "journal: gdinspect journal of a file that is not a journal (74)" {
	echo "not a journal" > nj
	bad 74 "gdinspect: 'nj' is not a gdpub journal" -- gdinspect journal nj
}
@test "journal: gdinspect journal of a journal header with a bad CRC (74)" {
	python -c 'import sys; sys.stdout.buffer.write(b"\x89GDJ\r\n\x1a\n\x01\x00\x20\x00" + bytes(20))' > badcrc.jnl
	bad 74 "gdinspect: journal 'badcrc.jnl': bad header (version 1)" -- gdinspect journal badcrc.jnl
}
@test "state: gdsub --state on a file that is not a state file (74), before connecting" {
	echo "not a state" > ns
	bad 74 "gdsub: cannot use state file 'ns': not a gdsub state file (12 bytes, no header)" -- gdsub -P 127.0.0.1:7001 --state ns --max-retries 1
}

# ---- protocol bytes ----

# a gdpub on a free port whose stdin stays open until the file "go" exists;
# its stderr goes to pub.err, its exit status to rc
start_pub() {
	spawn "while [ ! -e go ]; do sleep 0.05; done | gdpub -p 0 --port-file pub.port $* > pub.out 2> pub.err; echo \$? > rc"
	port=$(port_of pub.port)
}
stop_pub() {
	touch go
	wait_until 10 test -s rc
}
# send PORT HEX: connect, send the bytes, read until the peer closes
# (at most 5 s); prints what came back as hex
send() {
	python -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
c.sendall(bytes.fromhex(sys.argv[2]))
got = b""
try:
    while True:
        b = c.recv(65536)
        if not b:
            break
        got += b
except socket.timeout:
    pass
print(got.hex())' "$@"
}

@test "protocol: an HTTP request on gdpub's port is a malformed frame; the connection is closed, gdpub goes on and exits 0" {
	start_pub
	run send "$port" "$(printf 'GET / HTTP/1.0\r\n\r\n' | od -An -tx1 | tr -d ' \n')"
	assert_success
	assert_equal "$output" ""
	stop_pub
	assert_equal "$(cat rc)" 0
	grep -q "^gdpub: connection from 127.0.0.1:[0-9]* sent bytes that are not a gdkit wire frame (not a gdsub?); closing it$" pub.err
}
@test "protocol: an ack frame whose length is not a multiple of 16 closes the connection, logged" {
	start_pub
	# hello v4 gd=1 want=0 (no key, a zero nonce, run 1) name "x" and its
	# CRC seal, then a 17-byte ack frame
	run send "$port" "32000000010000000400010000000000000000000000000000000000000000000000000000000000000000000000000001000000000000000178040000000d0000008612873811000000040000000000000000000000000000000000000000"
	assert_success
	stop_pub
	assert_equal "$(cat rc)" 0
	grep -q "^gdpub: subscriber x (127.0.0.1:[0-9]*) sent a malformed frame; closing its connection$" pub.err
}
@test "protocol: a hello of protocol version 9 is refused, logged, gdpub goes on" {
	start_pub
	run send "$port" "050000000100000009000100780000"
	assert_success
	stop_pub
	assert_equal "$(cat rc)" 0
	grep -q "^gdpub: refused subscriber 127.0.0.1:[0-9]*: it speaks protocol version 9, this gdpub 4 (a different gdkit version)$" pub.err
}

# a scripted publisher: answers gdsub's hello with a welcome (max_block
# MAXB) and then sends the frames in HEX; writes its port to fakepub.port
fakepub() {
	spawn "python -c '
import socket, struct, sys
maxb, rest = int(sys.argv[1]), bytes.fromhex(sys.argv[2])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"127.0.0.1\", 0)); s.listen(1)
open(\"fakepub.port.tmp\", \"w\").write(str(s.getsockname()[1]))
import os; os.rename(\"fakepub.port.tmp\", \"fakepub.port\")
c, _ = s.accept(); s.close()
c.recv(4096)
origin = b\"127.0.0.1:1\"
body = struct.pack(\"<HBBIIIQ\", 4, 1, 0, 0, maxb, 10000, 7) + origin
import gdwire
c.sendall(gdwire.Seal(\"crc\").wrap(struct.pack(\"<IBBH\", len(body), 2, 0, 0) + body + rest))
c.recv(4096)
' $1 $2"
	wait_until 10 test -s fakepub.port
	fport=$(cat fakepub.port)
}

@test "protocol: a publisher's block over gdsub's --max-block-size stops gdsub with 65, naming the size and the limit" {
	# a block frame of 100 payload bytes: body 24 + 100
	fakepub 1048576 "7c00000003000000$(printf '%048x' 0)$(printf 'ab%.0s' $(seq 100))"
	run --separate-stderr timeout 20 gdsub -P "127.0.0.1:$fport" --no-gd --max-block-size 10 --max-retries 1
	assert_equal "$status" 65
	[[ "$stderr" == *"gdsub: publisher 127.0.0.1:$fport sent a block of 100 bytes, over the limit of 10 bytes (GDsub_maxBlockSize, --max-block-size); not read further"* ]]
}
@test "protocol: a block over the limit the publisher announced cannot be its block: malformed, gdsub reconnects, then gives up (69)" {
	fakepub 50 "7c00000003000000$(printf '%048x' 0)$(printf 'ab%.0s' $(seq 100))"
	run --separate-stderr timeout 20 gdsub -P "127.0.0.1:$fport" --no-gd --max-retries 1 --retry-interval 0.05
	assert_equal "$status" 69
	[[ "$stderr" == *"gdsub: publisher 127.0.0.1:$fport sent a malformed frame; reconnecting"* ]]
}
@test "protocol: a frame of unknown type from a publisher: malformed, gdsub reconnects, then gives up (69)" {
	fakepub 1048576 "000000000c000000"
	run --separate-stderr timeout 20 gdsub -P "127.0.0.1:$fport" --no-gd --max-retries 1 --retry-interval 0.05
	assert_equal "$status" 69
	[[ "$stderr" == *"gdsub: publisher 127.0.0.1:$fport sent a malformed frame; reconnecting"* ]]
	[[ "$stderr" == *"giving up on publisher 127.0.0.1:$fport after 1 attempt"* ]]
}

@test "protocol: a second welcome before a small block: malformed, gdsub reconnects (69), not 'a block over the limit'" {
	# a welcome again (as a relay that duplicated bytes would send it),
	# then a valid block of 1 byte
	fakepub 1048576 "23000000020000000300010000000000000010001027000007000000000000003132372e302e302e313a31190000000300000001000000000000000100000000000000000000000000000078"
	run --separate-stderr timeout 20 gdsub -P "127.0.0.1:$fport" --no-gd --max-retries 1 --retry-interval 0.05
	assert_equal "$status" 69
	[[ "$stderr" == *"gdsub: publisher 127.0.0.1:$fport sent a malformed frame; reconnecting"* ]]
	[[ "$stderr" != *"over the limit"* ]]
}

# ctl REQUEST: send REQUEST (printf format) to the gdpub's control socket
ctl() {
	printf "$1" | socat -t 5 - "UNIX-CONNECT:$(gdinspect_sock)"
}
gdinspect_sock() {
	echo "$XDG_RUNTIME_DIR/gdkit/pub-$port.sock"
}

@test "control socket: a request line over 1024 bytes is answered with an error and the connection closed; gdpub goes on" {
	start_pub
	wait_until 10 test -S "$(gdinspect_sock)"
	run ctl "$(head -c 1100 /dev/zero | tr '\0' p)\n"
	assert_equal "$output" "error request line longer than 1024 bytes"
	run gdinspect -p "$port" stats
	assert_success
	stop_pub
	assert_equal "$(cat rc)" 0
}
@test "control socket: pending with a bad sort or limit, an unknown request, each answered with an error naming it" {
	start_pub
	wait_until 10 test -S "$(gdinspect_sock)"
	run ctl 'pending sort=size\npending limit=-1\nfrobnicate\nhello\n'
	assert_line --index 0 --partial "error unknown sort 'size' (age, expires, id or acks)"
	assert_line --index 1 --partial "error bad limit '-1'"
	assert_line --index 2 --partial "error unknown request 'frobnicate'"
	assert_line --index 3 "hello gdpub 2"
	stop_pub
	assert_equal "$(cat rc)" 0
}
