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
	nosub="gdpub: warning: 3 of 3 blocks were published while no subscriber was connected"
	run --separate-stderr timeout 20 env -u NOTIFY_SOCKET gdpub -p 0 --port-file pub.port < <(seq 1 3)
	assert_success
	assert_equal "$stderr" "$nosub"
	run --separate-stderr timeout 20 env NOTIFY_SOCKET=relative/path gdpub -p 0 --port-file pub.port < <(seq 1 3)
	assert_success
	assert_equal "$stderr" "$(printf '%s\n' "gdpub: warning: NOTIFY_SOCKET='relative/path' is not an absolute path or an abstract name ('@...') of at most 107 bytes; the service manager is not told" "$nosub")"
	# an abstract socket, with GD off: READY=1 at once (its name: this
	# test's own, by the port its gdpub had)
	port=$(cat pub.port)
	spawn "exec python $BATS_TEST_DIRNAME/notifyd.py @gdkit-test-$$-$port abs2.log"
	wait_until 10 test -e abs2.log
	run timeout 20 env NOTIFY_SOCKET="@gdkit-test-$$-$port" gdpub -p 0 --port-file pub.port < <(seq 1 3)
	assert_success
	wait_until 10 has_line abs2.log '^READY=1$'
}

# The units make install puts in place (systemd/ in the source tree)
# pass systemd-analyze verify, which refuses unknown keys, bad values,
# programs that are not there and (with MANPATH) Documentation= pages
# that are not; gdkit(7) RUNNING AS A SERVICE shows them as installed.
# The units name the programs as PREFIX has them: installed under a
# PREFIX of this test's, with the programs under test copied there (as
# install-bin would put them, which would build them first), they are
# verified where they lie; DESTDIR puts the same files under it.
@test "make install: the units, sysusers.d and tmpfiles.d files in place; systemd-analyze verify accepts them; gdkit(7) shows them" {
	command -v systemd-analyze > /dev/null ||
		skip "systemd-analyze is not installed (Debian package systemd)"
	local top="$BATS_TEST_DIRNAME/../.." d="$BATS_TEST_TMPDIR/pfx" u
	run make -C "$top" --no-print-directory install-units install-man DESTDIR="$BATS_TEST_TMPDIR/dest" PREFIX=/usr
	assert_success
	(cd dest && find . -type f | sort) > dest.list
	assert_equal "$(cat dest.list)" "$(printf '%s\n' ./usr/lib/systemd/system/gdkit-pipeline@.service ./usr/lib/systemd/system/gdpub@.service ./usr/lib/systemd/system/gdpub@.socket ./usr/lib/sysusers.d/gdkit.conf ./usr/lib/tmpfiles.d/gdkit.conf ./usr/share/man/man1/gdack.1 ./usr/share/man/man1/gdinspect.1 ./usr/share/man/man1/gdpub.1 ./usr/share/man/man1/gdsub.1 ./usr/share/man/man5/gdkit-stream.5 ./usr/share/man/man5/gdkit.conf.5 ./usr/share/man/man7/gdkit.7)"
	run grep -h '^ExecStart=' dest/usr/lib/systemd/system/*.service
	assert_output "$(printf '%s\n' "ExecStart=/bin/bash -c 'set -o pipefail; /usr/bin/gdsub -c /etc/gdkit/pipeline-%i.conf --max-retries -1 --state \"\$\$STATE_DIRECTORY/sub.state\" | /bin/sh -c \"\$\$GDKIT_WORK\" | /usr/bin/gdack -c /etc/gdkit/pipeline-%i.conf --sink \"\$\$STATE_DIRECTORY/sink\"'" "ExecStart=/usr/bin/gdpub -c /etc/gdkit/gdpub-%i.conf --journal %S/gdpub-%i/pub.journal --resend 5 --wait-ready")"
	run grep -rl '@[A-Z]*@' dest
	assert_output ""
	# installed where they run
	run make -C "$top" --no-print-directory install-units install-man PREFIX="$d"
	assert_success
	mkdir -p "$d/bin"
	cp "$GDKIT_BIN"/gdpub "$GDKIT_BIN"/gdsub "$GDKIT_BIN"/gdack "$GDKIT_BIN"/gdinspect "$d/bin/"
	cd "$d/lib/systemd/system"
	run env MANPATH="$d/share/man" systemd-analyze verify ./gdpub@7001.socket ./gdpub@7001.service ./gdkit-pipeline@orders.service
	assert_success
	assert_output ""
	# the user, then the directory of the status lines, made in a root
	# of the test's own as at boot
	if command -v systemd-sysusers > /dev/null && command -v systemd-tmpfiles > /dev/null; then
		mkdir -p "$BATS_TEST_TMPDIR/root/etc"
		run systemd-sysusers --root="$BATS_TEST_TMPDIR/root" "$d/lib/sysusers.d/gdkit.conf"
		assert_success
		uid=$(awk -F: '$1 == "gdkit" { print $3 }' "$BATS_TEST_TMPDIR/root/etc/passwd")
		[ -n "$uid" ]
		grep -q '^gdkit:' "$BATS_TEST_TMPDIR/root/etc/group"
		run systemd-tmpfiles --root="$BATS_TEST_TMPDIR/root" --create "$d/lib/tmpfiles.d/gdkit.conf"
		assert_success
		assert_equal "$(stat -c '%a %u' "$BATS_TEST_TMPDIR/root/var/log/gdkit")" "750 $uid"
	fi
	# it does refuse a bad one
	sed 's/^Type=exec$/Type=exe/' gdpub@.service > bad@.service
	run systemd-analyze verify --man=no ./bad@1.service
	assert_output --partial "Failed to parse service type"
	# gdkit(7) shows the files make install writes with PREFIX=/usr/local,
	# their comments left out
	cd "$BATS_TEST_TMPDIR"
	run make -C "$top" --no-print-directory install-units DESTDIR="$BATS_TEST_TMPDIR/local" PREFIX=/usr/local
	assert_success
	run python - "$top/man/gdkit.7" local/usr/local/lib <<'PY'
import os, re, sys
src = open(sys.argv[1]).read().split("\n")
seen, i, bad = [], 0, 0
while i < len(src):
    m = re.match(r'^\.\\" unit: (\S+)$', src[i])
    if m:
        assert src[i + 1].startswith(".Bd -literal"), src[i + 1]
        j, body = i + 2, []
        while src[j] != ".Ed":
            body.append(src[j].replace("\\e", "\\").replace("\\&", ""))
            j += 1
        name = m.group(1)
        sub = "sysusers.d" if name == "sysusers.d/gdkit.conf" else \
            "tmpfiles.d" if name == "tmpfiles.d/gdkit.conf" else "systemd/system"
        path = os.path.join(sys.argv[2], sub, os.path.basename(name))
        want = [l for l in open(path).read().split("\n")[:-1]
                if not l.startswith("#")]
        while want and want[0] == "":
            want.pop(0)
        if body != want:
            print("gdkit.7: %s differs from the installed %s:" % (name, path))
            for k in range(max(len(body), len(want))):
                a = body[k] if k < len(body) else "(none)"
                b = want[k] if k < len(want) else "(none)"
                if a != b:
                    print("  page: %s\n  file: %s" % (a, b))
                    break
            bad += 1
        seen.append(name)
        i = j
    i += 1
print(" ".join(seen))
sys.exit(bad)
PY
	assert_success
	assert_output "gdpub@.socket gdpub@.service gdkit-pipeline@.service sysusers.d/gdkit.conf tmpfiles.d/gdkit.conf"
}

# journald: $JOURNAL_STREAM names stderr -> a priority prefix per line and
# no timestamp (journald adds its own); not when stderr is another stream
@test "stderr under journald: each line starts with its syslog priority, no timestamp" {
	: > j.err
	js=$(stat -c '%d:%i' j.err)
	run env JOURNAL_STREAM="$js" sh -c "seq 1 3 | exec timeout 20 gdpub -v -p 0 --port-file pub.port -n 1 -t 0.2 2>> j.err"
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
	notifyd wd
	feed_open in.fifo
	spawn "NOTIFY_SOCKET=$BATS_TEST_TMPDIR/wd.sock WATCHDOG_USEC=600000 sh -c 'echo \$\$ > pub.pid; exec gdpub -p 0 --port-file pub.port' < in.fifo > st 2> pub.err" 7>&-
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

# The installed gdkit-pipeline@.service, its ExecStart= run as systemd
# runs it (unitrun.py: the command line, the specifiers, Restart=,
# RestartSec=, RestartPreventExitStatus=), never systemd itself: a kill -9
# of its gdack ends the whole run by itself (gdsub exits 1 a second later,
# the shell with gdack's 137 under pipefail), the manager starts the next
# run after RestartSec=, and gdpub --resend sends it what was not
# acknowledged (issue 34).
@test "the installed pipeline unit, run as its manager runs it: a killed gdack ends the run, the next one gets the rest; every block in the sink once, none NACKed" {
	local top="$BATS_TEST_DIRNAME/../.." d="$BATS_TEST_TMPDIR/pfx" unit
	run make -C "$top" --no-print-directory install-units PREFIX="$d" SYSCONFDIR="$BATS_TEST_TMPDIR/etc"
	assert_success
	unit="$d/lib/systemd/system/gdkit-pipeline@.service"
	mkdir -p "$d/bin" etc/gdkit
	cp "$GDKIT_BIN"/gdsub "$GDKIT_BIN"/gdack "$d/bin/"
	feed_open in.fifo
	hold_port port
	spawn "gdpub -p $port -n 1 -t 2 --resend 5 --journal pub.journal < in.fifo > st 2> pub.err; echo \$? > pub.rc" 7>&-
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.05\n' "$port" > etc/gdkit/pipeline-t.conf
	spawn "exec python $BATS_TEST_DIRNAME/unitrun.py $unit t $BATS_TEST_TMPDIR/lib/gdkit-pipeline-t runs.log 2> unitrun.err" 7>&-
	wait_until 10 has_line runs.log '^start 1 pid [0-9]+$'
	seq 1 1000 >&7
	wait_until 30 lines_at_least lib/gdkit-pipeline-t/sink 100
	# gdack stops, blocks keep coming: some are written and not
	# acknowledged when it is killed
	ack=$(pgrep -P "$(sed -n 's/^start 1 pid //p' runs.log)" -x gdack)
	kill -STOP "$ack"
	seq 1001 2000 >&7
	wait_until 30 bash -c "gdinspect -c etc/gdkit/pipeline-t.conf --json stats | grep -Eq '\"unacked\":[1-9]'"
	kill -KILL "$ack"
	wait_until 20 has_line runs.log '^exit 1 status 137$'
	wait_until 20 has_line runs.log '^start 2 pid [0-9]+$'
	feed_close
	wait_until 120 test -s pub.rc
	assert_equal "$(cat pub.rc)" 0
	[ "$(grep -c '^ACK ' st)" -eq 2000 ]
	run grep -c '^NACK ' st
	assert_output 0
	[ "$(nlines lib/gdkit-pipeline-t/sink)" -eq 2000 ]
	[ "$(cut -f2 lib/gdkit-pipeline-t/sink | sort -u | wc -l)" -eq 2000 ]
}
