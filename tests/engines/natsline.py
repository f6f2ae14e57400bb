#!/usr/bin/env python3
"""natsline.py: a line client of core NATS, standing in for the nats CLI.

The gdkit(7) NATS recipe uses `nats pub SUBJECT --send-on newline` and
`nats sub SUBJECT --raw`; Debian does not package the nats CLI, so the tests
and the bench run this instead, with the same arguments:

  natsline.py [-s URL] pub SUBJECT [--send-on newline]
      every stdin line (without its newline) is one message on SUBJECT; at
      the end of stdin, a PING/PONG round trip tells that the server has
      them all, then exit 0
  natsline.py [-s URL] sub SUBJECT [--raw]
      every message on SUBJECT is one stdout line; "natsline: subscribed to
      SUBJECT" on stderr once the server has the subscription (the tests
      wait for it); runs until killed (SIGTERM, SIGINT: exit 0)

URL is -s/--server, else NATS_URL (as for the nats CLI), else
nats://127.0.0.1:4222. Only the text protocol of core NATS (INFO, CONNECT,
PUB, SUB, MSG, PING, PONG, -ERR): no TLS, no auth, no reconnect; a lost
connection or -ERR ends it with status 1, a usage error with 64.
"""
import json
import os
import select
import signal
import socket
import sys

PROG = "natsline"


def die(msg, code=1):
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.exit(code)


def connect(url):
    hostport = url.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        die(f"bad server URL '{url}' (want nats://HOST:PORT)", 64)
    try:
        s = socket.create_connection((host, int(port)), timeout=10)
    except OSError as e:
        die(f"cannot connect to {host}:{port}: {e.strerror or e}")
    s.settimeout(None)
    f = s.makefile("rb")
    info = f.readline()
    if not info.startswith(b"INFO "):
        die(f"{host}:{port} is not a NATS server (first line {info[:40]!r})")
    # verbose off: no +OK per PUB; pedantic off: no subject checks
    s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"name":"natsline","lang":"python","version":"1"}\r\n')
    return s, f, json.loads(info[5:]).get("max_payload", 1048576)


def pub(url, subject):
    s, f, max_payload = connect(url)
    f.close()
    head = b"PUB " + subject.encode() + b" "
    stdin = sys.stdin.fileno()
    rest, lineno, eof, inbuf = b"", 0, False, b""
    while not eof:
        r, _, _ = select.select([stdin, s], [], [])
        if s in r:
            inbuf += s.recv(65536) or die("the server closed the connection")
            inbuf = server_lines(s, inbuf)
        if stdin not in r:
            continue
        chunk = os.read(stdin, 1 << 16)
        if not chunk:
            eof = True
            chunk = b"\n" if rest else b""
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        out = []
        for line in lines:
            lineno += 1
            if len(line) > max_payload:
                die(f"line {lineno}: {len(line)} bytes, above the server's max_payload ({max_payload})")
            out.append(b"%s%d\r\n%s\r\n" % (head, len(line), line))
        if out:
            s.sendall(b"".join(out))
    # the PONG comes after every PUB before it has been processed
    s.sendall(b"PING\r\n")
    while True:
        data = s.recv(65536) or die("the server closed the connection before PONG")
        inbuf += data
        if b"PONG\r\n" in inbuf:
            server_lines(s, inbuf.replace(b"PONG\r\n", b"", 1))
            return 0
        inbuf = server_lines(s, inbuf)


def server_lines(s, buf):
    """Answer PINGs, fail on -ERR; return the unfinished tail of buf."""
    while b"\r\n" in buf:
        line, buf = buf.split(b"\r\n", 1)
        if line == b"PING":
            s.sendall(b"PONG\r\n")
        elif line.startswith(b"-ERR"):
            die(f"server error: {line[5:].decode(errors='replace')}")
    return buf


def sub(url, subject):
    s, f, _ = connect(url)
    f.close()
    s.sendall(b"SUB " + subject.encode() + b" 1\r\nPING\r\n")
    out = sys.stdout.fileno()
    buf, pos, subscribed = b"", 0, False
    while True:
        data = s.recv(1 << 18)
        if not data:
            die("the server closed the connection")
        buf = buf[pos:] + data
        pos, lines = 0, []
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                break
            if buf.startswith(b"MSG ", pos):
                # MSG <subject> <sid> [reply-to] <#bytes>
                n = int(buf[buf.rfind(b" ", pos, eol) + 1:eol])
                if eol + 2 + n + 2 > len(buf):
                    break
                lines.append(buf[eol + 2:eol + 2 + n])
                pos = eol + 2 + n + 2
                continue
            line = buf[pos:eol]
            pos = eol + 2
            if line == b"PING":
                s.sendall(b"PONG\r\n")
            elif line == b"PONG" and not subscribed:
                subscribed = True
                sys.stderr.write(f"{PROG}: subscribed to {subject}\n")
                sys.stderr.flush()
            elif line.startswith(b"-ERR"):
                die(f"server error: {line[5:].decode(errors='replace')}")
        if lines:
            lines.append(b"")
            data = memoryview(b"\n".join(lines))
            while data:
                data = data[os.write(out, data):]


def main(argv):
    url = os.environ.get("NATS_URL", "nats://127.0.0.1:4222")
    words = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-s", "--server") and i + 1 < len(argv):
            url = argv[i + 1]
            i += 2
            continue
        if a.startswith("--server="):
            url = a.split("=", 1)[1]
        elif a == "--send-on" and i + 1 < len(argv) and argv[i + 1] == "newline":
            i += 1
        elif a not in ("--send-on=newline", "--raw", "-r"):
            words.append(a)
        i += 1
    if len(words) != 2 or words[0] not in ("pub", "sub"):
        die("usage: natsline.py [-s URL] pub SUBJECT [--send-on newline] | sub SUBJECT [--raw]", 64)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(0))
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return (pub if words[0] == "pub" else sub)(url, words[1])
    except OSError as e:
        die(f"connection to the server lost: {e.strerror or e}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
