# Shared bats helpers: programs from $GDKIT_BIN, a private control socket
# directory per test, free ports, bounded waits, and cleanup of every
# process a test started (each in its own process group).
GDKIT_BIN=${GDKIT_BIN:-$BATS_TEST_DIRNAME/../../bin}
PATH="$GDKIT_BIN:$PATH"
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

setup() {
	export XDG_RUNTIME_DIR="$BATS_TEST_TMPDIR/run"
	mkdir -p -m 700 "$XDG_RUNTIME_DIR"
	cd "$BATS_TEST_TMPDIR" || return 1
	BG_PIDS=()
}

teardown() {
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
	done
	return 0
}

# free_port: print a TCP port nobody listens on
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# spawn CMD: run the shell command line CMD in the background, in its own
# process group, without bats' fd 3; $! is saved for teardown. Sets SPAWNED.
spawn() {
	setsid bash -c "$1" 3>&- &
	SPAWNED=$!
	BG_PIDS+=("$SPAWNED")
}

# wait_until SECONDS CMD...: run CMD every 50 ms until it succeeds; fail
# after SECONDS.
wait_until() {
	local limit=$1 i=0 n
	shift
	n=$(awk -v s="$limit" 'BEGIN { printf "%d", s * 20 }')
	while ! "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -ge "$n" ]; then
			echo "timed out after ${limit}s waiting for: $*" >&2
			return 1
		fi
		sleep 0.05
	done
}

# wait_pid SECONDS PID: wait for PID to exit within SECONDS, print its status
wait_pid() {
	wait_until "$1" bash -c "! kill -0 $2 2>/dev/null" || return 1
	wait "$2"
}

# listening PORT: true when something listens on 127.0.0.1:PORT
listening() {
	ss -Hltn "sport = :$1" | grep -q .
}

# has_line FILE REGEX: true when FILE has a line matching REGEX
has_line() {
	grep -Eq -- "$2" "$1" 2>/dev/null
}

# count_lines FILE REGEX
count_lines() {
	grep -Ec -- "$2" "$1" 2>/dev/null || true
}
