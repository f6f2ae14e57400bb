#!/usr/bin/env python3
"""pace.py: a paced block producer for the gdkit latency benchmark.

Writes COUNT lines on stdout at RATE lines per second, each exactly SIZE bytes
plus '\\n' (zero-padded line number, padded with '.'), one write(2) per line.
Line i is due at t0 + i/RATE (time.perf_counter); the schedule is absolute, so
a late line does not shift the ones after it.

  --go FILE     wait (bounded by --max-wait) until FILE exists, then start
                the clock (so nothing is buffered in the pipe before READY)
  --done FILE   create FILE once every line is written
  --hold FILE   after the last line keep stdout open until FILE exists
                (bounded by --max-wait), so the publisher stays up until its
                counters have been read

A summary goes to stderr: lines written, seconds, achieved rate, how late the
latest line was. Exit 0, or 1 when a wait timed out or stdout closed early.
"""
import argparse
import os
import sys
import time


def wait_for(path, max_wait, what):
    end = time.monotonic() + max_wait
    while not os.path.exists(path):
        if time.monotonic() > end:
            print(f"pace.py: timed out after {max_wait} s waiting for {what} ({path})",
                  file=sys.stderr)
            return False
        time.sleep(0.001)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--rate", type=float, default=1000.0, help="lines per second")
    ap.add_argument("--size", type=int, default=100, help="payload bytes per line")
    ap.add_argument("--go")
    ap.add_argument("--done")
    ap.add_argument("--hold")
    ap.add_argument("--max-wait", type=float, default=300.0)
    a = ap.parse_args()
    if a.count < 1 or a.rate <= 0 or a.size < 1:
        ap.error("--count, --rate and --size must be positive")

    width = min(a.size, 10)
    modulo = 10 ** width
    pad = b"." * (a.size - width)
    lines = [b"%0*d" % (width, i % modulo) + pad + b"\n" for i in range(a.count)]

    if a.go and not wait_for(a.go, a.max_wait, "the go file"):
        return 1
    fd = sys.stdout.fileno()
    period = 1.0 / a.rate
    max_late = 0.0
    t0 = time.perf_counter()
    try:
        for i, line in enumerate(lines):
            due = t0 + i * period
            now = time.perf_counter()
            if due > now:
                time.sleep(due - now)   # no spinning: it would steal a core
            late = time.perf_counter() - due
            if late > max_late:
                max_late = late
            os.write(fd, line)
    except BrokenPipeError:
        print(f"pace.py: stdout closed after {i} of {a.count} lines", file=sys.stderr)
        return 1
    secs = time.perf_counter() - t0
    rate = a.count / secs if secs > 0 else 0.0
    print(f"pace.py: wrote {a.count} lines in {secs:.3f} s ({rate:.1f}/s), "
          f"latest line {max_late * 1e3:.2f} ms late", file=sys.stderr)
    if a.done:
        with open(a.done, "w") as f:
            f.write(f"{a.count} {secs:.6f} {rate:.1f} {max_late * 1e6:.0f}\n")
    if a.hold and not wait_for(a.hold, a.max_wait, "the hold file"):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
