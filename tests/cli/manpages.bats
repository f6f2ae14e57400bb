#!/usr/bin/env bats
# The man pages do not drift from the programs: every long option that
# --help names is documented in the program's page (as "Fl -name" on an
# .It line of the mdoc source, so it has an entry of its own and not only a
# mention in the SYNOPSIS), every config key of the contract is in
# gdkit.conf(5), --help goes to stdout and exits 0, and mandoc -Tlint is
# silent. The literal displays read as written once rendered, and the
# EXAMPLES work when pasted (tests/cli/manexamples.py says how they run).
load helpers
bats_require_minimum_version 1.5.0

MANDIR="$BATS_TEST_DIRNAME/../../man"
PROGS="gdpub gdsub gdack gdinspect"
PAGES="gdpub.1 gdsub.1 gdack.1 gdinspect.1 gdkit.conf.5 gdkit-stream.5 gdkit.7"

# SPEC §3, the contract's config keys
SPEC_KEYS="GDpub_port GDpub_timeout GDpub_numSubs GDpub_bind GDpub_host
GDpub_maxPending GDpub_maxBlockSize GDpub_resend GDpub_snapshot
GDpub_journal GDpub_fsync GDpub_ctl GDpub_authKeyFile GDpub_discardInterval
GDpub_sendTimeout GDpub_sendQueueSizeMax GDpub_sendQueueSizeMaxPolicy
GDpub_cluster GDpub_role GDpub_preAckTimerInterval
GDpub_tentativePreAckTimeout GDpub_confirmedPreAckTimeout
GDsub_pub GDsub_retryInt GDsub_maxRetries GDsub_name GDsub_gd GDsub_ctl
GDsub_state GDsub_dedup GDsub_consecutive GDsub_authKeyFile
GDsub_reliability GDsub_retryCount GDsub_connectionCached
GDsub_locatorCacheTimeout"

# check_long_options PROG: each --option in PROG --help is "Fl -option" on
# an .It line of man/PROG.1; prints the missing ones and fails if any.
check_long_options() {
	local prog=$1 page="$MANDIR/$1.1" opt missing=""
	run --separate-stderr "$prog" --help
	[ "$status" -eq 0 ] || { echo "$prog --help exited $status"; return 1; }
	local opts
	opts=$(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$output" | sort -u)
	[ -n "$opts" ] || { echo "no long options found in $prog --help"; return 1; }
	for opt in $opts; do
		grep -Eq -- "^\.It .*Fl -${opt#--}([^a-z0-9-]|\$)" "$page" ||
			missing="$missing $opt"
	done
	[ -z "$missing" ] || { echo "$page lacks:$missing"; return 1; }
}

# check_short_options PROG: each "-x," option in PROG --help is "Fl x" on
# an .It line of man/PROG.1.
check_short_options() {
	local prog=$1 page="$MANDIR/$1.1" o missing=""
	run --separate-stderr "$prog" --help
	[ "$status" -eq 0 ] || return 1
	for o in $(grep -oE -- '^ +-[a-zA-Z0-9],' <<<"$output" | tr -d ' ,-'); do
		grep -Eq -- "^\.It (.* )?Fl $o([^a-zA-Z0-9-]|\$)" "$page" ||
			missing="$missing -$o"
	done
	[ -z "$missing" ] || { echo "$page lacks:$missing"; return 1; }
}

# check_synopsis PROG: each option in the option column of PROG --help is
# in the SYNOPSIS of man/PROG.1: its short form when it has one ("Fl x",
# or x in a cluster such as "Fl 0hqVv"), else "Fl -long".
check_synopsis() {
	local prog=$1 page="$MANDIR/$1.1" syn help line o s missing=""
	syn=$(sed -n '/^\.Sh SYNOPSIS/,/^\.Sh DESCRIPTION/p' "$page")
	help=$("$prog" --help) || return 1
	while IFS= read -r line; do
		o=$(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$line" | head -n 1)
		s=$(grep -oE -- '^ +-[a-zA-Z0-9],' <<<"$line" | tr -d ' ,-')
		if [ -n "$s" ]; then
			grep -Eq -- "Fl [0-9A-Za-z]*$s[0-9A-Za-z]*( |\$)" <<<"$syn" ||
				missing="$missing -$s"
		else
			grep -Eq -- "Fl -${o#--}([^a-z0-9-]|\$)" <<<"$syn" ||
				missing="$missing $o"
		fi
	done < <(grep -E -- '^ {2,}(-[a-zA-Z0-9], )?--[a-z]' <<<"$help")
	[ -z "$missing" ] || { echo "$page: SYNOPSIS lacks:$missing"; return 1; }
}

# check_once PAGE: no option is described twice, as the head ("Fl ..." on
# an .It line) of two entries of PAGE
check_once() {
	local page="$MANDIR/$1" twice
	twice=$(grep -E '^\.It ' "$page" | grep -oE 'Fl -?[a-zA-Z0-9][a-z0-9-]*' | sort | uniq -d | tr '\n' ' ')
	[ -z "$twice" ] || { echo "$page: described twice: $twice"; return 1; }
}

@test "every man page exists" {
	for p in $PAGES; do
		[ -f "$MANDIR/$p" ] || { echo "missing man/$p"; return 1; }
	done
}

@test "--help prints to stdout only and exits 0" {
	for prog in $PROGS; do
		run --separate-stderr "$prog" --help
		[ "$status" -eq 0 ] || { echo "$prog --help exited $status"; return 1; }
		[ -n "$output" ] || { echo "$prog --help printed nothing on stdout"; return 1; }
		[ -z "$stderr" ] || { echo "$prog --help wrote to stderr: $stderr"; return 1; }
		[[ "${lines[0]}" == "usage: $prog "* ]] ||
			{ echo "$prog --help does not start with its usage: ${lines[0]}"; return 1; }
	done
}

@test "gdpub.1 documents every long option of gdpub --help" {
	check_long_options gdpub
}

@test "gdsub.1 documents every long option of gdsub --help" {
	check_long_options gdsub
}

@test "gdack.1 documents every long option of gdack --help" {
	check_long_options gdack
}

@test "gdinspect.1 documents every long option of gdinspect --help" {
	check_long_options gdinspect
}

@test "each program's page documents its short options" {
	for prog in $PROGS; do
		check_short_options "$prog"
	done
}

@test "gdkit.conf.5 documents every config key of the contract" {
	local k missing=""
	for k in $SPEC_KEYS; do
		grep -Eq -- "Li $k( |\$)" "$MANDIR/gdkit.conf.5" || missing="$missing $k"
	done
	[ -z "$missing" ] || { echo "gdkit.conf.5 lacks:$missing"; return 1; }
}

@test "gdkit.conf.5 documents every key in lib/conf.c's table" {
	local k keys missing=""
	keys=$(grep -oE '^\s*\{ "GD(pub|sub)_[A-Za-z]+"' \
	    "$BATS_TEST_DIRNAME/../../lib/conf.c" | grep -oE 'GD(pub|sub)_[A-Za-z]+')
	[ -n "$keys" ] || { echo "no keys found in lib/conf.c"; return 1; }
	for k in $keys; do
		grep -Eq -- "Li $k( |\$)" "$MANDIR/gdkit.conf.5" || missing="$missing $k"
	done
	[ -z "$missing" ] || { echo "gdkit.conf.5 lacks:$missing"; return 1; }
}

@test "mandoc -Tlint -W warning is silent for every page" {
	command -v mandoc >/dev/null || skip "mandoc is not installed"
	local p bad=0
	for p in $PAGES; do
		run mandoc -Tlint -W warning "$MANDIR/$p"
		if [ "$status" -ne 0 ] || [ -n "$output" ]; then
			echo "man/$p (exit $status):"
			echo "$output"
			bad=1
		fi
	done
	[ "$bad" -eq 0 ]
}

@test "every page renders at 80 columns without a warning (man -l, groff)" {
	command -v man >/dev/null && command -v groff >/dev/null ||
		skip "man or groff is not installed"
	local p bad=0 err
	for p in $PAGES; do
		# what a user sees: groff warns of a line it cannot break
		err=$(MANWIDTH=80 MAN_KEEP_FORMATTING= man -l "$MANDIR/$p" 2>&1 >/dev/null)
		if [ -n "$err" ]; then
			echo "man/$p:"; echo "$err"; bad=1
		fi
		err=$(mandoc -Tascii -W warning "$MANDIR/$p" 2>&1 >/dev/null)
		if [ -n "$err" ]; then
			echo "man/$p (mandoc -Tascii):"; echo "$err"; bad=1
		fi
	done
	[ "$bad" -eq 0 ]
}

@test "every literal display renders as its source reads (no garbled escapes such as \\t for \\et)" {
	command -v mandoc >/dev/null || skip "mandoc is not installed"
	local p args=()
	for p in $PAGES; do args+=("$MANDIR/$p"); done
	run python "$BATS_TEST_DIRNAME/manexamples.py" render "${args[@]}"
	[ "$status" -eq 0 ] && [ -z "$output" ] || { echo "$output"; return 1; }
}

@test "each program's SYNOPSIS lists every option of its --help (short form when it has one)" {
	local p bad=0
	for p in $PROGS; do
		check_synopsis "$p" || bad=1
	done
	[ "$bad" -eq 0 ]
}

@test "no option is described twice in a program's page" {
	local p bad=0
	for p in $PROGS; do
		check_once "$p.1" || bad=1
	done
	[ "$bad" -eq 0 ]
}

@test "no quote nested in a quote once rendered (.Ql inside .Pq Ql ...)" {
	command -v mandoc >/dev/null || skip "mandoc is not installed"
	local p bad=0 hits
	for p in $PAGES; do
		# a closing quote right after another, or an opening one inside
		# a quote that has not closed
		hits=$(mandoc -Tascii "$MANDIR/$p" | col -bx | grep -nE "''|\`[^'\`]*\`[^']*'") || true
		[ -z "$hits" ] || { echo "man/$p:"; echo "$hits"; bad=1; }
	done
	[ "$bad" -eq 0 ]
}

# run_examples PAGE [TOOL...]: run the EXAMPLES of man/PAGE as a user
# would paste them; the commands it does not run, and why, go to the TAP
# output as comments.
run_examples() {
	local page=$1 t
	shift
	for t in mandoc col "$@"; do
		command -v "$t" >/dev/null || skip "$t is not installed (needed by $page's examples)"
	done
	run timeout 300 python "$BATS_TEST_DIRNAME/manexamples.py" run "$MANDIR/$page"
	echo "$output"
	grep ': skip: ' <<<"$output" | sed 's/^/# /' >&3 || true
	[ "$status" -eq 0 ]
	# it ran something
	grep -q ': ok: \|loads$' <<<"$output"
}

@test "EXAMPLES of gdpub(1) work when pasted" {
	run_examples gdpub.1
}

@test "EXAMPLES of gdsub(1) work when pasted" {
	run_examples gdsub.1 socat
}

@test "EXAMPLES of gdack(1) work when pasted" {
	run_examples gdack.1
}

@test "EXAMPLES of gdinspect(1) work when pasted" {
	run_examples gdinspect.1 socat
}

@test "EXAMPLES of gdkit.conf(5) load" {
	run_examples gdkit.conf.5
}

@test "EXAMPLES of gdkit-stream(5) work when pasted" {
	run_examples gdkit-stream.5 hexdump
}

@test "EXAMPLES of gdkit(7) work when pasted" {
	run_examples gdkit.7 openssl
}

# readme_block N: the Nth fenced code block of README.md, 7001 made $port
readme_block() {
	awk -v want="$1" '/^```/ { n++; next } n == 2 * want - 1' \
	    "$BATS_TEST_DIRNAME/../../README.md" | sed "s/7001/$port/g"
}

@test "README: the first example and the stream example work when pasted" {
	hold_port port
	# the first: the programs are on PATH already, so without its make line
	readme_block 1 > quick.sh
	grep -q '^make && export PATH=\$PWD/bin:\$PATH' quick.sh
	sed -i '/^make /d' quick.sh
	echo wait >> quick.sh
	run --separate-stderr timeout 60 bash quick.sh
	assert_success
	assert_equal "$output" "$(echo READY; statuses ACK 1 2 3 4 5)"
	assert_equal "$(cat out.txt)" "$(keys "$port" 1 2 3 4 5 | paste - <(printf '%s done\n' 1 2 3 4 5))"
	# the stream example, and its status lines
	readme_block 2 > stream.sh
	grep -q "sh -c 'gdsub -i -" stream.sh
	run --separate-stderr timeout 60 bash stream.sh
	assert_success
	assert_equal "$output" "$(keys "$port" 1 2 3 4 5 | paste - <(seq 1 5); echo READY; statuses ACK 1 2 3 4 5)"
	# the ssh variation is the same pipeline with ssh in place of sh -c
	readme_block 3 | grep -q "ssh subhost 'gdsub -i - -P pubhost:$port | gdack -P pubhost:$port --tee'"
}

# recipe N: the commands of the Nth display of gdkit(7) DELIVERY MODES as
# rendered, one a line, the prompt removed
recipe() {
	mandoc -Tascii "$MANDIR/gdkit.7" | col -bx |
		sed -n '/^DELIVERY MODES/,/^MULTISEND CLUSTER/p' |
		awk -v n="$1" '/^ +\$ / { if (!in_d) { d++; in_d = 1 } if (d == n) { sub(/^ +\$ /, ""); print } next } { in_d = 0 }'
}

@test "gdkit(7) DELIVERY MODES: each recipe works when pasted (work = sed, input = 200 lines); exactly once leaves each block once in the sink file" {
	command -v mandoc >/dev/null || skip "mandoc is not installed"
	local n name
	for n in 1 2 3; do
		name=r$n
		mkdir "$name"
		hold_port port
		printf 'GDpub_port=%s\nGDpub_numSubs=1\nGDpub_timeout=5\n' "$port" > "$name/pub.ini"
		printf 'GDsub_pub=127.0.0.1:%s\n' "$port" > "$name/s.ini"
		seq 1 200 > "$name/input"
		recipe "$n" | sed "s/| work |/| sed -u 's|\$| done|' |/; s/| work &\$/| sed -u 's|\$| done|' > work.out \&/" > "$name/recipe.sh"
		echo wait >> "$name/recipe.sh"
		cat "$name/recipe.sh"
		# at least one gdsub and one gdpub in each, and nothing left of 'work'
		grep -q '^gdsub -c s.ini' "$name/recipe.sh"
		grep -q '^gdpub -c pub.ini' "$name/recipe.sh"
		run ! grep -qE '(^|[|] *)work( |$)' "$name/recipe.sh"
		(cd "$name" && timeout 60 bash -e recipe.sh > recipe.out 2> recipe.err)
		[ "$(grep -c '^ACK ' "$name/status.txt")" -eq 200 ]
	done
	# at most once: the work stage after gdack got every block
	[ "$(nlines r1/work.out)" -eq 200 ]
	# exactly once: the sink holds each block once, as the work stage left it
	assert_equal "$(cut -f2- r3/out.txt | tr '\n' ' ')" "$(seq 1 200 | sed 's/$/ done/' | tr '\n' ' ')"
	[ -e r3/pub.journal ]
	[ -e r3/s.state ]
	# the measuring display works too
	hold_port port
	mkdir m
	printf 'GDpub_port=%s\nGDpub_numSubs=1\nGDpub_timeout=5\n' "$port" > m/pub.ini
	printf 'GDsub_pub=127.0.0.1:%s\n' "$port" > m/s.ini
	{ recipe 5; echo wait; } > m/recipe.sh
	(cd m && timeout 60 bash -e recipe.sh > recipe.out 2> recipe.err)
	grep -q 'exactly-once' m/recipe.out
}

# pid_in SID PROG: the pid of PROG in the session SID (a spawn)
pid_in() {
	pgrep -s "$1" -x "$2"
}

# Pasted as a user would after a kill: the pipeline line of recipe 3,
# its gdpub line with the input given in three parts (so the run cannot
# end before each kill, however slow the machine), and the restart lines
# of gdpub as the page gives them. Each piece is killed with SIGKILL and
# started again at once, without waiting for anything (before: the new
# gdsub found the old one still serving the control socket, 10 s after
# its gdack was killed, and exited 69; and the recipe's gdsub gave up 9 s
# after its gdpub went down).
@test "gdkit(7) exactly once: gdack, gdsub and gdpub each killed with SIGKILL and started again at once; each block once in the sink, every block ACKed" {
	command -v mandoc >/dev/null || skip "mandoc is not installed"
	local n=3000 sid pubsid pid pipe pub
	hold_port port
	printf 'GDpub_port=%s\nGDpub_numSubs=1\nGDpub_timeout=5\n' "$port" > pub.ini
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_retryInt=0.1\n' "$port" > s.ini
	seq 1 "$n" > input
	recipe 3 > r.sh
	recipe 4 > restart.sh
	cat r.sh restart.sh
	grep -q '^echo GDsub_maxRetries=-1 >> s.ini$' r.sh
	bash -e <(grep '^echo ' r.sh)
	pipe=$(grep '^gdsub ' r.sh | sed "s/| work |/| sed -u 's|\$| done|' |/; s/ &\$//")
	pub=$(grep '^gdpub ' r.sh | sed 's/< input > status.txt$/< in.fifo > status.txt/')
	[ "$pipe" != "$(grep '^gdsub ' r.sh)" ]
	[ "$pub" != "$(grep '^gdpub ' r.sh)" ]
	grep -q '^tail -n +\$((n + 1)) input | gdpub -c pub.ini ' restart.sh
	feed_open in.fifo
	spawn "$pipe 2>> pipe.err" 7>&-
	sid=$SPAWNED
	spawn "$pub 2> pub1.err" 7>&-
	pubsid=$SPAWNED
	# gdack
	sed -n '1,1000p' input >&7
	wait_until 60 lines_at_least out.txt 600
	pid=$(pid_in "$sid" gdack)
	kill -KILL "$pid"
	spawn "$pipe 2>> pipe.err" 7>&-
	sid=$SPAWNED
	# gdsub
	sed -n '1001,1600p' input >&7
	wait_until 60 lines_at_least out.txt 1300
	pid=$(pid_in "$sid" gdsub)
	kill -KILL "$pid"
	spawn "$pipe 2>> pipe.err" 7>&-
	sid=$SPAWNED
	# gdpub, fed again from its journal's highest ID plus one as the page
	# says: the lines it had not read yet come from there
	sed -n '1601,2300p' input >&7
	wait_until 60 lines_at_least out.txt 2000
	pid=$(pid_in "$pubsid" gdpub)
	kill -KILL "$pid"
	feed_close
	spawn "$(cat restart.sh) 2> pub2.err; echo \$? > pub2.rc"
	wait_until 120 test -s pub2.rc
	assert_equal "$(cat pub2.rc)" 0
	# the sink: every line once, as the work stage left it
	assert_equal "$(cut -f2- out.txt | sort -n | uniq -c | awk '$1 != 1' | head)" ""
	assert_equal "$(cut -f2- out.txt | sort -n)" "$(seq 1 "$n" | sed 's/$/ done/')"
	# every block ACKed, over both gdpub runs
	assert_equal "$(sed -n 's/^ACK //p' status.txt | sort -n | uniq)" "$(seq 1 "$n")"
	run ! grep -q '^NACK' status.txt
	# the pipelines started cleanly each time: no gdsub refused the socket
	run ! grep -q 'another program is serving it' pipe.err
}
