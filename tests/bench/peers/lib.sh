# shellcheck shell=bash
# Shared helpers for the peer benchmarks in tests/bench/peers/ (mosquitto, Redis
# Streams, NATS JetStream). Source this file; do not execute it.
#
# Knobs (environment):
#   N     messages per run                      (default 1000000)
#   SIZE  payload bytes per message             (default 100; line = SIZE bytes + '\n')
#   WORK  scratch directory                     (default /tmp/gdkit-bench)
#   TMO   timeout in seconds for every client   (default 300)
#
# Contract of every peer script: exactly one line on stdout, one of
#   RESULT <name> <N> <seconds> <msgs_per_s>    exit 0
#   SKIP <name> <reason>                        exit 0 (tool or library missing)
#   FAIL <name> <reason>                        exit 1 (ran, but did not complete)
# Everything else (progress, diagnostics) goes to stderr.

set -euo pipefail

N=${N:-1000000}
SIZE=${SIZE:-100}
WORK=${WORK:-/tmp/gdkit-bench}
TMO=${TMO:-300}
# shellcheck disable=SC2034  # used by the scripts that source this file
PEERS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

BENCH_NAME=${BENCH_NAME:-peer}
BENCH_REPORTED=0
BENCH_PIDS=()      # clients and helper subshells, killed with their descendants
BENCH_SERVERS=()   # servers, stopped after the clients

bench_log() { printf '%s: %s\n' "$BENCH_NAME" "$*" >&2; }

# --- the one stdout line ------------------------------------------------------

bench_result() {   # bench_result SECONDS
    local secs=$1 rate
    rate=$(awk -v n="$N" -v s="$secs" 'BEGIN { if (s <= 0) s = 1e-9; printf "%.0f", n / s }')
    printf 'RESULT %s %s %s %s\n' "$BENCH_NAME" "$N" "$secs" "$rate"
    BENCH_REPORTED=1
}

bench_skip() {     # bench_skip REASON...  (exits 0)
    printf 'SKIP %s %s\n' "$BENCH_NAME" "$*"
    BENCH_REPORTED=1
    exit 0
}

bench_fail() {     # bench_fail REASON...  (exits 1)
    bench_log "FAILED: $*"
    printf 'FAIL %s %s\n' "$BENCH_NAME" "$*"
    BENCH_REPORTED=1
    exit 1
}

# --- input checks, tools ------------------------------------------------------

bench_check_knobs() {
    [[ "$N" =~ ^[1-9][0-9]*$ ]] || bench_fail "N must be a positive integer (got '$N')"
    [[ "$SIZE" =~ ^[1-9][0-9]*$ ]] || bench_fail "SIZE must be a positive integer (got '$SIZE')"
    [[ "$TMO" =~ ^[1-9][0-9]*$ ]] || bench_fail "TMO must be a positive integer (got '$TMO')"
    mkdir -p "$WORK" || bench_fail "cannot create WORK=$WORK"
}

bench_need() {     # bench_need CMD...  -> SKIP naming the first missing command
    local c
    for c in "$@"; do
        command -v "$c" > /dev/null 2>&1 || bench_skip "$c not installed (see tests/bench/peers/install.sh)"
    done
}

# --- clock --------------------------------------------------------------------

bench_now_ns() { date +%s%N; }
bench_secs() {     # bench_secs T0_NS T1_NS -> seconds with 6 decimals
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", (b - a) / 1e9 }'
}

# --- payload ------------------------------------------------------------------

# bench_payload_file: sets BENCH_PAYLOAD to the path of a file of N lines,
# each exactly SIZE bytes followed by '\n'. Each line starts with its zero-padded line number (as
# much of it as fits in SIZE) and is padded with '.'; the file is cached in WORK
# and rebuilt when its size is not N*(SIZE+1).
bench_payload_file() {
    local f="$WORK/payload-$N-$SIZE.txt" want have
    want=$(( N * (SIZE + 1) ))
    have=$(stat -c %s "$f" 2> /dev/null || echo -1)
    if [[ "$have" != "$want" ]]; then
        LC_ALL=C awk -v n="$N" -v s="$SIZE" 'BEGIN {
            w = (s < 10) ? s : 10; m = 1; for (i = 0; i < w; i++) m *= 10
            pad = ""; for (i = w; i < s; i++) pad = pad "."
            fmt = "%0" w "d%s\n"
            for (i = 0; i < n; i++) printf fmt, i % m, pad
        }' > "$f.tmp"
        mv "$f.tmp" "$f"
        have=$(stat -c %s "$f")
        [[ "$have" == "$want" ]] || bench_fail "payload file $f has $have bytes, want $want"
    fi
    # shellcheck disable=SC2034  # read by the caller
    BENCH_PAYLOAD=$f
}

# --- ports --------------------------------------------------------------------

bench_port_listening() {  # true if something listens on TCP PORT
    ss -Hltn "sport = :$1" 2> /dev/null | grep -q .
}

# bench_hold_port VAR: set VAR to a TCP port of 127.0.0.1 that the kernel
# chose and that a sleep of this script keeps bound, with SO_REUSEADDR and
# without listening, until cleanup (a server, stopped after the clients).
# The listener binds it and listens anyway: gdpub (libuv), mosquitto,
# nats-server and redis-server all set SO_REUSEADDR, and Linux lets such
# sockets share a port while neither listens. No other bind or connect on
# the machine is given the port meanwhile, as it could be a port bound,
# closed and bound again: here a subscriber started before its publisher,
# or a server started after other work, would find its port taken. The
# sleep stays in this script's process group (run.sh's timeout(1) ends
# the group) and ends by itself after TMO + 600 s, should nothing stop it.
bench_hold_port() {
    local held
    bench_need python3
    held=$(python3 -c 'import socket, subprocess, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
p = subprocess.Popen(["sleep", sys.argv[1]], pass_fds=[s.fileno()],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(s.getsockname()[1], p.pid)' "$(( TMO + 600 ))") || bench_fail "cannot hold a TCP port of 127.0.0.1"
    bench_track_server "${held#* }"
    printf -v "$1" '%s' "${held% *}"
}

# bench_port VAR: keep $VAR if the environment set it (nothing may listen
# on it), else set VAR to a held port (bench_hold_port).
bench_port() {
    local var=$1 p
    p=${!var:-}
    if [[ -z "$p" ]]; then
        bench_hold_port "$var"
        return 0
    fi
    [[ "$p" =~ ^[1-9][0-9]*$ ]] || bench_fail "$var must be a port number (got '$p')"
    ! bench_port_listening "$p" || bench_fail "$var=$p is already in use"
}

# bench_wait_listen PORT PID [SECONDS=10]: wait (bounded) until something
# listens on 127.0.0.1:PORT; fail early if process PID has died.
bench_wait_listen() {
    local port=$1 pid=$2 secs=${3:-10} end
    end=$(( $(date +%s) + secs ))
    while ! ss -Hltn "src 127.0.0.1 and sport = :$port" 2> /dev/null | grep -q .; do
        kill -0 "$pid" 2> /dev/null || return 1
        (( $(date +%s) < end )) || return 1
        sleep 0.02
    done
}

# bench_wait_grep FILE REGEX PID [SECONDS=10]: wait (bounded) until FILE has a
# line matching the extended REGEX; fail early if process PID has died.
bench_wait_grep() {
    local file=$1 re=$2 pid=$3 secs=${4:-10} end
    end=$(( $(date +%s) + secs ))
    while ! grep -Eqs -- "$re" "$file"; do
        kill -0 "$pid" 2> /dev/null || return 1
        (( $(date +%s) < end )) || return 1
        sleep 0.02
    done
}

# --- process tracking and cleanup -----------------------------------------------

bench_track() { BENCH_PIDS+=("$1"); }
bench_track_server() { BENCH_SERVERS+=("$1"); }

# Descendants of PID (children first listed after their parent), from one ps snapshot.
bench_descendants() {
    ps -e -o pid= -o ppid= 2> /dev/null | awk -v root="$1" '
        { parent[$1] = $2; pids[++n] = $1 }
        END {
            keep[root] = 1
            do {
                added = 0
                for (i = 1; i <= n; i++) {
                    p = pids[i]
                    if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; print p; added = 1 }
                }
            } while (added)
        }'
}

# bench_stop PID...: TERM each PID and its descendants, give them up to 5 s,
# then KILL whatever is left. Only PIDs this script started are ever passed.
bench_stop() {
    local p all=() i
    for p in "$@"; do
        [[ -n "$p" ]] || continue
        kill -0 "$p" 2> /dev/null || continue
        all+=("$p")
        while read -r i; do all+=("$i"); done < <(bench_descendants "$p")
    done
    (( ${#all[@]} )) || return 0
    kill -TERM "${all[@]}" 2> /dev/null || true
    for i in $(seq 1 250); do
        local alive=0
        for p in "${all[@]}"; do kill -0 "$p" 2> /dev/null && { alive=1; break; }; done
        (( alive )) || break
        sleep 0.02
    done
    kill -KILL "${all[@]}" 2> /dev/null || true
    for p in "$@"; do wait "$p" 2> /dev/null || true; done
}

bench_cleanup() {
    local rc=$?
    set +e
    bench_stop "${BENCH_PIDS[@]}"
    bench_stop "${BENCH_SERVERS[@]}"
    if (( ! BENCH_REPORTED )); then
        printf 'FAIL %s exit status %s (see stderr)\n' "$BENCH_NAME" "$rc"
        (( rc )) || rc=1
    fi
    exit "$rc"
}
trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
