#!/usr/bin/env python3
"""mkstream.py: write a gdkit framed block stream (gdkit-stream(5)) from a
small text spec, for tests that must not depend on gdpub -o. Pure Python,
its own CRC32C, so it also checks the C codec independently.

usage: mkstream.py [--no-header] [--cut N] [--flip OFF[:MASK]]...
                   [--map FILE] [SPEC] > STREAM
The spec comes from the file SPEC or stdin, one item a line; empty lines
and lines starting with '#' are ignored:

  block ID SEQ FLAGS [PAYLOAD]  a block; FLAGS is -, r, s or rs; PAYLOAD is
                                the rest of the line after one blank,
                                C-escaped: \\n \\t \\r \\\\ \\0 \\xNN (\\x20 for a
                                leading or trailing space); absent = empty
  floor SEQ                     a floor frame (every index below SEQ resolved)
  end SEQ                       an end frame
  header                        a stream header (one is written first unless
                                --no-header; more make concatenated streams)
  raw HEX...                    bytes as they are (hex, blanks ignored)
  text PAYLOAD                  bytes as they are, C-escaped like PAYLOAD
  set KEY=VALUE...              fields of every following frame:
                                  origin=HOST:PORT|@CLUSTER (127.0.0.1:7001)
                                  epoch=N (1)
                                  time=NS (1796006270123456789, that is
                                          2026-11-30T02:37:50.123456789Z)
                                  id=N (the id field of floor/end frames, 0)
  with KEY=VALUE...             raw fields of the next frame or header only,
                                written as given; the CRC is computed over
                                them unless crc= is given (all numbers may
                                be 0x hex):
                                  frame:  type= flags= olen= reserved= plen=
                                          crc=
                                  header: version= hsize= crc=

Options work on the finished byte stream:
  --no-header       do not start with a stream header
  --cut N           keep only the first N bytes (N < 0: drop the last -N)
  --flip OFF[:MASK] XOR the byte at offset OFF with MASK (default 0x01)
  --map FILE        write "OFFSET SIZE ITEM" for every spec item to FILE

Examples:
  printf 'block 1 1 - hello\\nend 1\\n' | mkstream.py > s.gds
  printf 'with type=4\\nblock 1 1 -\\n' | mkstream.py      # unknown type
  printf 'block 1 1 - x\\n' | mkstream.py --flip 60       # CRC mismatch
"""
import argparse
import re
import struct
import sys

MAGIC = b"\x89GDK\r\n\x1a\n"
TYPES = {"block": 1, "floor": 2, "end": 3}
FLAGS = {"-": 0, "r": 1, "s": 2, "rs": 3, "sr": 3}


def _crc_table():
    tab = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        tab.append(c)
    return tab


_TAB = _crc_table()


def crc32c(data, crc=0):
    """CRC32C (Castagnoli, reflected 0x82F63B78, init and final XOR ~0)."""
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _TAB[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


_ESCAPE = re.compile(rb"\\(x[0-9A-Fa-f]{2}|.?)", re.S)
_SIMPLE = {b"n": 10, b"t": 9, b"r": 13, b"\\": 92, b"0": 0, b'"': 34}


def unescape(s):
    """C-style escapes to bytes: \\n \\t \\r \\\\ \\0 \\" \\xNN. The text
    between escapes is copied whole (payloads of megabytes)."""
    raw = s.encode("utf-8", "surrogateescape")
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(raw):
        out += raw[pos:m.start()]
        e = m.group(1)
        if e == b"":
            raise ValueError("a lone backslash at the end")
        if e in _SIMPLE:
            out.append(_SIMPLE[e])
        elif e[:1] == b"x" and len(e) == 3:
            out.append(int(e[1:], 16))
        elif e == b"x":
            raise ValueError("\\x needs two hex digits")
        else:
            raise ValueError("unknown escape \\%c" % e[0])
        pos = m.end()
    out += raw[pos:]
    return bytes(out)


def num(v):
    return int(v, 0)


def header(w):
    ver = w.get("version", 1)
    hsize = w.get("hsize", 16)
    b = MAGIC + struct.pack("<HH", ver, hsize)
    crc = w["crc"] if "crc" in w else crc32c(b)
    return b + struct.pack("<I", crc)


def frame(kind, fid, seq, flags, payload, st, w):
    origin = st["origin"].encode()
    b = b"gf" + struct.pack(
        "<BBHHIQQQQ", w.get("type", TYPES[kind]), w.get("flags", flags),
        w.get("olen", len(origin)), w.get("reserved", 0),
        w.get("plen", len(payload)), fid, seq, st["time"], st["epoch"])
    b += payload + origin
    crc = w["crc"] if "crc" in w else crc32c(b)
    return b + struct.pack("<I", crc)


def kv(words, allowed):
    d = {}
    for t in words:
        k, sep, v = t.partition("=")
        if not sep or k not in allowed:
            raise ValueError("expected one of %s=VALUE, got '%s'"
                             % ("= ".join(sorted(allowed)), t))
        d[k] = v if k == "origin" else num(v)
    return d


def build(lines, want_header):
    st = {"origin": "127.0.0.1:7001", "epoch": 1,
          "time": 1796006270123456789, "id": 0}
    w = {}
    items = []          # (bytes, description)
    if want_header:
        items.append((header({}), "header"))
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        try:
            if word == "block":
                parts = rest.split(" ", 3)
                if len(parts) < 3:
                    raise ValueError("block ID SEQ FLAGS [PAYLOAD]")
                if parts[2] not in FLAGS:
                    raise ValueError("FLAGS is -, r, s or rs")
                payload = unescape(parts[3]) if len(parts) > 3 else b""
                b = frame("block", num(parts[0]), num(parts[1]),
                          FLAGS[parts[2]], payload, st, w)
            elif word in ("floor", "end"):
                parts = rest.split()
                if len(parts) != 1:
                    raise ValueError("%s SEQ" % word)
                b = frame(word, st["id"], num(parts[0]), 0, b"", st, w)
            elif word == "header":
                if rest.strip():
                    raise ValueError("header takes nothing (use 'with')")
                b = header(w)
            elif word == "raw":
                b = bytes.fromhex(rest)
            elif word == "text":
                b = unescape(rest)
            elif word == "set":
                st.update(kv(rest.split(), {"origin", "epoch", "time", "id"}))
                continue
            elif word == "with":
                w = kv(rest.split(), {"type", "flags", "olen", "reserved",
                                      "plen", "crc", "version", "hsize"})
                continue
            else:
                raise ValueError("unknown item '%s'" % word)
        except ValueError as e:
            sys.exit("mkstream.py: line %d: %s" % (n, e))
        if word in ("block", "floor", "end", "header"):
            w = {}
        items.append((b, line))
    return items


def main():
    ap = argparse.ArgumentParser(
        description="write a gdkit framed block stream from a text spec")
    ap.add_argument("spec", nargs="?", help="spec file (default stdin)")
    ap.add_argument("--no-header", action="store_true")
    ap.add_argument("--cut", type=int)
    ap.add_argument("--flip", action="append", default=[])
    ap.add_argument("--map")
    a = ap.parse_args()
    src = open(a.spec) if a.spec else sys.stdin
    items = build(src.readlines(), not a.no_header)
    out = bytearray()
    mapped = []
    for b, desc in items:
        mapped.append("%d %d %s" % (len(out), len(b), desc))
        out += b
    for f in a.flip:
        off, _, mask = f.partition(":")
        off = num(off)
        if not 0 <= off < len(out):
            sys.exit("mkstream.py: --flip %s: the stream has %d bytes"
                     % (f, len(out)))
        out[off] ^= num(mask) if mask else 1
    if a.cut is not None:
        out = out[:a.cut]
    if a.map:
        with open(a.map, "w") as m:
            m.write("".join(x + "\n" for x in mapped))
    sys.stdout.buffer.write(out)


if __name__ == "__main__":
    main()
