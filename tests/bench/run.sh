#!/usr/bin/env bash
# make bench: gdkit throughput, fan-out, latency and memory, and the same 1->1
# workload through the peers (mosquitto, Redis Streams, NATS JetStream), in
# one run; prints one summary table and writes it as TSV to
# bench/results/bench-<UTC timestamp>.tsv (relative to the repository root).
#
#   GDKIT_BIN=/abs/build/bench/bin sh tests/bench/run.sh     (what make bench does)
#   make bench N=100000 RUNS=3 PEERS=0
#
# Knobs (environment, or make variables):
#   N       blocks per throughput run                 (default 1000000)
#   SIZE    payload bytes per block                   (default 100)
#   RUNS    runs of every scenario; the table shows medians (default 1)
#   PEERS   0: skip the peers                         (default 1)
#   WORK    scratch directory                         (default /tmp/gdkit-bench)
#   TMO     seconds any one client may take           (default 300)
#   GDKIT_BIN  directory of gdpub gdsub gdack gdinspect (default: build/bench/bin,
#           else bin/)
#   ONLY    an extended regular expression: run only the scenarios whose name
#           matches (e.g. ONLY='^(mosquitto_qos1|gdkit_mqtt_)'; peers still need
#           PEERS=1)                                  (default: all)
#   also INSTR_N, LAT_N, LAT_RATE, WINDOW, POLL, SUBS (see tests/bench/gdkit.sh)
#
# Scenarios (tests/bench/gdkit.sh MODE and tests/bench/peers/*.sh; each prints
# one RESULT/SKIP/FAIL line, its stderr goes to WORK/logs/):
#   gdkit_1to1             gdpub -n 1 -> gdsub | gdack, N blocks, first input byte
#                          until gdpub exited after the last ACK; CPU s and peak
#                          RSS of each program (GNU time)
#   gdkit_rawtcp           the limit: N lines through one plain TCP connection
#                          (socat), lines/s; gdkit/x = gdkit_1to1 against it
#   gdkit_instr            instructions per block of gdpub, gdsub and gdack:
#                          each under callgrind, INSTR_N (100000) blocks 1->1
#   gdkit_instr_eo         the same with the exactly-once recipe's options
#                          RSS of each program (GNU time); a CRC32C seals
#                          every TCP write both ways
#   gdkit_1to1_key         gdkit_1to1 with --auth-key-file: every TCP write
#                          sealed with a MAC (GMAC, AES-256-GCM) instead
#   gdkit_tls              gdkit_1to1 over TLS 1.3 (GDpub_tlsCert, GDsub_tlsCA)
#   gdkit_journal_<F>      gdkit_1to1 with gdpub --journal --fsync F (never, batch,
#                          always), and none: without a journal, in the same run
#   gdkit_sink_<S>         gdkit_1to1 with the output in a file: gdack --tee >
#                          file (tee), gdack --sink file (sink), the whole
#                          exactly-once recipe (eo: --journal, --state, --sink)
#   gdkit_stream_key       gdkit_stream with --auth-key-file: every frame tagged
#                          and checked (gdkit-stream(5) Tags)
#   gdkit_fanout4          the same with 4 pipelines, every block acked by all 4
#   gdkit_latency          10,000 blocks paced at 1,000/s (pace.py), publish->ACK
#                          p50/p90/p99/max from gdinspect stats
#   gdkit_memory           N blocks pending at a subscriber that never acks: gdpub
#                          VmRSS growth minus payload, per block
#   gdkit_pending_1000     gdsub | grep -v STUCK | gdack: 1,000 stuck blocks stay
#                          pending, then N blocks flow: their rate
#   gdkit_pending_<N>      the same with N stuck blocks pending
#   gdkit_flow_<F>         flow control with a stage that drops, holds or slows
#                          blocks (F: filter_1k drop_all drop_ahead filter_100k
#                          pass_1m sed2 sleep_1ms eager py8k; see gdkit.sh flow):
#                          seconds until the run ended, ACK and NACK counts
#   mosquitto_qos1, redis_streams, nats_jetstream   (PEERS=1; install.sh first)
#   gdkit_mqtt_qos0        (PEERS=1) the armored stream through mosquitto at QoS 0:
#                          gdpub -o - --armor | mosquitto_pub -l -q 0 ->
#                          mosquitto_sub | gdsub -i - | gdack, every block ACKed,
#                          frames batched into lines (gdpub's --armor-batch default)
#   gdkit_mqtt_qos0_line   the same with --armor-batch 1: one frame a line, one
#                          broker message per block
#   gdkit_mqtt_qos1        gdkit_mqtt_qos0 at MQTT QoS 1 on both hops
#   gdkit_mqtt_qos0_key    (PEERS=1) gdkit_mqtt_qos0 with --auth-key-file
#   gdkit_nats             (PEERS=1) the armored stream through core NATS, the
#                          gdkit(7) recipe: gdpub -o - --armor | natsline.py pub ->
#                          natsline.py sub | gdsub -i - | gdack, every block ACKed
#   nats_reqreply          (PEERS=1) core NATS request/reply, pipelined (RR_WINDOW
#                          unanswered), the responder replies after writing each
#                          message: the NATS peer of gdkit_nats (same client code)
# Every scenario runs under timeout(1) in its own process group and stops what
# it started; interrupting this script stops the running scenario.

# `make bench` runs this with sh: the scenario scripts are bash, and so is
# this one from here on (shells parse one command at a time, so sh gets here).
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export N=${N:-1000000} SIZE=${SIZE:-100} WORK=${WORK:-/tmp/gdkit-bench} TMO=${TMO:-300}
RUNS=${RUNS:-1}
PEERS=${PEERS:-1}
if [[ -z "${GDKIT_BIN:-}" ]]; then
    if [[ -x "$REPO/build/bench/bin/gdpub" ]]; then GDKIT_BIN=$REPO/build/bench/bin; else GDKIT_BIN=$REPO/bin; fi
fi
export GDKIT_BIN

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }
for v in N SIZE RUNS TMO; do
    [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer (got '${!v}')"
done
[[ "$PEERS" =~ ^[0-9]+$ ]] || die "PEERS must be 0 or 1 (got '$PEERS')"
py=$(python3 -c 'import sys; print(sys.executable)' 2> /dev/null) \
    || die "python3 is needed (pace.py, statpoll.py, report.py, free ports)"
# Call python3 itself from here on: a pyenv shim takes a second (and CPU) to start one.
export PATH="${py%/*}:$PATH"
command -v timeout > /dev/null 2>&1 || die "timeout (coreutils) is needed"
for p in gdpub gdsub gdack gdinspect; do
    [[ -x "$GDKIT_BIN/$p" ]] || die "$GDKIT_BIN/$p not found (run make bench, or set GDKIT_BIN)"
done
mkdir -p "$WORK/logs" || die "cannot create WORK=$WORK"

stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw="$WORK/results-$stamp.raw"
: > "$raw"
child=
stop_child() {
    if [[ -n "$child" ]] && kill -0 "$child" 2> /dev/null; then
        kill -TERM "$child" 2> /dev/null   # timeout(1) passes it on to the scenario
        wait "$child" 2> /dev/null
    fi
    child=
}
trap 'stop_child' EXIT
trap 'say "interrupted"; stop_child; exit 130' INT
trap 'say "terminated"; stop_child; exit 143' TERM

# scenario LOG_NAME RUN CMD...: run CMD under timeout, keep its one result line.
scenario() {
    local name=$1 run=$2 out line rc=0
    shift 2
    out="$WORK/logs/$name.$run.out"
    timeout -k 10 $(( TMO + 300 )) "$@" > "$out" 2> "$WORK/logs/$name.$run.err" &
    child=$!
    wait "$child" || rc=$?
    child=
    line=$(grep -E '^(RESULT|SKIP|FAIL) ' "$out" | tail -n 1)
    if [[ -z "$line" ]]; then
        line="FAIL $name exit status $rc, no result line (see $WORK/logs/$name.$run.err)"
        (( rc == 124 )) && line="FAIL $name timed out after $(( TMO + 300 )) s"
    fi
    printf '%s\n' "$line" >> "$raw"
    case "$line" in
    RESULT*) say "$(awk '{ printf "%s: %s blocks in %s s, %\047d blocks/s", $2, $3, $4, $5
                          for (i = 6; i <= NF; i++) printf " %s", $i }' <<< "$line")" ;;
    *) say "$line"; [[ "$line" == FAIL* ]] && sed 's/^/    /' "$WORK/logs/$name.$run.err" | tail -n 5 >&2 ;;
    esac
}

# repeat NAME CMD...: the scenario RUNS times (none unless NAME matches ONLY).
repeat() {
    local name=$1 r
    shift
    [[ -z "${ONLY:-}" || "$name" =~ $ONLY ]] || return 0
    for (( r = 1; r <= RUNS; r++ )); do
        (( RUNS > 1 )) && say "$name: run $r of $RUNS"
        scenario "$name" "$r" "$@"
    done
}

say "N=$N SIZE=$SIZE RUNS=$RUNS PEERS=$PEERS WORK=$WORK GDKIT_BIN=$GDKIT_BIN${ONLY:+ ONLY=$ONLY}"
say "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) (other work on this machine makes numbers noisy)"
g="$HERE/gdkit.sh"
repeat gdkit_1to1 bash "$g" 1to1
repeat gdkit_rawtcp bash "$g" rawtcp
repeat gdkit_instr bash "$g" instr
repeat gdkit_instr_eo env SINK=eo bash "$g" instr
key="$WORK/bench.key"
( umask 077; head -c 32 /dev/urandom | base64 > "$key" ) || die "cannot write $key"
repeat gdkit_1to1_key env AUTH_KEY="$key" bash "$g" 1to1
repeat gdkit_tls bash "$g" tls
for f in none never batch always; do repeat "gdkit_journal_$f" env FSYNC=$f bash "$g" journal; done
for f in tee sink eo; do repeat "gdkit_sink_$f" env SINK=$f bash "$g" sink; done
repeat gdkit_stream bash "$g" stream
repeat gdkit_stream_key env AUTH_KEY="$key" bash "$g" stream
repeat gdkit_fanout4 env SUBS=4 bash "$g" fanout
repeat gdkit_latency bash "$g" latency
repeat gdkit_memory bash "$g" memory
repeat gdkit_pending_1000 env STUCK=1000 bash "$g" pending
if (( N > 1000 )); then repeat "gdkit_pending_$N" env STUCK="$N" bash "$g" pending; fi
for f in filter_1k drop_all drop_ahead filter_100k pass_1m sed2 sleep_1ms eager py8k; do
    repeat "gdkit_flow_$f" env FLOW=$f bash "$g" flow
done

if (( PEERS )); then
    say "peers: tests/bench/peers/install.sh (log: $WORK/logs/install.log)"
    timeout 1800 bash "$HERE/peers/install.sh" > "$WORK/logs/install.log" 2>&1 \
        || say "install.sh failed (status $?); peers that miss a package will SKIP: $(tail -n 1 "$WORK/logs/install.log")"
    repeat mosquitto_qos1 bash "$HERE/peers/mosquitto.sh"
    repeat gdkit_mqtt_qos0 bash "$HERE/peers/mosquitto_gdkit.sh"
    repeat gdkit_mqtt_qos0_line env BATCH=1 NAME=gdkit_mqtt_qos0_line bash "$HERE/peers/mosquitto_gdkit.sh"
    repeat gdkit_mqtt_qos1 env QOS=1 bash "$HERE/peers/mosquitto_gdkit.sh"
    repeat gdkit_mqtt_qos0_key env AUTH_KEY="$key" bash "$HERE/peers/mosquitto_gdkit.sh"
    repeat redis_streams bash "$HERE/peers/redis.sh"
    repeat nats_jetstream bash "$HERE/peers/nats.sh"
    repeat gdkit_nats bash "$HERE/peers/nats_gdkit.sh"
    repeat nats_reqreply bash "$HERE/peers/nats_rr.sh"
else
    say "PEERS=0: peers skipped"
fi

mkdir -p "$REPO/bench/results" || die "cannot create $REPO/bench/results"
tsv="$REPO/bench/results/bench-$stamp.tsv"
commit=$(git -C "$REPO" rev-parse --short HEAD 2> /dev/null || echo unknown)
git -C "$REPO" diff --quiet HEAD -- lib src 2> /dev/null || commit="$commit+dirty"
echo
echo "gdkit bench $stamp: N=$N SIZE=$SIZE RUNS=$RUNS ($( (( RUNS > 1 )) && echo "medians; ")MB = 10^6 payload bytes; gdkit/x = gdkit 1->1 blocks/s / this row's)"
python3 "$HERE/report.py" "$raw" "$tsv" "N=$N" "SIZE=$SIZE" "RUNS=$RUNS" "commit=$commit" \
    "utc=$stamp" "host=$(hostname)" "nproc=$(nproc)" "loadavg=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ,)" \
    || die "report.py failed"
echo
echo "TSV: ${tsv#"$REPO"/}   raw lines: $raw   logs: $WORK/logs/"
