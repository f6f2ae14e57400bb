#!/usr/bin/env python3
"""Flood a gdpub with what should cost it nothing lasting, and measure
its memory while doing so.

usage: flood.py HOST PORT SECONDS [--pid PID] [--key FILE] [--name NAME]
                [--churn N] [--idle N] [--acks-per-frame N]

For SECONDS, at the same time:
  - one GD subscriber connection NAME (default "flood"; proves FILE's key
    when --key is given) sends acknowledgement frames of --acks-per-frame
    (default 4096) random (id, seq) pairs that no block has;
  - --churn (default 4) threads open and close connections as fast as
    they can (a pause of 1 ms each): a hello and a close, a close before
    any byte, a partial header, a malformed frame, a hello and then
    nothing (left to the handshake timeout or closed by the flood);
  - up to --idle (default 64) connections are held open without a byte,
    as a slowloris would, and opened again when gdpub closes them.
With --pid, gdpub's VmRSS (/proc/PID/status) is sampled every 0.25 s and
the last line printed is
  rss_kib start=S peak=P end=E  connects=C acks=A refused_at_accept=R
where end is sampled after the flood's connections are closed and a
second has passed. Exit status 0, or 1 when the GD connection could not
be set up (refused, wrong key).
"""
import argparse, hashlib, hmac, os, random, socket, struct, sys, threading, time
import gdwire
from gdwire import (F_HELLO, F_WELCOME, F_ACK, F_CHALLENGE, F_PROOF,
                    LABEL_PUB, LABEL_SUB)

ap = argparse.ArgumentParser()
ap.add_argument("host")
ap.add_argument("port", type=int)
ap.add_argument("seconds", type=float)
ap.add_argument("--pid", type=int)
ap.add_argument("--key")
ap.add_argument("--name", default="flood")
ap.add_argument("--churn", type=int, default=4)
ap.add_argument("--idle", type=int, default=64)
ap.add_argument("--acks-per-frame", type=int, default=4096)
a = ap.parse_args()

key = None
if a.key:
    with open(a.key, "rb") as f:
        key = f.read().rstrip(b"\r\n\t ")

stop = threading.Event()
stats = {"connects": 0, "acks": 0, "refused": 0}
lock = threading.Lock()


def count(k, n=1):
    with lock:
        stats[k] += n


def frame(t, body):
    return struct.pack("<IBBH", len(body), t, 0, 0) + body


def hello(name, gd, want, nonce, auth):
    return frame(F_HELLO, gdwire.hello_body(name, gd, want, nonce, auth))


def recv_frame(s, rd=None):
    """The next frame (t, body); with rd (a gdwire.Reader) the next one
    under a good seal."""
    while rd is not None:
        if rd.pending:
            t, _, body = rd.pending.pop(0)
            return t, body
        d = s.recv(65536)
        if not d:
            raise EOFError("closed")
        rd.pending += rd.feed(d)

    def exact(n):
        b = b""
        while len(b) < n:
            d = s.recv(n - len(b))
            if not d:
                raise EOFError("closed")
            b += d
        return b
    h = exact(8)
    n, t = struct.unpack("<IB", h[:5])
    return t, exact(n)


def gd_connection():
    """The GD subscriber: handshake, then ack frames of unknown ids."""
    s = socket.create_connection((a.host, a.port), timeout=10)
    nc = os.urandom(32)
    hb = gdwire.hello_body(a.name, 1, 0, nc, key is not None)
    tx = gdwire.Seal(None if key else "crc")
    rd = gdwire.Reader(gdwire.Seal(None if key else "crc"))
    rd.pending = []
    s.sendall(tx.wrap(frame(F_HELLO, hb)))
    t, body = recv_frame(s, rd)
    if t == F_CHALLENGE:
        ns, proof = body[:32], body[32:]
        want = hmac.new(key, LABEL_PUB + nc + ns, hashlib.sha256).digest()
        if not hmac.compare_digest(want, proof):
            sys.exit("flood: the publisher did not prove the key")
        p2s, s2p = gdwire.session_keys(key, nc, ns, hb)
        tx, rd.seal = gdwire.Seal("mac", s2p), gdwire.Seal("mac", p2s)
        s.sendall(tx.wrap(frame(F_PROOF, hmac.new(key, LABEL_SUB + nc + ns,
                                                   hashlib.sha256).digest())))
        t, body = recv_frame(s, rd)
    if t != F_WELCOME or body[2] != 0:
        sys.exit("flood: not welcomed as a GD subscriber (frame %d, status %d)"
                 % (t, body[2] if len(body) > 2 else -1))
    s.settimeout(None)
    rnd = random.Random(1)
    drain = threading.Thread(target=lambda: _drain(s), daemon=True)
    drain.start()
    while not stop.is_set():
        n = a.acks_per_frame
        body = b"".join(struct.pack("<QQ", rnd.getrandbits(64), rnd.getrandbits(64))
                        for _ in range(n))
        try:
            s.sendall(tx.wrap(frame(F_ACK, body)))
        except OSError as e:
            sys.exit("flood: the GD connection failed: %s" % e)
        count("acks", n)
        time.sleep(0.005)
    s.close()


def _drain(s):
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass


def churn(seed):
    rnd = random.Random(seed)
    while not stop.is_set():
        kind = rnd.randrange(5)
        try:
            s = socket.create_connection((a.host, a.port), timeout=2)
        except OSError:
            time.sleep(0.01)
            continue
        count("connects")
        try:
            if kind == 0:
                s.sendall(hello("churn-%d" % rnd.getrandbits(32), 0, 0,
                                os.urandom(32), False))
            elif kind == 1:
                pass
            elif kind == 2:
                s.sendall(b"\x10\x00")
            elif kind == 3:
                s.sendall(frame(F_ACK, b"\0" * 16))
            else:
                s.sendall(hello("churn", 0, 1, os.urandom(32), key is not None))
            s.settimeout(0.05)
            try:
                if s.recv(1) == b"" and kind == 1:
                    count("refused")	# closed at accept: maxConnections
            except (socket.timeout, OSError):
                pass
        except OSError:
            pass
        s.close()
        time.sleep(0.001)


def idle():
    held = []
    while not stop.is_set():
        while len(held) < a.idle and not stop.is_set():
            try:
                held.append(socket.create_connection((a.host, a.port), timeout=2))
                count("connects")
            except OSError:
                break
        time.sleep(0.25)
        keep = []
        for s in held:
            s.setblocking(False)
            try:
                closed = s.recv(1) == b""
            except BlockingIOError:
                closed = False
            except OSError:
                closed = True
            if closed:
                s.close()
            else:
                keep.append(s)
        held = keep
    for s in held:
        s.close()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


start = peak = rss_kib(a.pid) if a.pid else 0
threads = [threading.Thread(target=gd_connection)]
threads += [threading.Thread(target=churn, args=(i,)) for i in range(a.churn)]
threads += [threading.Thread(target=idle)]
for t in threads:
    t.start()
end_at = time.monotonic() + a.seconds
failed = False
while time.monotonic() < end_at:
    time.sleep(0.25)
    if a.pid:
        peak = max(peak, rss_kib(a.pid))
    if not threads[0].is_alive():
        failed = True
        break
stop.set()
for t in threads:
    t.join()
time.sleep(1)
end = rss_kib(a.pid) if a.pid else 0
peak = max(peak, end)
print("rss_kib start=%d peak=%d end=%d  connects=%d acks=%d refused_at_accept=%d"
      % (start, peak, end, stats["connects"], stats["acks"], stats["refused"]))
sys.exit(1 if failed else 0)
