#!/usr/bin/env python3
"""A fault-injecting TCP relay for gdkit's tests (Python 3 stdlib only).

usage: relay.py [options] LISTEN_PORT TARGET_HOST:TARGET_PORT

Listens on 127.0.0.1:LISTEN_PORT (0: a free port), and for every
connection it accepts opens one to the target and copies bytes both ways.
"down" is target -> client (gdpub's blocks to a gdsub), "up" is client ->
target (the acknowledgements). The port it got is printed on stdout as
"PORT\\n" (and written to --port-file, atomically); what it does goes to
stderr, one "relay: ..." line per event, the seed first, so that a run
can be replayed with --seed.

Faults (byte offsets count per connection and per direction, from 0):
  --drop-after N     close a connection once N bytes have gone through in
                     --dir; the bytes up to N are delivered, not the rest
  --drop-random P    after each chunk in --dir, close the connection with
                     probability P (seeded)
  --delay S          hold every chunk in --dir S seconds before sending it
  --split            send every chunk in --dir one byte per write
  --dup-at N         send the chunk holding byte N in --dir twice
  --corrupt-at N     flip the bits of byte N in --dir (XOR 0xff)
  --drop-before-type T
                     read --dir as gdkit wire frames (u32 length, u8 type,
                     3 bytes, body) and close the connection just before
                     the first frame of type T (6: the end of the stream),
                     delivering what came before it
  --forge-acks       an on-path forger: pass the handshake through, then
                     swallow every block frame gdpub sends (and the seals
                     after the first) and send gdpub, in the subscriber's
                     name, an acknowledgement frame for each, followed by
                     a seal frame of 16 zero bytes (the forger has no
                     key); both ways are relayed frame by frame
  --dir up|down|both which direction the faults above apply to (down)
  --conns K          the byte-offset faults (drop-after, dup-at,
                     corrupt-at, drop-before-type) hit the first K connections that reach
                     the target only, so a peer that reconnects gets
                     through (default 1; 0: all)
  --reset            drop with a TCP reset (SO_LINGER 0) instead of a FIN
  --seed S           seed of --drop-random (default: from the clock)
  --port-file FILE   write the listening port to FILE as well
  --record FILE      append every byte relayed, both ways, to FILE (what
                     an eavesdropper on the wire would see)
SIGUSR1 drops every open connection at once (the chaos harness's "network
cut"); SIGTERM and SIGINT stop the relay. A target that refuses a
connection gets the client's connection closed at once, as if the
publisher were down.
"""
import argparse
import os
import random
import signal
import socket
import struct
import sys
import threading
import time


def log(msg):
    sys.stderr.write("relay: %s\n" % msg)
    sys.stderr.flush()


class Conn:
    """One client connection and its connection to the target."""

    def __init__(self, relay, n, client):
        self.relay, self.n, self.client = relay, n, client
        self.target = None
        self.lock = threading.Lock()
        self.closed = False
        self.faulty = False	# set once the target answered
        self.wlock = threading.Lock()	# writes to the target (--forge-acks)
        self.dlock = threading.Lock()

    def drop(self, why):
        with self.lock:
            if self.closed:
                return
            self.closed = True
        log("connection %d: dropped (%s)" % (self.n, why))
        for s in (self.client, self.target):
            if s is None:
                continue
            # shutdown wakes the pump blocked in recv on s; with a reset
            # only the read side, so that close sends the RST
            try:
                if self.relay.a.reset:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack("ii", 1, 0))
                    s.shutdown(socket.SHUT_RD)
                else:
                    s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass
        self.relay.forget(self)

    def start(self):
        a = self.relay.a
        try:
            self.target = socket.create_connection((a.thost, a.tport), timeout=5)
            self.target.settimeout(None)
        except OSError as e:
            self.target = None
            self.drop("target %s:%d: %s" % (a.thost, a.tport, e.strerror or e))
            return
        for s in (self.client, self.target):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # a connection the target refused does not use up --conns
        with self.relay.cl:
            self.relay.served += 1
            self.faulty = a.conns == 0 or self.relay.served <= a.conns
        threading.Thread(target=self.pump, args=(self.client, self.target, "up"),
                         daemon=True).start()
        threading.Thread(target=self.pump, args=(self.target, self.client, "down"),
                         daemon=True).start()

    def frame_cut(self, st, b):
        """--drop-before-type: where in chunk b the first frame of the
        type starts (0 when its header began in an earlier chunk), or
        None. st carries the framing across chunks: [header bytes so
        far, body bytes still to come]."""
        want = self.relay.a.drop_before_type
        i = 0
        while i < len(b):
            if st[1] > 0:
                take = min(st[1], len(b) - i)
                st[1] -= take
                i += take
                continue
            start = i - len(st[0])
            need = 8 - len(st[0])
            st[0] += b[i:i + need]
            i += min(need, len(b) - i)
            if len(st[0]) == 8:
                length = struct.unpack("<I", st[0][:4])[0]
                if st[0][4] == want:
                    return max(start, 0)
                st[0], st[1] = b"", length
        return None

    def forge(self, src, dst, d):
        """--forge-acks: whole frames only, both ways (the forged ones
        go between them)."""
        buf, blocks = b"", False
        try:
            while not self.closed:
                b = src.recv(65536)
                if not b:
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    return
                buf += b
                while len(buf) >= 8:
                    n, t = struct.unpack_from("<IB", buf)
                    if len(buf) < 8 + n:
                        break
                    f, buf = buf[:8 + n], buf[8 + n:]
                    if d == "down" and t == 3:
                        blocks = True
                        bid, seq = struct.unpack_from("<QQ", f, 8)
                        ack = struct.pack("<IBBHQQ", 16, 4, 0, 0, bid, seq)
                        seal = struct.pack("<IBBH", 16, 13, 0, 0) + bytes(16)
                        with self.wlock:
                            self.target.sendall(ack + seal)
                        log("connection %d: swallowed block %d, forged its ACK" % (self.n, bid))
                        continue
                    if d == "down" and t == 13 and blocks:
                        continue
                    with self.wlock if d == "up" else self.dlock:
                        dst.sendall(f)
        except OSError as e:
            if not self.closed:
                self.drop("%s: %s" % (d, e.strerror or e))

    def pump(self, src, dst, d):
        a = self.relay.a
        if a.forge_acks:
            self.forge(src, dst, d)
            return
        hit = a.dir in (d, "both")
        off = 0
        fst = [b"", 0]
        rng = self.relay.rng
        try:
            while not self.closed:
                b = src.recv(65536)
                if not b:
                    # half-close: pass the FIN on, keep the other way open
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    return
                start, off = off, off + len(b)
                if self.relay.rec is not None:
                    with self.relay.rlock:
                        self.relay.rec.write(b)
                        self.relay.rec.flush()
                if not hit:
                    dst.sendall(b)
                    continue
                if self.faulty and a.corrupt_at is not None and start <= a.corrupt_at < off:
                    i = a.corrupt_at - start
                    b = b[:i] + bytes([b[i] ^ 0xFF]) + b[i + 1:]
                    log("connection %d: corrupted byte %d %s" % (self.n, a.corrupt_at, d))
                cut = None
                why = None
                if self.faulty and a.drop_after is not None and off >= a.drop_after:
                    cut = a.drop_after - start
                    b = b[:cut]
                    why = "after %d bytes %s" % (a.drop_after, d)
                if self.faulty and a.drop_before_type is not None:
                    at = self.frame_cut(fst, b)
                    if at is not None and (cut is None or at < cut):
                        cut = at
                        b = b[:cut]
                        why = "before a frame of type %d at byte %d %s" % (
                            a.drop_before_type, start + cut, d)
                if a.delay:
                    time.sleep(a.delay)
                if a.split:
                    for i in range(len(b)):
                        dst.sendall(b[i:i + 1])
                else:
                    dst.sendall(b)
                if self.faulty and a.dup_at is not None and start <= a.dup_at < off:
                    dst.sendall(b)
                    log("connection %d: duplicated %d bytes at %d %s" % (self.n, len(b), start, d))
                if cut is not None:
                    self.drop(why)
                    return
                if a.drop_random:
                    with self.relay.rlock:
                        r = rng.random()
                    if r < a.drop_random:
                        self.drop("at random after %d bytes %s" % (off, d))
                        return
        except OSError as e:
            if not self.closed:
                self.drop("%s: %s" % (d, e.strerror or e))
            return


class Relay:
    def __init__(self, a):
        self.a = a
        self.conns = set()
        self.cl = threading.Lock()
        self.rlock = threading.Lock()
        self.rng = random.Random(a.seed)
        self.count = 0
        self.served = 0	# connections that reached the target
        self.rec = open(a.record, "ab") if a.record else None

    def forget(self, c):
        with self.cl:
            self.conns.discard(c)

    def drop_all(self):
        with self.cl:
            cs = list(self.conns)
        log("dropping %d connections (SIGUSR1)" % len(cs))
        for c in cs:
            c.drop("SIGUSR1")

    def serve(self):
        a = self.a
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", a.port))
        ls.listen(64)
        port = ls.getsockname()[1]
        log("seed %d" % a.seed)
        log("listening on 127.0.0.1:%d, relaying to %s:%d" % (port, a.thost, a.tport))
        if a.port_file:
            tmp = a.port_file + ".tmp"
            with open(tmp, "w") as f:
                f.write("%d\n" % port)
            os.rename(tmp, a.port_file)
        sys.stdout.write("%d\n" % port)
        sys.stdout.flush()
        while True:
            try:
                s, _ = ls.accept()
            except InterruptedError:
                continue
            self.count += 1
            c = Conn(self, self.count, s)
            with self.cl:
                self.conns.add(c)
            c.start()


def main():
    p = argparse.ArgumentParser(description="fault-injecting TCP relay")
    p.add_argument("port", type=int)
    p.add_argument("target")
    p.add_argument("--drop-after", type=int)
    p.add_argument("--drop-random", type=float, default=0.0)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--split", action="store_true")
    p.add_argument("--dup-at", type=int)
    p.add_argument("--corrupt-at", type=int)
    p.add_argument("--drop-before-type", type=int)
    p.add_argument("--forge-acks", action="store_true")
    p.add_argument("--dir", choices=("up", "down", "both"), default="down")
    p.add_argument("--conns", type=int, default=1)
    p.add_argument("--reset", action="store_true")
    p.add_argument("--seed", type=int)
    p.add_argument("--port-file")
    p.add_argument("--record")
    a = p.parse_args()
    host, _, tport = a.target.rpartition(":")
    a.thost, a.tport = host.strip("[]") or "127.0.0.1", int(tport)
    if a.seed is None:
        a.seed = int.from_bytes(os.urandom(4), "little")
    r = Relay(a)
    signal.signal(signal.SIGUSR1, lambda *_: threading.Thread(target=r.drop_all, daemon=True).start())
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    r.serve()


if __name__ == "__main__":
    main()
