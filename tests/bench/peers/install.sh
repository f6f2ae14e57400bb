#!/usr/bin/env bash
# Installs what the peer benchmarks in tests/bench/peers/ need, from Debian
# packages: mosquitto mosquitto-clients redis-server libhiredis-dev pkg-config,
# and nats-server libnats-dev where the package lists offer them.
# As root: runs apt-get update when the package lists are missing or older than
# a day, then apt-get install of whatever is not installed yet.
# Not root: prints the apt-get command to run and exits 0 (the peer scripts
# then print SKIP for what is missing).
# No service is started or enabled by this script; the benchmarks start their
# own servers on 127.0.0.1.
set -euo pipefail

required=(mosquitto mosquitto-clients redis-server libhiredis-dev pkg-config)
optional=(nats-server libnats-dev)

installed() { dpkg-query -W -f='${Status}' "$1" 2> /dev/null | grep -q 'install ok installed'; }
available() {
    local cand
    cand=$(apt-cache policy "$1" 2> /dev/null | awk '/Candidate:/ { print $2; exit }')
    [[ -n "$cand" && "$cand" != "(none)" ]]
}

if (( EUID != 0 )); then
    echo "not root; to install the peer benchmark packages run as root:"
    echo "  apt-get update && apt-get install -y ${required[*]} ${optional[*]}"
    echo "(nats-server and libnats-dev are optional; peers whose packages are missing print SKIP)"
    exit 0
fi

if ! command -v apt-get > /dev/null 2>&1; then
    echo "install.sh: apt-get not found; install by hand: ${required[*]} ${optional[*]}" >&2
    exit 0
fi

lists=/var/lib/apt/lists
if [[ -z "$(find "$lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 -print -quit 2> /dev/null)" ]]; then
    echo "install.sh: apt-get update (package lists missing or older than a day)" >&2
    apt-get update -q
fi

missing=()
for p in "${required[@]}"; do
    installed "$p" || missing+=("$p")
done
for p in "${optional[@]}"; do
    installed "$p" && continue
    if available "$p"; then
        missing+=("$p")
    else
        echo "install.sh: $p is not offered by the package lists; its peer will SKIP" >&2
    fi
done

if (( ${#missing[@]} == 0 )); then
    echo "install.sh: all peer benchmark packages are installed" >&2
    exit 0
fi
echo "install.sh: apt-get install ${missing[*]}" >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
