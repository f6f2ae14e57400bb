#!/usr/bin/env python3
"""A scripted gdsub for fault injection: speaks gdpub's wire protocol
(version 4, without a key: every write sealed with a CRC, gdwire.py) on
one TCP connection and acknowledges only what the test says.

usage: fakesub.py HOST PORT NAME CMDFILE EVENTS
  Connects as a GD subscriber NAME, writes one line per event to EVENTS
  ("welcome STATUS", "block ID SEQ FLAGS PAYLOAD", "floor N", "end"), and
  follows the commands appended to CMDFILE, one a line:
  "ack ID SEQ [ID SEQ...]" (one ack frame), "raw HEX" (bytes as they are,
  sealed), "rawnoseal HEX" (as they are, no seal),
  "confirm SEQ" (reliability=ordered), "stall" (stop reading the socket),
  "resume", "bye", "quit". Exits at "quit", at the publisher's end (said
  BYE to, as gdsub does) or at
  its refusal ("refused WHY"); when the publisher closes the connection it
  says "closed" and connects again (every 50 ms, for up to 20 s).
  $FAKESUB_QOS: QoS lines sent in the hello, ';'-separated; $FAKESUB_RUN:
  its run id (default 1); $FAKESUB_RCVBUF: a small receive buffer.
"""
import os, select, socket, struct, sys, time
import gdwire

host, port, name, cmdfile, events = sys.argv[1:6]
ev = open(events, "a", buffering=1)


def connect():
    global tx, rd
    end = time.monotonic() + 20
    while True:
        try:
            c = socket.socket()
            if os.environ.get("FAKESUB_RCVBUF"):
                c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                             int(os.environ["FAKESUB_RCVBUF"]))
            c.settimeout(10)
            c.connect((host, int(port)))
            break
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)
    c.setblocking(False)
    qos = os.environ.get("FAKESUB_QOS", "").replace(";", "\n").encode()
    run = int(os.environ.get("FAKESUB_RUN", "1"))
    hello = gdwire.hello_body(name, nonce=os.urandom(32), run=run, qos=qos)
    tx, rd = gdwire.Seal("crc"), gdwire.Reader(gdwire.Seal("crc"))
    c.sendall(tx.wrap(gdwire.frame(gdwire.F_HELLO, hello)))
    return c


def send(data, seal=True):
    s.setblocking(True)
    s.sendall(tx.wrap(data) if seal else data)
    s.setblocking(False)


s = connect()
done, pos, stalled = False, 0, False
while not done:
    r, _, _ = select.select([] if stalled else [s], [], [], 0.02)
    if r:
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            d = b""
        if not d:
            ev.write("closed\n")
            s.close()
            s = connect()
            continue
        try:
            got = rd.feed(d)
        except gdwire.SealError:
            ev.write("badseal\n")
            got = []
        for t, fl, body in got:
            if t == 2:
                ev.write("welcome %d\n" % body[2])
            elif t == 3:
                i, q, _ = struct.unpack_from("<QQQ", body)
                ev.write("block %d %d %d %s\n" % (i, q, fl, body[24:].decode("latin-1")))
            elif t == 5:
                ev.write("floor %d\n" % struct.unpack_from("<Q", body)[0])
            elif t == 6:
                ev.write("end\n")
                # as gdsub does: BYE says the end arrived
                try:
                    send(gdwire.frame(gdwire.F_BYE))
                except OSError:
                    pass
                done = True
            elif t == 11:
                ev.write("refused %s\n" % body.decode("latin-1"))
                done = True
    if os.path.exists(cmdfile):
        with open(cmdfile) as f:
            f.seek(pos)
            lines = f.readlines()
            pos = f.tell()
        for l in lines:
            w = l.split()
            if not w:
                continue
            if w[0] == "ack":
                v = [int(x) for x in w[1:]]
                body = b"".join(struct.pack("<QQ", v[i], v[i + 1]) for i in range(0, len(v), 2))
                send(gdwire.frame(gdwire.F_ACK, body))
            elif w[0] in ("raw", "rawnoseal"):
                send(bytes.fromhex(w[1]), w[0] == "raw")
            elif w[0] == "confirm":
                send(gdwire.frame(gdwire.F_CONFIRM, struct.pack("<Q", int(w[1]))))
            elif w[0] == "stall":
                stalled = True
                ev.write("stalled\n")
            elif w[0] == "resume":
                stalled = False
            elif w[0] == "bye":
                send(gdwire.frame(gdwire.F_BYE))
            elif w[0] == "quit":
                done = True
s.close()
