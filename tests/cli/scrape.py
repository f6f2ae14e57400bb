#!/usr/bin/python3
"""scrape.py: read a gdpub's or gdsub's /metrics as Prometheus would, or
send it raw requests.

  scrape.py samples URL          one "name{labels} value" line per sample,
                                 sorted, read by the Prometheus client's
                                 own parser (python3-prometheus-client);
                                 fails on anything it refuses or on a
                                 family without HELP
  scrape.py sums URL SECONDS     scrape again and again for SECONDS; in
                                 each scrape every gdkit_sub_X_total must
                                 equal the sum of its per-publisher
                                 series gdkit_sub_publisher_X_total; print
                                 how many scrapes, and the first mismatch
  scrape.py raw HOST:PORT BYTES  send BYTES (Python escapes: \\r\\n ...),
                                 print what comes back until the server
                                 closes (10 s at most)
  scrape.py hold HOST:PORT N     open N connections that send nothing and
                                 print what each gets (a line each, its
                                 status line or "closed"), for 30 s at most
"""
import socket
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def families(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200, r.status
        ctype = r.headers["Content-Type"]
        assert ctype == "text/plain; version=0.0.4; charset=utf-8", ctype
        text = r.read().decode()
    out = []
    for fam in text_string_to_metric_families(text):
        assert fam.documentation, fam.name
        out.append(fam)
    return out


def samples(url):
    out = []
    for fam in families(url):
        for s in fam.samples:
            labels = ",".join('%s="%s"' % kv for kv in sorted(s.labels.items()))
            out.append("%s{%s} %g" % (s.name, labels, s.value))
    print("\n".join(sorted(out)))


SUMMED = ["received", "unique", "duplicates", "acked", "snapshot"]


def sums(url, seconds):
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        val = {}
        for fam in families(url):
            for s in fam.samples:
                val.setdefault(s.name, []).append(s.value)
        for k in SUMMED:
            total = val.get("gdkit_sub_%s_total" % k)
            series = val.get("gdkit_sub_publisher_%s_total" % k, [])
            if total is None or total[0] != sum(series):
                print("scrape %d: gdkit_sub_%s_total %s, its series sum to %s"
                      % (n + 1, k, total, sum(series)))
                return 1
        n += 1
    print("%d scrapes" % n)
    return 0


def raw(where, data):
    host, port = where.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(data.encode().decode("unicode_escape").encode("latin-1"))
    got = b""
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            b = s.recv(65536)
        except ConnectionResetError:
            got += b"<reset>"
            break
        if not b:
            break
        got += b
    sys.stdout.write(got.decode("latin-1").replace("\r\n", "\n"))


def hold(where, n):
    host, port = where.rsplit(":", 1)
    conns = [socket.create_connection((host, int(port)), timeout=30)
             for _ in range(n)]
    for s in conns:
        try:
            b = s.recv(4096)
            print(b.split(b"\r\n")[0].decode() if b else "closed")
        except socket.timeout:
            print("nothing in 30 s")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "samples":
        samples(sys.argv[2])
    elif cmd == "sums":
        sys.exit(sums(sys.argv[2], float(sys.argv[3])))
    elif cmd == "raw":
        raw(sys.argv[2], sys.argv[3])
    elif cmd == "hold":
        hold(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
