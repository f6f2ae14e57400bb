#!/usr/bin/env bats
# --metrics ADDR:PORT (GDpub_metrics, GDsub_metrics): GET /metrics in the
# Prometheus text format from the program's own loop, read back by the
# Prometheus client's parser (tests/cli/scrape.py), with the run's values;
# a total and the series it sums from one moment; labels that outlast a
# reconnection; everything else refused, and every exchange bounded.
load helpers
bats_require_minimum_version 1.5.0

scrape() {
	/usr/bin/python3 "$BATS_TEST_DIRNAME/scrape.py" "$@"
}

need_parser() {
	/usr/bin/python3 -c 'import prometheus_client' 2> /dev/null ||
		skip "python3-prometheus-client is not installed"
}

# gdsub b's pipeline, its pid in b.pid
sub_b() {
	spawn "bash -c 'echo \$\$ > b.pid; exec gdsub -c b.ini --name b' 2>> b.sub.err | gdack -c b.ini --name b > /dev/null 2>> b.ack.err" 7>&-
}

# A gdpub of two GD subscribers, each with a gdsub of its own, and a
# second gdpub both gdsubs also read: gdsub a's totals sum two series.
@test "/metrics during a run: the parser reads it, the values are the run's, each total the sum of its series in every scrape" {
	need_parser
	hold_port mp
	hold_port ma
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port -n 2 -t 30 --metrics 127.0.0.1:$mp < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	spawn "seq 1 500 | gdpub -p 0 --port-file pub2.port -n 1 -t 30 --wait-ready=30 > st2 2> pub2.err" 7>&-
	port2=$(port_of pub2.port)
	printf 'GDsub_pub=127.0.0.1:%s\nGDsub_pub=127.0.0.1:%s\nGDsub_metrics=127.0.0.1:%s\n' "$port" "$port2" "$ma" > a.ini
	sub_conf b.ini "$port"
	spawn "gdsub -c a.ini --name a 2> a.sub.err | gdack -c a.ini --name a > /dev/null 2> a.ack.err" 7>&-
	sub_b
	wait_until 20 has_line st '^READY$'
	# while 50,000 blocks flow: every scrape's totals are their sums
	seq 1 50000 >&7
	run scrape sums "http://127.0.0.1:$ma/metrics" 2
	assert_success
	[[ "$output" =~ ^[0-9]+" scrapes"$ ]]
	echo "$output" >&3
	wait_until 60 bash -c "[ \$(grep -c '^ACK ' st) -eq 50000 ]"
	wait_until 60 bash -c "[ \$(grep -c '^ACK ' st2) -eq 500 ]"
	# once all is ACKed: the publisher's counts, per subscriber by name
	run scrape samples "http://127.0.0.1:$mp/metrics"
	assert_success
	assert_line 'gdkit_pub_published_total{} 50000'
	assert_line 'gdkit_pub_acked_total{} 50000'
	assert_line 'gdkit_pub_nacked_total{} 0'
	assert_line 'gdkit_pub_pending{} 0'
	assert_line 'gdkit_pub_connections{} 2'
	assert_line 'gdkit_pub_subscriber_acks_total{name="a"} 50000'
	assert_line 'gdkit_pub_subscriber_acks_total{name="b"} 50000'
	assert_line 'gdkit_pub_subscriber_in_flight{name="a"} 0'
	assert_line 'gdkit_pub_ack_latency_seconds_count{} 50000'
	assert_line 'gdkit_pub_ack_latency_seconds_bucket{le="+Inf"} 50000'
	run ! grep -q 'address=' <<<"$output"
	# gdsub a: 50,000 + 500 blocks from its two publishers
	run scrape samples "http://127.0.0.1:$ma/metrics"
	assert_success
	assert_line 'gdkit_sub_publishers{} 2'
	assert_line 'gdkit_sub_received_total{} 50500'
	assert_line 'gdkit_sub_acked_total{} 50500'
	assert_line 'gdkit_sub_unacked{} 0'
	assert_line "gdkit_sub_publisher_received_total{publisher=\"127.0.0.1:$port\"} 50000"
	assert_line "gdkit_sub_publisher_received_total{publisher=\"127.0.0.1:$port2\"} 500"
	# the same text as gdinspect --format prometheus (its uptime aside)
	curl -sf "http://127.0.0.1:$mp/metrics" | grep -v uptime > http.prom
	gdinspect -p "$port" --format prometheus stats | grep -v uptime > inspect.prom
	run diff http.prom inspect.prom
	assert_success
	# a subscriber that connects again keeps its series: b, killed and
	# started again, is still name="b", with its new connection's count
	kill -KILL "$(cat b.pid)"
	wait_until 20 bash -c "curl -sf http://127.0.0.1:$mp/metrics | grep -q '^gdkit_pub_connections 1\$'"
	sub_b
	wait_until 20 bash -c "curl -sf http://127.0.0.1:$mp/metrics | grep -q '^gdkit_pub_connections 2\$'"
	seq 50001 50010 >&7
	wait_until 20 bash -c "[ \$(grep -c '^ACK ' st) -eq 50010 ]"
	run scrape samples "http://127.0.0.1:$mp/metrics"
	assert_line 'gdkit_pub_subscriber_acks_total{name="a"} 50010'
	assert_line 'gdkit_pub_subscriber_acks_total{name="b"} 10'
	assert_equal "$(grep -c '^gdkit_pub_subscriber_acks_total' <<<"$output")" 2
	feed_close
}

@test "/metrics refuses the rest: 404, 405, 400, 505, 431; HEAD; a request body does not cost the answer" {
	hold_port mp
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port --metrics 127.0.0.1:$mp < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mp/metrics"
	assert_output 200
	run curl -s -D - "http://127.0.0.1:$mp/"
	assert_output "$(printf 'HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 40\r\nConnection: close\r\n\r\nnot found: only /metrics is served here')"
	run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mp/metrics/x"
	assert_output 404
	run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mp/metrics?name[]=x"
	assert_output 200
	run curl -s -D - -d 'a=1' "http://127.0.0.1:$mp/metrics"
	assert_output "$(printf 'HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 32\r\nConnection: close\r\nAllow: GET, HEAD\r\n\r\nmethod not allowed: GET or HEAD')"
	# HEAD: the headers, no body
	run curl -s -I "http://127.0.0.1:$mp/metrics"
	assert_line --index 0 $'HTTP/1.1 200 OK\r'
	assert_line --index 1 $'Content-Type: text/plain; version=0.0.4; charset=utf-8\r'
	run scrape raw "127.0.0.1:$mp" 'HEAD /metrics HTTP/1.0\r\n\r\n'
	assert_line --index 0 'HTTP/1.1 200 OK'
	assert_equal "${lines[-1]}" 'Connection: close'
	run ! grep -q gdkit <<<"$output"
	run scrape raw "127.0.0.1:$mp" 'hello\r\n\r\n'
	assert_output "$(printf 'HTTP/1.1 400 Bad Request\nContent-Type: text/plain; charset=utf-8\nContent-Length: 44\nConnection: close\n\nbad request: expected GET /metrics HTTP/1.1')"
	run scrape raw "127.0.0.1:$mp" 'GET /metrics HTTP/2.0\r\n\r\n'
	assert_line --index 0 'HTTP/1.1 505 HTTP Version Not Supported'
	run scrape raw "127.0.0.1:$mp" 'GET /metrics\r\n\r\n'
	assert_line --index 0 'HTTP/1.1 400 Bad Request'
	# a bare LF ends the head too; a GET with a body is answered whole
	run scrape raw "127.0.0.1:$mp" 'GET /metrics HTTP/1.1\nContent-Length: 5\n\nhello'
	assert_line --index 0 'HTTP/1.1 200 OK'
	assert_line 'gdkit_pub_published_total 0'
	run scrape raw "127.0.0.1:$mp" "GET /metrics HTTP/1.1\\r\\nX: $(head -c 9000 /dev/zero | tr '\0' a)\\r\\n\\r\\n"
	assert_line --index 0 'HTTP/1.1 431 Request Header Fields Too Large'
	# nothing of it reaches stderr without -v
	assert_equal "$(cat pub.err)" ""
	feed_close
}

@test "/metrics bounds: 16 connections at once (503 beyond), a request within 10 s (408)" {
	hold_port mp
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port --metrics 127.0.0.1:$mp < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	run scrape hold "127.0.0.1:$mp" 18
	assert_success
	assert_equal "$(head -n 16 <<<"$output" | sort -u)" "HTTP/1.1 408 Request Timeout"
	assert_equal "$(tail -n 2 <<<"$output" | sort -u)" "HTTP/1.1 503 Service Unavailable"
	# and it serves again once they are gone
	wait_until 20 bash -c "curl -sf http://127.0.0.1:$mp/metrics > /dev/null"
	feed_close
}

@test "--metrics and GDpub_metrics, GDsub_metrics: a bad address is refused (64, 78), a port in use is 69" {
	expect_usage gdpub "invalid value 'localhost:9464' for --metrics: expected ADDR:PORT, a numeric address and a port from 1 to 65535 ([ADDR]:PORT for IPv6), e.g. 127.0.0.1:9464" -- gdpub -p 0 --metrics localhost:9464
	expect_usage gdsub "invalid value '127.0.0.1' for --metrics: expected ADDR:PORT, a numeric address and a port from 1 to 65535 ([ADDR]:PORT for IPv6), e.g. 127.0.0.1:9464" -- gdsub -P 127.0.0.1:1 --metrics 127.0.0.1
	printf 'GDpub_port=0\nGDpub_metrics=127.0.0.1:0\n' > pub.ini
	expect_fail 78 "gdpub: pub.ini:2: GDpub_metrics: invalid value '127.0.0.1:0': expected ADDR:PORT, a numeric address and a port from 1 to 65535 ([ADDR]:PORT for IPv6), e.g. 127.0.0.1:9464" -- gdpub -c pub.ini
	# in use: something listens there
	feed_open in.fifo
	spawn "gdpub -p 0 --port-file pub.port < in.fifo > st 2> pub.err" 7>&-
	port=$(port_of pub.port)
	expect_fail 69 "gdpub: cannot serve metrics on 127.0.0.1:$port: address already in use" -- gdpub -p 0 --port-file x.port --metrics "127.0.0.1:$port"
	expect_fail 69 "gdsub: cannot serve metrics on 127.0.0.1:$port: address already in use" -- gdsub -P "127.0.0.1:$port" --name m --metrics "127.0.0.1:$port"
	# [::1] is an address too
	if python -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2> /dev/null; then
		printf 'GDpub_port=0\nGDpub_metrics=[::1]:%s\n' "$port" > p6.ini
		run --separate-stderr timeout 20 gdpub -c p6.ini < /dev/null
		assert_success
	fi
	feed_close
}
