#!/usr/bin/env python3
"""The import graph of lib/: what includes what, and which file calls which.

    python3 mk/graph.py [BUILD]      BUILD: a built variant (default build/rel)

Counts, for lib/*.c and lib/*.h: files, include arrows (a file includes a
lib header), call arrows (a .c file's object refers to a symbol another lib
object defines: read from nm, so inline functions and macros do not count)
and circles (groups of .c files that reach each other through calls, with
their members), then the files of src/ that include anything but gdkit.h.
Reads the tree and the objects; writes nothing. Why: a refactor of the
layering says how many arrows and circles it removed, from the objects the
compiler made rather than from what a reader thinks the code calls.
"""
import os
import re
import subprocess
import sys

build = sys.argv[1] if len(sys.argv) > 1 else "build/rel"
lib = "lib"
inc_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# The core is flat in lib/; each engine has its folder (lib/pub, lib/sub).
files = sorted(os.path.relpath(os.path.join(d, f), lib)
               for d, _, fs in os.walk(lib) for f in fs
               if f.endswith((".c", ".h")))
names = {os.path.basename(f): f for f in files}
inc = {}
for f in files:
    with open(os.path.join(lib, f), encoding="utf-8") as fh:
        inc[f] = sorted(set(names[os.path.basename(h)]
                            for h in inc_re.findall(fh.read())
                            if os.path.basename(h) in names))
n_inc = sum(len(v) for v in inc.values())

defs, uses = {}, {}
cs = [f for f in files if f.endswith(".c")]
for f in cs:
    obj = os.path.join(build, "lib", f[:-2] + ".o")
    if not os.path.exists(obj):
        sys.exit("graph.py: %s: not built (make %s first)" % (obj, obj))
    out = subprocess.run(["nm", obj], capture_output=True, text=True,
                         check=True).stdout
    uses[f] = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            uses[f].add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBR":
            defs[parts[2]] = f
calls = {f: sorted(set(defs[s] for s in uses[f] if s in defs and defs[s] != f))
         for f in cs}
n_calls = sum(len(v) for v in calls.values())

# Tarjan's strongly connected components over the call arrows.
index, low, onstack, stack, sccs = {}, {}, set(), [], []
def visit(v, counter=[0]):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); onstack.add(v)
    for w in calls[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in onstack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); onstack.discard(w); comp.append(w)
            if w == v:
                break
        sccs.append(sorted(comp))
sys.setrecursionlimit(10000)
for f in cs:
    if f not in index:
        visit(f)
circles = sorted((c for c in sccs if len(c) > 1), key=lambda c: (-len(c), c))
# arrows inside a circle: both ends in the same circle
member = {f: i for i, c in enumerate(circles) for f in c}
n_back = sum(1 for f in cs for g in calls[f]
             if f in member and member.get(g) == member[f])

print("lib files: %d (.c %d, .h %d)" % (len(files), len(cs), len(files) - len(cs)))
folders = {}
for f in files:
    folders[os.path.dirname(f) or "."] = folders.get(os.path.dirname(f) or ".", 0) + 1
print("files per folder: " + ", ".join("lib/%s %d" % (d if d != "." else "", n)
                                      for d, n in sorted(folders.items())))
print("include arrows: %d" % n_inc)
# The core sits under the engines: only gdkit.h (the library's front door)
# may include an engine's header.
up = ["%s: %s" % (f, h) for f in files for h in inc[f]
      if "/" not in f and "/" in h and f != "gdkit.h"]
print("core files that include an engine's header: %d" % len(up))
for u in up:
    print("  " + u)
print("call arrows: %d (inside circles: %d)" % (n_calls, n_back))
print("circles: %d" % len(circles))
for c in circles:
    print("  %d: %s" % (len(c), " ".join(c)))
bad = []
for f in sorted(os.listdir("src")):
    if f.endswith(".c"):
        with open(os.path.join("src", f), encoding="utf-8") as fh:
            bad += ["%s: %s" % (f, h) for h in inc_re.findall(fh.read())
                    if h != "gdkit.h"]
print("src/ includes other than gdkit.h: %d" % len(bad))
for b in bad:
    print("  " + b)
