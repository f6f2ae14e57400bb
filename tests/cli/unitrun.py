#!/usr/bin/env python3
"""unitrun.py UNIT INSTANCE STATEDIR LOG: run a service unit's ExecStart=
the way systemd would, without systemd (never booted here): the command
line as systemd splits it, with the specifiers %i (INSTANCE), %t
($XDG_RUNTIME_DIR) and %S (STATEDIR's parent) and $$ for $, the unit's
Environment= lines and $STATE_DIRECTORY (STATEDIR); when the main process
has exited (the shell of a pipeline exits once every stage has), it is
started again after RestartSec= unless Restart= says no or the status is
one of RestartPreventExitStatus=. User=, sandboxing and EnvironmentFile=
are left out. LOG gets "start N pid PID" and "exit N status S" lines (S a
number, or "signal N"). Runs until killed, or until a run is not
restarted (exit 0)."""
import os
import shlex
import subprocess
import sys
import time


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 64
    unit, inst, state, logname = sys.argv[1:]
    rt = os.environ["XDG_RUNTIME_DIR"]
    svc, env, section = {}, {}, None

    def spec(v):
        v = v.replace("%%", "\0").replace("%i", inst).replace("%t", rt)
        v = v.replace("%S", os.path.dirname(state))
        return v.replace("\0", "%")

    for line in open(unit):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        if section != "[Service]":
            continue
        k, v = line.split("=", 1)
        if k == "Environment":
            a, b = spec(v).split("=", 1)
            env[a] = b
        else:
            svc[k] = v
    argv = [a.replace("$$", "$") for a in shlex.split(spec(svc["ExecStart"]))]
    restart = svc.get("Restart", "no")
    pause = float(svc.get("RestartSec", "0.1").rstrip("s"))
    prevent = {int(x) for x in svc.get("RestartPreventExitStatus", "").split()}
    e = dict(os.environ)
    e.update(env)
    e["STATE_DIRECTORY"] = state
    os.makedirs(state, exist_ok=True)
    log = open(logname, "a", buffering=1)
    n = 0
    while True:
        n += 1
        p = subprocess.Popen(argv, env=e, stdin=subprocess.DEVNULL)
        log.write("start %d pid %d\n" % (n, p.pid))
        rc = p.wait()
        log.write("exit %d status %s\n" % (n, rc if rc >= 0 else "signal %d" % -rc))
        again = restart == "always" or (restart == "on-failure" and rc != 0)
        if not again or rc in prevent:
            return 0
        time.sleep(pause)


if __name__ == "__main__":
    sys.exit(main())
