#!/bin/sh
# Run every suite and sum them: C unit tests (each prints "N passed, N
# failed"), bats tests of the programs (TAP), and mandoc -Tlint of every
# man page. Each suite is named as it starts and each bats result shown as
# it comes. The last line is the total, "N passed, N failed" (with ", N
# skipped" when some were); the exit status is non-zero on any failure.
# Usage: run.sh UNIT_TEST_NAME... (binaries in $UNIT_DIR)
#        run.sh --long: only the bats tests of LONG_TESTS (helpers.bash),
#        which the first form leaves out; tests left out are not counted.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
pass=0 fail=0 skip=0
long=0
if [ "${1:-}" = --long ]; then
	long=1
	shift
	GDKIT_CHECK=long
	export GDKIT_CHECK
fi
# a test the other make target runs: no result here
other='^ok .* # skip (not )?in make check-long$'
# the files that hold a long test
long_files=$(sed -n 's/^\t"\([a-z0-9_-]*\.bats\):.*/\1/p' \
	"$top/tests/cli/helpers.bash" | sort -u)
log=${TMPDIR:-/tmp}/gdkit-check.$$
trap 'rm -rf "$log" "$log.q"' EXIT

count() { # suite name, passed, failed
	echo "== $1: $2 passed, $3 failed"
	pass=$((pass + $2)); fail=$((fail + $3))
}

for t in "$@"; do
	echo "== unit $t ..."
	"$UNIT_DIR/$t" >"$log" 2>&1
	rc=$?
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
	p=${line%% passed*}; f=${line#*, }; f=${f%% failed*}
	if [ -z "$line" ]; then p=0; f=1; fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	[ "$f" -ne 0 ] && { cat "$log"; echo "unit $t exited $rc"; }
	count "unit $t" "$p" "$f"
done

# bats: the files run in CHECK_JOBS lanes at once (default 2: most tests
# wait on their programs, not on the CPU); each lane takes the next file
# nobody has claimed (mkdir is the lock) and shows the file's result lines
# once it is done; the TAP of every file goes to $log for the counts.
# Teardown's kills make bash report "Killed" jobs: noise, not shown.
bats_file() { # file, its TAP log
	echo "== bats ${1##*/} started"
	echo "== bats ${1##*/}:" >"$2.show"
	GDKIT_BIN=${GDKIT_BIN:-$top/bin} bats --tap "$1" >"$2" 2>&1
	grep -v -E -e '^1\.\.' -e 'bats-exec-test: line .* Killed ' \
	    -e "$other" "$2" >>"$2.show"
	cat "$2.show"
}
# is_long FILE: true when this run takes FILE (with --long, only the
# files that hold a long test)
is_long() {
	[ "$long" -eq 0 ] && return 0
	printf '%s\n' "$long_files" | grep -qx -- "$1"
}
if [ -d "$top/tests/cli" ]; then
	jobs=${CHECK_JOBS:-2}
	case $jobs in ''|*[!0-9]*|0) jobs=1 ;; esac
	q=$log.q
	mkdir -p "$q"
	i=0
	while [ "$i" -lt "$jobs" ]; do
		(
			for b in "$top"/tests/cli/*.bats; do
				[ -e "$b" ] || continue
				n=${b##*/}
				is_long "$n" || continue
				mkdir "$q/$n.claim" 2>/dev/null || continue
				bats_file "$b" "$q/$n"
			done
		) &
		i=$((i + 1))
	done
	wait
	nfiles=0
	: >"$log"
	for b in "$top"/tests/cli/*.bats; do
		[ -e "$b" ] || continue
		is_long "${b##*/}" || continue
		nfiles=$((nfiles + 1))
		cat "$q/${b##*/}" >>"$log" 2>/dev/null
	done
	rm -rf "$q"
	p=$(grep -c '^ok ' "$log")
	f=$(grep -c '^not ok ' "$log")
	s=$(grep -c '^ok .* # skip' "$log")
	o=$(grep -Ec "$other" "$log")
	p=$((p - o)) s=$((s - o))
	if [ "$(grep -c '^1\.\.' "$log")" -ne "$nfiles" ]; then
		echo "bats: a file ended without its test plan (see above)"
		f=$((f + 1))
	fi
	skip=$((skip + s))
	count "bats" "$((p - s))" "$f"
fi

if [ "$long" -eq 0 ]; then
echo "== mandoc -Tlint ..."
p=0 f=0
for m in "$top"/man/*.[0-9]; do
	[ -e "$m" ] || continue
	if out=$(mandoc -Tlint -W warning "$m" 2>&1) && [ -z "$out" ]; then
		p=$((p + 1))
	else
		echo "$out"; f=$((f + 1))
	fi
done
count "mandoc -Tlint" "$p" "$f"
fi

if [ "$skip" -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
