#!/usr/bin/env python3
"""nats_rr.py: core NATS request/reply, pipelined, for the gdkit peer bench
(tests/bench/peers/nats_rr.sh): the NATS way for a publisher to learn that
its subscriber handled each message, as gdpub learns it from gdack.

  nats_rr.py [-s URL] rep SUBJECT
      answers every request on SUBJECT: writes its payload as a line to
      stdout, then replies (an empty message to its reply subject); the
      replies of one read from the socket go in one write, after their
      lines. "READY" on stderr once the server has the subscription.
  nats_rr.py [-s URL] req SUBJECT [-w WINDOW] [-i IDLE]
      sends every stdin line as a request on SUBJECT, at most WINDOW
      (default 1000) unanswered at once, each with its own reply subject
      under one wildcard inbox subscription (as NATS clients multiplex
      requests); exits 0 once every request is answered ("DONE requests=N
      replies=N" on stderr), 1 if IDLE seconds (default 30) pass without a
      reply. No request is sent twice: on loopback nothing is lost, and a
      lost one ends the run as a failure rather than a silent gap.

The protocol code (CONNECT, PING/PONG, -ERR) is tests/engines/natsline.py's,
the client the gdkit_nats row runs on both ends: the two rows differ in what
they carry, not in the client.
"""
import os
import select
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "engines"))
import natsline  # noqa: E402

natsline.PROG = "nats_rr"
die = natsline.die


def messages(buf, pos, on_msg, s):
    """Parse MSG frames from buf[pos:], call on_msg(reply_to, payload);
    answer PING; return the position of the first unfinished frame."""
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return pos
        if buf.startswith(b"MSG ", pos):
            words = buf[pos + 4:eol].split(b" ")
            n = int(words[-1])
            if eol + 2 + n + 2 > len(buf):
                return pos
            on_msg(words[0], words[2] if len(words) == 4 else None, buf[eol + 2:eol + 2 + n])
            pos = eol + 2 + n + 2
            continue
        line = buf[pos:eol]
        pos = eol + 2
        if line == b"PING":
            s.sendall(b"PONG\r\n")
        elif line.startswith(b"-ERR"):
            die(f"server error: {line[5:].decode(errors='replace')}")


def rep(url, subject):
    s, f, _ = natsline.connect(url)
    f.close()
    s.sendall(b"SUB " + subject.encode() + b" 1\r\nPING\r\n")
    buf = b""
    while b"PONG\r\n" not in buf:
        buf += s.recv(4096) or die("the server closed the connection")
    buf = buf.split(b"PONG\r\n", 1)[1]
    sys.stderr.write("READY\n")
    sys.stderr.flush()
    out = sys.stdout.fileno()
    pos = 0
    while True:
        lines, replies = [], []

        def on_msg(_subject, reply, payload):
            lines.append(payload)
            if reply:
                replies.append(b"PUB %s 0\r\n\r\n" % reply)
        pos = messages(buf, pos, on_msg, s)
        if lines:
            lines.append(b"")
            data = memoryview(b"\n".join(lines))
            while data:
                data = data[os.write(out, data):]
            s.sendall(b"".join(replies))
        data = s.recv(1 << 18)
        if not data:
            die("the server closed the connection")
        buf = buf[pos:] + data
        pos = 0


def req(url, subject, window, idle):
    s, f, max_payload = natsline.connect(url)
    f.close()
    inbox = b"_INBOX.%s" % os.urandom(8).hex().encode()
    s.sendall(b"SUB %s.* 1\r\n" % inbox)
    head = b"PUB " + subject.encode() + b" " + inbox + b"."
    stdin = sys.stdin.fileno()
    pending = []          # lines read, not yet sent
    rest, eof = b"", False
    sent = answered = 0
    waiting = set()
    buf, pos = b"", 0

    def on_msg(subj, _reply, _payload):
        nonlocal answered
        seq = int(subj.rsplit(b".", 1)[1])
        if seq in waiting:
            waiting.remove(seq)
            answered += 1

    while not (eof and not pending and not rest and answered == sent):
        room = window - len(waiting)
        if room > 0 and pending:
            out = []
            for line in pending[:room]:
                sent += 1
                waiting.add(sent)
                out.append(b"%s%d %d\r\n%s\r\n" % (head, sent, len(line), line))
            del pending[:room]
            s.sendall(b"".join(out))
        want = [s] + ([stdin] if not eof and len(pending) < window else [])
        r, _, _ = select.select(want, [], [], idle)
        if not r:
            die(f"no reply for {idle} s: {answered} of {sent} requests answered")
        if stdin in r:
            chunk = os.read(stdin, 1 << 16)
            if not chunk:
                eof = True
                chunk = b"\n" if rest else b""
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                if len(line) > max_payload:
                    die(f"a line of {len(line)} bytes, above the server's max_payload ({max_payload})")
            pending.extend(lines)
        if s in r:
            data = s.recv(1 << 18)
            if not data:
                die("the server closed the connection")
            buf = buf[pos:] + data
            pos = messages(buf, 0, on_msg, s)
    sys.stderr.write(f"DONE requests={sent} replies={answered}\n")
    return 0


def main(argv):
    url = os.environ.get("NATS_URL", "nats://127.0.0.1:4222")
    window, idle, words = 1000, 30, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-s", "-w", "-i") and i + 1 < len(argv):
            v = argv[i + 1]
            if a == "-s":
                url = v
            elif not v.isdigit() or int(v) < 1:
                die(f"{a} wants a positive integer (got '{v}')", 64)
            elif a == "-w":
                window = int(v)
            else:
                idle = int(v)
            i += 2
            continue
        words.append(a)
        i += 1
    if len(words) != 2 or words[0] not in ("req", "rep"):
        die("usage: nats_rr.py [-s URL] rep SUBJECT | req SUBJECT [-w WINDOW] [-i IDLE]", 64)
    if words[0] == "rep":
        return rep(url, words[1])
    return req(url, words[1], window, idle)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
