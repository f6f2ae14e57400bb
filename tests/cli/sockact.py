#!/usr/bin/env python3
"""sockact.py: pass file descriptors to a program as a service manager
does (socket activation: $LISTEN_FDS, $LISTEN_PID, $LISTEN_FDNAMES, the
fds from 3 on), and start it again when it exits, as Restart= would.

  sockact.py [options] LOG -- PROGRAM [ARG...]

  --listen ADDR:PORT   a listening TCP socket (ListenStream=); port 0 is
                       the kernel's choice, written to LOG as "port N"
  --fifo PATH          a FIFO, created if missing and opened read-write
                       and non-blocking (ListenFIFO=): writers may come
                       and go without an end of input
  --names A:B          LISTEN_FDNAMES (default: none)
  --restart MODE       no (default), on-failure or always
  --restart-sec S      wait S seconds before starting again (default 0.2)
  --hold PATH          before starting again, also wait until PATH exists
                       (then remove it): a test decides when

The fds are passed in the order of the options. LOG gets one line per
event: "port N", "start PID", "exit STATUS" (a signal as -SIG), "stop".
SIGTERM stops the program (SIGTERM, then waits for it) and the harness.
The program is started through sh so that $LISTEN_PID is its own pid:
sh sets it to $$ and execs it.
"""
import os
import signal
import socket
import stat
import subprocess
import sys
import time


def main(argv):
    fds, names, restart, restart_sec, hold = [], None, "no", 0.2, None
    i = 1
    while argv[i] != "--" and argv[i].startswith("--"):
        opt, val = argv[i], argv[i + 1]
        i += 2
        if opt == "--listen":
            host, port = val.rsplit(":", 1)
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host.strip("[]"), int(port)))
            s.listen(128)
            fds.append(("port", s.getsockname()[1], s))
        elif opt == "--fifo":
            try:
                if not stat.S_ISFIFO(os.stat(val).st_mode):
                    sys.exit("sockact.py: %s is not a FIFO" % val)
            except FileNotFoundError:
                os.mkfifo(val, 0o600)
            fd = os.open(val, os.O_RDWR | os.O_NONBLOCK)
            fds.append(("fifo", val, fd))
        elif opt == "--names":
            names = val
        elif opt == "--restart":
            restart = val
        elif opt == "--restart-sec":
            restart_sec = float(val)
        elif opt == "--hold":
            hold = val
        else:
            sys.exit("sockact.py: unknown option %s" % opt)
    log_path = argv[i]
    cmd = argv[i + 2:]
    log = open(log_path, "a", buffering=1)
    raw = [f[2].fileno() if f[0] == "port" else f[2] for f in fds]
    for kind, what, _ in fds:
        if kind == "port":
            log.write("port %d\n" % what)
    stopping = False
    child = None

    def on_term(*_):
        nonlocal stopping
        stopping = True
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    def place():
        # the passed fds at 3, 4, ... as the protocol has them; dup
        # first to fds above them, so that none is overwritten
        tmp = [os.dup(fd) for fd in raw]
        for n, fd in enumerate(tmp):
            os.dup2(fd, 3 + n, inheritable=True)
        for fd in tmp:
            os.close(fd)
    env = dict(os.environ)
    env["LISTEN_FDS"] = str(len(raw))
    if names is not None:
        env["LISTEN_FDNAMES"] = names
    while True:
        child = subprocess.Popen(
            ["sh", "-c", 'LISTEN_PID=$$; export LISTEN_PID; exec "$@"', "sh"]
            + cmd, env=env, preexec_fn=place, close_fds=False)
        log.write("start %d\n" % child.pid)
        while True:
            try:
                rc = child.wait()
                break
            except InterruptedError:
                continue
        log.write("exit %d\n" % rc)
        if stopping or restart == "no" or (restart == "on-failure" and rc == 0):
            break
        end = time.monotonic() + restart_sec
        while not stopping and (time.monotonic() < end or
                                (hold is not None and not os.path.exists(hold))):
            time.sleep(0.02)
        if hold is not None and os.path.exists(hold):
            os.unlink(hold)
        if stopping:
            break
    log.write("stop\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
