#!/bin/sh
# Make sure the Debian packages gdkit needs are installed. As root, install
# what is missing (apt-get update first when the package lists are empty or
# older than a day); otherwise print the exact command and fail.
#   deps.sh build   packages needed to compile
#   deps.sh check   packages needed to run the tests
#   deps.sh clang   clang and its sanitizer and libFuzzer runtimes (make
#                   fuzz; make SANITIZE=1 unless CC is named)
set -u
case "${1:-build}" in
build) pkgs="gcc make pkg-config libuv1-dev libinih-dev libssl-dev" ;;
check) pkgs="bats bats-support bats-assert mandoc python3 python3-prometheus-client systemd openssl socat mosquitto mosquitto-clients nats-server kcat" ;;
clang) pkgs="clang libclang-rt-dev" ;;
*) echo "deps.sh: unknown set '$1'" >&2; exit 64 ;;
esac

missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "gdkit: missing Debian packages:$missing" >&2
	echo "gdkit: install them with: sudo apt-get install -y$missing" >&2
	exit 1
fi
lists=/var/lib/apt/lists
if [ -z "$(find "$lists" -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -n 1)" ]; then
	echo "gdkit: apt-get update" >&2
	apt-get update -qq || { echo "gdkit: apt-get update failed" >&2; exit 1; }
fi
echo "gdkit: apt-get install -y$missing" >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >&2 ||
	{ echo "gdkit: apt-get install failed for:$missing" >&2; exit 1; }
