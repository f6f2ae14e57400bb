#!/usr/bin/env python3
"""tagcheck.py: the frame tags of gdkit-stream(5) (TAGS) computed apart
from lib/tag.c, for tests/cli/tags.bats and tests/unit/test_tag.c.

usage: tagcheck.py check KEYFILE < STREAM
       tagcheck.py retag KEYFILE < STREAM > STREAM
       tagcheck.py kat

check   reads a stream (binary or armored, as tagforge.py does) and checks
        every frame's tag under KEYFILE; prints "N frames, N tags good";
        exit status 1 at the first frame whose tag is missing or wrong.
retag   writes the stream with the tag of every tagged frame made anew
        under KEYFILE, and its CRC32C (how the tagged seeds of
        tests/fuzz/corpus/stream were made, after their 5-byte prefix).
kat     prints the tag of the known-answer frame of test_tag.c (and of
        gdkit-stream(5)): the block "hello", ID and index 1, time
        1796006270123456789, epoch 1, origin 127.0.0.1:7001, under the
        key 0123456789abcdef0123456789abcdef.

SipHash-2-4-128 here is written from the SipHash paper and checked, every
time this runs, against vectors of the reference implementation
(vectors_sip128: key bytes 00..0f, message bytes 00..len-1).
"""
import hashlib
import hmac
import struct
import sys

from tagforge import HDR, Stream, crc32c

M64 = (1 << 64) - 1
LABEL = b"gdkit-stream-tag-v2\0"
REF = {0: "a3817f04ba25a8e66df67214c7550293",
       7: "a1f1ebbed8dbc153c0b84aa61ff08239",
       8: "3b62a9ba6258f5610f83e264f31497b4",
       15: "5493e99933b0a8117e08ec0f97cfc3d9",
       63: "5150d1772f50834a503e069a973fbd7c"}


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def _round(v):
    v0, v1, v2, v3 = v
    v0 = (v0 + v1) & M64
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & M64
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & M64
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & M64
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return [v0, v1, v2, v3]


def siphash128(key, msg):
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d ^ 0xee,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]
    last = len(msg) & ~7
    words = [struct.unpack_from("<Q", msg, i)[0] for i in range(0, last, 8)]
    words.append(int.from_bytes(msg[last:], "little") |
                 ((len(msg) & 0xFF) << 56))
    for m in words:
        v[3] ^= m
        v = _round(_round(v))
        v[0] ^= m
    out = b""
    for x2, x1 in ((0xee, 0), (0, 0xdd)):
        v[2] ^= x2
        v[1] ^= x1
        for _ in range(4):
            v = _round(v)
        out += struct.pack("<Q", v[0] ^ v[1] ^ v[2] ^ v[3])
    return out


def tag(psk, frame_before_tag, epoch, origin):
    rk = hmac.new(psk, LABEL + struct.pack("<Q", epoch) + origin,
                  hashlib.sha256).digest()
    return siphash128(rk[:16], frame_before_tag)


def selftest():
    key = bytes(range(16))
    for n, want in REF.items():
        got = siphash128(key, bytes(range(n))).hex()
        if got != want:
            sys.exit("tagcheck.py: SipHash-2-4-128 of %d bytes is %s, the "
                     "reference says %s" % (n, got, want))


def readkey(keyfile):
    with open(keyfile, "rb") as f:
        return f.read().rstrip(b" \t\r\n")


def retag(keyfile):
    psk = readkey(keyfile)
    s = Stream()
    for frame in s.frames():
        (_, _, _, olen, tlen, _, plen, _, _, _,
         epoch) = HDR.unpack_from(frame)
        end = 44 + plen + olen
        if tlen == 16:
            b = frame[:end] + tag(psk, frame[:end], epoch,
                                  frame[44 + plen:end])
            frame = b + struct.pack("<I", crc32c(b))
        s.put(frame)


def check(keyfile):
    psk = readkey(keyfile)

    class Quiet(Stream):
        def raw(self, b):
            pass

    n = 0
    for frame in Quiet().frames():
        (_, _, _, olen, tlen, _, plen, _, _, _,
         epoch) = HDR.unpack_from(frame)
        end = 44 + plen + olen
        origin = frame[44 + plen:end]
        if crc32c(frame[:-4]) != struct.unpack("<I", frame[-4:])[0]:
            sys.exit("tagcheck.py: frame %d: CRC32C mismatch" % (n + 1))
        if tlen != 16 or frame[end:end + 16] != tag(psk, frame[:end], epoch,
                                                       origin):
            sys.exit("tagcheck.py: frame %d: tag %s is not the one the key "
                     "gives" % (n + 1, frame[end:end + tlen].hex()))
        n += 1
    print("%d frames, %d tags good" % (n, n))


def kat():
    origin = b"127.0.0.1:7001"
    payload = b"hello"
    b = HDR.pack(b"gf", 1, 0, len(origin), 16, 0, len(payload), 1, 1,
                 1796006270123456789, 1) + payload + origin
    print(tag(b"0123456789abcdef0123456789abcdef", b, 1, origin).hex())


def main():
    selftest()
    if sys.argv[1:2] == ["check"] and len(sys.argv) == 3:
        check(sys.argv[2])
    elif sys.argv[1:2] == ["retag"] and len(sys.argv) == 3:
        retag(sys.argv[2])
    elif sys.argv[1:] == ["kat"]:
        kat()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
