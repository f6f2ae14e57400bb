#!/usr/bin/env python3
"""throttle.py RATE: copy lines from stdin to stdout at RATE lines per
second at most (line i leaves no earlier than t0 + i/RATE, t0 the first
line's arrival), flushing each: a pipeline stage of a known steady speed."""
import sys, time

rate = float(sys.argv[1])
inp, out = sys.stdin.buffer, sys.stdout.buffer
t0, i = None, 0
for line in inp:
    now = time.monotonic()
    if t0 is None:
        t0 = now
    due = t0 + i / rate
    if due > now:
        time.sleep(due - now)
    out.write(line)
    out.flush()
    i += 1
