#!/usr/bin/env python3
"""notifyd.py SOCKET OUT: a service manager's notification socket for
tests: bind a unix datagram socket at SOCKET (a path, or @name for the
abstract namespace) and append each datagram received to OUT, one line
each (a datagram's own newlines become ' | ')."""
import os, socket, sys

path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + path[1:] if path.startswith("@") else path)
with open(out + ".tmp", "w") as f:
    pass
os.rename(out + ".tmp", out)	# there once the socket is bound
with open(out, "a", buffering=1) as f:
    while True:
        msg = s.recv(4096).decode("utf-8", "replace")
        f.write(msg.replace("\n", " | ") + "\n")
