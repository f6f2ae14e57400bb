#!/usr/bin/env bash
# gdkit through NATS: the armored stream on core NATS (at-most-once), one
# publisher -> one subscriber pipeline, every block acknowledged to gdpub over
# TCP; the gdkit(7) NATS recipe, with tests/engines/natsline.py for the nats
# CLI (Debian does not package it). The row to read beside nats_reqreply
# (core NATS request/reply, the same client code: the NATS way to learn that
# the subscriber handled each message) and nats_jetstream, same run:
#
#   gdpub -n 1 -t 10 --resend 5 -o - --armor < payload | natsline.py pub SUBJ
#   natsline.py sub SUBJ | gdsub -i - | gdack
#
# A private nats-server on 127.0.0.1 (free port, or NATS_PORT), no -js. The
# subscriber pipeline starts first; natsline says it is subscribed before
# gdpub is started, and gdpub waits for READY (gdsub's acknowledgement
# connection). Time: gdpub started -> gdpub exited with every block ACKed.
# Checks: N ACK lines, N distinct keys acknowledged; lines and frames as
# gdinspect stats counts them (gdpub's default armoring, whatever it is).
#
# Env: N SIZE WORK TMO (see lib.sh), NATS_PORT (default: a free port),
#      GDKIT_BIN (directory of gdpub gdsub gdack gdinspect), TIMEOUT (gdpub -t,
#      default 10).
# Stdout: RESULT gdkit_nats <N> <seconds> <blocks_per_s> resent=<n> lines=<n> | SKIP | FAIL
BENCH_NAME=gdkit_nats
# shellcheck source=tests/bench/peers/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_need nats-server python3 ss timeout
bench_check_knobs
BIN=${GDKIT_BIN:-}
[[ -n "$BIN" && -x "$BIN/gdpub" && -x "$BIN/gdsub" && -x "$BIN/gdack" && -x "$BIN/gdinspect" ]] ||
    bench_fail "GDKIT_BIN must name the directory of gdpub, gdsub, gdack and gdinspect (got '$BIN')"
TIMEOUT=${TIMEOUT:-10}
natsline="$PEERS_DIR/../../engines/natsline.py"
[[ -r "$natsline" ]] || bench_fail "$natsline not found"

bench_payload_file
bench_port NATS_PORT
bench_hold_port GD_PORT	# gdsub is started before gdpub

dir="$WORK/nats_gdkit"
rm -rf "$dir"
mkdir -p "$dir"
url="nats://127.0.0.1:$NATS_PORT"
nats-server -a 127.0.0.1 -p "$NATS_PORT" -l "$dir/nats.log" > /dev/null 2>&1 &
server=$!
bench_track_server "$server"
bench_wait_listen "$NATS_PORT" "$server" 10 \
    || bench_fail "nats-server did not listen on 127.0.0.1:$NATS_PORT: $(tail -n 1 "$dir/nats.log" 2> /dev/null)"

subject="gdkit.bench.armor.$$"
pub=127.0.0.1:$GD_PORT
export XDG_RUNTIME_DIR="$dir/run"
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
mkfifo "$dir/lines.fifo"
# no timeout(1) around gdsub and gdack: one holding gdack's input open keeps
# gdsub waiting --linger (10 s) at its end (run.sh bounds the scenario)
( "$BIN/gdsub" -i "$dir/lines.fifo" -P "$pub" --name bench \
      --retry-interval 0.05 --max-retries 400 2> "$dir/sub.err" |
  "$BIN/gdack" -P "$pub" --name bench --tee 2> "$dir/ack.err" |
  cut -f1 > "$dir/keys" ) &
subpipe=$!
bench_track "$subpipe"
timeout "$TMO" python3 "$natsline" -s "$url" sub "$subject" --raw > "$dir/lines.fifo" 2> "$dir/nsub.err" &
nsub=$!
bench_track "$nsub"
bench_wait_grep "$dir/nsub.err" "^natsline: subscribed to $subject\$" "$nsub" 10 \
    || bench_fail "subscriber did not subscribe within 10 s: $(tail -n 1 "$dir/nsub.err")"

t0=$(bench_now_ns)
rc=0
timeout "$TMO" "$BIN/gdpub" -p "$GD_PORT" -n 1 -t "$TIMEOUT" --resend 5 --wait-ready=30 \
    -o - --armor --status "$dir/pub.st" < "$BENCH_PAYLOAD" 2> "$dir/pub.err" |
    timeout "$TMO" python3 "$natsline" -s "$url" pub "$subject" --send-on newline \
        2> "$dir/npub.err" || rc=$?
t1=$(bench_now_ns)
(( rc == 0 )) || bench_fail "gdpub | natsline pub failed (status $rc): $(tail -n 1 "$dir/pub.err" "$dir/npub.err" 2> /dev/null | tr '\n' ' ')"
acks=$(grep -c '^ACK ' "$dir/pub.st" || true)
(( acks == N )) || bench_fail "$acks of $N blocks ACKed"

stats=$("$BIN/gdinspect" --ctl "$(compgen -G "$XDG_RUNTIME_DIR/gdkit/sub-*.sock" | head -n 1)" --json stats 2> /dev/null || true)
lines=$(sed -n 's/.*"lines":\([0-9]*\).*/\1/p' <<< "$stats")
# natsline sub's end ends gdsub's input: it exits once its blocks are acked
kill -TERM "$nsub" 2> /dev/null || true
wait "$subpipe" || bench_fail "the subscriber pipeline failed: $(tail -n 1 "$dir/sub.err" "$dir/ack.err" | tr '\n' ' ')"
uniq=$(sed 's,/r$,,' "$dir/keys" | sort -u | wc -l)
(( uniq == N )) || bench_fail "$uniq distinct keys acknowledged of $N"
resent=$(grep -c '/r$' "$dir/keys" || true)

secs=$(bench_secs "$t0" "$t1")
bench_log "$N blocks through core NATS all ACKed in $secs s ($resent came resent; gdsub read ${lines:-?} lines)"
rate=$(awk -v n="$N" -v s="$secs" 'BEGIN { if (s <= 0) s = 1e-9; printf "%.0f", n / s }')
printf 'RESULT %s %s %s %s resent=%s lines=%s\n' "$BENCH_NAME" "$N" "$secs" "$rate" "$resent" "${lines:--1}"
BENCH_REPORTED=1
