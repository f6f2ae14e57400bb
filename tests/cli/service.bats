#!/usr/bin/env bats
# Running as a service (gdkit(7) RUNNING AS A SERVICE): the service
# manager's notification protocol ($NOTIFY_SOCKET): READY=1 when gdpub
# would print READY and when gdsub's publishers are connected, STATUS=
# every few seconds, WATCHDOG=1 at half of $WATCHDOG_USEC from the loop,
# STOPPING=1 when draining after SIGTERM; nothing when it is unset.
load helpers
bats_require_minimum_version 1.5.0

# notifyd NAME: a notification socket NAME.sock logging to NAME.log
notifyd() {
	spawn "exec python $BATS_TEST_DIRNAME/notifyd.py $BATS_TEST_TMPDIR/$1.sock $1.log"
	wait_until 10 test -e "$1.log"
}

@test "gdpub and gdsub tell the service manager READY=1, STATUS=, WATCHDOG=1 and STOPPING=1" {
	notifyd pub
	notifyd sub
	feed_open in.fifo
	spawn "NOTIFY_SOCKET=$BATS_TEST_TMPDIR/pub.sock WATCHDOG_USEC=600000 sh -c 'echo \$\$ > pub.pid; exec gdpub -p 0 --port-file pub.port -n 1' < in.fifo > st 2> pub.err; echo \$? > pub.rc" 7>&-
	port=$(port_of pub.port)
	# no GD subscriber yet: gdpub is not READY
	run ! has_line pub.log '^READY=1$'
	wait_until 10 has_line pub.log '^WATCHDOG=1$'
	spawn "NOTIFY_SOCKET=$BATS_TEST_TMPDIR/sub.sock gdsub -P 127.0.0.1:$port --name s 2> sub.err | gdack -P 127.0.0.1:$port --name s > /dev/null 2> ack.err" 7>&-
	wait_until 10 has_line st '^READY$'
	wait_until 10 has_line pub.log '^READY=1$'
	wait_until 10 has_line sub.log '^READY=1$'
	seq 1 100 >&7
	wait_until 10 bash -c "[ \$(grep -c '^ACK ' st) -eq 100 ]"
	# STATUS= every 5 s, the first at once
	wait_until 20 has_line pub.log '^STATUS=100 published, 100 ACK, 0 NACK, 0 pending, '
	wait_until 20 has_line sub.log '^STATUS=1 of 1 publishers connected, 100 received, 100 acknowledged, 0 unacknowledged$'
	# the watchdog goes on: at least two more pings
	n=$(grep -c '^WATCHDOG=1$' pub.log)
	wait_until 10 bash -c "[ \$(grep -c '^WATCHDOG=1$' pub.log) -ge $((n + 2)) ]"
	run ! grep -q WATCHDOG sub.log	# no WATCHDOG_USEC for it
	kill -TERM "$(cat pub.pid)"
	wait_until 10 has_line pub.log '^STOPPING=1$'
	wait_until 20 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	wait_until 20 has_line sub.log '^STOPPING=1$'
	assert_equal "$(cat pub.err)" "gdpub: SIGTERM: no more input; waiting for 0 pending blocks"
	assert_equal "$(cat sub.err ack.err)" ""
}

@test "NOTIFY_SOCKET unset: nothing is sent; set but unusable: one warning, the run goes on" {
	port=$(free_port)
	nosub="gdpub: warning: 3 of 3 blocks were published while no subscriber was connected"
	run --separate-stderr timeout 20 env -u NOTIFY_SOCKET gdpub -p "$port" < <(seq 1 3)
	assert_success
	assert_equal "$stderr" "$nosub"
	run --separate-stderr timeout 20 env NOTIFY_SOCKET=relative/path gdpub -p "$port" < <(seq 1 3)
	assert_success
	assert_equal "$stderr" "$(printf '%s\n' "gdpub: warning: NOTIFY_SOCKET='relative/path' is not an absolute path or an abstract name ('@...') of at most 107 bytes; the service manager is not told" "$nosub")"
	# an abstract socket, with GD off: READY=1 at once
	spawn "exec python $BATS_TEST_DIRNAME/notifyd.py @gdkit-test-$$-$port abs2.log"
	wait_until 10 test -e abs2.log
	run timeout 20 env NOTIFY_SOCKET="@gdkit-test-$$-$port" gdpub -p "$port" < <(seq 1 3)
	assert_success
	wait_until 10 has_line abs2.log '^READY=1$'
}

# The unit files of gdkit(7) RUNNING AS A SERVICE, as printed there (the
# programs' path and the 'work' stage replaced), pass systemd-analyze
# verify, which refuses unknown keys, bad values and missing programs.
@test "gdkit(7) unit files pass systemd-analyze verify" {
	command -v systemd-analyze > /dev/null ||
		skip "systemd-analyze is not installed (Debian package systemd)"
	run python - "$BATS_TEST_DIRNAME/../../man/gdkit.7" "$GDKIT_BIN" <<'PY'
import re, sys
src = open(sys.argv[1]).read().split("\n")
n, i = 0, 0
while i < len(src):
    m = re.match(r'^\.\\" unit: (\S+)$', src[i])
    if m:
        assert src[i + 1].startswith(".Bd -literal"), src[i + 1]
        j, body = i + 2, []
        while src[j] != ".Ed":
            body.append(src[j])
            j += 1
        text = "\n".join(body) + "\n"
        text = text.replace("/usr/local/bin/", sys.argv[2] + "/").replace("| work |", "| cat |")
        open(m.group(1), "w").write(text)
        print(m.group(1))
        n, i = n + 1, j
    i += 1
sys.exit(0 if n == 2 else 1)
PY
	assert_success
	assert_output "$(printf 'gdkit-orders-pub.service\ngdkit-orders-sub.service')"
	run systemd-analyze verify --man=no ./gdkit-orders-pub.service ./gdkit-orders-sub.service
	assert_success
	assert_output ""
	# it does refuse a bad one
	sed 's/^Type=notify$/Type=notifie/' gdkit-orders-pub.service > bad.service
	run systemd-analyze verify --man=no ./bad.service
	assert_output --partial "Failed to parse service type"
}

# journald: $JOURNAL_STREAM names stderr -> a priority prefix per line and
# no timestamp (journald adds its own); not when stderr is another stream
@test "stderr under journald: each line starts with its syslog priority, no timestamp" {
	port=$(free_port)
	: > j.err
	js=$(stat -c '%d:%i' j.err)
	run env JOURNAL_STREAM="$js" sh -c "seq 1 3 | exec timeout 20 gdpub -v -p $port -n 1 -t 0.2 2>> j.err"
	assert_failure 1
	run grep -c . j.err
	[ "$output" -ge 3 ]
	# every line has a priority: info and traces <6>/<7>, warnings <4>
	run grep -vE '^<[3467]>gdpub: ' j.err
	assert_output ""
	grep -qE '^<4>gdpub: warning: 3 blocks in [0-9.]+ s: 0 ACK, 3 NACK, 0 REJECT' j.err
	grep -qE '^<7>gdpub: listening on 127\.0\.0\.1:' j.err
	# an error, and a usage error's two lines
	: > u.err
	js=$(stat -c '%d:%i' u.err)
	run env JOURNAL_STREAM="$js" sh -c 'exec gdpub --bogus 2>> u.err'
	assert_failure 64
	assert_equal "$(cat u.err)" "$(printf '<3>gdpub: unknown option '\''--bogus'\''\n<3>try '\''gdpub --help'\''')"
	# JOURNAL_STREAM naming another stream: plain lines
	run --separate-stderr env JOURNAL_STREAM="$js" gdpub --bogus
	assert_failure 64
	assert_equal "$stderr" "$(printf 'gdpub: unknown option '\''--bogus'\''\ntry '\''gdpub --help'\''')"
}

# The watchdog's pings come from gdpub's own event loop: a stopped
# process sends none, and they resume with it.
@test "a gdpub whose loop is stopped (SIGSTOP) sends no WATCHDOG=1" {
	port=$(free_port)
	notifyd wd
	feed_open in.fifo
	spawn "NOTIFY_SOCKET=$BATS_TEST_TMPDIR/wd.sock WATCHDOG_USEC=600000 sh -c 'echo \$\$ > pub.pid; exec gdpub -p $port' < in.fifo > st 2> pub.err" 7>&-
	wait_until 10 bash -c "[ \$(grep -c '^WATCHDOG=1$' wd.log) -ge 3 ]"
	kill -STOP "$(cat pub.pid)"
	n=$(grep -c '^WATCHDOG=1$' wd.log)
	# no ping for four periods of 0.5 s (an absence takes its time to see)
	sleep 2
	[ "$(grep -c '^WATCHDOG=1$' wd.log)" -le $((n + 1)) ]
	kill -CONT "$(cat pub.pid)"
	wait_until 10 bash -c "[ \$(grep -c '^WATCHDOG=1$' wd.log) -ge $((n + 3)) ]"
	feed_close
}
