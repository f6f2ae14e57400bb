"""gdkit's TCP wire (protocol 4) for the tests' fakes: frames, the seals
that follow every write (lib/seal.h) and the handshake's proofs.

Without a key a seal is the CRC32C of the seal's number (u64 LE) and the
bytes since the previous seal; with a key it is the GMAC (AES-256-GCM, no
plaintext, those bytes as additional data, IV = 4 zero bytes + the
number) under the direction's session key, HMAC-SHA256(key, label || nc
|| ns || SHA-256(HELLO body)). Python's standard library has no AES: the
GMAC goes through ctypes to libcrypto, which gdkit links anyway.

    s = Seal("crc")                     # or Seal("mac", session_key)
    sock.sendall(s.wrap(frame(F_ACK, body)))
    r = Reader(Seal("crc"))             # what the peer writes
    for t, flags, body in r.feed(data): ...   # only frames under a good seal
"""
import ctypes
import ctypes.util
import hashlib
import hmac
import struct

VERSION = 4
(F_HELLO, F_WELCOME, F_BLOCK, F_ACK, F_FLOOR, F_END, F_BYE, F_CHALLENGE,
 F_PROOF, F_CONFIRM, F_REFUSE, F_CONSUMED, F_SEAL) = range(1, 14)
LABEL_PUB, LABEL_SUB = b"gdkit-auth-v3 pub >", b"gdkit-auth-v3 sub <"
LABEL_P2S, LABEL_S2P = b"gdkit-seal-v4 pub>sub", b"gdkit-seal-v4 sub>pub"


def frame(t, body=b"", flags=0):
    return struct.pack("<IBBH", len(body), t, flags, 0) + body


def hello_body(name, gd=1, want=1, nonce=b"\0" * 32, auth=False, run=1,
               qos=b"", version=VERSION):
    return (struct.pack("<HBBB3x", version, gd, want, 1 if auth else 0) +
            nonce + struct.pack("<QB", run, len(name)) + name.encode() + qos)


def welcome_body(status=0, flags=0, num_subs=1, max_block=1 << 20,
                 timeout_ms=10000, epoch=1, origin=b"127.0.0.1:1",
                 version=VERSION):
    return struct.pack("<HBBIIIQ", version, status, flags, num_subs,
                       max_block, timeout_ms, epoch) + origin


_T = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _T.append(_c)


def crc32c(data, crc=0):
    c = crc ^ 0xFFFFFFFF
    t = _T
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def proof(key, label, nc, ns):
    return hmac.new(key, label + nc + ns, hashlib.sha256).digest()


def session_keys(key, nc, ns, hello):
    """(publisher -> subscriber, subscriber -> publisher) keys for the
    HELLO body hello."""
    hh = hashlib.sha256(hello).digest()
    return (hmac.new(key, LABEL_P2S + nc + ns + hh, hashlib.sha256).digest(),
            hmac.new(key, LABEL_S2P + nc + ns + hh, hashlib.sha256).digest())


_lib = None


def _crypto():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(ctypes.util.find_library("crypto") or "libcrypto.so.3")
        vp, ip = ctypes.c_void_p, ctypes.c_int
        lib.EVP_CIPHER_CTX_new.restype = vp
        lib.EVP_aes_256_gcm.restype = vp
        lib.EVP_EncryptInit_ex.argtypes = [vp, vp, vp, ctypes.c_char_p,
                                           ctypes.c_char_p]
        lib.EVP_EncryptUpdate.argtypes = [vp, vp, ctypes.POINTER(ip),
                                          ctypes.c_char_p, ip]
        lib.EVP_EncryptFinal_ex.argtypes = [vp, ctypes.c_char_p,
                                            ctypes.POINTER(ip)]
        lib.EVP_CIPHER_CTX_ctrl.argtypes = [vp, ip, ip, ctypes.c_char_p]
        _lib = lib
    return _lib


def gmac(key, seq, data):
    lib = _crypto()
    ctx = lib.EVP_CIPHER_CTX_new()
    n = ctypes.c_int(0)
    iv = b"\0" * 4 + struct.pack("<Q", seq)
    tag = ctypes.create_string_buffer(16)
    tmp = ctypes.create_string_buffer(16)
    try:
        ok = (lib.EVP_EncryptInit_ex(ctx, lib.EVP_aes_256_gcm(), None, key, iv) == 1 and
              (not data or lib.EVP_EncryptUpdate(ctx, None, ctypes.byref(n), data,
                                                 len(data)) == 1) and
              lib.EVP_EncryptFinal_ex(ctx, tmp, ctypes.byref(n)) == 1 and
              lib.EVP_CIPHER_CTX_ctrl(ctx, 0x10, 16, tag) == 1)
    finally:
        lib.EVP_CIPHER_CTX_free.argtypes = [ctypes.c_void_p]
        lib.EVP_CIPHER_CTX_free(ctx)
    if not ok:
        raise RuntimeError("libcrypto: AES-256-GCM failed")
    return tag.raw


class Seal:
    """One direction's seals: mode "crc" or "mac" (with its session key),
    or None (no seals: TLS, or before the handshake says)."""

    def __init__(self, mode, key=None):
        self.mode, self.key, self.seq = mode, key, 0

    def body(self, span):
        if self.mode == "crc":
            b = struct.pack("<I", crc32c(span, crc32c(struct.pack("<Q", self.seq))))
        else:
            b = gmac(self.key, self.seq, span)
        return b

    def make(self, span):
        b = self.body(span)
        self.seq += 1
        return frame(F_SEAL, b)

    def wrap(self, data):
        """data (whole frames) followed by its seal, or as it is."""
        return data if self.mode is None else data + self.make(data)

    def check(self, span, body):
        ok = hmac.compare_digest(self.body(span), body)
        if ok:
            self.seq += 1
        return ok


class SealError(Exception):
    pass


class Reader:
    """The frames a peer writes, given as they come (feed), handed out
    once the seal after them verified (SealError when one does not)."""

    def __init__(self, seal=None):
        self.seal, self.buf, self.span = seal, b"", b""

    def feed(self, data):
        self.buf += data
        out = []
        while len(self.buf) >= 8:
            n, t, fl = struct.unpack_from("<IBB", self.buf)
            if len(self.buf) < 8 + n:
                break
            raw, self.buf = self.buf[:8 + n], self.buf[8 + n:]
            if self.seal is None or self.seal.mode is None:
                out.append((t, fl, raw[8:]))
            elif t == F_SEAL:
                if not self.seal.check(self.span, raw[8:]):
                    raise SealError("a seal does not verify")
                out += list(frames(self.span))
                self.span = b""
            else:
                self.span += raw
        return out


def frames(data):
    """(type, flags, body) of each whole frame in data."""
    i = 0
    while i + 8 <= len(data):
        n, t, fl = struct.unpack_from("<IBB", data, i)
        yield t, fl, data[i + 8:i + 8 + n]
        i += 8 + n
