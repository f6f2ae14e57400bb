#!/usr/bin/env python3
"""tagforge.py: what a client of the engine between gdpub -o and gdsub -i
can do without the key, as a filter on the framed stream (binary, or
armored lines, told by the first byte), for tests/cli/tags.bats.

usage: tagforge.py forge [--tag none|junk] [--drop] [--only] ID:PAYLOAD...
       tagforge.py replay FILE AFTER
       tagforge.py oldpub KEYFILE PORTFILE

forge   once the first block frame has passed (the attacker read one line:
        epoch and origin), write a frame for each ID:PAYLOAD with that
        epoch and origin: untagged (--tag none, the default) or with 16
        made-up tag bytes (--tag junk). --drop: the first real frame of
        each such ID is dropped, so only a resend can bring it. --only:
        write the forged frames alone, no frame read.
replay  after the block frame whose ID is AFTER has passed, write every
        frame of FILE (a stream of another run, same form), then every
        frame that passed so far again.
oldpub  a gdpub -o of a gdkit before tags, with a key: listens on a free
        port of 127.0.0.1 (written to PORTFILE), proves the key to the one
        gdsub that connects (wire protocol 3) and welcomes it as a stream
        publisher whose frames carry no tags; then waits for the close.

Every frame is written as soon as it is read (the pipeline waits on it).
"""
import base64
import hashlib
import hmac
import os
import socket
import struct
import sys

import gdwire

HDR = struct.Struct("<2sBBHBBIQQQQ")   # the 44 bytes of gdkit-stream(5)


def _crc_table():
    tab = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        tab.append(c)
    return tab


_TAB = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _TAB[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def fields(frame):
    (sync, typ, flags, olen, tlen, _, plen, fid, seq, tm,
     epoch) = HDR.unpack_from(frame)
    origin = frame[44 + plen:44 + plen + olen]
    return typ, flags, fid, seq, tm, epoch, origin


def make(fid, seq, tm, epoch, origin, payload, tag):
    tlen = len(tag)
    b = HDR.pack(b"gf", 1, 0, len(origin), tlen, 0, len(payload), fid, seq,
                 tm, epoch) + payload + origin + tag
    return b + struct.pack("<I", crc32c(b))


class Stream:
    """Frames in, frames out, in the form the input came in."""

    def __init__(self):
        self.armored = None
        self.buf = b""

    def frames(self):
        while True:
            chunk = os.read(0, 65536)
            if not chunk:
                return
            self.buf += chunk
            if self.armored is None:
                self.armored = self.buf[:1] != b"\x89"
            if self.armored:
                while b"\n" in self.buf:
                    line, self.buf = self.buf.split(b"\n", 1)
                    yield from line_frames(line)
                continue
            while True:
                if self.buf[:1] == b"\x89" and len(self.buf) >= 16:
                    self.raw(self.buf[:16])
                    self.buf = self.buf[16:]
                    continue
                if len(self.buf) < 44:
                    break
                _, _, _, olen, tlen, _, plen = HDR.unpack_from(self.buf)[:7]
                n = 44 + plen + olen + tlen + 4
                if len(self.buf) < n:
                    break
                frame, self.buf = self.buf[:n], self.buf[n:]
                yield frame

    def raw(self, b):
        os.write(1, b)

    def put(self, frame):
        if self.armored:
            self.raw(b"GDK1:" + base64.b64encode(frame) + b"\n")
        else:
            self.raw(frame)


def forge(args):
    tag, drop, only, items = b"", False, False, []
    while args:
        a = args.pop(0)
        if a == "--tag":
            tag = {"none": b"", "junk": b"\x5a" * 16}[args.pop(0)]
        elif a == "--drop":
            drop = True
        elif a == "--only":
            only = True
        else:
            fid, _, payload = a.partition(":")
            items.append((int(fid), payload.encode()))
    s, done, dropping = Stream(), False, {fid for fid, _ in items}
    for frame in s.frames():
        typ, flags, fid, seq, tm, epoch, origin = fields(frame)
        if typ == 1 and drop and fid in dropping and not flags & 1:
            dropping.discard(fid)
            continue
        if not only:
            s.put(frame)
        if typ == 1 and not done:
            done = True
            for n, (ffid, payload) in enumerate(items, 1):
                s.put(make(ffid, seq + n, tm, epoch, origin, payload, tag))


def replay(args):
    path, after = args[0], int(args[1])
    s, seen, done = Stream(), [], False
    for frame in s.frames():
        s.put(frame)
        seen.append(frame)
        typ, _, fid = fields(frame)[:3]
        if typ == 1 and fid == after and not done:
            done = True
            with open(path, "rb") as f:
                data = f.read()
            for f in frames_of(data):
                s.put(f)
            for f in seen:
                s.put(f)


def line_frames(line):
    """The frames of an armored line: one or more (gdpub --armor-batch)."""
    data, out, i = base64.b64decode(line.rstrip(b"\r")[5:]), [], 0
    while i + 44 <= len(data):
        _, _, _, olen, tlen, _, plen = HDR.unpack_from(data, i)[:7]
        n = 44 + plen + olen + tlen + 4
        out.append(data[i:i + n])
        i += n
    return out


def frames_of(data):
    """Every frame of a whole stream (binary or armored) in memory."""
    if data[:1] != b"\x89":
        return [f for l in data.split(b"\n") if l for f in line_frames(l)]
    out, i = [], 0
    while i < len(data):
        if data[i] == 0x89:
            i += 16
            continue
        _, _, _, olen, tlen, _, plen = HDR.unpack_from(data, i)[:7]
        n = 44 + plen + olen + tlen + 4
        out.append(data[i:i + n])
        i += n
    return out


def oldpub(args):
    with open(args[0], "rb") as f:
        key = f.read().rstrip(b" \t\r\n")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    with open(args[1] + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(args[1] + ".tmp", args[1])
    c, _ = srv.accept()

    def recvn(n):
        b = b""
        while len(b) < n:
            k = c.recv(n - len(b))
            if not k:
                sys.exit(0)
            b += k
        return b

    def frame():
        n, t = struct.unpack("<IB", recvn(8)[:5])
        return t, recvn(n)

    def send(t, body):
        c.sendall(struct.pack("<IBBH", len(body), t, 0, 0) + body)

    t, hello = frame()
    nc, ns = hello[8:40], os.urandom(32)
    send(8, ns + hmac.new(key, b"gdkit-auth-v3 pub >" + nc + ns,
                          hashlib.sha256).digest())
    frame()                                         # the proof
    frame()                                         # its seal
    origin = b"127.0.0.1:%d" % port
    # this wire's version (its seals), but no tags on the stream
    p2s, _ = gdwire.session_keys(key, nc, ns, hello)
    w = struct.pack("<HBBIIIQ", gdwire.VERSION, 0, 1, 1, 1048576, 10000, 7) + origin
    c.sendall(gdwire.Seal("mac", p2s).wrap(struct.pack("<IBBH", len(w), 2, 0, 0) + w))
    while c.recv(4096):
        pass


def main():
    modes = {"forge": forge, "replay": replay, "oldpub": oldpub}
    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    modes[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
