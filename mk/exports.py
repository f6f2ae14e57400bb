#!/usr/bin/env python3
"""List the functions the core library exports that no other file uses:
T symbols of an object under BUILD/lib that no other object there or under
BUILD/src references and no test names (tests/unit, tests/fuzz). Each could
be static. Build first (make).
    python3 mk/exports.py [BUILD]   (default build/rel); exit 1 when it lists any
"""
import glob
import os
import re
import subprocess
import sys

build = sys.argv[1] if len(sys.argv) > 1 else "build/rel"
if not os.path.isdir(os.path.join(build, "lib")):
    sys.exit(f"exports.py: no {build}/lib: run make first")
objs = sorted(glob.glob(f"{build}/lib/**/*.o", recursive=True) +
              glob.glob(f"{build}/src/*.o"))
defs, uses = {}, {}
for o in objs:
    out = subprocess.run(["nm", o], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] == "T":
            defs.setdefault(o, []).append(f[2])
        elif len(f) == 2 and f[0] == "U":
            uses.setdefault(f[1], set()).add(o)
words = set()
for t in glob.glob("tests/unit/*.c") + glob.glob("tests/fuzz/*.c"):
    with open(t, encoding="utf-8", errors="replace") as fh:
        words.update(re.findall(r"\w+", fh.read()))
found = 0
for o, syms in defs.items():
    if o.startswith(f"{build}/src/"):
        continue
    for s in syms:
        if uses.get(s, set()) - {o} or s in words:
            continue
        print(f"{os.path.relpath(o, build)}: {s}")
        found = 1
sys.exit(found)
