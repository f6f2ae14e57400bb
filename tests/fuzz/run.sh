#!/bin/sh
# Run each libFuzzer target for a bounded time (make fuzz).
# Usage: run.sh SECONDS TARGET... (binaries in build/fuzz/fuzz_TARGET)
# Seeds: tests/fuzz/corpus/T and tests/fuzz/regress/T (read only); what
# the fuzzer finds goes to build/fuzz/corpus/T, a crash to
# build/fuzz/crash-T-*. One summary line per target with the executions
# of libFuzzer's final stats; the exit status is non-zero on any crash.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
secs=$1
shift
out=$top/build/fuzz
bad=0
for t in "$@"; do
	mkdir -p "$out/corpus/$t"
	log=$out/fuzz_$t.log
	seeds=$top/tests/fuzz/corpus/$t
	reg=$top/tests/fuzz/regress/$t
	[ -d "$reg" ] || reg=
	echo "== fuzz $t (${secs}s) ..."
	"$out/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 \
		-max_len=16384 -timeout=20 -rss_limit_mb=2048 -close_fd_mask=1 \
		-artifact_prefix="$out/crash-$t-" \
		"$out/corpus/$t" "$seeds" $reg >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	done_line=$(grep -E '^Done [0-9]+ runs' "$log" | tail -n 1)
	if [ "$rc" -ne 0 ]; then
		bad=$((bad + 1))
		grep -E 'ERROR: |SUMMARY: |Test unit written' "$log" | head -n 5
		echo "fuzz $t: FAILED (exit $rc, ${execs:-?} executions; log $log)"
	else
		echo "fuzz $t: ok, ${execs:-?} executions in ${secs}s (${done_line:-no stats})"
	fi
done
[ "$bad" -eq 0 ]
