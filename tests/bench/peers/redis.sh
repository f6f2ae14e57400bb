#!/usr/bin/env bash
# Peer baseline: Redis Streams with a consumer group, one producer -> one
# consumer, every entry acknowledged (XACK), end to end.
#
# Starts a private redis-server on 127.0.0.1 (free port, or REDIS_PORT) with no
# persistence (no RDB, no AOF). Builds redis_consumer.c (hiredis) into WORK. The
# consumer creates the group and says READY; then the clock starts and the
# producer sends N pipelined "XADD key * p <line>" with redis-cli --pipe. Time:
# producer start -> consumer has read N entries and its XACK replies add up to N.
# The consumer's output must equal the input (cmp) and redis-cli must report
# "errors: 0, replies: N".
#
# Env: N SIZE WORK TMO (see lib.sh), REDIS_PORT (default: a free port),
#      BATCH (XREADGROUP COUNT, default 1000), CC (default cc).
# Stdout: RESULT redis_streams <N> <seconds> <msgs_per_s> | SKIP ... | FAIL ...
BENCH_NAME=redis_streams
# shellcheck source=tests/bench/peers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CC=${CC:-cc}
BATCH=${BATCH:-1000}
bench_need redis-server redis-cli "$CC" pkg-config ss timeout cmp
pkg-config --exists hiredis || bench_skip "hiredis development files not installed (libhiredis-dev)"
bench_check_knobs
[[ "$BATCH" =~ ^[1-9][0-9]*$ ]] || bench_fail "BATCH must be a positive integer (got '$BATCH')"

dir="$WORK/redis"
rm -rf "$dir"
mkdir -p "$dir/server"

# shellcheck disable=SC2046  # pkg-config output is meant to be split into words
"$CC" -O2 -Wall -o "$dir/redis_consumer" "$PEERS_DIR/redis_consumer.c" $(pkg-config --cflags --libs hiredis) \
    2> "$dir/cc.err" || bench_fail "cannot build redis_consumer: $(head -n 1 "$dir/cc.err")"

bench_payload_file
input=$BENCH_PAYLOAD
key="gdkit:bench"
# The producer's input: one RESP-encoded "XADD <key> * p <line>" per payload line.
LC_ALL=C awk -v key="$key" '
    BEGIN { head = sprintf("*5\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n$1\r\n*\r\n$1\r\np\r\n", length(key), key) }
    { printf "%s$%d\r\n%s\r\n", head, length($0), $0 }' "$input" > "$dir/xadd.resp"

bench_port REDIS_PORT
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --protected-mode yes --save '' --appendonly no \
    --dir "$dir/server" --logfile "$dir/server/redis.log" --daemonize no > /dev/null 2>&1 &
server=$!
bench_track_server "$server"
bench_wait_listen "$REDIS_PORT" "$server" 10 \
    || bench_fail "redis-server did not listen on 127.0.0.1:$REDIS_PORT: $(tail -n 1 "$dir/server/redis.log" 2> /dev/null)"

timeout "$TMO" "$dir/redis_consumer" -p "$REDIS_PORT" -k "$key" -n "$N" -b "$BATCH" -i "$TMO" \
    > "$dir/consumer.out" 2> "$dir/consumer.err" &
consumer=$!
bench_track "$consumer"
bench_wait_grep "$dir/consumer.err" '^READY$' "$consumer" 10 \
    || bench_fail "consumer not ready: $(tail -n 1 "$dir/consumer.err")"

t0=$(bench_now_ns)
(
    timeout "$TMO" redis-cli -h 127.0.0.1 -p "$REDIS_PORT" --pipe < "$dir/xadd.resp" > "$dir/producer.out" || exit 1
    bench_now_ns > "$dir/producer.t"
) 2> "$dir/producer.err" &
producer=$!
bench_track "$producer"

# Wait for whichever ends first; a failed producer ends the run at once.
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
        (( rc == 0 )) || bench_fail "redis-cli --pipe failed (status $rc): $(tail -n 1 "$dir/producer.out" 2> /dev/null)"
        waiting=("$consumer")
    else
        bench_fail "lost track of the clients (wait status $rc)"
    fi
done

(( consumer_rc == 0 )) || bench_fail "consumer ended with status $consumer_rc: $(tail -n 1 "$dir/consumer.err")"
if [[ ${#waiting[@]} -eq 2 ]]; then
    rc=0
    wait "$producer" || rc=$?
    (( rc == 0 )) || bench_fail "redis-cli --pipe failed (status $rc)"
fi
grep -q "^errors: 0, replies: $N\$" "$dir/producer.out" \
    || bench_fail "producer: $(tail -n 1 "$dir/producer.out")"
grep -q "^DONE read=$N acked=$N\$" "$dir/consumer.err" \
    || bench_fail "consumer: $(tail -n 1 "$dir/consumer.err")"
cmp -s "$dir/consumer.out" "$input" || bench_fail "consumer output differs from the input"

secs=$(bench_secs "$t0" "$t1")
bench_log "producer had all XADD replies after $(bench_secs "$t0" "$(cat "$dir/producer.t")") s; consumer read and acked all $N after $secs s"
bench_result "$secs"
