#!/usr/bin/env python3
"""throttle.py RATE [READY] [--read BYTES] [--sleep SECONDS]: copy lines
from stdin to stdout at RATE lines per second at most (line i leaves no
earlier than t0 + i/RATE, t0 the first line's arrival), flushing each: a
pipeline stage of a known steady speed. RATE 0: no pace.

READY: a file created once it runs (a python can take seconds to start on
a busy machine, longer than a short GDpub_timeout).
--read BYTES: read the input BYTES at a time (os.read), as a program that
reads fixed chunks and then handles their lines does, instead of a line at
a time from Python's buffered reader.
--sleep SECONDS: besides, sleep SECONDS before each line (a stage whose
work takes that long per line, whatever the pace)."""
import os, sys, time

USAGE = "usage: throttle.py RATE [READY] [--read BYTES] [--sleep SECONDS]"
args = sys.argv[1:]
chunk = sleep = 0
rate = ready = None
while args:
    a = args.pop(0)
    if a == "--read" and args:
        chunk = int(args.pop(0))
    elif a == "--sleep" and args:
        sleep = float(args.pop(0))
    elif rate is None:
        rate = float(a)
    elif ready is None:
        ready = a
    else:
        sys.exit(USAGE)
if rate is None or rate < 0 or chunk < 0 or sleep < 0:
    sys.exit(USAGE)
if ready is not None:
    open(ready, "w").close()
out = sys.stdout.buffer


def lines():
    if not chunk:
        yield from sys.stdin.buffer
        return
    rest = b""
    while True:
        b = os.read(0, chunk)
        if not b:
            break
        rest += b
        *whole, rest = rest.split(b"\n")
        for line in whole:
            yield line + b"\n"
    if rest:
        yield rest


t0, i = None, 0
for line in lines():
    now = time.monotonic()
    if t0 is None:
        t0 = now
    if sleep:
        time.sleep(sleep)
    if rate:
        due = t0 + i / rate
        if due > now:
            time.sleep(due - now)
    out.write(line)
    out.flush()
    i += 1
