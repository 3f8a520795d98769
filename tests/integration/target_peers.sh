#!/usr/bin/env bash
# A target that outlives bad peers. Against one waiting `vmm run --incoming`,
# in turn: an idle TCP connection (left open through the real migration),
# peers that speak something else, and a second connection while the
# migration is being received. Each is refused on its own, its reason
# printed by the target (and sent to the peer where the channel can carry
# it); the target keeps listening; then the real source's dirty guest
# migrates and verifies on the target. Case:
#   plain  plain TCP: idle, garbage, bad magic, wrong major version, a data
#          connection first, and a second main connection ("busy")
#   tls    a TLS target: idle TCP, a plain vmm peer, a TLS client without a
#          certificate, a TLS 1.2-only client, and a second (authenticated)
#          connection during the migration ("busy")
#   resume a paused postcopy: --resume attempts fail against a stopped
#          target (they leave half-formed sessions in its backlog); once it
#          runs again the first clean --resume completes
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=${1:-plain}
port=$(test_port)

if [ "$case" = resume ]; then
	VMM_TEST_FAULT=cut-postcopy start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=peersvm \
		--set vm.memory=1G --set vm.vcpus=2 --set workload.working_set=64M \
		--set workload.passes=0 --set workload.heartbeat_ms=0
	start_vm dst run --incoming "127.0.0.1:$port"
	wait_listen "$port"
	wait_line src.out "dirty pass [0-9]+ ok" 60
	# A resume attempt against the stopped target fails when the source has
	# waited 3T for its answer, whatever T is: with the default T (10 s) the
	# three attempts were 90 s of waiting. T = 3 s (times the emulated
	# machine's scale) still gives the clean resume at the end 9 s to be
	# answered by a target that has just been woken.
	T=$((3000 * scale))
	run_vmm 60 migrate --to "127.0.0.1:$port" --vm peersvm --mode postcopy --no-final-bitmap \
		--timeout-ms "$T"
	expect_status 3
	kill -STOP "$dst_pid"
	for i in 1 2 3; do
		run_vmm 60 migrate --resume --to "127.0.0.1:$port" --vm peersvm
		[ "$status" != 0 ] || fail "resume attempt $i succeeded against a stopped target"
		echo "ok: resume attempt $i failed: $(tail -1 "$WORK/err")"
	done
	kill -CONT "$dst_pid"
	run_vmm 90 migrate --resume --to "127.0.0.1:$port" --vm peersvm --json
	expect_status 0
	wait_exit "$src_pid" 30
	expect_status 0
	# Every page has arrived: three more passes verify the whole working set.
	expect_progress dst.out 3 300
	reject_line dst.out "CORRUPTION"
	kill -TERM "$dst_pid"
	wait_exit "$dst_pid" 30
	expect_status 143
	echo PASS
	exit 0
fi

# next REGEX: how many refusals matching REGEX the target will have printed after the next one.
next() {
	echo $(($(count_lines dst.err "refused 127\.0\.0\.1:[0-9]+: .*$1") + 1))
}
# seen N REGEX [after]: the target printed N refusals matching REGEX (30 s);
# unless "after" (the migration is over), it runs and listens still.
seen() {
	local n=$1 re="refused 127\.0\.0\.1:[0-9]+: .*$2"
	"$HARNESS" wait-line "$WORK/dst.err" "$re" 30 "$n" ||
		fail "the target did not print /$re/ ($n times)"
	if [ "${3:-}" != after ]; then
		kill -0 "$dst_pid" 2>/dev/null || fail "the target exited after: $2"
		# (Once the migration is over the target may close its port: that is no refusal.)
		[ -n "$(ss -Hltn "sport = :$port")" ] ||
			{ [ -n "${mig_pid:-}" ] && ! kill -0 "$mig_pid" 2>/dev/null; } ||
			fail "the target stopped listening after: $2"
	fi
	echo "ok: $(grep -E -- "$re" "$WORK/dst.err" | tail -1)"
}
# peer CASE REGEX: a fake_source peer that must get an ERROR record matching REGEX.
peer() {
	local n
	n=$(next "$2")
	timeout --signal=KILL 60 "$FAKE_SOURCE" "127.0.0.1:$port" "$1" >"$WORK/fake.out" ||
		{ cat "$WORK/fake.out"; fail "$1: the peer got no ERROR record from the target"; }
	expect_line fake.out "target says: .*$2"
	seen "$n" "$2"
}

pki=$WORK/pki
src_set=()
dst_set=()
if [ "$case" = tls ]; then
	pki_ca "$pki" ca
	pki_cert "$pki" ca target IP:127.0.0.1
	pki_cert "$pki" ca source DNS:source.test
	tls_set_args src_set "$pki" source
	tls_set_args dst_set "$pki" target
fi

# The source stops itself in pass 0 (test hook) until the busy peer below
# has been refused: the migration is being received when it comes.
VMM_TEST_STOP_AT=source-first-pass start_vm src run "$EXAMPLES/dirty.cfg" \
	--set vm.name=peersvm --set vm.memory=1G --set vm.vcpus=2 \
	--set workload.working_set=64M --set workload.passes=0 --set workload.heartbeat_ms=0 \
	${src_set[@]+"${src_set[@]}"}
start_vm dst run --incoming "127.0.0.1:$port" ${dst_set[@]+"${dst_set[@]}"}
wait_listen "$port"
wait_line src.out "dirty pass [0-9]+ ok" 60

if [ "$case" = plain ]; then
	peer garbage "not a vmm migration stream"
	peer bad-magic "not a vmm migration stream"
	peer wrong-version "protocol version [0-9]+\.7, this vmm speaks [0-9]+\.x"
	peer data-first "the first connection must be the main one"
else
	# A plain vmm peer gets the TLS alert, not an ERROR record.
	n=$(next "TLS: not authenticated")
	timeout --signal=KILL 60 "$FAKE_SOURCE" "127.0.0.1:$port" garbage >/dev/null 2>&1 || true
	seen "$n" "TLS: not authenticated"
	# TLS 1.3 without a client certificate.
	n=$(next "TLS: not authenticated: .*certificate")
	timeout --signal=KILL 30 openssl s_client -connect "127.0.0.1:$port" -tls1_3 \
		-CAfile "$pki/ca.pem" </dev/null >"$WORK/s_client.out" 2>&1 || true
	seen "$n" "TLS: not authenticated: .*certificate"
	# TLS 1.2 only: this vmm speaks TLS 1.3.
	n=$(next "TLS: not authenticated: .*(protocol|version)")
	timeout --signal=KILL 30 openssl s_client -connect "127.0.0.1:$port" -tls1_2 \
		-cert "$pki/source.pem" -key "$pki/source.key" -CAfile "$pki/ca.pem" \
		</dev/null >"$WORK/s_client12.out" 2>&1 || true
	seen "$n" "TLS: not authenticated: .*(protocol|version)"
fi

# An idle connection that the peer never closes, ahead of the real source
# in the target's queue (its handshake done before the source connects),
# then the real source, held in pass 0 (above) so that the migration is
# still being received when the next peer comes: the idle one must not
# keep the source waiting.
"$FAKE_SOURCE" "127.0.0.1:$port" idle &
idle_pid=$!
PIDS+=("$idle_pid")
for ((i = 0; i < 100 * scale; i++)); do
	[ -n "$(ss -Htn state established "( sport = :$port )")" ] && break
	sleep 0.1
done
[ -n "$(ss -Htn state established "( sport = :$port )")" ] || fail "the idle peer did not connect"
start_vm mig migrate --to "127.0.0.1:$port" --vm peersvm --json
wait_line src.err "test hook: stopped at source-first-pass" 60
# The target has created the VM (its API at the temporary path): receiving.
[ -S "$VMM_RUN_DIR/peersvm.sock.incoming" ] || fail "the target never created the VM"
if [ "$case" = plain ]; then
	peer busy "busy: a migration is being received"
else
	# An authenticated TLS peer with a data hello of another session, in
	# this vmm's protocol version (it was 5 before 6.0, whose major is 6).
	hello='VMMMIG\r\n\x06\0\0\0\0\0\0\0\x2a\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0'
	{ printf '%b' "$hello"; sleep 5; } | timeout --signal=KILL 30 openssl s_client -quiet \
		-connect "127.0.0.1:$port" -cert "$pki/source.pem" -key "$pki/source.key" \
		-CAfile "$pki/ca.pem" >"$WORK/s_busy.out" 2>&1 || true
	seen 1 "busy: a migration is being received"
	grep -aq "busy: a migration is being received" "$WORK/s_busy.out" ||
		fail "the TLS peer did not get the busy ERROR record"
fi
kill -CONT "$src_pid"

wait_exit "$mig_pid" 240
[ "$status" = 0 ] || { cat "$WORK/mig.err"; fail "the migration failed (status $status)"; }
expect_line mig.out '"state": *"completed"'
wait_exit "$src_pid" 30
expect_status 0
# The idle peer never let go, and the migration did not wait for it: it was
# refused on its own deadline or when the target stopped accepting.
kill -0 "$idle_pid" 2>/dev/null || fail "the idle peer closed its connection itself"
seen 1 "(nothing valid within 10 s|the target stopped accepting connections)" after
# The guest runs on the target and verifies its memory there.
expect_progress dst.out 3
reject_line dst.out "CORRUPTION"
kill -0 "$dst_pid" || fail "the target VM exited"
kill -TERM "$dst_pid"
wait_exit "$dst_pid" 30
echo PASS
