#!/usr/bin/env bats
# gdinspect measure: reliability R = Ru/S, uniqueness UR = Ru/R and the
# delivery mode, from hand-made files of keys or IDs.
load helpers
bats_require_minimum_version 1.5.0

# measure_is SENT RECEIVED MODE R UR: the JSON row says so
measure_is() {
	run --separate-stderr gdinspect --json measure "$1" "$2"
	assert_success
	python -c '
import json, sys
d = json.loads(sys.stdin.read())
assert d["mode"] == sys.argv[1], d
assert abs(d["reliability"] - float(sys.argv[2])) < 1e-6, d
assert abs(d["uniqueness"] - float(sys.argv[3])) < 1e-6, d
' "$3" "$4" "$5" <<<"$output"
}

@test "measure: every block once is exactly-once" {
	seq 1 4 > sent
	seq 1 4 > recv
	measure_is sent recv exactly-once 1 1
	run gdinspect measure sent recv
	assert_success
	assert_line --index 0 --regexp '^SENT +RECEIVED +UNIQUE +DUPLICATES +LOST +UNEXPECTED +R +UR +MODE$'
	assert_line --index 1 --regexp '^4 +4 +4 +0 +0 +0 +1\.0000 +1\.0000 +exactly-once$'
}

@test "measure: every block, some twice, is at-least-once" {
	seq 1 4 > sent
	printf '1\n2\n2\n3\n4\n' > recv
	measure_is sent recv at-least-once 1 0.8
}

@test "measure: blocks lost, none twice, is at-most-once" {
	seq 1 4 > sent
	printf '1\n3\n' > recv
	measure_is sent recv at-most-once 0.5 1
}

@test "measure: lost and duplicated is unreliable" {
	seq 1 4 > sent
	printf '1\n1\n3\n' > recv
	measure_is sent recv unreliable 0.5 0.666667
}

@test "measure: gdsub output (keys with flags and payloads) against IDs" {
	seq 1 3 > sent
	printf '127.0.0.1:7001/1\tone\n127.0.0.1:7001/2/r\ttwo\n127.0.0.1:7001/2\ttwo\n127.0.0.1:7001/3\tthree\n' > recv
	measure_is sent recv at-least-once 1 0.75
}

@test "measure: keys from two publishers are told apart" {
	printf '127.0.0.1:7001/1\n127.0.0.1:7002/1\n' > sent
	printf '127.0.0.1:7001/1\n127.0.0.1:7001/1\n' > recv
	measure_is sent recv unreliable 0.5 0.5
}

@test "measure: a line that is no key or ID -> 65 naming file and line" {
	seq 1 2 > sent
	printf '1\nhello\n' > recv
	run --separate-stderr gdinspect measure sent recv
	assert_failure 65
	assert_equal "$stderr" "gdinspect: recv:2: not a key or ID: 'hello'"
}

@test "measure: missing file -> 74, one file -> 64, empty SENT -> 65" {
	seq 1 2 > sent
	run --separate-stderr gdinspect measure sent nosuch
	assert_failure 74
	assert_equal "$stderr" "gdinspect: cannot read nosuch: No such file or directory"
	run --separate-stderr gdinspect measure sent
	assert_failure 64
	[ "${stderr_lines[0]}" = "gdinspect: measure needs two files: SENT RECEIVED" ]
	: > empty
	run --separate-stderr gdinspect measure empty sent
	assert_failure 65
	assert_equal "$stderr" "gdinspect: empty lists no block: nothing to measure"
}

@test "measure: --watch is refused (64), as gdinspect(1) says, not ignored" {
	seq 1 2 > sent
	cp sent recv
	run --separate-stderr gdinspect --watch 1 measure sent recv
	assert_failure 64
	[ "${stderr_lines[0]}" = "gdinspect: cannot use --watch with measure" ]
	[ -z "$output" ]
}
