#!/usr/bin/env bats
# make chaos, short: the three delivery recipes of gdkit(7) under kill -9
# of gdpub, gdsub and gdack and dropped connections (tests/chaos/chaos.py,
# through tests/faults/relay.py), each measured by gdinspect measure
# against its targets, and exactly-once with only gdpub killed (eop).
# 5,000 blocks and 6 kills a recipe; the faults come at points of
# progress, not at times, so a slow machine gets the same run, only
# later.
load helpers
bats_require_minimum_version 1.5.0

# chaos SECONDS VAR=VALUE...: run chaos.py with these settings (and its
# work directory in the test's), at most SECONDS, as `run` does; print
# what it said, for a failure's report
chaos() {
	run --separate-stderr timeout "$1" env "${@:2}" CHAOS_WORK="$BATS_TEST_TMPDIR/chaos" \
		GDKIT_BIN="$GDKIT_BIN" python "$BATS_TEST_DIRNAME/../chaos/chaos.py"
	printf '%s\n' "$output" "$stderr"
}

@test "chaos: exactly-once R = 1 and UR = 1, at-least-once R = 1, at-most-once UR = 1 under 6 kills and 3 network cuts each" {
	chaos 200 CHAOS_RECIPES=eo,alo,amo CHAOS_BLOCKS=5000 CHAOS_KILLS=6 CHAOS_CUTS=3 \
		CHAOS_RATE=2500 CHAOS_TIMEOUT=60
	assert_success
	assert_line --index 0 --regexp '^chaos: CHAOS_SEED=[0-9]+ CHAOS_BLOCKS=5000 '
	assert_line --regexp '^chaos: exactly-once +R=1\.000000 UR=1\.000000 .* lost 0, duplicates 0, .*status ACK 5000 NACK 0 REJECT 0 \(IDs; .*target R = 1, UR = 1: met$'
	assert_line --regexp '^chaos: at-least-once +R=1\.000000 .* lost 0, .*target R = 1: met$'
	assert_line --regexp '^chaos: at-most-once +R=[01]\.[0-9]+ UR=1\.000000 .* duplicates 0, .*target UR = 1: met$'
	assert_line --regexp 'every target met$'
	# every program was killed in every recipe
	[ "$(grep -cE 'kills gdpub [1-9][0-9]* gdsub [1-9][0-9]* gdack [1-9][0-9]*' <<<"$output")" -eq 3 ]
}

@test "chaos: exactly-once with gdpub --fsync never killed 6 times, its status read slowly, one subscriber throughout: every block ACKed in bounded time, R = 1 and UR = 1 (issue 21)" {
	chaos 200 CHAOS_RECIPES=eop CHAOS_BLOCKS=5000 CHAOS_KILLS=6 CHAOS_CUTS=3 \
		CHAOS_RATE=2500 CHAOS_TIMEOUT=60
	assert_success
	assert_line --regexp '^chaos: eo-pub-kills +R=1\.000000 UR=1\.000000 .* lost 0, duplicates 0, .*kills gdpub 6 gdsub 0 gdack 0, .*status ACK 5000 NACK 0 REJECT 0 \(IDs; .*target R = 1, UR = 1, all ACKed: met$'
	assert_line --regexp 'every target met$'
	# the one subscriber pipeline ran throughout
	[ -e "$BATS_TEST_TMPDIR/chaos/eop/sub.1.err" ]
	[ ! -e "$BATS_TEST_TMPDIR/chaos/eop/sub.2.err" ]
}

# The pipeline as a service manager runs it (gdkit(7) RUNNING AS A
# SERVICE, issue 34): a kill of gdsub, the stage or gdack is left to end
# the rest of the pipeline by itself (30 s at most, or it is a hang), and
# only then is the pipeline started again. Each pipeline runs 4 s at
# least before the next fault: slow feeds, so that every fault comes.
@test "chaos: the service recipe: gdpub, gdsub, the stage and gdack killed once each, each pipeline ends by itself before it is started again: every block ACKed, 0 NACK, the sink exact" {
	chaos 200 CHAOS_RECIPES=svc CHAOS_BLOCKS=5000 CHAOS_KILLS=4 CHAOS_CUTS=0 \
		CHAOS_RATE=150 CHAOS_TIMEOUT=120
	assert_success
	assert_line --regexp '^chaos: service +R=1\.000000 UR=1\.000000 .* lost 0, duplicates 0, .*kills gdpub 1 gdsub 1 gdack 1, .*status ACK 5000 NACK 0 REJECT 0 \(IDs; .*target R = 1, UR = 1, all ACKed: met$'
	assert_line --regexp '^chaos: service: kills of the stage 1; the pipeline ended by itself after each of 3 kills, in '
	assert_line --regexp 'every target met$'
}

# make check-long: the numbers of issue 34, 50,000 blocks and each
# program killed three times (85 s; main before it, CHAOS_SEED=903329660:
# each pipeline ended 10 s after its kill, 495 NACK, a sink of 49,505
# lines, 7 of the 12 kills made before the run ended)
@test "chaos: the service recipe, 50,000 blocks, each of gdpub, gdsub, the stage and gdack killed three times: 0 NACK, the sink exact" {
	chaos 600 CHAOS_RECIPES=svc CHAOS_BLOCKS=50000 CHAOS_KILLS=12 CHAOS_CUTS=0 CHAOS_RATE=600 \
		CHAOS_TIMEOUT=400
	assert_success
	assert_line --regexp '^chaos: service +R=1\.000000 UR=1\.000000  sent 50000, received 50000, unique 50000, lost 0, duplicates 0, .*kills gdpub 3 gdsub 3 gdack 3, .*status ACK 50000 NACK 0 REJECT 0 \(IDs; .*target R = 1, UR = 1, all ACKed: met$'
	assert_line --regexp '^chaos: service: kills of the stage 3; the pipeline ended by itself after each of 9 kills, in '
}
