#!/bin/sh
# make demo: publish 10,000 blocks to two subscriber pipelines
#   gdsub -c sN.ini | sed -u (uppercase the payload) | gdack -c sN.ini
# with numSubs=2, so every block must be processed by both pipelines
# before gdpub reports ACK; then print the outcome.
set -u
bin=${GDKIT_BIN:?}
N=${N:-10000}
dir=$(mktemp -d "${TMPDIR:-/tmp}/gdkit-demo.XXXXXX")
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
export XDG_RUNTIME_DIR="$dir/run"
mkdir -m 700 "$XDG_RUNTIME_DIR"
cd "$dir" || exit 1

cat > pub.ini <<CONF
# the publisher: two GD subscribers must acknowledge every block; port 0:
# the system picks a free one, which gdpub writes to --port-file
GDpub_port=0
GDpub_numSubs=2
GDpub_timeout=10
CONF
seq -f 'event %g: hello from the demo' 1 "$N" > input.txt
start=$(date +%s%N)
"$bin/gdpub" -c pub.ini --port-file pub.port --wait-ready=30 < input.txt > status.txt 2> pub.err &
pub=$!
pids="$pids $pub"
# the port, once gdpub listens (10 s at most)
i=0
while [ ! -s pub.port ] && [ "$i" -lt 100 ] && kill -0 "$pub" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
[ -s pub.port ] || { echo "gdkit demo: gdpub did not start"; cat pub.err; exit 1; }
port=$(cat pub.port)
for s in 1 2; do
	cat > "s$s.ini" <<CONF
GDsub_pub=127.0.0.1:$port
GDsub_retryInt=0.1
GDsub_maxRetries=100
CONF
	# one pipeline: receive, process (uppercase), acknowledge
	( "$bin/gdsub" -c "s$s.ini" | sed -u 's/\t\(.*\)/\t\U\1/' |
	    "$bin/gdack" -c "s$s.ini" --tee > "out$s.txt" ) 2> "err$s.txt" &
	pids="$pids $!"
done
echo "gdkit demo: publishing $N blocks on 127.0.0.1:$port to two pipelines"
echo "  gdsub -c sN.ini | sed -u (uppercase payload) | gdack -c sN.ini --tee"
wait "$pub"
rc=$?
end=$(date +%s%N)
wait
acks=$(grep -c '^ACK ' status.txt)
nacks=$(grep -c '^NACK ' status.txt)
rejects=$(grep -c '^REJECT ' status.txt)
ms=$(( (end - start) / 1000000 ))
echo
echo "gdpub exit status:     $rc"
echo "status lines:          $(head -n 1 status.txt), then ACK $acks, NACK $nacks, REJECT $rejects"
for s in 1 2; do
	echo "pipeline $s processed:  $(wc -l < "out$s.txt") blocks, e.g. '$(sed -n 2p "out$s.txt")'"
done
echo "time:                  $ms ms from first input to gdpub's exit (including waiting for READY)"
cat pub.err err1.txt err2.txt | grep -v 'attempt 1 of' | sed 's/^/stderr: /'
if [ "$rc" -eq 0 ] && [ "$acks" -eq "$N" ]; then
	echo "OK: every one of $N blocks was processed by both pipelines and ACKed"
else
	echo "FAILED: expected $N ACKs and exit 0"
	exit 1
fi
