#!/usr/bin/env python3
"""report.py: the summary table of a `make bench` run.

  report.py RAW TSV [KEY=VALUE ...]

RAW holds the lines the scenario scripts printed, one per run:
  RESULT <name> <N> <seconds> <per_s> [KEY=VALUE ...] | SKIP <name> <reason> | FAIL <name> <reason>
With several runs of one name (RUNS > 1) every number is the median over the
runs that succeeded. The table goes to stdout, the same rows as TSV to the
file TSV (header line first; one row per name, then a `meta` row with the
KEY=VALUE arguments: N, SIZE, RUNS, commit, date, host ...).

Columns: name, status (ok, skip, fail), n, size, runs (successful/total),
seconds, blocks_per_s, mb_per_s (payload, 10^6 bytes), gdkit_ratio (gdkit
1->1 blocks/s divided by this row's), target (from issue #3, not asserted),
metrics (the medians of the extra KEY=VALUE fields), notes.
"""
import statistics
import sys

ORDER = ["gdkit_1to1", "gdkit_rawtcp", "gdkit_instr", "gdkit_instr_eo", "gdkit_journal_none", "gdkit_journal_never", "gdkit_journal_batch",
         "gdkit_journal_always", "gdkit_stream", "gdkit_stream_key", "gdkit_fanout", "gdkit_latency", "gdkit_memory",
         "gdkit_pending_small", "gdkit_pending_large",
         "mosquitto_qos1", "gdkit_mqtt_qos0", "gdkit_mqtt_qos0_key", "gdkit_mqtt_qos0_line", "gdkit_mqtt_qos1",
         "redis_streams", "nats_jetstream", "nats_jetstream_memory", "gdkit_nats", "nats_reqreply"]
RATIO_TARGET = {"mosquitto_qos1": 40.0, "redis_streams": 4.0}
# gdkit through mosquitto against mosquitto QoS 1 alone, same run (issue #25)
MQTT_TARGET = {"gdkit_mqtt_qos0": 10.0}


def num(v):
    try:
        f = float(v)
    except ValueError:
        return None
    return f


def fmt_num(v):
    if v is None:
        return "-"
    if abs(v - round(v)) < 1e-9 and abs(v) < 1e15:
        return str(int(round(v)))
    return f"{v:.6g}"


def grouped(n):
    return "-" if n is None else f"{n:,.0f}"


def load(path):
    runs = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        parts = line.split()
        if len(parts) < 2 or parts[0] not in ("RESULT", "SKIP", "FAIL"):
            continue
        runs.setdefault(parts[1], []).append(parts)
    return runs


def summarize(name, entries):
    ok = [e for e in entries if e[0] == "RESULT" and len(e) >= 5]
    row = {"name": name, "runs": f"{len(ok)}/{len(entries)}", "metrics": {}, "notes": ""}
    if not ok:
        last = entries[-1]
        row["status"] = "skip" if last[0] == "SKIP" else "fail"
        row["notes"] = ("skipped: " if last[0] == "SKIP" else "FAILED: ") + " ".join(last[2:])
        return row
    row["status"] = "ok"
    row["n"] = statistics.median(float(e[2]) for e in ok)
    row["seconds"] = statistics.median(float(e[3]) for e in ok)
    row["rate"] = statistics.median(float(e[4]) for e in ok)
    values = {}
    for e in ok:
        for kv in e[5:]:
            k, _, v = kv.partition("=")
            if num(v) is not None:
                values.setdefault(k, []).append(num(v))
    row["metrics"] = {k: statistics.median(v) for k, v in values.items()}
    failed = [e for e in entries if e[0] != "RESULT"]
    if failed:
        row["notes"] = f"{len(failed)} of {len(entries)} runs failed ({' '.join(failed[-1][2:])}); "
    return row


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: report.py RAW TSV [KEY=VALUE ...]")
    raw, tsv = sys.argv[1], sys.argv[2]
    meta = dict(a.partition("=")[::2] for a in sys.argv[3:])
    size = float(meta.get("SIZE", "100"))
    runs = load(raw)

    # Which raw names play which role.
    role = {}
    pend = sorted((n for n in runs if n.startswith("gdkit_pending_")),
                  key=lambda n: int(n.rsplit("_", 1)[1]))
    if pend:
        role[pend[0]] = "gdkit_pending_small"
        if len(pend) > 1:
            role[pend[-1]] = "gdkit_pending_large"
    for n in runs:
        if n.startswith("gdkit_fanout"):
            role[n] = "gdkit_fanout"
        role.setdefault(n, n)
    names = sorted(runs, key=lambda n: (ORDER.index(role[n]) if role[n] in ORDER else len(ORDER), n))
    rows = [summarize(n, runs[n]) for n in names]
    by_role = {role[r["name"]]: r for r in rows}
    base = by_role.get("gdkit_1to1")
    base_rate = base["rate"] if base and base["status"] == "ok" else None

    for r in rows:
        rl = role[r["name"]]
        m = r["metrics"]
        r["mbps"] = r["rate"] * size / 1e6 if r["status"] == "ok" else None
        r["ratio"] = None
        r["target"] = ""
        if r["status"] != "ok":
            if rl in RATIO_TARGET:
                r["target"] = f"gdkit >= {RATIO_TARGET[rl]:g}x"
            continue
        throughput = rl not in ("gdkit_latency", "gdkit_memory") and not rl.startswith("gdkit_instr")
        if throughput and base_rate and r["rate"] > 0:
            r["ratio"] = base_rate / r["rate"]
        notes = []
        if rl == "gdkit_stream":
            notes.append("gdpub -o - | gdsub -i - | gdack, acks over TCP")
            notes.append(f"cpu s pub/sub/ack {m.get('cpu_pub', 0):.2f}/{m.get('cpu_sub', 0):.2f}/"
                         f"{m.get('cpu_ack', 0):.2f}")
        elif rl in ("gdkit_1to1", "gdkit_fanout"):
            k = "" if rl == "gdkit_1to1" else " (sums over pipelines)"
            notes.append(f"cpu s pub/sub/ack {m.get('cpu_pub', 0):.2f}/{m.get('cpu_sub', 0):.2f}/"
                         f"{m.get('cpu_ack', 0):.2f}{k}")
            k = "" if rl == "gdkit_1to1" else " (max)"
            notes.append(f"peak RSS MB pub/sub/ack {m.get('rss_pub_kb', 0) / 1024:.1f}/"
                         f"{m.get('rss_sub_kb', 0) / 1024:.1f}/{m.get('rss_ack_kb', 0) / 1024:.1f}{k}")
            goal = 1e6 if rl == "gdkit_1to1" else 2.5e5
            r["target"] = f">= {goal:,.0f}/s " + ("met" if r["rate"] >= goal else "missed")
            if rl == "gdkit_fanout":
                notes.insert(0, "every block acked by all " + r["name"][len("gdkit_fanout"):] + " pipelines")
        elif rl.startswith("gdkit_journal_"):
            f = rl[len("gdkit_journal_"):]
            notes.append("no journal" if f == "none" else f"--journal --fsync {f}")
            notes.append(f"cpu s pub/sub/ack {m.get('cpu_pub', 0):.2f}/{m.get('cpu_sub', 0):.2f}/"
                         f"{m.get('cpu_ack', 0):.2f}")
            none = by_role.get("gdkit_journal_none")
            if f == "always":
                r["target"] = ">= 100,000/s " + ("met" if r["rate"] >= 1e5 else "missed")
            elif f == "batch" and none and none["status"] == "ok":
                x = none["rate"] / r["rate"]
                r["target"] = f"within 2x of no journal ({x:.2f}x) " + ("met" if x <= 2 else "missed")
        elif rl == "gdkit_rawtcp":
            notes.append("the limit: the same lines through one plain TCP connection (socat), "
                         "lines/s; gdkit/x is gdkit_1to1 against it")
            if r["ratio"]:
                r["target"] = f"gdkit >= 0.6x ({r['ratio']:.2f}x) " + ("met" if r["ratio"] >= 0.6 else "missed")
        elif rl.startswith("gdkit_instr"):
            p, s_, a = (m.get(k, 0) for k in ("ir_pub", "ir_sub", "ir_ack"))
            notes.append(f"instructions per block (callgrind, {r['n']:,.0f} blocks 1->1) "
                         f"gdpub/gdsub/gdack {p:,.0f}/{s_:,.0f}/{a:,.0f}")
            notes.append("blocks/s under valgrind: not a rate")
            if rl == "gdkit_instr":
                r["target"] = "pub <= 700, sub <= 1,000 " + ("met" if p <= 700 and s_ <= 1000 else "missed")
            else:
                notes.insert(0, "--journal, --state, --sink (the exactly-once recipe)")
        elif rl == "gdkit_latency":
            notes.append(f"publish->ACK us p50 {m.get('p50_us', 0):.0f}, p90 {m.get('p90_us', 0):.0f}, "
                         f"p99 {m.get('p99_us', 0):.0f}, max {m.get('max_us', 0):.0f}")
            notes.append(f"{r['n']:.0f} blocks paced, latest line {m.get('late_us', 0) / 1000:.1f} ms late")
            ok = m.get("p50_us", 1e18) <= 200 and m.get("p99_us", 1e18) <= 1000
            r["target"] = "p50 <= 200us, p99 <= 1ms " + ("met" if ok else "missed")
        elif rl == "gdkit_memory":
            bpb = m.get("bytes_per_block", 0)
            notes.append(f"{bpb:.1f} bytes per pending block beyond the payload")
            notes.append(f"gdpub RSS {m.get('rss_ready_kb', 0) / 1024:.1f} MB at READY, "
                         f"{m.get('rss_full_kb', 0) / 1024:.1f} MB with {r['n']:.0f} pending")
            notes.append("blocks/s: publishing to a subscriber that never acks")
            r["target"] = "<= 64 B/block " + ("met" if bpb <= 64 else "missed")
        elif rl in ("gdkit_pending_small", "gdkit_pending_large"):
            notes.append(f"gdsub | grep -v STUCK | gdack with {m.get('stuck', 0):,.0f} stuck blocks, "
                         f"pending {m.get('pending_min', 0):,.0f}..{m.get('pending_max', 0):,.0f}")
            small = by_role.get("gdkit_pending_small")
            if rl == "gdkit_pending_large" and small and small["status"] == "ok":
                notes.append(f"rate {r['rate'] / small['rate']:.2f}x the ~{small['metrics'].get('stuck', 0):,.0f}-pending rate")
        elif rl in ("gdkit_stream_key", "gdkit_mqtt_qos0_key"):
            # the cost of frame tags (issue 24): the same row without a key
            plain = by_role.get(rl[:-len("_key")])
            notes.append("--auth-key-file: every frame tagged and checked")
            notes.append(f"cpu s pub/sub {m.get('cpu_pub', 0):.2f}/{m.get('cpu_sub', 0):.2f}"
                         if rl == "gdkit_stream_key" else f"{r['seconds']:.2f} s")
            if plain and plain["status"] == "ok" and plain["rate"] > 0:
                cost = 1 - r["rate"] / plain["rate"]
                r["target"] = f"<= 15% slower ({cost:.0%}) " + ("met" if cost <= 0.15 else "missed")
        elif rl.startswith("gdkit_mqtt_"):
            q = "1" if rl == "gdkit_mqtt_qos1" else "0"
            b = m.get("batch", 0)
            notes.append(f"gdpub -o - --armor{f' --armor-batch {b:.0f}' if b else ''} | "
                         f"mosquitto_pub -l -q {q} -> mosquitto_sub | gdsub -i - | gdack, "
                         f"every block ACKed, R {m.get('R', 0):.4f}")
            notes.append(f"{m.get('lines', 0):,.0f} lines, {m.get('resent', 0):,.0f} resent; "
                         f"{r['seconds']:.2f} s")
            peer = by_role.get("mosquitto_qos1")
            if peer and peer["status"] == "ok" and peer["rate"] > 0:
                x = r["rate"] / peer["rate"]
                notes.append(f"{x:.2f}x mosquitto QoS 1 alone")
                if rl in MQTT_TARGET:
                    goal = MQTT_TARGET[rl]
                    r["target"] = f">= {goal:g}x mosquitto_qos1 " + ("met" if x >= goal else "missed")
        elif rl == "gdkit_nats":
            notes.append("gdpub -o - --armor | natsline pub -> natsline sub | gdsub -i - | gdack, "
                         "core NATS, every block ACKed")
            rr = by_role.get("nats_reqreply")
            if rr and rr["status"] == "ok":
                notes.append(f"{r['rate'] / rr['rate']:.2f}x nats_reqreply")
            notes.append(f"{m.get('resent', 0):,.0f} resent, {m.get('lines', 0):,.0f} lines; {r['seconds']:.2f} s")
        elif rl == "nats_reqreply":
            notes.append(f"core NATS request/reply, {m.get('window', 0):,.0f} unanswered at most, "
                         f"reply after the line is written; {r['seconds']:.2f} s")
        else:
            notes.append(f"{r['seconds']:.2f} s")
            if rl in RATIO_TARGET:
                goal = RATIO_TARGET[rl]
                r["target"] = f"gdkit >= {goal:g}x " + ("met" if r["ratio"] and r["ratio"] >= goal else "missed")
        r["notes"] += "; ".join(notes)

    head = ["name", "blocks/s", "MB/s", "gdkit/x", "target", "notes"]
    table = []
    for r in rows:
        ok = r["status"] == "ok"
        table.append([r["name"], grouped(r.get("rate")) if ok else r["status"].upper(),
                      f"{r['mbps']:.1f}" if ok else "-",
                      f"{r['ratio']:.2f}" if r["ratio"] else "-", r["target"] or "-", r["notes"]])
    widths = [max(len(str(x[i])) for x in [head] + table) for i in range(len(head) - 1)]
    out = []
    for line in [head] + table:
        cells = [str(c).ljust(widths[i]) if i == 0 or i >= 4 else str(c).rjust(widths[i])
                 for i, c in enumerate(line[:-1])]
        out.append("  ".join(cells) + "  " + line[-1])
    print("\n".join(out))

    cols = ["name", "status", "n", "size", "runs", "seconds", "blocks_per_s", "mb_per_s",
            "gdkit_ratio", "target", "metrics", "notes"]
    with open(tsv, "w", encoding="utf-8") as f:
        f.write("\t".join(cols) + "\n")
        for r in rows:
            ok = r["status"] == "ok"
            f.write("\t".join([
                r["name"], r["status"], fmt_num(r.get("n")) if ok else "-", fmt_num(size), r["runs"],
                f"{r['seconds']:.6f}" if ok else "-", f"{r['rate']:.0f}" if ok else "-",
                f"{r['mbps']:.2f}" if ok else "-", f"{r['ratio']:.3f}" if r["ratio"] else "-",
                r["target"] or "-",
                " ".join(f"{k}={fmt_num(v)}" for k, v in r["metrics"].items()) or "-",
                r["notes"].replace("\t", " ") or "-"]) + "\n")
        f.write("\t".join(["meta", "meta", meta.get("N", "-"), fmt_num(size), meta.get("RUNS", "-"),
                           "-", "-", "-", "-", "-",
                           " ".join(f"{k}={v}" for k, v in meta.items()), "-"]) + "\n")


if __name__ == "__main__":
    main()
