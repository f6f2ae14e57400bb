#!/usr/bin/env bats
# Lints of the test suite itself.
load helpers

# errexit ignores a command negated with '!', so '! cmd' fails a bats test
# only as its last statement; anywhere else it can never fail: use
# 'run ! cmd'. (A '!' inside if/while conditions or after && || is fine.)
# Likewise '[ A ] && [ B ]' passes when A is false: a check on each line.
@test "no bats test has a bare '! cmd' or '[ A ] && [ B ]' before its last statement" {
	run python - "$BATS_TEST_DIRNAME"/*.bats <<'PY'
import re, sys
bad = []
for path in sys.argv[1:]:
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        if re.match(r"^@test ", lines[i]):
            body, j = [], i + 1
            while j < len(lines) and lines[j] != "}":
                body.append((j + 1, lines[j]))
                j += 1
            stmts = [(n, l) for n, l in body
                     if l.strip() and not l.strip().startswith("#")]
            for n, l in stmts[:-1]:
                if re.match(r"^\s*!\s", l) or (
                        re.match(r"^\s*\[\[?\s.*\]\]?\s*&&\s*\[", l) and "||" not in l
                        and not l.rstrip().endswith(("\\", "&&"))):
                    bad.append("%s:%d: %s" % (path.rsplit("/", 1)[-1], n, l.strip()))
            i = j
        i += 1
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
	echo "$output"
	assert_success
	assert_output ""
}

# The layering the Makefile cannot see: the core in lib/ sits under the
# engines in lib/pub and lib/sub (only gdkit.h, the front door, names them).
@test "lib/: no core file includes an engine's header; src/ includes only gdkit.h" {
	top="$BATS_TEST_DIRNAME/../.."
	[ -f "$top/build/rel/lib/pub/pub.o" ] || skip "build/rel not built (make check builds it)"
	run sh -c "cd '$top' && python3 mk/graph.py build/rel"
	[ "$status" -eq 0 ]
	[[ "$output" == *"core files that include an engine's header: 0"* ]]
	[[ "$output" == *"src/ includes other than gdkit.h: 0"* ]]
}

# Memory grows in one place with a stated cap: byte buffers are gd_dbuf
# (lib/dbuf.c), slot tables gd_slab (lib/slab.c), typed arrays gd_grow
# (lib/grow.c). A realloc anywhere else is a buffer without a bound.
@test "lib/, src/: no realloc( outside dbuf.c, slab.c and grow.c" {
	top="$BATS_TEST_DIRNAME/../.."
	run sh -c "cd '$top' && grep -rn 'realloc(' --include='*.c' --include='*.h' lib src | grep -v '^lib/dbuf\.c:\|^lib/slab\.c:\|^lib/grow\.c:'"
	echo "$output"
	[ "$status" -eq 1 ]	# grep found none
	[ -z "$output" ]
	# and the three it allows do grow memory (the grep sees them)
	run grep -c 'realloc(' "$top/lib/dbuf.c" "$top/lib/slab.c" "$top/lib/grow.c"
	[ "$status" -eq 0 ]
	[[ "$output" != *":0"* ]]
}

# Time comes from one place (lib/clock.c): the rules take it as an
# argument, the engines read it there, so no file mixes libuv's cached
# millisecond clock with another's nanoseconds.
@test "lib/: only clock.c reads a clock (uv_hrtime, uv_now, clock_gettime, time())" {
	top="$BATS_TEST_DIRNAME/../.."
	run sh -c "cd '$top' && grep -rnE 'uv_hrtime|uv_now|clock_gettime|gettimeofday|[^_a-z]time\\(' --include='*.c' --include='*.h' lib src | grep -v '^lib/clock\\.[ch]:'"
	echo "$output"
	[ "$status" -eq 1 ]	# grep found none
	[ -z "$output" ]
	run grep -c 'clock_gettime(' "$top/lib/clock.c"
	[ "$status" -eq 0 ]
	[ "$output" -ge 1 ]
}

# A function only its own file calls is static: the header then lists what
# a module offers, nothing more (mk/exports.py names any that is not).
@test "lib/: every exported function is called outside its file (or by a test)" {
	top="$BATS_TEST_DIRNAME/../.."
	[ -f "$top/build/rel/lib/pub/pub.o" ] || skip "build/rel not built (make check builds it)"
	run sh -c "cd '$top' && python3 mk/exports.py build/rel"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

# A test renamed out of LONG_TESTS would run in make check unnoticed.
@test "every LONG_TESTS entry of helpers.bash names a test that exists" {
	run python3 - "$BATS_TEST_DIRNAME" <<'PY'
import re, sys
d = sys.argv[1]
src = open(d + "/helpers.bash").read()
block = re.search(r"^LONG_TESTS=\((.*?)^\)", src, re.S | re.M).group(1)
entries = re.findall(r'"([^"]+)"', block)
bad = []
for e in entries:
    f, desc = e.split(":", 1)
    if '@test "%s" {' % desc not in open("%s/%s" % (d, f)).read():
        bad.append(e)
print("entries: %d" % len(entries))
print("\n".join("no such test: " + b for b in bad))
sys.exit(1 if bad or not entries else 0)
PY
	assert_success
}

# A port found free, released and bound again later can be taken in
# between by another test (make check runs two files at once), or by any
# connect(2) on the machine: a listener the test starts binds port 0 and
# tells its port (gdpub -p 0 --port-file, read with port_of or pub_bg), or
# the test keeps the port bound from the moment the kernel chose it
# (hold_port). free_port, which found a port free and let it go, is gone;
# this keeps it and its kind from coming back under that name, here and in
# the scripts beside the bats files that had copies of it (tests/valgrind.sh,
# tests/chaos/chaos.py, the bench's bench_free_port: each now holds its
# ports the same way, or has gdpub bind port 0). Comments may still tell
# its history.
@test "no test or script of tests/ or mk/ takes a port from free_port: ports come from -p 0 and --port-file, or are held" {
	run python3 - "$BATS_TEST_DIRNAME" <<'PY'
import os, re, sys
cli = os.path.abspath(sys.argv[1])
top = os.path.dirname(os.path.dirname(cli))
paths = []
for root in ("tests", "mk"):
    for d, dirs, files in os.walk(os.path.join(top, root)):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        paths += [os.path.join(d, f) for f in sorted(files)
                  if f.endswith((".bats", ".bash", ".sh", ".py", ".c", ".h"))]
# free_port, free_ports and the same with a prefix (bench_free_port)
name = re.compile(r"free_ports?\b")
bad = []
for path in paths:
    if path == os.path.join(cli, "lint.bats"):
        continue
    c = path.endswith((".c", ".h"))
    for n, line in enumerate(open(path, errors="replace"), 1):
        s = line.lstrip()
        if s.startswith(("/*", "*", "//") if c else "#"):
            continue
        if name.search(line):
            bad.append("%s:%d: %s" % (os.path.relpath(path, top), n, line.strip()))
ncli = sum(1 for p in paths if os.path.dirname(p) == cli)
rel = set(os.path.relpath(p, top) for p in paths)
# the walk reached the places the copies were
must = {"tests/cli/helpers.bash", "tests/valgrind.sh", "tests/chaos/chaos.py",
        "tests/bench/peers/lib.sh", "tests/bench/gdkit.sh"}
print("files: %d (tests/cli: %d)" % (len(paths), ncli))
print("\n".join(bad))
print("\n".join("not scanned: " + m for m in sorted(must - rel)))
sys.exit(1 if bad or ncli < 10 or must - rel else 0)
PY
	echo "$output"
	assert_success
	assert_output --regexp '^files: [0-9]+ \(tests/cli: [0-9]+\)$'
}
