#!/usr/bin/env bash
# gdkit benchmark scenarios, one per call, same stdout contract as the peer
# scripts (tests/bench/peers/lib.sh), with extra KEY=VALUE fields:
#   RESULT <name> <N> <seconds> <blocks_per_s> [KEY=VALUE ...] | SKIP ... | FAIL ...
#
#   gdkit.sh 1to1      gdpub -n 1 -> gdsub | gdack; N blocks; seconds from the
#                      first input byte until gdpub exited after its last ACK.
#                      Extra: cpu_pub cpu_sub cpu_ack (user+sys seconds) and
#                      rss_pub_kb rss_sub_kb rss_ack_kb (peak RSS, GNU time).
#                      With AUTH_KEY=FILE, gdpub and gdsub get --auth-key-file
#                      FILE (every TCP frame both ways sealed with a MAC;
#                      without it, a CRC32C): name gdkit_1to1_key.
#   gdkit.sh fanout    the same with SUBS (default 4) pipelines and -n SUBS:
#                      every block acked by all of them. cpu_sub/cpu_ack are
#                      sums over the pipelines, rss_sub_kb/rss_ack_kb maxima.
#   gdkit.sh tls       1to1 over TLS 1.3 (GDpub_tlsCert, GDsub_tlsCA): a CA
#                      and a certificate for 127.0.0.1 made by the openssl
#                      command in the scenario's directory. Extra as 1to1.
#   gdkit.sh journal   1to1 with gdpub --journal and --fsync FSYNC (never, batch,
#                      always; none: no journal, the baseline of the same run);
#                      name gdkit_journal_FSYNC. Extra as 1to1, plus fs (the
#                      journal's file system type: fsync is free on tmpfs).
#   gdkit.sh sink      1to1 with the pipeline's output kept in a file, SINK
#                      says how: tee (gdack --tee > file, the baseline of the
#                      same run), sink (gdack --sink file: appended and
#                      synced before the acknowledgement), eo (the whole
#                      exactly-once recipe of gdkit(7): gdpub --journal,
#                      gdsub --state, gdack --sink); name gdkit_sink_SINK.
#                      Extra as 1to1, plus fs (the file system of the files).
#   gdkit.sh stream    stream mode: gdpub -n 1 -o - | gdsub -i - | gdack, the
#                      acks back over TCP; N blocks; seconds from the first
#                      input byte until gdpub exited after the last ACK.
#                      Extra fields as 1to1. With AUTH_KEY=FILE, gdpub and
#                      gdsub get --auth-key-file FILE (every frame tagged
#                      and checked): name gdkit_stream_key.
#   gdkit.sh latency   LAT_N (10000) blocks paced at LAT_RATE (1000) per second
#                      by pace.py into gdpub -n 1 -> gdsub | gdack; publish->ACK
#                      percentiles from `gdinspect stats` once ack == LAT_N.
#                      Rate = the rate pace.py achieved. Extra: p50_us p90_us
#                      p99_us max_us late_us (how late pace.py's latest line was).
#   gdkit.sh memory    N blocks to gdpub -n 1 -t 3600 --max-pending >= 2000000
#                      and a window as large (a subscriber that never acks
#                      would keep the adaptive window at its start, 64),
#                      whose one subscriber never acks (gdsub > /dev/null).
#                      VmRSS of gdpub at READY and once stats show pending == N
#                      and its send queue to the subscriber has drained (the
#                      median of three samples 0.1 s apart; a queue that does
#                      not drain within 10 s fails the row):
#                      bytes_per_block = (rss_full - rss_ready - N*(SIZE+1)) / N.
#                      Seconds/rate: from the go until pending == N (fill rate).
#   gdkit.sh pending   STUCK (default N) blocks whose payload contains STUCK,
#                      then N normal blocks, into gdpub -n 1 -t 3600
#                      --max-pending STUCK+WINDOW --window STUCK+WINDOW ->
#                      gdsub | grep --line-buffered -v STUCK | gdack: the stuck
#                      blocks stay pending, and at most WINDOW more are in
#                      flight (they come first, so the window must let WINDOW
#                      more through before any ACK can show that the pipeline
#                      passed them over; after that they hold no place). Seconds
#                      from the poll where pending >= STUCK to the poll where
#                      ack >= N (gdinspect stats every POLL s; the poller polls
#                      once before the input starts). Name gdkit_pending_<STUCK>.
#                      Extra: pending_min/pending_max over the timed polls.
#                      (The timed span may include the pipeline's tail of stuck
#                      blocks still on their way to grep when pending hit STUCK.)
#   gdkit.sh instr     1to1 with INSTR_N (100000) blocks, each of gdpub, gdsub
#                      and gdack under valgrind --tool=callgrind instead of
#                      GNU time: the instructions each program executed (Ir,
#                      start-up and exit included) divided by INSTR_N. The
#                      same count however busy the machine is. Name
#                      gdkit_instr; N is INSTR_N. Extra: ir_pub ir_sub ir_ack
#                      (instructions per block). SKIP without valgrind.
#                      With SINK (tee, sink, eo), the options of that sink
#                      row: name gdkit_instr_SINK (eo: the exactly-once
#                      recipe's cost).
#   gdkit.sh rawtcp    the limit: N lines of SIZE bytes through one plain TCP
#                      connection of 127.0.0.1 (socat -u file -> socat -u
#                      TCP-LISTEN | wc -l), seconds from the go until the
#                      reader counted the last line; name gdkit_rawtcp.
#                      SKIP without socat.
#   gdkit.sh flow      flow control with stages that drop, hold or slow
#                      blocks, all with the default window; FLOW names the row
#                      (name gdkit_flow_FLOW), each a gdpub -n 1 (sed2: -n 2)
#                      and gdsub | STAGE | gdack:
#                        filter_1k    5,000 lines, 1 in 1,000 matching, -t 2,
#                                     grep --line-buffered MATCH: 5 ACK, 4,995 NACK
#                        drop_all     2,000 lines, -t 2, a grep that matches
#                                     none: 2,000 NACK
#                        drop_ahead   1,000 lines that grep -v drops ahead of
#                                     20,000 it passes, -t 600: seconds until
#                                     the 20,000 are ACKed (then gdpub stopped)
#                        filter_100k  1,000,000 lines, 1 in 100,000 matching,
#                                     the default timeout, --max-pending MAXP
#                                     (1048576: each dropped line is pending
#                                     until its timeout; MAXP=65536, gdpub's
#                                     default, reads 65,536 a timeout)
#                        pass_1m      1,000,000 lines through grep --line-buffered
#                                     that passes all: the transfer time of
#                                     filter_100k's pipeline
#                        sed2         200,000 lines, -n 2: two sed -u pipelines
#                                     with four `yes > /dev/null` beside
#                        sleep_1ms    5,000 lines, a stage that sleeps 1 ms a line
#                        eager        5,000 lines, cat before a stage of 100 lines/s
#                        py8k         5,000 lines, a stage reading 8 KiB chunks
#                                     and writing 200 lines/s
#                      Seconds from the go to gdpub's exit (drop_ahead: to
#                      ack == 20,000), at most CAP (default 300) s: a row not
#                      done by then reports CAP with done=0. Extra: ack nack
#                      done (the healthy rows must end with nack=0).
#
# Env: N SIZE WORK TMO (see peers/lib.sh), GDKIT_BIN (directory of the four
#      programs, required), SUBS (4), LAT_N (10000), LAT_RATE (1000), STUCK (N),
#      WINDOW (blocks in flight on top of the stuck ones in `pending`, 1000:
#      so "~1k pending" stays 1000..2000 pending, not 1000 + 65536),
#      POLL (stats poll interval, 0.01).
# Every process started here is stopped on exit (lib.sh's trap).
mode=${1:-}
case "$mode" in
1to1) BENCH_NAME=gdkit_1to1${AUTH_KEY:+_key} ;;
tls) BENCH_NAME=gdkit_tls ;;
stream) BENCH_NAME=gdkit_stream${AUTH_KEY:+_key} ;;
journal) BENCH_NAME=gdkit_journal_${FSYNC:-batch} ;;
sink) BENCH_NAME=gdkit_sink_${SINK:-sink} ;;
fanout) BENCH_NAME=gdkit_fanout${SUBS:-4} ;;
latency) BENCH_NAME=gdkit_latency ;;
memory) BENCH_NAME=gdkit_memory ;;
pending) BENCH_NAME=gdkit_pending_${STUCK:-${N:-1000000}} ;;
flow) BENCH_NAME=gdkit_flow_${FLOW:-filter_1k} ;;
instr) BENCH_NAME=gdkit_instr${SINK:+_$SINK} ;;
rawtcp) BENCH_NAME=gdkit_rawtcp ;;
*)
    echo "usage: gdkit.sh 1to1|tls|journal|sink|stream|fanout|latency|memory|pending|flow|instr|rawtcp" >&2
    echo "FAIL gdkit unknown mode '$mode'"
    exit 1
    ;;
esac
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tests/bench/peers/lib.sh
source "$HERE/peers/lib.sh"

BIN=${GDKIT_BIN:-}
[[ -n "$BIN" ]] || bench_fail "GDKIT_BIN is not set (directory of gdpub, gdsub, gdack, gdinspect)"
for p in gdpub gdsub gdack gdinspect; do
    [[ -x "$BIN/$p" ]] || bench_fail "$BIN/$p is not an executable"
done
TIME=/usr/bin/time
[[ -x "$TIME" ]] || bench_skip "GNU time (/usr/bin/time, package time) not installed"
bench_need python3 ss mkfifo
# Call python3 itself: a pyenv shim takes a second (and CPU) to start one.
py=$(python3 -c 'import sys; print(sys.executable)') || bench_fail "python3 does not run"
PATH="${py%/*}:$PATH"
bench_check_knobs
SUBS=${SUBS:-4}
LAT_N=${LAT_N:-10000}
LAT_RATE=${LAT_RATE:-1000}
STUCK=${STUCK:-$N}
WINDOW=${WINDOW:-1000}
POLL=${POLL:-0.01}
for v in SUBS LAT_N LAT_RATE STUCK WINDOW; do
    [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || bench_fail "$v must be a positive integer (got '${!v}')"
done
[[ "$POLL" =~ ^[0-9]*\.?[0-9]+$ ]] || bench_fail "POLL must be a number of seconds (got '$POLL')"

dir="$WORK/$BENCH_NAME"
rm -rf "$dir"
mkdir -p "$dir"
export XDG_RUNTIME_DIR="$dir/run"   # control sockets of gdpub and the gdsubs
mkdir -m 700 "$XDG_RUNTIME_DIR"
bench_port GDKIT_PORT
TF='%e %U %S %M'   # GNU time: elapsed, user, sys, peak RSS KB

cat > "$dir/pub.ini" <<CONF
GDpub_port=$GDKIT_PORT
GDpub_bind=127.0.0.1
CONF
SUB_INI_EXTRA=''
if [[ "$mode" == tls ]]; then
    bench_need openssl
    (   cd "$dir" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
            -keyout ca.key -out ca.pem -days 2 -subj /CN=bench-ca &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
            -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 &&
        echo 'subjectAltName=IP:127.0.0.1' > srv.ext &&
        openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -set_serial 1 \
            -days 2 -extfile srv.ext -out srv.pem ) > "$dir/pki.log" 2>&1 \
        || bench_fail "openssl could not make the certificates: $(tail -n 1 "$dir/pki.log")"
    printf 'GDpub_tlsCert=%s\nGDpub_tlsKey=%s\n' "$dir/srv.pem" "$dir/srv.key" >> "$dir/pub.ini"
    SUB_INI_EXTRA="GDsub_tlsCA=$dir/ca.pem"
fi

# sub_ini K: the config of subscriber pipeline K (one file per pipeline: the
# control socket between its gdsub and gdack derives from the file's path).
sub_ini() {
    cat > "$dir/s$1.ini" <<CONF
GDsub_pub=127.0.0.1:$GDKIT_PORT
GDsub_retryInt=0.01
GDsub_maxRetries=1000
${SUB_INI_EXTRA}
CONF
}

# start_pipeline K [STAGE...]: gdsub -c sK.ini [| STAGE] | gdack -c sK.ini in the
# background, each program under GNU time; PIPES gets the subshell's PID.
# SUB_EXTRA, ACK_EXTRA: more options of gdsub and gdack; ACK_OUT: gdack's
# standard output.
PIPES=()
SUB_EXTRA=()
ACK_EXTRA=()
ACK_OUT=/dev/null
start_pipeline() {
    local k=$1
    shift
    sub_ini "$k"
    if (( $# )); then
        ( trap - EXIT INT TERM
          "$TIME" -f "$TF" -o "$dir/sub$k.time" "$BIN/gdsub" -c "$dir/s$k.ini" \
            | "$@" \
            | "$TIME" -f "$TF" -o "$dir/ack$k.time" "$BIN/gdack" -c "$dir/s$k.ini" > /dev/null
        ) 2> "$dir/pipe$k.err" &
    else
        ( trap - EXIT INT TERM
          "$TIME" -f "$TF" -o "$dir/sub$k.time" "$BIN/gdsub" -c "$dir/s$k.ini" "${SUB_EXTRA[@]}" \
            | "$TIME" -f "$TF" -o "$dir/ack$k.time" "$BIN/gdack" -c "$dir/s$k.ini" \
                "${ACK_EXTRA[@]}" > "$ACK_OUT"
        ) 2> "$dir/pipe$k.err" &
    fi
    PIPES+=("$!")
    bench_track "$!"
}

# start_feeder FILE...: a writer that opens in.fifo at once (so gdpub's stdin
# redirection completes) but sends FILE... only after go() was called.
start_feeder() {
    mkfifo "$dir/in.fifo" "$dir/go.fifo"
    ( trap - EXIT INT TERM; read -r _ < "$dir/go.fifo"; exec cat -- "$@" ) > "$dir/in.fifo" 2> "$dir/feeder.err" &
    FEEDER=$!
    bench_track "$FEEDER"
}
go() { echo go > "$dir/go.fifo"; }

# wait_ready PID: READY on gdpub's stdout within 30 s.
wait_ready() {
    bench_wait_grep "$dir/pub.out" '^READY$' "$1" 30 \
        || bench_fail "gdpub not READY within 30 s: $(tail -n 2 "$dir/pub.err" "$dir"/pipe*.err 2> /dev/null | tr '\n' ' ')"
}

# wait_exit PID SECONDS: wait for PID (a child) at most SECONDS; sets WAIT_RC,
# returns 1 on timeout. A plain `wait PID` (it finds a job that has already
# ended, unlike `wait -n`), interrupted by SIGUSR1 from a watchdog that ends by
# itself once PID is gone (killing it right after its fork would race: a
# child signalled before it has dropped the inherited traps runs them).
trap ':' USR1
WD='' WD_FOR=''
# arm_watchdog PID SECONDS: start wait_exit's watchdog now (python3 takes tens
# of ms to start: keep that out of a timed span).
arm_watchdog() {
    local flag="$dir/timeout.$1"
    rm -f "$flag"
    python3 -c 'import os, signal, sys, time
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    if not os.path.exists("/proc/" + sys.argv[3]):
        sys.exit(0)
    time.sleep(0.02)
open(sys.argv[2], "w").close()
os.kill(int(sys.argv[4]), signal.SIGUSR1)' "$2" "$flag" "$1" "$$" &
    WD=$!
    WD_FOR=$1
    bench_track "$WD"
}
wait_exit() {
    local pid=$1 wd
    [[ "$WD_FOR" == "$pid" ]] || arm_watchdog "$pid" "$2"
    wd=$WD
    WD='' WD_FOR=''
    WAIT_RC=0
    wait "$pid" || WAIT_RC=$?
    [[ -e "$dir/timeout.$pid" ]] && return 1
    wait "$wd" 2> /dev/null || true
    untrack "$pid" "$wd"
    return 0
}

# untrack PID...: forget reaped children (lib.sh's cleanup would wait for them again).
untrack() {
    local keep=() p q drop
    for p in "${BENCH_PIDS[@]}"; do
        drop=0
        for q in "$@"; do [[ "$p" == "$q" ]] && drop=1; done
        (( drop )) || keep+=("$p")
    done
    BENCH_PIDS=("${keep[@]}")
}

# wait_pipelines SECONDS: every pipeline subshell has exited (bounded).
wait_pipelines() {
    local p
    for p in "${PIPES[@]}"; do
        wait_exit "$p" "$1" || bench_fail "a subscriber pipeline did not exit within $1 s after gdpub: $(tail -n 1 "$dir"/pipe*.err | tr '\n' ' ')"
    done
}

# stop_pub PID: gdpub drains on the first TERM and exits at once on the
# second. PID may be gdpub or a GNU time running it.
stop_pub() {
    local all
    kill -0 "$1" 2> /dev/null || return 0
    mapfile -t all < <(bench_descendants "$1")
    all=("$1" "${all[@]}")
    kill -TERM "${all[@]}" 2> /dev/null || true
    sleep 0.05
    kill -TERM "${all[@]}" 2> /dev/null || true
    wait_exit "$1" 5 || kill -KILL "${all[@]}" 2> /dev/null || true
}

# time_field FILE N: field N of the last line of a GNU time output file.
time_field() { tail -n 1 "$1" 2> /dev/null | awk -v f="$2" '{ print $f }'; }
cpu_of() { tail -n 1 "$1" 2> /dev/null | awk '{ printf "%.2f", $2 + $3 }'; }

# kv KEY LINE: the value of KEY=VALUE in LINE.
kv() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit } }' <<< "$2"; }

report() {  # report SECONDS COUNT EXTRA...
    local secs=$1 count=$2 rate
    shift 2
    rate=$(awk -v n="$count" -v s="$secs" 'BEGIN { if (s <= 0) s = 1e-9; printf "%.0f", n / s }')
    printf 'RESULT %s %s %s %s%s\n' "$BENCH_NAME" "$count" "$secs" "$rate" "${*:+ $*}"
    BENCH_REPORTED=1
}

check_acks() {  # check_acks RC COUNT
    local acks
    acks=$(grep -c '^ACK ' "$dir/pub.out" || true)
    (( $1 == 0 )) || bench_fail "gdpub exited $1 ($acks ACK of $2; $(grep -c '^NACK ' "$dir/pub.out" || true) NACK): $(tail -n 1 "$dir/pub.err")"
    (( acks == $2 )) || bench_fail "gdpub printed $acks ACK lines, want $2"
}

# --- throughput: 1 -> 1 and fan-out -----------------------------------------------
# PUB_EXTRA: more gdpub options (the journal scenarios)
PUB_EXTRA=()
run_throughput() {
    local subs=$1 k secs
    bench_payload_file
    start_feeder "$BENCH_PAYLOAD"
    "$TIME" -f "$TF" -o "$dir/pub.time" "$BIN/gdpub" -c "$dir/pub.ini" -n "$subs" -t "$TMO" \
        --wait-ready=30 "${PUB_EXTRA[@]}" < "$dir/in.fifo" > "$dir/pub.out" 2> "$dir/pub.err" &
    local pub=$!
    bench_track "$pub"
    for (( k = 1; k <= subs; k++ )); do start_pipeline "$k"; done
    wait_ready "$pub"
    arm_watchdog "$pub" "$TMO"
    local t0 t1
    t0=$(bench_now_ns)
    go
    wait_exit "$pub" "$TMO" || bench_fail "gdpub did not finish within TMO=$TMO s ($(grep -c '^ACK ' "$dir/pub.out") ACK)"
    t1=$(bench_now_ns)
    check_acks "$WAIT_RC" "$N"
    wait_pipelines 30
    secs=$(bench_secs "$t0" "$t1")
    if (( NO_REPORT )); then RUN_SECS=$secs; return 0; fi
    local cs=0 ca=0 rs=0 ra=0
    for (( k = 1; k <= subs; k++ )); do
        cs=$(awk -v a="$cs" -v b="$(cpu_of "$dir/sub$k.time")" 'BEGIN { printf "%.2f", a + b }')
        ca=$(awk -v a="$ca" -v b="$(cpu_of "$dir/ack$k.time")" 'BEGIN { printf "%.2f", a + b }')
        local r
        r=$(time_field "$dir/sub$k.time" 4)
        if (( r > rs )); then rs=$r; fi
        r=$(time_field "$dir/ack$k.time" 4)
        if (( r > ra )); then ra=$r; fi
    done
    bench_log "$N blocks of $SIZE bytes to $subs pipeline(s) in $secs s"
    report "$secs" "$N" "cpu_pub=$(cpu_of "$dir/pub.time")" "cpu_sub=$cs" "cpu_ack=$ca" \
        "rss_pub_kb=$(time_field "$dir/pub.time" 4)" "rss_sub_kb=$rs" "rss_ack_kb=$ra" "${RUN_EXTRA[@]}"
}
RUN_EXTRA=()
NO_REPORT=0   # 1: run_throughput sets RUN_SECS instead of reporting (instr)

# --- 1->1 with a journal: what recording every block (and syncing) costs --------
run_journal() {
    local fsync=${FSYNC:-batch}
    case "$fsync" in
    none) ;;
    never|batch|always) PUB_EXTRA=(--journal "$dir/pub.journal" --fsync "$fsync") ;;
    *) bench_fail "FSYNC must be none, never, batch or always (got '$fsync')" ;;
    esac
    RUN_EXTRA=("fs=$(stat -f -c %T "$dir")")
    run_throughput 1
}

# --- 1->1 with the output in a file: what gdack --sink and the recipe cost -------
# sink_opts: the options of SINK's row (tee, sink, eo) into PUB_EXTRA,
# SUB_EXTRA, ACK_EXTRA and ACK_OUT.
sink_opts() {
    case "${SINK:-sink}" in
    tee) ACK_EXTRA=(--tee); ACK_OUT=$dir/out ;;
    sink) ACK_EXTRA=(--sink "$dir/out") ;;
    eo) ACK_EXTRA=(--sink "$dir/out")
        SUB_EXTRA=(--state "$dir/s.state")
        PUB_EXTRA=(--journal "$dir/pub.journal") ;;
    *) bench_fail "SINK must be tee, sink or eo (got '$SINK')" ;;
    esac
}

run_sink() {
    sink_opts
    RUN_EXTRA=("fs=$(stat -f -c %T "$dir")")
    run_throughput 1
    local lines
    lines=$(wc -l < "$dir/out")
    (( lines == N )) || bench_fail "the sink file has $lines lines, want $N"
}

# --- stream mode: the blocks through a pipe, the acks over TCP ---------------------
run_stream() {
    local secs
    bench_payload_file
    start_feeder "$BENCH_PAYLOAD"
    sub_ini 1
    ( trap - EXIT INT TERM
      "$TIME" -f "$TF" -o "$dir/pub.time" "$BIN/gdpub" -c "$dir/pub.ini" -n 1 -t "$TMO" \
          --wait-ready=30 -o - --status "$dir/pub.out" ${AUTH_KEY:+--auth-key-file "$AUTH_KEY"} \
          < "$dir/in.fifo" 2> "$dir/pub.err" \
        | "$TIME" -f "$TF" -o "$dir/sub1.time" "$BIN/gdsub" -i - -c "$dir/s1.ini" \
          ${AUTH_KEY:+--auth-key-file "$AUTH_KEY"} \
        | "$TIME" -f "$TF" -o "$dir/ack1.time" "$BIN/gdack" -c "$dir/s1.ini" > /dev/null
    ) 2> "$dir/pipe1.err" &
    local pipe=$!
    bench_track "$pipe"
    wait_ready "$pipe"
    arm_watchdog "$pipe" "$TMO"
    local t0 t1
    t0=$(bench_now_ns)
    go
    # gdpub has exited once GNU time has written its line (the pipeline
    # ends later: gdsub waits for gdack, whose stdin GNU time holds open)
    local end=$(( $(date +%s) + TMO ))
    until [[ -s "$dir/pub.time" ]]; do
        (( $(date +%s) < end )) || bench_fail "gdpub did not finish within TMO=$TMO s ($(grep -c '^ACK ' "$dir/pub.out") ACK)"
        sleep 0.002
    done
    t1=$(bench_now_ns)
    wait_exit "$pipe" 60 || bench_fail "the stream pipeline did not exit within 60 s after gdpub"
    check_acks "$WAIT_RC" "$N"
    secs=$(bench_secs "$t0" "$t1")
    bench_log "$N blocks of $SIZE bytes through gdpub -o - | gdsub -i - | gdack in $secs s"
    report "$secs" "$N" "cpu_pub=$(cpu_of "$dir/pub.time")" "cpu_sub=$(cpu_of "$dir/sub1.time")" \
        "cpu_ack=$(cpu_of "$dir/ack1.time")" "rss_pub_kb=$(time_field "$dir/pub.time" 4)" \
        "rss_sub_kb=$(time_field "$dir/sub1.time" 4)" "rss_ack_kb=$(time_field "$dir/ack1.time" 4)"
}

# --- latency ------------------------------------------------------------------------
run_latency() {
    mkfifo "$dir/in.fifo"
    python3 "$HERE/pace.py" --count "$LAT_N" --rate "$LAT_RATE" --size "$SIZE" \
        --go "$dir/go.flag" --done "$dir/done.flag" --hold "$dir/hold.flag" --max-wait "$TMO" \
        > "$dir/in.fifo" 2> "$dir/pace.err" &
    local pacer=$!
    bench_track "$pacer"
    "$BIN/gdpub" -c "$dir/pub.ini" -n 1 -t "$TMO" --wait-ready=30 \
        < "$dir/in.fifo" > "$dir/pub.out" 2> "$dir/pub.err" &
    local pub=$!
    bench_track "$pub"
    start_pipeline 1
    wait_ready "$pub"
    : > "$dir/go.flag"
    # Poll nothing while the blocks flow: gdinspect runs would disturb what is measured.
    local end=$(( $(date +%s) + LAT_N / LAT_RATE + 60 ))
    while [[ ! -e "$dir/done.flag" ]]; do
        kill -0 "$pacer" 2> /dev/null || bench_fail "pace.py ended early: $(tail -n 1 "$dir/pace.err")"
        (( $(date +%s) < end )) || bench_fail "pace.py did not finish in time"
        sleep 0.1
    done
    local st
    st=$(python3 "$HERE/statpoll.py" --gdinspect "$BIN/gdinspect" -c "$dir/pub.ini" --interval 0.05 \
        --timeout 60 --pid "$pub" --until "ack>=$LAT_N") \
        || bench_fail "ack did not reach $LAT_N: $(tail -n 1 "$dir/pub.err")"
    : > "$dir/hold.flag"
    wait_exit "$pub" 60 || bench_fail "gdpub did not exit after its input ended"
    check_acks "$WAIT_RC" "$LAT_N"
    wait_pipelines 30
    local secs rate late
    read -r _ secs rate late < "$dir/done.flag"
    [[ "$(kv nack "$st")" == 0 ]] || bench_fail "NACKs in the latency run: $st"
    bench_log "$(tail -n 1 "$dir/pace.err")"
    report "$secs" "$LAT_N" "p50_us=$(kv lat_p50_us "$st")" "p90_us=$(kv lat_p90_us "$st")" \
        "p99_us=$(kv lat_p99_us "$st")" "max_us=$(kv lat_max_us "$st")" "late_us=$late"
}

# start_poller ARGS...: statpoll.py in the background (output in poll.out),
# once it has polled gdpub once (so its first poll predates the load).
start_poller() {
    python3 "$HERE/statpoll.py" --gdinspect "$BIN/gdinspect" -c "$dir/pub.ini" \
        --ready "$dir/poll.ready" "$@" > "$dir/poll.out" 2> "$dir/poll.err" &
    POLLER=$!
    bench_track "$POLLER"
    local end=$(( $(date +%s) + 10 ))
    while [[ ! -e "$dir/poll.ready" ]]; do
        kill -0 "$POLLER" 2> /dev/null || bench_fail "statpoll.py: $(tail -n 1 "$dir/poll.err")"
        (( $(date +%s) < end )) || bench_fail "statpoll.py could not poll gdpub within 10 s"
        sleep 0.01
    done
}
# wait_poller WHAT: statpoll.py's line into POLLED, or FAIL. (Not in $(...):
# a subshell cannot wait for the poller.)
wait_poller() {
    wait_exit "$POLLER" $(( TMO + 10 )) || bench_fail "statpoll.py did not end"
    (( WAIT_RC == 0 )) || bench_fail "$1: $(tail -n 1 "$dir/poll.err")"
    POLLED=$(cat "$dir/poll.out")
}

# --- memory per pending block ---------------------------------------------------------
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

run_memory() {
    local maxp=$(( N + 1000 > 2000000 ? N + 1000 : 2000000 ))
    bench_payload_file
    start_feeder "$BENCH_PAYLOAD"
    # No GNU time here: $! must be gdpub itself, for /proc/PID/status.
    "$BIN/gdpub" -c "$dir/pub.ini" -n 1 -t 3600 --max-pending "$maxp" \
        --window "$maxp" --wait-ready=30 \
        < "$dir/in.fifo" > "$dir/pub.out" 2> "$dir/pub.err" &
    local pub=$!
    bench_track "$pub"
    sub_ini 1
    "$BIN/gdsub" -c "$dir/s1.ini" > /dev/null 2> "$dir/pipe1.err" &
    bench_track "$!"
    wait_ready "$pub"
    [[ "$(readlink "/proc/$pub/exe")" == */gdpub ]] || bench_fail "PID $pub is not gdpub"
    local rss0 st rss1 t0
    rss0=$(rss_kb "$pub")
    start_poller --interval "$POLL" --timeout "$TMO" --pid "$pub" --until "pending>=$N"
    t0=$(bench_now_ns)
    go
    wait_poller "pending did not reach $N"
    st=$POLLED
    # blocks still queued for the subscriber are in flight, not pending
    # state: measure once gdpub's send queue has drained (at most 10 s)
    local i
    for (( i = 0; i < 1000; i++ )); do
        "$BIN/gdinspect" -c "$dir/pub.ini" --json subs 2> /dev/null |
            grep -q '"queue":0[,}]' && break
        sleep 0.01
    done
    (( i < 1000 )) || bench_fail "gdpub's send queue to the subscriber did not drain within 10 s"
    # the median of three samples 0.1 s apart: one sample taken while
    # gdpub was still handing back a drained burst would count it
    rss1=$( { rss_kb "$pub"; sleep 0.1; rss_kb "$pub"; sleep 0.1; rss_kb "$pub"; } | sort -n | sed -n 2p)
    [[ "$rss1" =~ ^[0-9]+$ ]] || bench_fail "no VmRSS of gdpub (PID $pub) with $N pending"
    local bpb secs
    bpb=$(awk -v a="$rss0" -v b="$rss1" -v n="$N" -v s="$SIZE" \
        'BEGIN { printf "%.1f", ((b - a) * 1024 - n * (s + 1)) / n }')
    secs=$(bench_secs "$t0" "$(kv end_ns "$st")")
    stop_pub "$pub"
    bench_log "gdpub VmRSS ${rss0} kB at READY, ${rss1} kB with $N pending: $bpb bytes per pending block beyond the payload"
    report "$secs" "$N" "bytes_per_block=$bpb" "rss_ready_kb=$rss0" "rss_full_kb=$rss1"
}

# --- throughput with many blocks pending ------------------------------------------------
run_pending() {
    (( SIZE >= 5 )) || bench_skip "SIZE must be at least 5 for the STUCK marker"
    local stuck="$WORK/stuck-$STUCK-$SIZE.txt"
    if [[ "$(stat -c %s "$stuck" 2> /dev/null || echo -1)" != $(( STUCK * (SIZE + 1) )) ]]; then
        LC_ALL=C awk -v n="$STUCK" -v s="$SIZE" 'BEGIN {
            w = s - 5; if (w > 10) w = 10; m = 1; for (i = 0; i < w; i++) m *= 10
            pad = ""; for (i = 5 + w; i < s; i++) pad = pad "."
            for (i = 0; i < n; i++) if (w > 0) printf "STUCK%0*d%s\n", w, i % m, pad; else printf "STUCK%s\n", pad
        }' > "$stuck.tmp" && mv "$stuck.tmp" "$stuck"
    fi
    bench_payload_file
    start_feeder "$stuck" "$BENCH_PAYLOAD"
    "$BIN/gdpub" -c "$dir/pub.ini" -n 1 -t 3600 \
        --max-pending $(( STUCK + WINDOW )) --window $(( STUCK + WINDOW )) \
        --wait-ready=30 \
        < "$dir/in.fifo" > "$dir/pub.out" 2> "$dir/pub.err" &
    local pub=$!
    bench_track "$pub"
    start_pipeline 1 grep --line-buffered -v STUCK
    wait_ready "$pub"
    start_poller --interval "$POLL" --timeout "$TMO" --pid "$pub" \
        --start "pending>=$STUCK" --until "ack>=$N"
    go
    local st secs
    wait_poller "ack did not reach $N"
    st=$POLLED
    secs=$(kv elapsed "$st")
    bench_log "$N blocks acked in $secs s with $STUCK stuck blocks pending ($(kv polls "$st") polls)"
    report "$secs" "$N" "stuck=$STUCK" "window=$WINDOW" "pending_min=$(kv pending_min "$st")" "pending_max=$(kv pending_max "$st")" "polls=$(kv polls "$st")"
    stop_pub "$pub"
}

# --- flow control: stages that drop, hold or slow blocks -----------------------------
run_flow() {
    local flow=${FLOW:-filter_1k} cap=${CAP:-300} lines stage topts=() subs=1 until=''
    local thr="$HERE/../cli/throttle.py" in="$dir/flow.txt" k
    [[ "$cap" =~ ^[1-9][0-9]*$ ]] || bench_fail "CAP must be a positive integer (got '$cap')"
    # gen N EVERY: N lines, "MATCH i" every EVERY-th, "line i" otherwise
    gen() { LC_ALL=C awk -v n="$1" -v e="$2" 'BEGIN { for (i = 1; i <= n; i++) print (e && i % e == 0 ? "MATCH " : "line ") i }' > "$in"; }
    case "$flow" in
    filter_1k) gen 5000 1000; stage=(grep --line-buffered MATCH); topts=(-t 2) ;;
    drop_all) gen 2000 0; stage=(grep --line-buffered MATCH); topts=(-t 2) ;;
    drop_ahead)
        LC_ALL=C awk 'BEGIN { for (i = 1; i <= 21000; i++) print (i <= 1000 ? "STUCK " : "ok ") i }' > "$in"
        stage=(grep --line-buffered -v STUCK); topts=(-t 600); until='ack>=20000' ;;
    filter_100k) gen 1000000 100000; stage=(grep --line-buffered MATCH)
        topts=(--max-pending "${MAXP:-1048576}") ;;
    pass_1m) gen 1000000 0; stage=(grep --line-buffered -v MATCH) ;;
    sed2) gen 200000 0; stage=(sed -u s/line/LINE/); subs=2 ;;
    sleep_1ms) gen 5000 0; stage=(python3 "$thr" 0 --sleep 0.001) ;;
    eager) gen 5000 0; stage=(sh -c "cat | python3 '$thr' 100") ;;
    py8k) gen 5000 0; stage=(python3 "$thr" 200 --read 8192) ;;
    *) bench_fail "FLOW must be filter_1k, drop_all, drop_ahead, filter_100k, pass_1m, sed2, sleep_1ms, eager or py8k (got '$flow')" ;;
    esac
    lines=$(wc -l < "$in")
    start_feeder "$in"
    "$BIN/gdpub" -c "$dir/pub.ini" -n "$subs" "${topts[@]}" --wait-ready=30 \
        < "$dir/in.fifo" > "$dir/pub.out" 2> "$dir/pub.err" &
    local pub=$!
    bench_track "$pub"
    for (( k = 1; k <= subs; k++ )); do start_pipeline "$k" "${stage[@]}"; done
    if [[ "$flow" == sed2 ]]; then
        for k in 1 2 3 4; do ( trap - EXIT INT TERM; exec yes > /dev/null ) & bench_track "$!"; done
    fi
    wait_ready "$pub"
    local t0 t1 done=1 secs ack nack
    if [[ -n "$until" ]]; then
        start_poller --interval 0.1 --timeout "$cap" --pid "$pub" --until "$until"
        t0=$(bench_now_ns)
        go
        wait_exit "$POLLER" $(( cap + 10 )) || true
        (( WAIT_RC == 0 )) || done=0
        t1=$(bench_now_ns)
        stop_pub "$pub"
    else
        arm_watchdog "$pub" "$cap"
        t0=$(bench_now_ns)
        go
        wait_exit "$pub" "$cap" || done=0
        t1=$(bench_now_ns)
        (( done )) || stop_pub "$pub"
    fi
    secs=$(bench_secs "$t0" "$t1")
    ack=$(grep -c '^ACK ' "$dir/pub.out" || true)
    nack=$(grep -c '^NACK ' "$dir/pub.out" || true)
    bench_log "$lines lines, $ack ACK, $nack NACK in $secs s (done=$done): $(tail -n 1 "$dir/pub.err")"
    report "$secs" "$lines" "ack=$ack" "nack=$nack" "done=$done"
}

# --- instructions per block: each program under callgrind ------------------------
# GNU time's place in run_throughput and start_pipeline is taken by a wrapper
# that takes the same -f FMT -o FILE and runs the program under callgrind,
# its profile in FILE.cg.
run_instr() {
    local n=${INSTR_N:-100000} p k ir=() v
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || bench_fail "INSTR_N must be a positive integer (got '$n')"
    bench_need valgrind
    N=$n
    if [[ -n "${SINK:-}" ]]; then sink_opts; fi
    cat > "$dir/cg.sh" <<'WRAP'
#!/bin/sh
# cg.sh -f FMT -o FILE PROG ARGS...: PROG under callgrind, the profile in FILE.cg
shift 2; out=$2; shift 2
exec valgrind --tool=callgrind --callgrind-out-file="$out.cg" --log-file="$out.vg" "$@"
WRAP
    chmod +x "$dir/cg.sh"
    TIME=$dir/cg.sh
    NO_REPORT=1
    run_throughput 1
    for p in pub sub1 ack1; do
        # the profile's total: the "totals:" line (callgrind 3.x), else "summary:"
        v=$(awk '/^(totals|summary):/ { t = $2 } END { print t }' "$dir/$p.time.cg" 2> /dev/null)
        [[ "$v" =~ ^[0-9]+$ ]] || bench_fail "no instruction total in $dir/$p.time.cg"
        ir+=("$(awk -v a="$v" -v n="$n" 'BEGIN { printf "%.0f", a / n }')")
    done
    bench_log "instructions per block (callgrind, $n blocks 1->1): gdpub ${ir[0]}, gdsub ${ir[1]}, gdack ${ir[2]}"
    report "$RUN_SECS" "$n" "ir_pub=${ir[0]}" "ir_sub=${ir[1]}" "ir_ack=${ir[2]}"
}

# --- the limit: the same lines through one plain TCP connection --------------------
run_rawtcp() {
    bench_need socat wc
    bench_payload_file
    local port
    bench_hold_port port
    ( trap - EXIT INT TERM; socat -u "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr" STDOUT | wc -l > "$dir/count" ) \
        2> "$dir/reader.err" &
    local reader=$!
    bench_track "$reader"
    bench_wait_listen "$port" "$reader" 10 || bench_fail "socat did not listen: $(tail -n 1 "$dir/reader.err")"
    start_feeder "$BENCH_PAYLOAD"
    ( trap - EXIT INT TERM; exec socat -u STDIN "TCP:127.0.0.1:$port" ) < "$dir/in.fifo" 2> "$dir/writer.err" &
    bench_track "$!"
    arm_watchdog "$reader" "$TMO"
    local t0 t1 lines
    t0=$(bench_now_ns)
    go
    wait_exit "$reader" "$TMO" || bench_fail "the raw TCP reader did not finish within TMO=$TMO s"
    t1=$(bench_now_ns)
    lines=$(tr -d ' ' < "$dir/count")
    (( lines == N )) || bench_fail "the raw TCP reader counted $lines lines, want $N"
    report "$(bench_secs "$t0" "$t1")" "$N"
}

# lib.sh's cleanup waits for every tracked PID: forget those the shell has
# already reaped (bash would complain that it has no record of them).
# Only this shell cleans up: a child forked for a background command that is
# signalled before it has dropped the inherited traps runs them too.
gd_exit() {
    local rc=$? p keep=()
    [[ "$BASHPID" == "$$" ]] || return 0
    set +e
    for p in "${BENCH_PIDS[@]}"; do
        if kill -0 "$p" 2> /dev/null; then keep+=("$p"); fi
    done
    BENCH_PIDS=("${keep[@]}")
    (exit "$rc")
    bench_cleanup
}
trap gd_exit EXIT

case "$mode" in
1to1|tls)
    if [[ -n "${AUTH_KEY:-}" ]]; then
        PUB_EXTRA=(--auth-key-file "$AUTH_KEY")
        SUB_EXTRA=(--auth-key-file "$AUTH_KEY")
    fi
    run_throughput 1 ;;
journal) run_journal ;;
sink) run_sink ;;
stream) run_stream ;;
fanout) run_throughput "$SUBS" ;;
latency) run_latency ;;
memory) run_memory ;;
pending) run_pending ;;
flow) run_flow ;;
instr) run_instr ;;
rawtcp) run_rawtcp ;;
esac
