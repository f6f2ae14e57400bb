#!/usr/bin/env bats
# Config files (SPEC §3): every error names FILE:LINE: KEY on one line and
# exits 78, a [section] header included; a key set twice is a warning;
# comments, fractional durations and default-valued keys that are not
# supported yet are accepted; command-line options override.
bats_require_minimum_version 1.5.0
load helpers

# cfg FILE LINE...: write the config FILE, one LINE a line
cfg() {
	local f=$1
	shift
	printf '%s\n' "$@" > "$f"
}

# conf_err PROG LINE: PROG -c bad.ini exits 78 with "PROG: LINE" alone on
# stderr
conf_err() {
	expect_fail 78 "$1: $2" -- "$1" -c bad.ini
}

# ---- unknown keys, families ----

@test "gdpub: unknown key names file, line and key" {
	cfg bad.ini '# a comment' '; another' '' 'GDpub_port=7001' 'GDpub_bogus=1'
	conf_err gdpub 'bad.ini:5: GDpub_bogus: unknown key'
}

@test "gdsub: unknown key names file, line and key" {
	cfg bad.ini 'GDsub_pub=127.0.0.1:7001' 'GDsub_retry=1'
	conf_err gdsub 'bad.ini:2: GDsub_retry: unknown key'
}

@test "gdack and gdinspect: unknown key is a config error" {
	cfg bad.ini 'GDsub_pub=127.0.0.1:7001' 'Bogus=1'
	conf_err gdack 'bad.ini:2: Bogus: unknown key'
	expect_fail 78 'gdinspect: bad.ini:2: Bogus: unknown key' -- gdinspect -c bad.ini stats
}

@test "only the first error of a file is reported" {
	cfg bad.ini 'GDpub_bogus=1' 'GDpub_port=x' 'no equals sign'
	conf_err gdpub 'bad.ini:1: GDpub_bogus: unknown key'
}

@test "gdpub: a GDsub_ key is not a publisher key" {
	cfg bad.ini 'GDpub_port=7001' 'GDsub_pub=127.0.0.1:7001'
	conf_err gdpub 'bad.ini:2: GDsub_pub: not a publisher (GDpub_*) key'
}

@test "gdsub and gdack: a GDpub_ key is not a subscriber key" {
	cfg bad.ini 'GDsub_pub=127.0.0.1:7001' 'GDpub_port=7001'
	conf_err gdsub 'bad.ini:2: GDpub_port: not a subscriber (GDsub_*) key'
	conf_err gdack 'bad.ini:2: GDpub_port: not a subscriber (GDsub_*) key'
}

# ---- bad values, one per type ----

@test "integer: not a number, out of range, empty" {
	cfg bad.ini 'GDpub_port=abc'
	conf_err gdpub "bad.ini:1: GDpub_port: invalid value 'abc': expected an integer from 0 to 65535"
	cfg bad.ini 'GDpub_port=70000'
	conf_err gdpub "bad.ini:1: GDpub_port: invalid value '70000': expected an integer from 0 to 65535"
	cfg bad.ini 'GDpub_port=7001' 'GDpub_numSubs=33'
	conf_err gdpub "bad.ini:2: GDpub_numSubs: invalid value '33': expected an integer from 0 to 32"
	cfg bad.ini 'GDpub_port='
	conf_err gdpub "bad.ini:1: GDpub_port: invalid value '': expected an integer from 0 to 65535"
	cfg bad.ini 'GDpub_port=12x'
	conf_err gdpub "bad.ini:1: GDpub_port: invalid value '12x': expected an integer from 0 to 65535"
	cfg bad.ini 'GDsub_pub=127.0.0.1:7001' 'GDsub_maxRetries=-2'
	conf_err gdsub "bad.ini:2: GDsub_maxRetries: invalid value '-2': expected an integer from -1 to 1073741824"
}

@test "duration: not a number, out of range" {
	cfg bad.ini 'GDpub_port=7001' 'GDpub_timeout=soon'
	conf_err gdpub "bad.ini:2: GDpub_timeout: invalid value 'soon': expected seconds from 0.001 to 3.1536e+07"
	cfg bad.ini 'GDpub_port=7001' 'GDpub_timeout=0'
	conf_err gdpub "bad.ini:2: GDpub_timeout: invalid value '0': expected seconds from 0.001 to 3.1536e+07"
	cfg bad.ini 'GDsub_pub=127.0.0.1:7001' 'GDsub_retryInt=1s'
	conf_err gdsub "bad.ini:2: GDsub_retryInt: invalid value '1s': expected seconds from 0.001 to 3.1536e+07"
	# plain decimals only
	local v
	for v in 1e3 0x10 inf nan 1.2.3 . -; do
		cfg bad.ini 'GDpub_port=7001' "GDpub_timeout=$v"
		conf_err gdpub "bad.ini:2: GDpub_timeout: invalid value '$v': expected seconds from 0.001 to 3.1536e+07"
	done
}

@test "bool: only 0/1 (true/false, yes/no, on/off)" {
	cfg bad.ini 'GDsub_pub=127.0.0.1:7001' 'GDsub_gd=maybe'
	conf_err gdsub "bad.ini:2: GDsub_gd: invalid value 'maybe': expected 0 or 1"
	conf_err gdack "bad.ini:2: GDsub_gd: invalid value 'maybe': expected 0 or 1"
	cfg bad.ini 'GDsub_pub=127.0.0.1:7001' 'GDsub_gd=2'
	conf_err gdsub "bad.ini:2: GDsub_gd: invalid value '2': expected 0 or 1"
}

@test "enum: the message lists the choices" {
	cfg bad.ini 'GDpub_port=7001' 'GDpub_fsync=sometimes'
	conf_err gdpub "bad.ini:2: GDpub_fsync: invalid value 'sometimes': expected one of 'always', 'batch', 'never'"
	cfg bad.ini 'GDpub_port=7001' 'GDpub_sendQueueSizeMaxPolicy=Foo'
	conf_err gdpub "bad.ini:2: GDpub_sendQueueSizeMaxPolicy: invalid value 'Foo': expected one of 'RemoveSubscriber', 'DropEvents'"
	cfg bad.ini 'GDsub_pub=127.0.0.1:7001' 'GDsub_dedup=fuzzy'
	conf_err gdsub "bad.ini:2: GDsub_dedup: invalid value 'fuzzy': expected one of 'id', 'index', 'none'"
}

@test "HOST:PORT: no port, bad port, unclosed bracket, listed twice" {
	local v
	for v in localhost 127.0.0.1:0 127.0.0.1:70000 127.0.0.1: :7001 '[::1:7001' ::1:7001; do
		cfg bad.ini "GDsub_pub=$v"
		conf_err gdsub "bad.ini:1: GDsub_pub: invalid value '$v': expected HOST:PORT with PORT from 1 to 65535 ([ADDR]:PORT for IPv6)"
	done
	cfg bad.ini 'GDsub_pub=127.0.0.1:7001' 'GDsub_pub=127.0.0.1:7001'
	conf_err gdsub "bad.ini:2: GDsub_pub: invalid value '127.0.0.1:7001': publisher listed twice"
}

@test "string: an empty value is refused" {
	cfg bad.ini 'GDpub_port=7001' 'GDpub_bind='
	conf_err gdpub "bad.ini:2: GDpub_bind: invalid value '': expected a non-empty value of at most 4096 bytes"
}

@test "GDpub_host: a value keys cannot carry is a config error naming file, line and key" {
	local v
	for v in a/b 'a b' $'a\tb' 'hé' a:b; do
		cfg bad.ini 'GDpub_port=7001' "GDpub_host=$v"
		conf_err gdpub "bad.ini:2: GDpub_host: invalid value '$v': expected a host name (at most 253 letters, digits, '-', '.' and '_'), an IPv4 or an IPv6 address"
	done
}

@test "keys that need each other: from the file alone a config error (78) naming file, line and key; with a command-line option a usage error (64)" {
	cfg bad.ini GDpub_port=1 GDpub_role=secondary
	conf_err gdpub "bad.ini:2: GDpub_role=secondary needs GDpub_cluster (--cluster NAME): a secondary of which cluster?"
	expect_usage gdpub "GDpub_role=secondary needs GDpub_cluster (--cluster NAME): a secondary of which cluster?" -- gdpub -p 1 --role secondary
	cfg bad.ini GDpub_port=1 GDpub_cluster=c1 'GDpub_role = secondary' GDpub_numSubs=0
	expect_fail 78 "gdpub: bad.ini:3: GDpub_role=secondary needs GDpub_numSubs of 1 or more: pre-acknowledgements come from GD subscribers, and without them every block would wait out its GDpub_tentativePreAckTimeout first (GDpub_numSubs on line 4)" -- gdpub -c bad.ini -I
	cfg bad.ini GDpub_port=1 GDpub_cluster=c1
	conf_err gdpub "bad.ini:2: GDpub_cluster needs the block IDs from the input (-I/--ids or -f frame): every member of cluster c1 must give a block the same ID, and gdpub would number them itself"
	expect_usage gdpub "GDpub_cluster cannot be used with -o: cluster members serve their subscribers over TCP" -- gdpub -c bad.ini -I -o -
	cfg bad.ini GDpub_port=1 '# the journal of a pipeline' GDpub_journal=j.gdj
	conf_err gdpub "bad.ini:3: GDpub_journal needs GDpub_numSubs above 0: with GD off nothing is pending to journal"
	# the command line sets one of them: the command line is what to fix
	expect_usage gdpub "GDpub_journal needs GDpub_numSubs above 0: with GD off nothing is pending to journal" -- gdpub -c bad.ini -n 0
	[ ! -e j.gdj ]
	cfg bad.ini GDpub_port=1 GDpub_snapshot=3
	expect_usage gdpub "GDpub_snapshot cannot be used with -o: a stream has no subscribers joining later to replay blocks to" -- gdpub -c bad.ini -o -
	cfg bad.ini GDsub_pub=127.0.0.1:1 GDsub_state=s.state GDsub_gd=0
	conf_err gdsub "bad.ini:2: cannot use --state (GDsub_state) with --no-gd (GDsub_gd=0): nothing is acknowledged (GDsub_gd on line 3)"
	[ ! -e s.state ]
}

@test "gdinspect checks the values of both families" {
	cfg bad.ini 'GDpub_port=x'
	expect_fail 78 "gdinspect: bad.ini:1: GDpub_port: invalid value 'x': expected an integer from 0 to 65535" -- gdinspect -c bad.ini pending
	cfg bad.ini 'GDsub_pub=nohost'
	expect_fail 78 "gdinspect: bad.ini:1: GDsub_pub: invalid value 'nohost': expected HOST:PORT with PORT from 1 to 65535 ([ADDR]:PORT for IPv6)" -- gdinspect -c bad.ini subs
}

# ---- the file itself ----

@test "missing config file" {
	for p in gdpub gdsub gdack; do
		expect_fail 78 "$p: nope.ini: cannot read config file: No such file or directory" -- "$p" -c nope.ini
	done
	expect_fail 78 "gdinspect: nope.ini: cannot read config file: No such file or directory" -- gdinspect -c nope.ini stats
}

@test "unreadable config file (a directory) is an error, not a hang" {
	mkdir dir.ini
	EXPECT_TIMEOUT=15 expect_fail 78 "gdpub: dir.ini: cannot read config file: Is a directory" -- gdpub -c dir.ini
	EXPECT_TIMEOUT=15 expect_fail 78 "gdsub: dir.ini: cannot read config file: Is a directory" -- gdsub -c dir.ini
}

@test "unreadable config file (no permission)" {
	[ "$(id -u)" -ne 0 ] || skip "root reads any file"
	cfg secret.ini 'GDpub_port=7001'
	chmod 000 secret.ini
	expect_fail 78 "gdpub: secret.ini: cannot read config file: Permission denied" -- gdpub -c secret.ini
}

@test "syntax error: a line without =" {
	cfg bad.ini '# pub' 'GDpub_port=7001' '' 'GDpub_timeout'
	conf_err gdpub 'bad.ini:4: syntax error: expected key=value'
	cfg bad.ini 'GDsub_pub=127.0.0.1:7001' 'just words'
	conf_err gdsub 'bad.ini:2: syntax error: expected key=value'
}

# padded N PORT: PORT with leading zeros to N digits
padded() {
	printf '%0*d' "$1" "$2"
}

@test "long lines: a value of 4096 bytes and more is read whole (Debian's inih alone stops at 197)" {
	local port v
	hold_port port
	# a 4096-byte port number, read whole: gdinspect looks for its socket
	v=$(padded 4096 "$port")
	cfg p.ini '# a long value' "GDpub_port = $v ; a comment" 'GDpub_numSubs=1'
	expect_fail 69 "gdinspect: nothing answers at $(pub_sock "$port"), the control socket of the gdpub on port $port: No such file or directory (is it running, as this user?)" -- gdinspect -c p.ini stats
	# an invalid long value is shown by its start and its length
	cfg bad.ini 'GDpub_port=7001' "GDpub_host=$(printf 'h%.0s' $(seq 4097))"
	conf_err gdpub "bad.ini:2: GDpub_host: invalid value '$(printf 'h%.0s' $(seq 64))...' (4097 bytes): expected a non-empty value of at most 4096 bytes"
	# errors after a long line name their own line
	cfg bad.ini "GDsub_ctl=/$(printf 'n%.0s' $(seq 300))" 'GDsub_pub=127.0.0.1:7001' 'GDsub_bogus=1'
	conf_err gdsub 'bad.ini:3: GDsub_bogus: unknown key'
}

@test "line length limit: 8192 bytes, as the message says; the key is named" {
	local port v
	hold_port port
	# 8192 bytes: accepted
	v="GDpub_port=$(padded 8181 "$port")"
	[ "${#v}" -eq 8192 ]
	cfg p.ini "$v"
	expect_fail 69 "gdinspect: nothing answers at $(pub_sock "$port"), the control socket of the gdpub on port $port: No such file or directory (is it running, as this user?)" -- gdinspect -c p.ini stats
	# 8193 bytes: over "at most 8192 bytes"
	v="GDpub_port=$(padded 8182 "$port")"
	cfg bad.ini '# c' "$v" 'GDpub_bogus=1'
	conf_err gdpub 'bad.ini:2: GDpub_port: line too long (at most 8192 bytes)'
	cfg bad.ini "# $(padded 9000 0)"
	conf_err gdpub 'bad.ini:1: line too long (at most 8192 bytes)'
}

# inih stops a line at a NUL: "GDpub_port=17722\0junk" would load as
# port 17722 and a file starting with NUL as an empty one. A config file
# is text; a NUL anywhere is an error naming the file and the line.
@test "a NUL byte in a config file is an error naming file and line (78)" {
	printf 'GDpub_port=17722\0junk\n' > bad.ini
	conf_err gdpub 'bad.ini:1: NUL byte at column 17: a config file is text, without NUL bytes'
	printf '\0\377\n' > bad.ini
	conf_err gdpub 'bad.ini:1: NUL byte at column 1: a config file is text, without NUL bytes'
	printf '# ok\nGDpub_port=7001\nGDpub_timeout=1\0\nGDpub_numSubs=1\n' > bad.ini
	conf_err gdpub 'bad.ini:3: NUL byte at column 16: a config file is text, without NUL bytes'
	# on the last line, without a newline
	printf 'GDsub_pub=127.0.0.1:7001\n\0' > bad.ini
	conf_err gdsub 'bad.ini:2: NUL byte at column 1: a config file is text, without NUL bytes'
	conf_err gdack 'bad.ini:2: NUL byte at column 1: a config file is text, without NUL bytes'
	expect_fail 78 'gdinspect: bad.ini:2: NUL byte at column 1: a config file is text, without NUL bytes' -- gdinspect -c bad.ini stats
	# the first error of the file is the one reported
	printf 'GDpub_bogus=1\nGDpub_port=7001\0\n' > bad.ini
	conf_err gdpub 'bad.ini:1: GDpub_bogus: unknown key'
	printf 'GDpub_port=7001\n%09000d\nGDpub_port=\0\n' 0 > bad.ini
	conf_err gdpub 'bad.ini:2: line too long (at most 8192 bytes)'
}

# inih would pass the keys after a [section] header on as they are, the
# header ignored: a file meant for one section of another program's, or
# written with sections by habit, was taken whole and silently.
@test "a [section] header is an error naming file and line (78), for every program" {
	cfg bad.ini '# pub' '[pub]' 'GDpub_port=7001'
	conf_err gdpub "bad.ini:2: section header '[pub]': a gdkit config file has no sections, only KEY=VALUE lines"
	# indented, with a comment after it, or not closed
	cfg bad.ini 'GDsub_pub=127.0.0.1:7001' '  [gdsub] ; the subscriber'
	conf_err gdsub "bad.ini:2: section header '[gdsub]': a gdkit config file has no sections, only KEY=VALUE lines"
	conf_err gdack "bad.ini:2: section header '[gdsub]': a gdkit config file has no sections, only KEY=VALUE lines"
	expect_fail 78 "gdinspect: bad.ini:2: section header '[gdsub]': a gdkit config file has no sections, only KEY=VALUE lines" \
	    -- gdinspect -c bad.ini stats
	cfg bad.ini 'GDpub_port=7001' '[unclosed'
	conf_err gdpub "bad.ini:2: section header '[unclosed': a gdkit config file has no sections, only KEY=VALUE lines"
	# on the first line, after a UTF-8 byte order mark
	printf '\357\273\277[s]\nGDpub_port=7001\n' > bad.ini
	conf_err gdpub "bad.ini:1: section header '[s]': a gdkit config file has no sections, only KEY=VALUE lines"
	# a long one is shown by its start
	cfg bad.ini "[$(printf 's%.0s' $(seq 300))]"
	conf_err gdpub "bad.ini:1: section header '[$(printf 's%.0s' $(seq 63))...': a gdkit config file has no sections, only KEY=VALUE lines"
	# the first error of the file is the one reported
	cfg bad.ini 'GDpub_bogus=1' '[pub]'
	conf_err gdpub 'bad.ini:1: GDpub_bogus: unknown key'
	cfg bad.ini 'GDpub_port' '[pub]'
	conf_err gdpub 'bad.ini:1: syntax error: expected key=value'
}

# A key set twice is taken with its last value, as before (a line
# appended to override one above keeps working), and said: whoever reads
# the file from the top sees the first line in force.
@test "a key set twice: one warning per key naming the file, both lines and the one used; the last value is used" {
	local port
	hold_port port
	cfg p.ini 'GDpub_port=7001' 'GDpub_timeout=3' '# the port again' "GDpub_port=$port" 'GDpub_timeout=4' 'GDpub_timeout=5'
	# gdinspect looks for the gdpub of the last port
	expect_fail 69 \
	    "gdinspect: warning: p.ini:4: GDpub_port: set 2 times (first on line 1); the value of line 4 is used" \
	    "gdinspect: warning: p.ini:6: GDpub_timeout: set 3 times (first on line 2); the value of line 6 is used" \
	    "gdinspect: nothing answers at $(pub_sock "$port"), the control socket of the gdpub on port $port: No such file or directory (is it running, as this user?)" \
	    -- gdinspect -c p.ini stats
	# GDsub_pub may repeat (one line per publisher): no warning
	cfg s.ini 'GDsub_pub=127.0.0.1:7001' 'GDsub_pub=127.0.0.1:7002' 'GDsub_name=a' 'GDsub_name=b'
	expect_fail 1 \
	    "gdack: warning: s.ini:4: GDsub_name: set 2 times (first on line 3); the value of line 4 is used" \
	    "gdack: cannot acknowledge line 1: 'k' is not a key (HOST:PORT/ID)" \
	    -- bash -c 'echo k | gdack -c s.ini'
	# -q silences it, an error is reported alone
	expect_fail 1 "gdack: cannot acknowledge line 1: 'k' is not a key (HOST:PORT/ID)" \
	    -- bash -c 'echo k | gdack -q -c s.ini'
	cfg bad.ini 'GDpub_port=7001' 'GDpub_port=7002' 'GDpub_bogus=1'
	conf_err gdpub 'bad.ini:3: GDpub_bogus: unknown key'
	# a gdpub started with it runs on the last value
	cfg p.ini 'GDpub_port=1' "GDpub_port=$port"
	run --separate-stderr timeout 20 gdpub -c p.ini < /dev/null
	assert_success
	[ "$stderr" = "gdpub: warning: p.ini:2: GDpub_port: set 2 times (first on line 1); the value of line 2 is used" ]
}

# ---- keys at their defaults ----

@test "gdpub: every key at its default value (none for files), comments, fractional durations are accepted" {
	cfg p.ini '# publisher' "; port 0: the system picks one" "GDpub_port=0" 'GDpub_timeout=2.5' \
	    '	GDpub_numSubs=0' '  GDpub_resend = 0' \
	    'GDpub_journal=none' 'GDpub_authKeyFile=none' 'GDpub_cluster=none' \
	    'GDpub_fsync=batch' 'GDpub_discardInterval=60' 'GDpub_sendTimeout=60' \
	    'GDpub_sendQueueSizeMax=-1' 'GDpub_sendQueueSizeMaxPolicy=RemoveSubscriber' \
	    'GDpub_role=primary' 'GDpub_preAckTimerInterval=5' \
	    'GDpub_tentativePreAckTimeout=20' 'GDpub_confirmedPreAckTimeout=7200.0'
	run --separate-stderr timeout 30 gdpub -c p.ini --port-file pub.port </dev/null
	assert_success
	assert_output ''
	[ -z "$stderr" ]
}

@test "a fractional timeout is used: GDpub_timeout=0.25 NACKs an unacked block" {
	cfg p.ini "GDpub_port=0" 'GDpub_numSubs=1' 'GDpub_timeout=0.25'
	run --separate-stderr timeout 30 gdpub -c p.ini <<<"x"
	assert_failure 1
	assert_output 'NACK 1'
	[[ "$stderr" == *"NACKed after 0.25 seconds"* ]]
}

@test "gdsub and gdack: every key at its default value, comments, fractional durations are accepted" {
	seq 1 3 > in.txt
	pub_bg timeout 60 gdpub -p 0 --port-file pub.port -n 1 --wait-ready=30 < in.txt
	cfg s.ini '# subscriber' '; defaults of IceStorm QoS' "GDsub_pub=127.0.0.1:$port" \
	    '  GDsub_retryInt=.05' 'GDsub_maxRetries=400' 'GDsub_dedup=id' \
	    'GDsub_state=none' 'GDsub_authKeyFile=none' \
	    'GDsub_consecutive=0' 'GDsub_reliability=' 'GDsub_retryCount=0' \
	    'GDsub_connectionCached=1' 'GDsub_locatorCacheTimeout=-1'
	spawn "gdsub -c s.ini 2> sub.err | gdack -c s.ini --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > rc"
	pub_wait
	assert_success
	assert_output "$(printf 'READY\nACK 1\nACK 2\nACK 3')"
	wait_until 30 test -s rc
	[ "$(cat rc)" = "0 0" ]
	cut -f2- out.txt | cmp - in.txt
}

# ---- options override the file ----

@test "gdpub: -p, -n and -t override GDpub_port, GDpub_numSubs and GDpub_timeout" {
	cfg p.ini 'GDpub_port=1' 'GDpub_numSubs=5' 'GDpub_timeout=0.001'
	seq 1 3 > in.txt
	pub_bg timeout 60 gdpub -c p.ini -p 0 --port-file pub.port -n 1 -t 30 --wait-ready=30 < in.txt
	# -p 0 is used: the system's pick, not the file's 1
	[ "$port" -ne 1 ]
	cfg s.ini "GDsub_pub=127.0.0.1:$port" 'GDsub_retryInt=0.05' 'GDsub_maxRetries=400'
	spawn "gdsub -c s.ini 2> sub.err | gdack -c s.ini --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > rc"
	pub_wait
	assert_success
	assert_output "$(printf 'READY\nACK 1\nACK 2\nACK 3')"
	wait_until 30 test -s rc
	[ "$(cat rc)" = "0 0" ]
}

@test "gdsub: -P replaces the file's GDsub_pub list, --max-retries overrides" {
	seq 1 3 > in.txt
	pub_bg timeout 60 gdpub -p 0 --port-file pub.port -n 1 --wait-ready=30 < in.txt
	# nobody listens on dead
	hold_port dead
	cfg s.ini "GDsub_pub=127.0.0.1:$dead" 'GDsub_retryInt=0.05' 'GDsub_maxRetries=0'
	spawn "gdsub -c s.ini -P 127.0.0.1:$port --max-retries 400 2> sub.err | gdack -c s.ini --tee > out.txt 2> ack.err; echo \${PIPESTATUS[*]} > rc"
	pub_wait
	assert_success
	assert_output "$(printf 'READY\nACK 1\nACK 2\nACK 3')"
	wait_until 30 test -s rc
	[ "$(cat rc)" = "0 0" ]
	run ! grep -q ":$dead" sub.err
	[ "$(cut -f1 out.txt | head -n 1)" = "127.0.0.1:$port/1" ]
}
