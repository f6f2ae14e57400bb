#!/usr/bin/env bats
# gdinspect decode: a framed block stream (gdkit-stream(5)), written by
# tests/cli/mkstream.py rather than gdpub, as one line or JSON object per
# frame; every corruption stops it at the right offset with status 65
# after printing the frames before the damage, and nothing after.
bats_require_minimum_version 1.5.0
load helpers

HEAD='KEY                     FLAGS     INDEX  TIME                            SIZE  PAYLOAD'
T='2026-11-30T02:37:50.123456Z'

# sample: s.gds, five frames: 16 header, 16 block 1 (67 bytes), 83 block 2
# (65), 148 block 3 (62), 210 floor (62), 272 end (62), 334 the end
sample() {
	mkstream > s.gds <<-'EOF'
	block 1 1 - hello
	block 2 2 r a b
	block 3 3 s
	set time=0
	floor 4
	end 4
	EOF
	[ "$(wc -c < s.gds)" -eq 334 ]
}

# the text lines of sample's frames, one per argument index 1..5
sample_line() {
	case $1 in
	1) echo "127.0.0.1:7001/1        -             1  $T        5  \"hello\"" ;;
	2) echo "127.0.0.1:7001/2        r             2  $T        3  \"a b\"" ;;
	3) echo "127.0.0.1:7001/3        s             3  $T        0  \"\"" ;;
	4) echo '127.0.0.1:7001          floor         4  -                                  -  -' ;;
	5) echo '127.0.0.1:7001          end           4  -                                  -  -' ;;
	esac
}

# corrupt STATUS-LINE N FILE [JSON]: decode FILE; status 65, stderr is
# exactly "gdinspect: FILE: LINE", stdout the header and the first N
# frames of sample (or, with JSON, N JSON lines)
corrupt() {
	local why=$1 n=$2 file=$3 i
	if [ -n "${4:-}" ]; then
		run --separate-stderr gdinspect --json decode "$file"
	else
		run --separate-stderr gdinspect decode "$file"
	fi
	[ "$status" -eq 65 ] || { echo "status $status, stderr: $stderr"; return 1; }
	[ "$stderr" = "gdinspect: $file: $why" ] ||
		{ printf 'stderr: %s\nwant:   %s\n' "$stderr" "gdinspect: $file: $why"; return 1; }
	if [ -n "${4:-}" ]; then
		[ "${#lines[@]}" -eq "$n" ] || { echo "$output"; return 1; }
		return 0
	fi
	[ "${#lines[@]}" -eq $((n + 1)) ] || { echo "$output"; return 1; }
	[ "${lines[0]}" = "$HEAD" ]
	for ((i = 1; i <= n; i++)); do
		[ "${lines[$i]}" = "$(sample_line "$i")" ] ||
			{ printf 'line %d: %s\nwant:   %s\n' "$i" "${lines[$i]}" "$(sample_line "$i")"; return 1; }
	done
}

@test "decode: one line per frame under a header line" {
	sample
	run --separate-stderr gdinspect decode s.gds
	assert_success
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 6 ]
	[ "${lines[0]}" = "$HEAD" ]
	for i in 1 2 3 4 5; do
		assert_line --index "$i" "$(sample_line "$i")"
	done
}

@test "decode: FILE, - and no argument all read the same stream" {
	sample
	gdinspect decode s.gds > a.txt
	gdinspect decode - < s.gds > b.txt
	gdinspect decode < s.gds > c.txt
	cat s.gds | gdinspect --json decode > d.txt
	gdinspect decode --json s.gds > e.txt
	cmp a.txt b.txt
	cmp a.txt c.txt
	cmp d.txt e.txt
	[ "$(wc -l < a.txt)" -eq 6 ]
}

@test "decode --json: one object per frame, documented fields and types" {
	sample
	run --separate-stderr gdinspect --json decode s.gds
	assert_success
	[ -z "$stderr" ]
	python -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
assert len(rows) == 5, rows
assert rows[0] == {"type": "block", "offset": 16, "key": "127.0.0.1:7001/1",
    "origin": "127.0.0.1:7001", "id": 1, "flags": "", "index": 1,
    "time_ns": 1796006270123456789, "time": "2026-11-30T02:37:50.123456Z",
    "epoch": 1, "size": 5, "preview": "hello"}, rows[0]
assert [r["type"] for r in rows] == ["block"] * 3 + ["floor", "end"]
assert [r["offset"] for r in rows] == [16, 83, 148, 210, 272]
assert [r["flags"] for r in rows] == ["", "r", "s", "", ""]
assert [r["index"] for r in rows] == [1, 2, 3, 4, 4]
assert [r["size"] for r in rows] == [5, 3, 0, 0, 0]
assert [r["preview"] for r in rows] == ["hello", "a b", "", "", ""]
assert rows[3] == {"type": "floor", "offset": 210, "key": "127.0.0.1:7001",
    "origin": "127.0.0.1:7001", "id": 0, "flags": "", "index": 4,
    "time_ns": 0, "time": None, "epoch": 1, "size": 0, "preview": ""}, rows[3]
keys = list(rows[0])
assert all(list(r) == keys for r in rows), "same fields in the same order"
' <<<"$output"
}

# the escaping rule of gdinspect(1), written again here
ESCAPE='
def esc(b):
    s = ""
    for c in b:
        m = {0: "\\0", 9: "\\t", 10: "\\n", 13: "\\r", 92: "\\\\", 34: "\\\""}
        if c in m: s += m[c]
        elif c < 0x20 or c > 0x7e: s += "\\x%02x" % c
        else: s += chr(c)
    return s
'

@test "decode: every payload byte 0..255 is shown escaped, text and JSON" {
	python -c '
for k in range(4):
    print("block %d %d - " % (k + 1, k + 1) + "".join("\\x%02x" % b for b in range(64 * k, 64 * k + 64)))
' | mkstream > bytes.gds
	run --separate-stderr gdinspect decode bytes.gds
	assert_success
	[ "${#lines[@]}" -eq 5 ]
	printf '%s\n' "${lines[@]:1}" > text.txt
	gdinspect --json decode bytes.gds > json.txt
	python -c "$ESCAPE"'
import json
text = open("text.txt").read().splitlines()
js = [json.loads(l) for l in open("json.txt")]
whole = ""
for k in range(4):
    want = esc(bytes(range(64 * k, 64 * k + 64)))
    shown = text[k].split("  64  ", 1)[1]
    assert shown == "\"" + want + "\"", (k, shown, want)
    assert js[k]["preview"] == want and js[k]["size"] == 64, js[k]
    whole += want
assert whole.startswith("\\0\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\t\\n\\x0b\\x0c\\r\\x0e")
assert "\\x1f !\\\"#$%" in whole and "[\\\\]^_`" in whole and "}~\\x7f\\x80" in whole
assert whole.endswith("\\xfe\\xff")
'
}

@test "decode: the preview is the first 64 bytes, '...' when cut" {
	mkstream > cut.gds <<-'EOF'
	block 1 1 - 0123456789012345678901234567890123456789012345678901234567890123
	block 2 2 - 01234567890123456789012345678901234567890123456789012345678901234
	block 3 3 - \n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\nX
	EOF
	run --separate-stderr gdinspect decode cut.gds
	assert_success
	d64=0123456789012345678901234567890123456789012345678901234567890123
	assert_line --index 1 --regexp "  64  \"$d64\"\$"
	assert_line --index 2 --regexp "  65  \"$d64\"\\.\\.\\.\$"
	nl=$(printf '\\\\n%.0s' $(seq 64))
	assert_line --index 3 --regexp "  65  \"$nl\"\\.\\.\\.\$"
	run --separate-stderr gdinspect --json decode cut.gds
	python -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
d = "0123456789" * 6 + "0123"
assert [x["preview"] for x in r] == [d, d, "\\n" * 64], r
assert [x["size"] for x in r] == [64, 65, 65], r
' <<<"$output"
}

@test "decode: empty, NUL and newline payloads" {
	mkstream > nul.gds <<-'EOF'
	block 1 1 -
	block 2 2 - \0
	block 3 3 - \n
	block 4 4 - a\nb\0c\r\t
	block 5 5 rs \0\0\0
	EOF
	run --separate-stderr gdinspect decode nul.gds
	assert_success
	[ "${#lines[@]}" -eq 6 ]
	assert_line --index 1 --regexp '/1 +- +1 .* 0  ""$'
	assert_line --index 2 --regexp '/2 +- +2 .* 1  "\\0"$'
	assert_line --index 3 --regexp '/3 +- +3 .* 1  "\\n"$'
	assert_line --index 4 --regexp '/4 +- +4 .* 7  "a\\nb\\0c\\r\\t"$'
	assert_line --index 5 --regexp '/5 +rs +5 .* 3  "\\0\\0\\0"$'
	run --separate-stderr gdinspect --json decode nul.gds
	python -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
assert [x["preview"] for x in r] == ["", "\\0", "\\n", "a\\nb\\0c\\r\\t", "\\0\\0\\0"], r
assert [x["size"] for x in r] == [0, 1, 1, 7, 3], r
assert r[4]["flags"] == "rs"
' <<<"$output"
}

@test "decode: keys of clusters and IPv6 origins, IDs and indexes up to 2^64-1, epochs" {
	mkstream > o.gds <<-'EOF'
	set origin=@cluster1 epoch=7
	block 18446744073709551615 18446744073709551615 - x
	set origin=[::1]:7001 epoch=18446744073709551615
	block 0 0 - y
	EOF
	run --separate-stderr gdinspect decode o.gds
	assert_success
	assert_line --index 1 "@cluster1/18446744073709551615  -      18446744073709551615  $T        1  \"x\""
	assert_line --index 2 "[::1]:7001/0            -             0  $T        1  \"y\""
	run --separate-stderr gdinspect --json decode o.gds
	python -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
assert r[0]["key"] == "@cluster1/18446744073709551615" and r[0]["origin"] == "@cluster1"
assert r[0]["id"] == r[0]["index"] == 2**64 - 1 and r[0]["epoch"] == 7
assert r[1]["key"] == "[::1]:7001/0" and r[1]["epoch"] == 2**64 - 1
' <<<"$output"
}

@test "decode: an origin with a quote or backslash is JSON-escaped" {
	printf 'set origin=a"b\\c:1\nblock 1 1 - x\n' | mkstream > q.gds
	run --separate-stderr gdinspect decode q.gds
	assert_success
	assert_line --index 1 --regexp '^a"b\\c:1/1 '
	run --separate-stderr gdinspect --json decode q.gds
	python -c '
import json, sys
r = json.loads(sys.stdin.read())
assert r["origin"] == "a\"b\\c:1" and r["key"] == "a\"b\\c:1/1", r
' <<<"$output"
}

@test "decode: time is UTC with microseconds, truncated; 0 is shown as -" {
	mkstream > t.gds <<-'EOF'
	set time=1
	block 1 1 -
	set time=999
	block 2 2 -
	set time=1000
	block 3 3 -
	set time=1796006270999999999
	block 4 4 -
	set time=18446744073709551615
	block 5 5 -
	set time=0
	block 6 6 -
	EOF
	run --separate-stderr gdinspect decode t.gds
	assert_success
	assert_line --index 1 --regexp ' 1970-01-01T00:00:00\.000000Z '
	assert_line --index 2 --regexp ' 1970-01-01T00:00:00\.000000Z '
	assert_line --index 3 --regexp ' 1970-01-01T00:00:00\.000001Z '
	assert_line --index 4 --regexp ' 2026-11-30T02:37:50\.999999Z '
	assert_line --index 5 --regexp ' 2554-07-21T23:34:33\.709551Z '
	assert_line --index 6 --regexp ' 6  -  +0  ""$'
	run --separate-stderr gdinspect --json decode t.gds
	python -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
assert r[4]["time_ns"] == 2**64 - 1 and r[4]["time"] == "2554-07-21T23:34:33.709551Z"
assert r[5]["time_ns"] == 0 and r[5]["time"] is None
' <<<"$output"
}

@test "decode: concatenated streams (cat a b) read as one, headers not shown" {
	printf 'block 1 1 - a1\nblock 2 2 - a2\nend 2\n' | mkstream > a.gds
	printf 'set origin=127.0.0.1:7002\nblock 1 1 - b1\n' | mkstream > b.gds
	: > empty.gds
	mkstream < /dev/null > hdr.gds
	cat a.gds hdr.gds b.gds empty.gds hdr.gds > ab.gds
	run --separate-stderr gdinspect decode ab.gds
	assert_success
	[ "${#lines[@]}" -eq 5 ]
	assert_line --index 1 --regexp '^127\.0\.0\.1:7001/1 .*"a1"$'
	assert_line --index 2 --regexp '^127\.0\.0\.1:7001/2 .*"a2"$'
	assert_line --index 3 --regexp '^127\.0\.0\.1:7001 +end '
	assert_line --index 4 --regexp '^127\.0\.0\.1:7002/1 .*"b1"$'
	run --separate-stderr gdinspect --json decode ab.gds
	a=$(wc -c < a.gds)
	python -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
assert [x["offset"] for x in r] == [16, 16 + 64, 16 + 128, int(sys.argv[1]) + 32], r
' "$a" <<<"$output"
}

@test "decode: an empty input or a lone stream header has no frames" {
	run --separate-stderr gdinspect decode < /dev/null
	assert_success
	[ "$output" = "$HEAD" ]
	[ -z "$stderr" ]
	mkstream < /dev/null > h.gds
	[ "$(wc -c < h.gds)" -eq 16 ]
	run --separate-stderr gdinspect --json decode h.gds
	assert_success
	[ -z "$output" ]
	[ -z "$stderr" ]
}

@test "decode: big payloads through a pipe, between small frames" {
	# plain letters: mkstream reads them 5 times faster than \x41 escapes
	python -c '
print("block 1 1 - a")
print("block 2 2 - " + "A" * (3 << 20))
print("block 3 3 - " + "B" * 65536)
print("block 4 4 - z")
' | mkstream > big.gds
	run --separate-stderr bash -c 'cat big.gds | gdinspect decode'
	assert_success
	[ "${#lines[@]}" -eq 5 ]
	assert_line --index 2 --regexp "/2 .* 3145728  \"A{64}\"\\.\\.\\.\$"
	assert_line --index 3 --regexp "/3 .*   65536  \"B{64}\"\\.\\.\\.\$"
	assert_line --index 4 --regexp '/4 .* 1  "z"$'
}

@test "decode: frames are shown as they arrive on a live stdin" {
	printf 'block 1 1 - first\n' | mkstream > one.gds
	printf 'block 2 2 - second\n' | mkstream --no-header > two.gds
	feed_open feed
	spawn "exec gdinspect decode < feed > live.out 2> live.err" 7>&-
	pid=$SPAWNED
	cat one.gds >&7
	wait_until 10 has_line live.out '"first"$'
	run ! has_line live.out second
	head -c 30 two.gds >&7
	tail -c +31 two.gds >&7
	wait_until 10 has_line live.out '"second"$'
	kill -0 "$pid"
	feed_close
	rc=0
	wait_pid 10 "$pid" || rc=$?
	[ "$rc" -eq 0 ]
	[ ! -s live.err ]
	[ "$(wc -l < live.out)" -eq 3 ]
}

@test "decode: a reader that goes away (| head) ends it quietly" {
	# 20,000 copies of one frame (2.5 MB, far more than a pipe holds),
	# written by one mkstream rather than 20,000 cats
	local line
	line=$(printf 'block 1 1 - %s' "$(printf '\\xff%.0s' $(seq 64))")
	{ mkstream < /dev/null; yes "$line" | head -n 20000 | mkstream --no-header; } > many.gds
	[ "$(stat -c %s many.gds)" -eq $((16 + 20000 * 126)) ]
	run bash -c 'gdinspect decode many.gds 2> err.txt | head -n 2 > /dev/null; echo "${PIPESTATUS[0]}"'
	[ "$output" = 1 ]
	[ ! -s err.txt ]
}

# ---- corrupt streams: status 65, the frames before, nothing after ----

@test "decode: not a stream, or one that starts mid-stream" {
	printf 'hello\n' > text.txt
	corrupt "corrupt stream at byte offset 0: no stream header: the input is not a gdkit stream, or starts in the middle of one" 0 text.txt
	printf 'block 1 1 - x\n' | mkstream --no-header > mid.gds
	corrupt "corrupt stream at byte offset 0: no stream header: the input is not a gdkit stream, or starts in the middle of one" 0 mid.gds
	printf 'block 1 1 - hello\n' | mkstream > s1.gds
	tail -c +20 s1.gds > mid2.gds
	corrupt "corrupt stream at byte offset 0: no stream header: the input is not a gdkit stream, or starts in the middle of one" 0 mid2.gds
	{ printf 'x'; cat s1.gds; } > pre.gds
	corrupt "corrupt stream at byte offset 0: no stream header: the input is not a gdkit stream, or starts in the middle of one" 0 pre.gds
}

@test "decode: garbage between frames" {
	sample
	{ head -c 148 s.gds; printf 'xy'; tail -c +149 s.gds; } > g.gds
	corrupt "corrupt stream at byte offset 148: garbage where a frame should start (bytes 78 79)" 2 g.gds
	{ head -c 148 s.gds; printf '\n'; tail -c +149 s.gds; } > nl.gds
	corrupt "corrupt stream at byte offset 148: garbage where a frame should start (bytes 0a 67)" 2 nl.gds
	{ cat s.gds; printf '\n'; } > tail.gds
	corrupt "corrupt stream at byte offset 334: garbage where a frame should start (byte 0a)" 5 tail.gds
	{ cat s.gds; printf 'g'; } > tailg.gds
	corrupt "corrupt stream at byte offset 334: truncated frame header: 1 of 44 bytes" 5 tailg.gds
}

@test "decode: a truncated frame or stream header at the end" {
	sample
	head -c 333 s.gds > t1.gds
	corrupt "corrupt stream at byte offset 272: truncated frame: 61 of 62 bytes" 4 t1.gds
	head -c 100 s.gds > t2.gds
	corrupt "corrupt stream at byte offset 83: truncated frame header: 17 of 44 bytes" 1 t2.gds
	head -c 140 s.gds > t3.gds
	corrupt "corrupt stream at byte offset 83: truncated frame: 57 of 65 bytes" 1 t3.gds
	head -c 9 s.gds > t4.gds
	corrupt "corrupt stream at byte offset 0: truncated stream header: 9 of 16 bytes" 0 t4.gds
	{ cat s.gds; head -c 5 s.gds; } > t5.gds
	corrupt "corrupt stream at byte offset 334: truncated stream header: 5 of 16 bytes" 5 t5.gds
	# the same through a pipe
	run --separate-stderr bash -c 'head -c 333 s.gds | gdinspect decode'
	[ "$status" -eq 65 ]
	[ "$stderr" = "gdinspect: standard input: corrupt stream at byte offset 272: truncated frame: 61 of 62 bytes" ]
	[ "${#lines[@]}" -eq 5 ]
}

@test "decode: a flipped byte in the header, a payload, an origin or a CRC" {
	sample
	for off in 3 9 12 15; do
		python -c '
import sys
b = bytearray(open("s.gds", "rb").read()); b[int(sys.argv[1])] ^= 0x40
open("f.gds", "wb").write(b)' "$off"
		if [ "$off" -eq 3 ]; then
			corrupt "corrupt stream at byte offset 0: not a gdkit stream header" 0 f.gds
		else
			corrupt "corrupt stream at byte offset 0: stream header CRC32C mismatch" 0 f.gds
		fi
	done
	crc="frame CRC32C mismatch (header or payload damaged)"
	# block 2 at 83: id at +12, time at +28, payload at +44, origin at
	# +47, CRC at +61
	for off in 95 111 127 128 130 135 144; do
		printf 'block 1 1 - hello\nblock 2 2 r a b\nblock 3 3 s\nset time=0\nfloor 4\nend 4\n' |
			mkstream --flip "$off" > f.gds
		corrupt "corrupt stream at byte offset 83: $crc" 1 f.gds
	done
	# the last byte of all
	printf 'block 1 1 - hello\nblock 2 2 r a b\nblock 3 3 s\nset time=0\nfloor 4\nend 4\n' |
		mkstream --flip 333:0x80 > f.gds
	corrupt "corrupt stream at byte offset 272: $crc" 4 f.gds
	corrupt "corrupt stream at byte offset 272: $crc" 4 f.gds json
}

@test "decode: unknown type, reserved bits, a payload on a floor" {
	printf 'block 1 1 - hello\nwith type=9\nblock 2 2 - x\nblock 3 3 - y\n' | mkstream > ty.gds
	corrupt "corrupt stream at byte offset 83: unknown frame type 9" 1 ty.gds
	printf 'block 1 1 - hello\nwith type=0\nblock 2 2 - x\n' | mkstream > ty0.gds
	corrupt "corrupt stream at byte offset 83: unknown frame type 0" 1 ty0.gds
	printf 'block 1 1 - hello\nwith flags=4\nblock 2 2 - x\n' | mkstream > fl.gds
	corrupt "corrupt stream at byte offset 83: reserved bits set in the frame header" 1 fl.gds
	printf 'block 1 1 - hello\nwith reserved=256\nblock 2 2 - x\n' | mkstream > rs.gds
	corrupt "corrupt stream at byte offset 83: reserved bits set in the frame header" 1 rs.gds
	printf 'block 1 1 - hello\nwith flags=1\nfloor 2\n' | mkstream > ffl.gds
	corrupt "corrupt stream at byte offset 83: reserved bits set in the frame header" 1 ffl.gds
	printf 'block 1 1 - hello\nwith plen=1\nend 2\ntext x\n' | mkstream > fp.gds
	corrupt "corrupt stream at byte offset 83: a frame of type 3 carries a payload" 1 fp.gds
}

@test "decode: origin lengths 0 and 301, a byte not allowed in an origin" {
	printf 'block 1 1 - hello\nwith olen=0\nblock 2 2 - x\n' | mkstream > o0.gds
	corrupt "corrupt stream at byte offset 83: origin length 0 is outside 1..300" 1 o0.gds
	o=$(printf 'h%.0s' $(seq 301))
	printf 'block 1 1 - hello\nset origin=%s\nblock 2 2 - x\n' "$o" | mkstream > o301.gds
	corrupt "corrupt stream at byte offset 83: origin length 301 is outside 1..300" 1 o301.gds
	o=$(printf 'h%.0s' $(seq 300))
	printf 'block 1 1 - hello\nset origin=%s\nblock 2 2 - x\n' "$o" | mkstream > o300.gds
	run --separate-stderr gdinspect decode o300.gds
	assert_success
	assert_line --index 2 --regexp "^$o/2  -"
	printf 'block 1 1 - hello\nset origin=a/b:1\nblock 2 2 - x\n' | mkstream > os.gds
	corrupt "corrupt stream at byte offset 83: origin has a byte that cannot be in HOST:PORT (0x2f)" 1 os.gds
	printf 'block 1 1 - hello\nset origin=a\x01b:1\nblock 2 2 - x\n' | mkstream > oc.gds
	corrupt "corrupt stream at byte offset 83: origin has a byte that cannot be in HOST:PORT (0x01)" 1 oc.gds
}

@test "decode: a payload length over 2^30 is refused without reading it" {
	printf 'block 1 1 - hello\nwith plen=0x40000001\nblock 2 2 - x\n' | mkstream > big.gds
	corrupt "corrupt stream at byte offset 83: frame payload of 1073741825 bytes is over the limit of 1073741824" 1 big.gds
	printf 'block 1 1 - hello\nwith plen=0xffffffff\nblock 2 2 - x\n' | mkstream > big2.gds
	corrupt "corrupt stream at byte offset 83: frame payload of 4294967295 bytes is over the limit of 1073741824" 1 big2.gds
	# 2^30 itself is allowed: the stream is then merely truncated
	printf 'block 1 1 - hello\nwith plen=0x40000000\nblock 2 2 - x\n' | mkstream > big3.gds
	corrupt "corrupt stream at byte offset 83: truncated frame: 63 of 1073741886 bytes" 1 big3.gds
}

# A reader grows its buffer as a frame's bytes come in: a header alone
# must not make it allocate the 1 GiB it declares (it did, and failed
# with "out of memory", status 1, under a memory limit).
@test "decode: a frame that declares 1 GiB but is cut short is reported (65) without allocating 1 GiB" {
	local n
	for n in 0 3145728; do
		declares_1g d.gds "$n"
		run --separate-stderr small_mem 256 gdinspect decode d.gds
		assert_equal "$status" 65
		assert_equal "$stderr" "gdinspect: d.gds: corrupt stream at byte offset 16: truncated frame: $((44 + n)) of 1073741886 bytes"
		assert_equal "$output" "$HEAD"
		run --separate-stderr small_mem 256 gdinspect decode - < d.gds
		assert_equal "$status" 65
		assert_equal "$stderr" "gdinspect: standard input: corrupt stream at byte offset 16: truncated frame: $((44 + n)) of 1073741886 bytes"
	done
}

@test "decode: a stream version or header size this reader does not know" {
	printf 'block 1 1 - hello\nwith version=3\nheader\nblock 1 1 - x\n' | mkstream > v3.gds
	corrupt "corrupt stream at byte offset 83: stream version 3 is not supported (this reader knows versions 1 and 2)" 1 v3.gds
	printf 'with hsize=32\nheader\n' | mkstream --no-header > hs.gds
	corrupt "corrupt stream at byte offset 0: stream header size 32 is not 16 for version 1" 0 hs.gds
	printf 'with crc=0\nheader\n' | mkstream --no-header > hc.gds
	corrupt "corrupt stream at byte offset 0: stream header CRC32C mismatch" 0 hc.gds
}

# ---- command line ----

@test "decode: a file that cannot be opened or read exits 74" {
	expect_fail 74 "gdinspect: cannot open nosuch.gds: No such file or directory" -- gdinspect decode nosuch.gds
	mkdir d
	run --separate-stderr gdinspect decode d
	[ "$status" -eq 74 ]
	[ "$stderr" = "gdinspect: cannot read d: Is a directory" ]
}

@test "decode: --watch and a second file are refused" {
	expect_usage gdinspect "cannot use --watch with decode" -- gdinspect --watch 1 decode s.gds
	expect_usage gdinspect "unexpected argument 'b.gds' after decode FILE" -- gdinspect decode a.gds b.gds
}

@test "gdkit-stream(5): the hexdump example is the stream mkstream.py writes, and decodes" {
	command -v hexdump >/dev/null || skip "hexdump is not installed"
	page="$BATS_TEST_DIRNAME/../../man/gdkit-stream.5"
	sed -n '/^\$ printf .hello.en. | gdpub -p 7001 -o - | hexdump -C$/,/^\.Ed$/p' "$page" |
		sed '1d;$d' > want.txt
	[ "$(wc -l < want.txt)" -eq 14 ]
	printf 'block 1 1 - hello\nset time=0\nfloor 2\nend 0\n' | mkstream > ex.gds
	hexdump -C ex.gds > got.txt
	diff want.txt got.txt
	run --separate-stderr gdinspect decode ex.gds
	assert_success
	assert_line --index 1 "127.0.0.1:7001/1        -             1  $T        5  \"hello\""
	assert_line --index 2 --regexp '^127\.0\.0\.1:7001 +floor +2 '
	assert_line --index 3 --regexp '^127\.0\.0\.1:7001 +end +0 '
}
