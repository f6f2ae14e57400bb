#!/usr/bin/env bash
# gdkit through mosquitto: the armored stream at MQTT QoS 0, one publisher ->
# one subscriber pipeline, every block acknowledged to gdpub over TCP. The row
# to read beside mosquitto_qos1 (the broker's own guarantee, same run):
#
#   gdpub -n 1 -t 10 --resend 5 -o - --armor < payload | mosquitto_pub -l -q 0
#   mosquitto_sub -q 0 | gdsub -i - | gdack
#
# A private mosquitto on 127.0.0.1 (free port, or MQTT_PORT), configured as
# peers/mosquitto.sh does. The subscriber pipeline starts first; the broker's
# log shows its SUBSCRIBE before gdpub is started, and gdpub waits for READY
# (gdsub's acknowledgement connection). Time: gdpub started -> gdpub exited
# with every block ACKed. Checks: N ACK lines, N distinct keys acknowledged.
#
# Env: N SIZE WORK TMO (see lib.sh), MQTT_PORT (default: a free port),
#      GDKIT_BIN (directory of gdpub gdsub gdack), TIMEOUT (gdpub -t, default 10),
#      AUTH_KEY (a key file: gdpub and gdsub --auth-key-file, every line's
#      frame tagged and checked; name gdkit_mqtt_qos0_key).
# Stdout: RESULT gdkit_mqtt_qos0 <N> <seconds> <blocks_per_s> resent=<n> | SKIP | FAIL
BENCH_NAME=gdkit_mqtt_qos0${AUTH_KEY:+_key}
# shellcheck source=tests/bench/peers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_need mosquitto mosquitto_sub mosquitto_pub ss timeout
bench_check_knobs
BIN=${GDKIT_BIN:-}
[[ -n "$BIN" && -x "$BIN/gdpub" && -x "$BIN/gdsub" && -x "$BIN/gdack" ]] ||
    bench_fail "GDKIT_BIN must name the directory of gdpub, gdsub and gdack (got '$BIN')"
TIMEOUT=${TIMEOUT:-10}

bench_payload_file
bench_port MQTT_PORT
GD_PORT=$(bench_free_port) || bench_fail "no free port for gdpub"

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
( timeout "$TMO" "$BIN/gdsub" -i "$dir/lines.fifo" -P "$pub" --name bench \
      --retry-interval 0.05 --max-retries 400 ${AUTH_KEY:+--auth-key-file "$AUTH_KEY"} \
      2> "$dir/sub.err" |
  timeout "$TMO" "$BIN/gdack" -P "$pub" --name bench --tee 2> "$dir/ack.err" |
  cut -f1 > "$dir/keys" ) &
subpipe=$!
bench_track "$subpipe"
timeout "$TMO" mosquitto_sub -h 127.0.0.1 -p "$MQTT_PORT" -q 0 -t "$topic" -i "$sub_id" \
    > "$dir/lines.fifo" 2> "$dir/msub.err" &
msub=$!
bench_track "$msub"
bench_wait_grep "$dir/broker/mosquitto.log" " $sub_id 0 $topic\$" "$msub" 10 \
    || bench_fail "subscriber did not subscribe within 10 s"

t0=$(bench_now_ns)
rc=0
timeout "$TMO" "$BIN/gdpub" -p "$GD_PORT" -n 1 -t "$TIMEOUT" --resend 5 --wait-ready=30 \
    -o - --armor --status "$dir/pub.st" ${AUTH_KEY:+--auth-key-file "$AUTH_KEY"} \
    < "$BENCH_PAYLOAD" 2> "$dir/pub.err" |
    timeout "$TMO" mosquitto_pub -h 127.0.0.1 -p "$MQTT_PORT" -q 0 -t "$topic" -l \
        2> "$dir/mpub.err" || rc=$?
t1=$(bench_now_ns)
(( rc == 0 )) || bench_fail "gdpub | mosquitto_pub failed (status $rc): $(tail -n 1 "$dir/pub.err" "$dir/mpub.err" 2> /dev/null | tr '\n' ' ')"
acks=$(grep -c '^ACK ' "$dir/pub.st" || true)
(( acks == N )) || bench_fail "$acks of $N blocks ACKed"

# mosquitto_sub's end ends gdsub's input: it exits once its blocks are acked
kill -TERM "$msub" 2> /dev/null || true
wait "$subpipe" || bench_fail "the subscriber pipeline failed: $(tail -n 1 "$dir/sub.err" "$dir/ack.err" | tr '\n' ' ')"
uniq=$(sed 's,/r$,,' "$dir/keys" | sort -u | wc -l)
(( uniq == N )) || bench_fail "$uniq distinct keys acknowledged of $N"
resent=$(grep -c '/r$' "$dir/keys" || true)

secs=$(bench_secs "$t0" "$t1")
bench_log "$N blocks through mosquitto QoS 0 all ACKed in $secs s ($resent came resent)"
rate=$(awk -v n="$N" -v s="$secs" 'BEGIN { if (s <= 0) s = 1e-9; printf "%.0f", n / s }')
printf 'RESULT %s %s %s %s resent=%s\n' "$BENCH_NAME" "$N" "$secs" "$rate" "$resent"
BENCH_REPORTED=1
