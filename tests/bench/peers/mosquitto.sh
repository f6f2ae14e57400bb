#!/usr/bin/env bash
# Peer baseline: mosquitto MQTT, QoS 1, one publisher -> one subscriber, end to end.
#
# Starts a private mosquitto broker on 127.0.0.1 (free port, or MQTT_PORT),
# subscribes first (mosquitto_sub -q 1 -C N), waits until the broker has logged
# the SUBSCRIBE, then publishes the N-line payload file with mosquitto_pub -q 1 -l
# in chunks of CHUNK lines, one connection per chunk (mosquitto_pub 2.0.x -l
# loses messages past 65535 lines on one connection, because packet ids wrap).
# Time: publish start -> subscriber exited with N messages. The received lines
# must equal the input (cmp: completeness, order, content).
#
# Env: N SIZE WORK TMO (see lib.sh), MQTT_PORT (default: a free port),
#      CHUNK (lines per mosquitto_pub connection, 1..65535, default 50000).
# Stdout: RESULT mosquitto_qos1 <N> <seconds> <msgs_per_s> | SKIP ... | FAIL ...
BENCH_NAME=mosquitto_qos1
# shellcheck source=tests/bench/peers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_need mosquitto mosquitto_sub mosquitto_pub ss timeout split cmp
bench_check_knobs
CHUNK=${CHUNK:-50000}
if ! [[ "$CHUNK" =~ ^[1-9][0-9]*$ ]] || (( CHUNK > 65535 )); then
    bench_fail "CHUNK must be 1..65535 (got '$CHUNK')"
fi

bench_payload_file
input=$BENCH_PAYLOAD
bench_port MQTT_PORT

dir="$WORK/mosquitto"
rm -rf "$dir"
mkdir -p "$dir/broker" "$dir/chunks"
split -l "$CHUNK" -a 5 -d "$input" "$dir/chunks/part."
# Started as root, the broker drops privileges to user mosquitto: let it write its log.
if (( EUID == 0 )) && id mosquitto > /dev/null 2>&1; then
    chown mosquitto: "$dir/broker"
fi

cat > "$dir/broker/mosquitto.conf" <<CONF
listener $MQTT_PORT 127.0.0.1
allow_anonymous true
persistence false
# The default (1000) drops QoS 1 messages queued for a slower subscriber, and
# 0 ("unlimited") misbehaves in 2.0.x: use a limit larger than any run.
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

topic="gdkit/bench/$$"
sub_id="gdkit-bench-sub-$$"
timeout "$TMO" mosquitto_sub -h 127.0.0.1 -p "$MQTT_PORT" -q 1 -t "$topic" -C "$N" -i "$sub_id" \
    > "$dir/sub.out" 2> "$dir/sub.err" &
sub=$!
bench_track "$sub"
# The broker logs "<time>: <client id> <qos> <topic>" once the SUBSCRIBE is processed.
bench_wait_grep "$dir/broker/mosquitto.log" " $sub_id 1 $topic\$" "$sub" 10 \
    || bench_fail "subscriber did not subscribe within 10 s"

t0=$(bench_now_ns)
(
    k=0
    for part in "$dir"/chunks/part.*; do
        timeout "$TMO" mosquitto_pub -h 127.0.0.1 -p "$MQTT_PORT" -q 1 -t "$topic" -l \
            -i "gdkit-bench-pub-$$-$k" < "$part" || exit 1
        k=$(( k + 1 ))
    done
    bench_now_ns > "$dir/pub.t"
) 2> "$dir/pub.err" &
pub=$!
bench_track "$pub"

# Wait for whichever ends first; a failed publisher ends the run at once.
waiting=("$sub" "$pub")
while :; do
    fin=
    rc=0
    wait -n -p fin "${waiting[@]}" || rc=$?
    if [[ "$fin" == "$sub" ]]; then
        t1=$(bench_now_ns)
        sub_rc=$rc
        break
    elif [[ "$fin" == "$pub" ]]; then
        (( rc == 0 )) || bench_fail "mosquitto_pub failed (status $rc): $(tail -n 1 "$dir/pub.err" 2> /dev/null)"
        waiting=("$sub")
    else
        bench_fail "lost track of the clients (wait status $rc)"
    fi
done

got=$(wc -l < "$dir/sub.out")
(( sub_rc == 0 )) || bench_fail "mosquitto_sub ended with status $sub_rc after $got of $N messages"
if [[ ${#waiting[@]} -eq 2 ]]; then
    rc=0
    wait "$pub" || rc=$?
    (( rc == 0 )) || bench_fail "mosquitto_pub failed (status $rc)"
fi
(( got == N )) || bench_fail "received $got of $N messages"
cmp -s "$dir/sub.out" "$input" || bench_fail "received lines differ from the input (order or content)"

secs=$(bench_secs "$t0" "$t1")
bench_log "publisher had all PUBACKs after $(bench_secs "$t0" "$(cat "$dir/pub.t")") s; subscriber got all $N after $secs s"
bench_result "$secs"
