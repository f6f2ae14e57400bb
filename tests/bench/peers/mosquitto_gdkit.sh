#!/usr/bin/env bash
# gdkit through mosquitto: the armored stream at MQTT QoS 0 (or QOS), one
# publisher -> one subscriber pipeline, every block acknowledged to gdpub over
# TCP. The row to read beside mosquitto_qos1 (the broker's own guarantee, same
# run):
#
#   gdpub -n 1 -t 10 --resend 5 -o - --armor [--armor-batch B] < payload |
#       mosquitto_pub -l -q 0
#   mosquitto_sub -q 0 | gdsub -i - | gdack
#
# A private mosquitto on 127.0.0.1 (free port, or MQTT_PORT), configured as
# peers/mosquitto.sh does. The subscriber pipeline starts first; the broker's
# log shows its SUBSCRIBE before gdpub is started, and gdpub waits for READY
# (gdsub's acknowledgement connection). Time: gdpub started -> gdpub exited
# with every block ACKed. Checks: N ACK lines, N distinct keys acknowledged,
# R = 1.000 (gdinspect measure of the IDs sent against the keys acknowledged).
# With PACE the input comes from pace.py instead, LAT_N blocks at PACE per
# second, and the row reports gdpub's publish->ACK latency (p50_us p90_us
# p99_us, gdinspect stats) as gdkit.sh latency does.
#
# Env: N SIZE WORK TMO (see lib.sh), MQTT_PORT (default: a free port),
#      GDKIT_BIN (directory of gdpub gdsub gdack gdinspect), TIMEOUT (gdpub -t,
#      default 10), QOS (0 or 1, both MQTT hops, default 0), BATCH (gdpub
#      --armor-batch; default: gdpub's), NAME (the row, default
#      gdkit_mqtt_qos<QOS>), PACE (blocks/s; default: as fast as it goes),
#      LAT_N (blocks when paced, default 10000), AUTH_KEY (a key file: gdpub
#      and gdsub --auth-key-file, every frame tagged and checked; the default
#      name gets _key).
# Stdout: RESULT <NAME> <N> <seconds> <blocks_per_s> resent=<n> lines=<n>
#         [p50_us=.. p90_us=.. p99_us=..] | SKIP | FAIL
QOS=${QOS:-0}
BENCH_NAME=${NAME:-gdkit_mqtt_qos$QOS${AUTH_KEY:+_key}}
# shellcheck source=tests/bench/peers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_need mosquitto mosquitto_sub mosquitto_pub ss timeout
bench_check_knobs
BIN=${GDKIT_BIN:-}
[[ -n "$BIN" && -x "$BIN/gdpub" && -x "$BIN/gdsub" && -x "$BIN/gdack" && -x "$BIN/gdinspect" ]] ||
    bench_fail "GDKIT_BIN must name the directory of gdpub, gdsub, gdack and gdinspect (got '$BIN')"
TIMEOUT=${TIMEOUT:-10}
[[ "$QOS" == 0 || "$QOS" == 1 ]] || bench_fail "QOS must be 0 or 1 (got '$QOS')"
batch=()
if [[ -n "${BATCH:-}" ]]; then
    [[ "$BATCH" =~ ^[1-9][0-9]*$ ]] || bench_fail "BATCH must be a positive integer (got '$BATCH')"
    batch=(--armor-batch "$BATCH")
fi
PACE=${PACE:-}
if [[ -n "$PACE" ]]; then
    [[ "$PACE" =~ ^[1-9][0-9]*$ ]] || bench_fail "PACE must be a positive integer (got '$PACE')"
    N=${LAT_N:-10000}
    [[ "$N" =~ ^[1-9][0-9]*$ ]] || bench_fail "LAT_N must be a positive integer (got '$N')"
fi
HERE_BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

bench_payload_file
bench_port MQTT_PORT
bench_hold_port GD_PORT	# gdsub is started before gdpub

dir="$WORK/mosquitto_gdkit"
rm -rf "$dir"
mkdir -p "$dir/broker"
if (( EUID == 0 )) && id mosquitto > /dev/null 2>&1; then
    chown mosquitto: "$dir/broker"
fi
cat > "$dir/broker/mosquitto.conf" <<CONF
listener $MQTT_PORT 127.0.0.1
allow_anonymous true
persistence false
max_queued_messages 1000000000
log_dest file $dir/broker/mosquitto.log
log_type error
log_type warning
log_type subscribe
CONF

mosquitto -c "$dir/broker/mosquitto.conf" 2> "$dir/broker/stderr" &
broker=$!
bench_track_server "$broker"
bench_wait_listen "$MQTT_PORT" "$broker" 10 \
    || bench_fail "broker did not listen on 127.0.0.1:$MQTT_PORT: $(tail -n 1 "$dir/broker/mosquitto.log" 2> /dev/null)"

topic="gdkit/bench/armor/$$"
sub_id="gdkit-bench-armor-sub-$$"
pub=127.0.0.1:$GD_PORT
export XDG_RUNTIME_DIR="$dir/run"
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
mkfifo "$dir/lines.fifo"
printf 'GDpub_port=%s\nGDpub_bind=127.0.0.1\n' "$GD_PORT" > "$dir/pub.ini"
( timeout "$TMO" "$BIN/gdsub" -i "$dir/lines.fifo" -P "$pub" --name bench \
      --retry-interval 0.05 --max-retries 400 ${AUTH_KEY:+--auth-key-file "$AUTH_KEY"} \
      2> "$dir/sub.err" |
  timeout "$TMO" "$BIN/gdack" -P "$pub" --name bench --tee 2> "$dir/ack.err" |
  cut -f1 > "$dir/keys" ) &
subpipe=$!
bench_track "$subpipe"
timeout "$TMO" mosquitto_sub -h 127.0.0.1 -p "$MQTT_PORT" -q "$QOS" -t "$topic" -i "$sub_id" \
    > "$dir/lines.fifo" 2> "$dir/msub.err" &
msub=$!
bench_track "$msub"
bench_wait_grep "$dir/broker/mosquitto.log" " $sub_id $QOS $topic\$" "$msub" 10 \
    || bench_fail "subscriber did not subscribe within 10 s"

# the lines counted on their way to the broker: one broker message each
count_lines() { tee >(wc -l > "$dir/lines.n"); }
input=$BENCH_PAYLOAD
if [[ -n "$PACE" ]]; then
    input="$dir/in.fifo"
    mkfifo "$input"
    python3 "$HERE_BENCH/pace.py" --count "$N" --rate "$PACE" --size "$SIZE" \
        --go "$dir/go.flag" --done "$dir/done.flag" --hold "$dir/hold.flag" --max-wait "$TMO" \
        > "$input" 2> "$dir/pace.err" &
    bench_track $!
fi
t0=$(bench_now_ns)
( rc=0
  timeout "$TMO" "$BIN/gdpub" -c "$dir/pub.ini" -n 1 -t "$TIMEOUT" --resend 5 --wait-ready=30 \
      -o - --armor "${batch[@]}" --status "$dir/pub.st" ${AUTH_KEY:+--auth-key-file "$AUTH_KEY"} \
      < "$input" 2> "$dir/pub.err" |
      count_lines |
      timeout "$TMO" mosquitto_pub -h 127.0.0.1 -p "$MQTT_PORT" -q "$QOS" -t "$topic" -l \
          2> "$dir/mpub.err" || rc=$?
  echo "$rc" > "$dir/pub.rc" ) &
pubpipe=$!
bench_track "$pubpipe"
lat=()
if [[ -n "$PACE" ]]; then
    bench_wait_grep "$dir/pub.st" "^READY\$" "$pubpipe" 30 || bench_fail "gdpub was not READY within 30 s"
    : > "$dir/go.flag"
    st=$(python3 "$HERE_BENCH/statpoll.py" --gdinspect "$BIN/gdinspect" -c "$dir/pub.ini" \
        --interval 0.05 --timeout "$TMO" --until "ack>=$N") \
        || bench_fail "ack did not reach $N: $(tail -n 1 "$dir/pub.err")"
    kv() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit } }' <<< "$st"; }
    lat=("p50_us=$(kv lat_p50_us)" "p90_us=$(kv lat_p90_us)" "p99_us=$(kv lat_p99_us)")
    : > "$dir/hold.flag"
fi
wait "$pubpipe"
t1=$(bench_now_ns)
rc=$(cat "$dir/pub.rc" 2> /dev/null || echo 1)
(( rc == 0 )) || bench_fail "gdpub | mosquitto_pub failed (status $rc): $(tail -n 1 "$dir/pub.err" "$dir/mpub.err" 2> /dev/null | tr '\n' ' ')"
acks=$(grep -c '^ACK ' "$dir/pub.st" || true)
(( acks == N )) || bench_fail "$acks of $N blocks ACKed"

# mosquitto_sub's end ends gdsub's input: it exits once its blocks are acked
kill -TERM "$msub" 2> /dev/null || true
wait "$subpipe" || bench_fail "the subscriber pipeline failed: $(tail -n 1 "$dir/sub.err" "$dir/ack.err" | tr '\n' ' ')"
uniq=$(sed 's,/r$,,' "$dir/keys" | sort -u | wc -l)
(( uniq == N )) || bench_fail "$uniq distinct keys acknowledged of $N"
resent=$(grep -c '/r$' "$dir/keys" || true)
# R: every ID sent (gdpub numbers them 1..N) acknowledged; UR: once each
seq 1 "$N" > "$dir/sent"
sed 's,/r$,,' "$dir/keys" > "$dir/received"
"$BIN/gdinspect" measure "$dir/sent" "$dir/received" > "$dir/measure" 2>&1 ||
    bench_fail "gdinspect measure failed: $(tail -n 1 "$dir/measure")"
read -r R UR < <(awk 'NR == 2 { print $7, $8 }' "$dir/measure")
[[ "$R" == 1.000* ]] || bench_fail "R is not 1.000: $(tr '\n' ' ' < "$dir/measure")"
lines=$(cat "$dir/lines.n" 2> /dev/null || echo 0)

if [[ -n "$PACE" ]]; then
    read -r _ secs rate _ < "$dir/done.flag"
else
    secs=$(bench_secs "$t0" "$t1")
    rate=$(awk -v n="$N" -v s="$secs" 'BEGIN { if (s <= 0) s = 1e-9; printf "%.0f", n / s }')
fi
bench_log "$N blocks through mosquitto QoS $QOS (${BATCH:-default} batch, $lines lines) all ACKed in $secs s ($resent came resent) ${lat[*]}"
printf 'RESULT %s %s %s %s resent=%s lines=%s batch=%s R=%s UR=%s %s\n' "$BENCH_NAME" "$N" "$secs" \
    "$rate" "$resent" "$lines" "${BATCH:-0}" "$R" "$UR" "${lat[*]}"
BENCH_REPORTED=1
