#!/usr/bin/env python3
"""statpoll.py: poll `gdinspect --json stats` of a running gdpub until a condition holds.

  statpoll.py --gdinspect BIN -c pub.ini [--interval 0.01] [--timeout 300]
              [--pid PID] [--ready FILE] [--start COND] --until COND

COND is FIELD>=NUMBER or FIELD==NUMBER on a field of the stats object
(published, ack, nack, pending, ...). Each poll runs gdinspect once and is
timestamped (time.perf_counter) at the midpoint of the call. With --start the
clock starts at the first poll where the start condition holds; otherwise at
the first poll. With --pid the poller gives up when that process has died, and
reads VmRSS from /proc/PID/status right after the --until condition held.
With --ready it creates FILE after the first successful poll (start the
poller, wait for FILE, then start the load: the first poll then predates it).

Prints one line on stdout:
  elapsed=SECONDS start_ns=NS end_ns=NS polls=N pending_min=N pending_max=N
  [vmrss_kb=KB] FIELD=VALUE ...
(start_ns/end_ns: wall clock of the start and end polls, for `date +%s%N`;
pending_min/max: over the polls from start to end; FIELD=VALUE: the last stats)
Exit 0, or 1 on timeout, a dead --pid or bad arguments (reason on stderr).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time


def parse_cond(text):
    m = re.fullmatch(r"\s*([a-z_0-9]+)\s*(>=|==)\s*([0-9.]+)\s*", text or "")
    if not m:
        raise SystemExit(f"statpoll.py: bad condition '{text}' (want FIELD>=N or FIELD==N)")
    field, op, val = m.group(1), m.group(2), float(m.group(3))
    if op == ">=":
        return lambda s: field in s and float(s[field]) >= val
    return lambda s: field in s and float(s[field]) == val


def vmrss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gdinspect", required=True)
    ap.add_argument("-c", "--config", required=True)
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--ready")
    ap.add_argument("--start")
    ap.add_argument("--until", required=True)
    a = ap.parse_args()
    start_cond = parse_cond(a.start) if a.start else None
    until_cond = parse_cond(a.until)
    cmd = [a.gdinspect, "-c", a.config, "--json", "stats"]

    deadline = time.monotonic() + a.timeout
    t_start = None
    polls = 0
    last = {}
    pmin = pmax = None   # pending between the start and the end poll
    while True:
        if time.monotonic() > deadline:
            print(f"statpoll.py: timed out after {a.timeout} s waiting for "
                  f"{a.start if t_start is None and a.start else a.until}; last stats {last}",
                  file=sys.stderr)
            return 1
        if a.pid and not alive(a.pid):
            print(f"statpoll.py: process {a.pid} has died; last stats {last}", file=sys.stderr)
            return 1
        t_a, w_a = time.perf_counter(), time.time_ns()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        t, w = (t_a + time.perf_counter()) / 2, (w_a + time.time_ns()) // 2
        polls += 1
        stats = None
        if r.returncode == 0:
            try:
                stats = json.loads(r.stdout.decode().strip().splitlines()[-1])
            except (ValueError, IndexError):
                stats = None
        if stats is not None:
            last = stats
            if a.ready and not os.path.exists(a.ready):
                open(a.ready, "w").close()
            if t_start is None and (start_cond is None or start_cond(stats)):
                t_start, w_start = t, w
            if t_start is not None and "pending" in stats:
                p = int(stats["pending"])
                pmin = p if pmin is None else min(pmin, p)
                pmax = p if pmax is None else max(pmax, p)
            if t_start is not None and until_cond(stats):
                rss = vmrss_kb(a.pid) if a.pid else None
                out = [f"elapsed={t - t_start:.6f}", f"start_ns={w_start}", f"end_ns={w}",
                       f"polls={polls}", f"pending_min={pmin}", f"pending_max={pmax}"]
                if rss is not None:
                    out.append(f"vmrss_kb={rss}")
                out += [f"{k}={v}" for k, v in stats.items()]
                print(" ".join(out))
                return 0
        time.sleep(a.interval)


if __name__ == "__main__":
    sys.exit(main())
