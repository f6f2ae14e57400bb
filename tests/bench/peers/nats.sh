#!/usr/bin/env bash
# Peer baseline: NATS JetStream, one publisher -> one durable pull consumer,
# every message acknowledged (AckExplicit), end to end.
#
# Starts a private nats-server with JetStream on 127.0.0.1 (free port, or
# NATS_PORT; store in WORK). Builds nats_js.c (libnats) into WORK. The consumer
# creates the stream and the consumer and says READY; then the clock starts and
# the publisher sends the N lines with js_PublishAsync (at most PUB_MAXPENDING
# without a PubAck). Time: publish start -> the consumer has received all N,
# acked each, and the server reports all acks applied (NumAckPending 0, ack
# floor N). The consumer's output must equal the input (cmp).
#
# Env: N SIZE WORK TMO (see lib.sh), NATS_PORT (default: a free port),
#      JS_STORAGE (file or memory, default file), BATCH (Fetch size, default
#      1000), PUB_MAXPENDING (default 4000), CC (default cc).
# Stdout: RESULT nats_jetstream <N> <seconds> <msgs_per_s>   (JS_STORAGE=file)
#         RESULT nats_jetstream_memory ...                   (JS_STORAGE=memory)
#         | SKIP ... | FAIL ...
JS_STORAGE=${JS_STORAGE:-file}
if [[ "$JS_STORAGE" == memory ]]; then BENCH_NAME=nats_jetstream_memory; else BENCH_NAME=nats_jetstream; fi
# shellcheck source=tests/bench/peers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CC=${CC:-cc}
BATCH=${BATCH:-1000}
PUB_MAXPENDING=${PUB_MAXPENDING:-4000}
bench_need nats-server "$CC" pkg-config ss timeout cmp
pkg-config --exists libnats || bench_skip "NATS C client development files not installed (libnats-dev)"
bench_check_knobs
[[ "$JS_STORAGE" == file || "$JS_STORAGE" == memory ]] || bench_fail "JS_STORAGE must be file or memory (got '$JS_STORAGE')"
[[ "$BATCH" =~ ^[1-9][0-9]*$ ]] || bench_fail "BATCH must be a positive integer (got '$BATCH')"
[[ "$PUB_MAXPENDING" =~ ^[1-9][0-9]*$ ]] || bench_fail "PUB_MAXPENDING must be a positive integer (got '$PUB_MAXPENDING')"

dir="$WORK/nats"
rm -rf "$dir"
mkdir -p "$dir/server"

# shellcheck disable=SC2046  # pkg-config output is meant to be split into words
"$CC" -O2 -Wall -o "$dir/nats_js" "$PEERS_DIR/nats_js.c" $(pkg-config --cflags --libs libnats) \
    2> "$dir/cc.err" || bench_fail "cannot build nats_js: $(head -n 1 "$dir/cc.err")"

bench_payload_file
input=$BENCH_PAYLOAD

bench_port NATS_PORT
url="nats://127.0.0.1:$NATS_PORT"
nats-server -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$dir/server/store" -l "$dir/server/nats.log" \
    > /dev/null 2>&1 &
server=$!
bench_track_server "$server"
bench_wait_listen "$NATS_PORT" "$server" 10 \
    || bench_fail "nats-server did not listen on 127.0.0.1:$NATS_PORT: $(tail -n 1 "$dir/server/nats.log" 2> /dev/null)"

timeout "$TMO" "$dir/nats_js" sub -u "$url" -n "$N" -b "$BATCH" -t "$JS_STORAGE" -i "$TMO" \
    > "$dir/consumer.out" 2> "$dir/consumer.err" &
consumer=$!
bench_track "$consumer"
bench_wait_grep "$dir/consumer.err" '^READY$' "$consumer" 10 \
    || bench_fail "consumer not ready: $(tail -n 1 "$dir/consumer.err")"

t0=$(bench_now_ns)
(
    timeout "$TMO" "$dir/nats_js" pub -u "$url" -m "$PUB_MAXPENDING" < "$input" || exit 1
    bench_now_ns > "$dir/producer.t"
) 2> "$dir/producer.err" &
producer=$!
bench_track "$producer"

# Wait for whichever ends first; a failed publisher ends the run at once.
waiting=("$consumer" "$producer")
while :; do
    fin=
    rc=0
    wait -n -p fin "${waiting[@]}" || rc=$?
    if [[ "$fin" == "$consumer" ]]; then
        t1=$(bench_now_ns)
        consumer_rc=$rc
        break
    elif [[ "$fin" == "$producer" ]]; then
        (( rc == 0 )) || bench_fail "publisher failed (status $rc): $(tail -n 1 "$dir/producer.err" 2> /dev/null)"
        waiting=("$consumer")
    else
        bench_fail "lost track of the clients (wait status $rc)"
    fi
done

(( consumer_rc == 0 )) || bench_fail "consumer ended with status $consumer_rc: $(tail -n 1 "$dir/consumer.err")"
if [[ ${#waiting[@]} -eq 2 ]]; then
    rc=0
    wait "$producer" || rc=$?
    (( rc == 0 )) || bench_fail "publisher failed (status $rc): $(tail -n 1 "$dir/producer.err" 2> /dev/null)"
fi
grep -q "^DONE published=$N\$" "$dir/producer.err" || bench_fail "publisher: $(tail -n 1 "$dir/producer.err")"
grep -q "^DONE received=$N acked=$N\$" "$dir/consumer.err" || bench_fail "consumer: $(tail -n 1 "$dir/consumer.err")"
cmp -s "$dir/consumer.out" "$input" || bench_fail "consumer output differs from the input"

secs=$(bench_secs "$t0" "$t1")
bench_log "publisher had all PubAcks after $(bench_secs "$t0" "$(cat "$dir/producer.t")") s; consumer received all $N and the server applied every ack after $secs s"
bench_result "$secs"
