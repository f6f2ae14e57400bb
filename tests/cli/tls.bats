#!/usr/bin/env bats
# TLS on the gdpub <-> gdsub TCP connection: GDpub_tlsCert/_tlsKey/_tlsCA,
# GDsub_tlsCA/_tlsCert/_tlsKey. The certificates are made here, once per
# file, by the openssl command: no private key is committed.
load helpers
bats_require_minimum_version 1.5.0

RELAY=$BATS_TEST_DIRNAME/../faults/relay.py

# mkcert NAME CA EXT [X509-OPTS...]: NAME.key (P-256) and NAME.pem, signed
# by CA.pem/CA.key, with the extension lines EXT
mkcert() {
	local name=$1 ca=$2 ext=$3
	shift 3
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$name.key" -out "$name.csr" -subj "/CN=$name" 2>/dev/null &&
	printf '%s\n' "$ext" > "$name.ext" &&
	openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" \
	    -set_serial "$RANDOM$RANDOM" -out "$name.pem" -extfile "$name.ext" \
	    "$@" 2>/dev/null
}

setup_file() {
	local d="$BATS_FILE_TMPDIR/pki" ca
	mkdir -p "$d"
	cd "$d" || return 1
	for ca in ca other; do
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		    -nodes -keyout "$ca.key" -out "$ca.pem" -days 30 \
		    -subj "/CN=gdkit test $ca" 2>/dev/null || return 1
	done
	mkcert srv ca "subjectAltName=DNS:localhost,IP:127.0.0.1" -days 30 &&
	# the same names, but expired yesterday (openssl 3.0: -days -1)
	mkcert expired ca "subjectAltName=DNS:localhost,IP:127.0.0.1" -days -1 &&
	mkcert elsewhere ca "subjectAltName=DNS:elsewhere.example" -days 30 &&
	mkcert client ca "basicConstraints=CA:FALSE" -days 30 &&
	mkcert stranger other "basicConstraints=CA:FALSE" -days 30 &&
	chmod 600 ./*.key
}

# the helpers' setup() runs for each test; these are read by the tests
PKI="$BATS_FILE_TMPDIR/pki"
SRV="--tls-cert $PKI/srv.pem --tls-key $PKI/srv.key"

# pub_with OPTS...: a gdpub -n 1 on port 0 that keeps running (its input
# stays open), stderr in pub.err; wait until it listens, set port
pub_with() {
	spawn "sleep 120 | gdpub -p 0 --port-file pub.port -n 1 $* > pub.out 2> pub.err"
	port=$(port_of pub.port)
}

# sub_refused PORT CODE WHY SUB-OPTS...: a gdsub that could try 10 times
# gives up on the gdpub on PORT at once, exit CODE, with one line
sub_refused() {
	local port=$1 code=$2 why=$3
	shift 3
	expect_fail "$code" "$why" -- gdsub -P "127.0.0.1:$port" --name s1 \
	    --retry-interval 0.05 --max-retries 10 "$@"
}

# pub_said REGEX: the gdpub's stderr has (within 10 s) one line, matching
pub_said() {
	wait_until 10 has_line pub.err "$1"
	[ "$(wc -l < pub.err)" -eq 1 ]
}

@test "the right CA: 1,000 blocks over TLS reach a GD pipeline, all ACKed" {
	seq 1 1000 > in.txt
	pub_bg --separate-stderr timeout 60 gdpub -p 0 --port-file pub.port -n 1 $SRV \
	    --wait-ready=30 < in.txt
	sub_conf s.ini "$port" "GDsub_tlsCA=$PKI/ca.pem"
	ack_pipeline s
	pub_wait
	assert_success
	[ "$(grep -c '^ACK ' <<<"$output")" -eq 1000 ]
	run ! grep -q NACK <<<"$output"
	[ -z "$stderr" ]
	wait_until 20 test -s s.rc
	[ "$(cat s.rc)" = "0 0" ]
	cut -f2- s.out | cmp - in.txt
}

@test "a BYE that comes with TLS's close_notify in one read counts: gdpub sees the subscriber unsubscribe, not lose it" {
	spawn "sleep 120 | exec gdpub -p 0 --port-file pub.port -n 1 $SRV -v > pub.out 2> pub.err"
	pub=$SPAWNED
	port=$(port_of pub.port)
	spawn "exec gdsub -P 127.0.0.1:$port --tls-ca $PKI/ca.pem > s.out 2> s.err"
	sub=$SPAWNED
	wait_until 20 has_line pub.err "connected: GD slot 0"
	# gdpub stopped, gdsub's BYE, close_notify and FIN wait in the
	# socket together; gdpub then reads them at once
	pkill -STOP -g "$pub" -x gdpub
	kill -TERM "$sub"
	wait_until 20 bash -c "! kill -0 $sub 2>/dev/null"
	pkill -CONT -g "$pub" -x gdpub
	wait_until 20 has_line pub.err "disconnected"
	has_line pub.err "disconnected: unsubscribed[;]"
	run ! grep -q "disconnected: connection closed" pub.err
	kill -0 "$pub"	# still serving
}

@test "TLS with the pre-shared key too, from config files: both prove it, blocks ACKed" {
	head -c 32 /dev/urandom | base64 > k
	chmod 600 k
	printf 'GDpub_port=0\nGDpub_numSubs=1\nGDpub_authKeyFile=k\nGDpub_tlsCert=%s\nGDpub_tlsKey=%s\n' \
	    "$PKI/srv.pem" "$PKI/srv.key" > p.ini
	seq 1 5 > in.txt
	pub_bg --separate-stderr timeout 30 gdpub -c p.ini --port-file pub.port --wait-ready=20 < in.txt
	sub_conf s.ini "$port" "GDsub_authKeyFile=k" "GDsub_tlsCA=$PKI/ca.pem"
	ack_pipeline s
	pub_wait
	assert_success
	assert_output "$(printf 'READY\nACK 1\nACK 2\nACK 3\nACK 4\nACK 5')"
	wait_until 20 test -s s.rc
	[ "$(cat s.rc)" = "0 0" ]
}

@test "stream mode: gdsub -i's acknowledgement connection goes over TLS too" {
	printf 'GDpub_port=0\nGDpub_numSubs=1\nGDpub_tlsCert=%s\nGDpub_tlsKey=%s\n' \
	    "$PKI/srv.pem" "$PKI/srv.key" > p.ini
	# GDsub_pub: -P, once gdpub has its port
	printf 'GDsub_retryInt=0.05\nGDsub_maxRetries=200\nGDsub_tlsCA=%s\n' "$PKI/ca.pem" > s.ini
	seq 1 3 > in.txt
	run --separate-stderr timeout 30 bash -c "gdpub -c p.ini --port-file pub.port -o - --status pub.out < in.txt | gdsub -c s.ini -P 127.0.0.1:$(port_sh pub.port) -i - | gdack -c s.ini; echo \${PIPESTATUS[*]}"
	assert_success
	assert_output "0 0 0"
	[ "$(cat pub.out)" = "$(printf 'READY\nACK 1\nACK 2\nACK 3')" ]
}

@test "a wrong CA at gdsub: it refuses the publisher at once (77), gdpub says why" {
	pub_with $SRV
	sub_refused "$port" 77 "gdsub: cannot connect to 127.0.0.1:$port: TLS handshake failed: certificate verify failed: unable to get local issuer certificate; giving up at once: retrying cannot help" \
	    --tls-ca "$PKI/other.pem"
	pub_said "^gdpub: TLS handshake with 127\.0\.0\.1:[0-9]+ failed: tlsv1 alert unknown ca \(the subscriber refused this gdpub's certificate: see its log\); closing the connection$"
	# counted where gdinspect stats shows it
	timeout 10 gdinspect -p "$port" --json stats | grep -q '"tls_refused":1[,}]'
}

@test "a wrong CA at gdpub (mutual TLS): a client certificate it did not sign is refused, 77" {
	pub_with $SRV --tls-ca "$PKI/ca.pem"
	sub_refused "$port" 77 "gdsub: cannot connect to 127.0.0.1:$port: TLS handshake failed: tlsv1 alert unknown ca (the publisher refused it: see its log); giving up at once: retrying cannot help" \
	    --tls-ca "$PKI/ca.pem" --tls-cert "$PKI/stranger.pem" --tls-key "$PKI/stranger.key"
	pub_said "^gdpub: TLS handshake with 127\.0\.0\.1:[0-9]+ failed: certificate verify failed: unable to get local issuer certificate; closing the connection$"
}

@test "an expired certificate is refused: 77, and the reason on both sides" {
	pub_with --tls-cert "$PKI/expired.pem" --tls-key "$PKI/expired.key"
	sub_refused "$port" 77 "gdsub: cannot connect to 127.0.0.1:$port: TLS handshake failed: certificate verify failed: certificate has expired; giving up at once: retrying cannot help" \
	    --tls-ca "$PKI/ca.pem"
	pub_said "failed: sslv3 alert certificate expired \(the subscriber refused"
}

@test "the host name of GDsub_pub must be in the certificate: localhost is, 127.0.0.1 is not in elsewhere's" {
	pub_with --tls-cert "$PKI/elsewhere.pem" --tls-key "$PKI/elsewhere.key"
	sub_refused "$port" 77 "gdsub: cannot connect to 127.0.0.1:$port: TLS handshake failed: certificate verify failed: IP address mismatch; giving up at once: retrying cannot help" \
	    --tls-ca "$PKI/ca.pem"
	expect_fail 77 "gdsub: cannot connect to localhost:$port: TLS handshake failed: certificate verify failed: hostname mismatch; giving up at once: retrying cannot help" \
	    -- gdsub -P "localhost:$port" --tls-ca "$PKI/ca.pem" --max-retries 10
	# and a name that the certificate has is accepted
	spawn "sleep 120 | gdpub -p 0 --port-file pub2.port -n 0 $SRV > pub2.out 2> pub2.err"
	port2=$(port_of pub2.port)
	spawn "gdsub -P localhost:$port2 --tls-ca $PKI/ca.pem -v > s2.out 2> s2.err"
	wait_until 10 has_line s2.err "connected to publisher localhost:$port2"
	has_line s2.err "publisher localhost:$port2: TLSv1\.3 "
}

@test "a plain gdsub at a TLS gdpub: refused in words on both sides, 78" {
	pub_with $SRV
	sub_refused "$port" 78 "gdsub: publisher 127.0.0.1:$port refused the subscription: this publisher speaks TLS only (GDpub_tlsCert): give gdsub GDsub_tlsCA (--tls-ca) with the CA of its certificate"
	pub_said "^gdpub: refused connection from 127\.0\.0\.1:[0-9]+: it speaks plain gdkit, and this gdpub requires TLS \(GDpub_tlsCert\); a gdsub needs GDsub_tlsCA$"
}

@test "a TLS gdsub at a plain gdpub: a TLS alert, 77, and gdpub names the cause" {
	pub_with
	sub_refused "$port" 77 "gdsub: cannot connect to 127.0.0.1:$port: TLS handshake failed: sslv3 alert handshake failure (the publisher refused it: see its log); giving up at once: retrying cannot help" \
	    --tls-ca "$PKI/ca.pem"
	pub_said "^gdpub: refused connection from 127\.0\.0\.1:[0-9]+: it speaks TLS, and this gdpub has no certificate \(GDpub_tlsCert, GDpub_tlsKey\)$"
}

@test "mutual TLS: a gdsub without a certificate is refused (77); with one it is served, gdinspect subs shows TLS at both ends" {
	pub_with $SRV --tls-ca "$PKI/ca.pem"
	sub_refused "$port" 77 "gdsub: cannot connect to 127.0.0.1:$port: TLS handshake failed: tlsv13 alert certificate required (the publisher refused it: see its log); giving up at once: retrying cannot help" \
	    --tls-ca "$PKI/ca.pem"
	pub_said "^gdpub: TLS handshake with 127\.0\.0\.1:[0-9]+ failed: peer did not return a certificate; closing the connection$"
	sub_conf s.ini "$port" "GDsub_tlsCA=$PKI/ca.pem" \
	    "GDsub_tlsCert=$PKI/client.pem" "GDsub_tlsKey=$PKI/client.key"
	spawn "gdsub -c s.ini > s.out 2> s.err"
	wait_until 20 bash -c "gdinspect -p $port --json subs | grep -q '\"state\":\"online\\|\"state\":\"subscribed\\|\"state\":\"active'"
	run --separate-stderr timeout 20 gdinspect -p "$port" --json subs
	assert_success
	python -c '
import json, re, sys
d = json.loads(sys.stdin.read())
assert re.fullmatch(r"TLSv1\.3 TLS_\S+ /CN=client", d["tls"]), d
' <<<"$output"
	run --separate-stderr timeout 20 gdinspect -c s.ini --json subs
	assert_success
	python -c '
import json, re, sys
d = json.loads(sys.stdin.read())
assert re.fullmatch(r"TLSv1\.3 TLS_\S+ /CN=srv", d["tls"]), d
' <<<"$output"
}

@test "plain TCP shows no TLS in gdinspect subs (a dash)" {
	pub_with
	sub_conf s.ini "$port"
	spawn "gdsub -c s.ini > s.out 2> s.err"
	wait_until 20 bash -c "gdinspect -p $port --json subs | grep -q '\"tls\":\"-\"'"
	run --separate-stderr timeout 20 gdinspect -c s.ini --json subs
	assert_success
	assert_output --partial '"tls":"-"'
}

@test "openssl s_client sees TLS 1.3 on gdpub's port; TLS 1.2 only with GDpub_tlsMinVersion=1.2" {
	pub_with $SRV
	run timeout 20 openssl s_client -connect "127.0.0.1:$port" -CAfile "$PKI/ca.pem" -verify_return_error </dev/null
	assert_output --partial "New, TLSv1.3, Cipher is TLS_"
	assert_output --partial "Verify return code: 0 (ok)"
	run timeout 20 openssl s_client -connect "127.0.0.1:$port" -tls1_2 </dev/null
	refute_output --partial "New, TLSv1.2"
	wait_until 10 has_line pub.err "failed: unsupported protocol"
	spawn "sleep 120 | gdpub -p 0 --port-file pub2.port -n 1 $SRV --tls-min-version 1.2 > pub2.out 2> pub2.err"
	port2=$(port_of pub2.port)
	run timeout 20 openssl s_client -connect "127.0.0.1:$port2" -tls1_2 -CAfile "$PKI/ca.pem" </dev/null
	assert_output --partial "New, TLSv1.2, Cipher is "
}

@test "on the wire: the payload in clear over plain TCP, never over TLS (relay.py --record)" {
	payload="secret-payload-$RANDOM$RANDOM"
	for mode in plain tls; do
		opts=
		[ "$mode" = plain ] || opts=$SRV
		for i in 1 2 3; do echo "$payload-$i"; done > in.txt
		pub_bg --separate-stderr timeout 30 gdpub -p 0 --port-file pub.port -n 1 $opts --wait-ready=20 < in.txt
		rm -f relay.port
		spawn "exec python $RELAY 0 127.0.0.1:$port --port-file relay.port --record wire.$mode > /dev/null 2> relay.$mode.err"
		wait_until 10 test -s relay.port
		rport=$(cat relay.port)
		if [ "$mode" = tls ]; then
			sub_conf s.ini "$rport" "GDsub_tlsCA=$PKI/ca.pem"
		else
			sub_conf s.ini "$rport"
		fi
		rm -f s.rc
		ack_pipeline s
		pub_wait
		assert_success
		assert_output "$(printf 'READY\nACK 1\nACK 2\nACK 3')"
		wait_until 20 test -s s.rc
		[ "$(cat s.rc)" = "0 0" ]
		grep -q "$payload" s.out
	done
	# the recorder sees the payload when there is one to see
	grep -aq "$payload" wire.plain
	[ -s wire.tls ]
	run ! grep -aq "$payload" wire.tls
	run ! grep -aq "secret-payload" wire.tls
}

@test "a certificate that cannot be read: 64 for an option, 78 with its config file's line" {
	hold_port port
	expect_usage gdpub "invalid value 'nope.pem' for --tls-cert: cannot read the certificate 'nope.pem': No such file or directory" \
	    -- gdpub -p "$port" --tls-cert nope.pem --tls-key "$PKI/srv.key"
	echo "not a certificate" > bad.pem
	expect_usage gdsub "invalid value 'bad.pem' for --tls-ca: cannot read the CA certificate 'bad.pem': no start line" \
	    -- gdsub -P "127.0.0.1:$port" --tls-ca bad.pem
	expect_usage gdpub "invalid value 'bad.pem' for --tls-key: cannot read the private key 'bad.pem': no PEM private key in it (unsupported)" \
	    -- gdpub -p "$port" --tls-cert "$PKI/srv.pem" --tls-key bad.pem
	printf 'GDpub_port=%s\nGDpub_tlsCert=nope.pem\n' "$port" > p.ini
	expect_fail 78 "gdpub: p.ini:2: GDpub_tlsCert: invalid value 'nope.pem': cannot read the certificate 'nope.pem': No such file or directory" \
	    -- gdpub -c p.ini
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_tlsCA=bad.pem\n' "$port" > s.ini
	expect_fail 78 "gdsub: s.ini:2: GDsub_tlsCA: invalid value 'bad.pem': cannot read the CA certificate 'bad.pem': no start line" \
	    -- gdsub -c s.ini
}

@test "a certificate without its key, or with another's: 64 on the command line, 78 in a config file" {
	hold_port port
	expect_usage gdpub "GDpub_tlsCert needs GDpub_tlsKey: a certificate and its private key go together" \
	    -- gdpub -p "$port" --tls-cert "$PKI/srv.pem"
	expect_usage gdpub "the private key '$PKI/client.key' does not match the certificate '$PKI/srv.pem'" \
	    -- gdpub -p "$port" --tls-cert "$PKI/srv.pem" --tls-key "$PKI/client.key"
	expect_usage gdsub "GDsub_tlsCert needs GDsub_tlsCA: the CA that signed the publisher's certificate" \
	    -- gdsub -P "127.0.0.1:$port" --tls-cert "$PKI/client.pem" --tls-key "$PKI/client.key"
	expect_usage gdpub "GDpub_tlsCA needs GDpub_tlsCert and GDpub_tlsKey: clients are asked for certificates only over TLS" \
	    -- gdpub -p "$port" --tls-ca "$PKI/ca.pem"
	printf 'GDpub_port=%s\nGDpub_tlsCert=%s\nGDpub_tlsKey=%s\n' "$port" \
	    "$PKI/srv.pem" "$PKI/client.key" > p.ini
	expect_fail 78 "gdpub: p.ini:2: the private key '$PKI/client.key' does not match the certificate '$PKI/srv.pem' (GDpub_tlsKey on line 3)" \
	    -- gdpub -c p.ini
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_tlsKey=%s\n' "$port" "$PKI/client.key" > s.ini
	expect_fail 78 "gdsub: s.ini:2: GDsub_tlsKey needs GDsub_tlsCert: a certificate and its private key go together" \
	    -- gdsub -c s.ini
	expect_usage gdpub "invalid value '1.1' for --tls-min-version: expected one of '1.3', '1.2'" \
	    -- gdpub -p "$port" $SRV --tls-min-version 1.1
}
