#!/usr/bin/env bash
# Peer baseline: core NATS request/reply, one requester -> one responder, every
# message answered by the responder after it wrote the message out: the NATS
# pattern in which the publisher learns that the subscriber handled each
# message, the guarantee gdkit gives (row gdkit_nats, same client code).
# JetStream (row nats_jetstream) answers another question: its PubAck says
# the server stored the message, and the consumer's ack goes to the server,
# never to the publisher.
#
# A private nats-server on 127.0.0.1 (free port, or NATS_PORT), core NATS (no
# -js). nats_rr.py rep subscribes and says READY; then the clock starts and
# nats_rr.py req sends the N lines, at most RR_WINDOW unanswered at once (a
# pipelined requester, one reply subject per request under one wildcard inbox).
# Time: first request -> the last reply. The responder's output must equal the
# input (cmp).
#
# Env: N SIZE WORK TMO (see lib.sh), NATS_PORT (default: a free port),
#      RR_WINDOW (default 1000).
# Stdout: RESULT nats_reqreply <N> <seconds> <msgs_per_s> window=<w> | SKIP | FAIL
BENCH_NAME=nats_reqreply
# shellcheck source=tests/bench/peers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RR_WINDOW=${RR_WINDOW:-1000}
bench_need nats-server python3 ss timeout cmp
bench_check_knobs
[[ "$RR_WINDOW" =~ ^[1-9][0-9]*$ ]] || bench_fail "RR_WINDOW must be a positive integer (got '$RR_WINDOW')"

dir="$WORK/nats_rr"
rm -rf "$dir"
mkdir -p "$dir"
bench_payload_file
bench_port NATS_PORT
url="nats://127.0.0.1:$NATS_PORT"
nats-server -a 127.0.0.1 -p "$NATS_PORT" -l "$dir/nats.log" > /dev/null 2>&1 &
server=$!
bench_track_server "$server"
bench_wait_listen "$NATS_PORT" "$server" 10 \
    || bench_fail "nats-server did not listen on 127.0.0.1:$NATS_PORT: $(tail -n 1 "$dir/nats.log" 2> /dev/null)"

timeout "$TMO" python3 "$PEERS_DIR/nats_rr.py" -s "$url" rep gdkit.bench \
    > "$dir/responder.out" 2> "$dir/responder.err" &
responder=$!
bench_track "$responder"
bench_wait_grep "$dir/responder.err" '^READY$' "$responder" 10 \
    || bench_fail "responder not ready: $(tail -n 1 "$dir/responder.err")"

t0=$(bench_now_ns)
timeout "$TMO" python3 "$PEERS_DIR/nats_rr.py" -s "$url" req gdkit.bench -w "$RR_WINDOW" \
    < "$BENCH_PAYLOAD" 2> "$dir/requester.err" \
    || bench_fail "requester failed: $(tail -n 1 "$dir/requester.err")"
t1=$(bench_now_ns)
grep -q "^DONE requests=$N replies=$N\$" "$dir/requester.err" || bench_fail "requester: $(tail -n 1 "$dir/requester.err")"
cmp -s "$dir/responder.out" "$BENCH_PAYLOAD" || bench_fail "responder output differs from the input"

secs=$(bench_secs "$t0" "$t1")
bench_log "$N requests answered in $secs s (window $RR_WINDOW)"
rate=$(awk -v n="$N" -v s="$secs" 'BEGIN { if (s <= 0) s = 1e-9; printf "%.0f", n / s }')
printf 'RESULT %s %s %s %s window=%s\n' "$BENCH_NAME" "$N" "$secs" "$rate" "$RR_WINDOW"
BENCH_REPORTED=1
