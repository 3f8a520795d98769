#!/usr/bin/env bash
# Valid hellos cannot hold the gate (issue 36, finding 2). 64 connections
# (tests/integration/flood.py --hello), each reopened as soon as the target
# drops it, send a well-formed 32-byte hello and then nothing; with TLS
# (case *-tls) each first completes a handshake with a certificate of the
# target's own CA. A connection that has sent its hello but no complete
# record after it is evicted like an idle one, one address holds at most
# half the slots and a session id at most 18, so the real source still
# gets in. Case:
#   fresh     the flood (32 main, 32 data connections, random session ids,
#             from 127.0.0.2 as in migrate below) on a waiting target; a
#             fake source's description gets its answer, not "busy" (no KVM
#             needed: the description asks for a guest TSC no host runs)
#   migrate   the same flood, from another address (127.0.0.2, as a third
#             party's on another host); a real migration of the dirty guest
#             completes and verifies on the target. (From the source's own
#             address a flood turns that address's 18 slots over faster, on
#             a loaded host, than a source with a running VM may get from
#             its accept to its description: not a premise a test can set;
#             docs/migration-protocol.md, "Not covered".)
#   recover   main breaks between PREPARED and COMMIT; 64 recover
#             connections carry the migration's session id; `vmm migrate
#             --recover` settles it on the target
#   resume    a postcopy cut in the push; 32 main-resume and 32 data
#             connections with the session id; `vmm migrate --resume`
#             completes it
# In plain TCP the migration goes through tests/integration/recproxy.py,
# which prints the session id as a party reading the wire learns it; TLS
# hides it, so there VMM_TEST_SESSION fixes it (a certified peer that knows
# it: the worst case).
# Each prints the time its migration, recover or resume took
# ("took N ms"); VALID_HELLO_FLOOD=0 runs it without the flood, the
# baseline those times compare with (VALID_HELLO_FLOOD=N: N connections).
set -eu
. "$(dirname "$0")/lib.sh"
case=$1
base=${case%-tls}
N=${VALID_HELLO_FLOOD:-64}
port=$(test_port)
flood_py="$(dirname "$0")/flood.py"
[ "$base" = fresh ] || require_kvm

SRC_TLS=() DST_TLS=() FLOOD_TLS=() FLOOD_FROM=()
if [ "$base" != "$case" ]; then
	pki=$WORK/pki
	pki_ca "$pki" ca
	pki_cert "$pki" ca target "IP:127.0.0.1"
	pki_cert "$pki" ca source "DNS:source.test"
	pki_cert "$pki" ca flooder "DNS:flooder.test" # any certificate of the CA
	tls_set_args SRC_TLS "$pki" source
	tls_set_args DST_TLS "$pki" target
	FLOOD_TLS=(--tls "$pki/flooder.pem,$pki/flooder.key,$pki/ca.pem")
	export FAKE_SOURCE_TLS="$pki/source.pem,$pki/source.key,$pki/ca.pem"
	session=5e551015e5510150
	export VMM_TEST_SESSION=$session # the source's; the target and clients ignore it
fi
# sniffed: the session id off the wire (plain TCP: the proxy's "hello main" line).
sniffed() {
	[ -n "${VMM_TEST_SESSION:-}" ] && return 0
	session=$(sed -n 's/^hello main \([0-9a-f]*\)$/\1/p' "$WORK/proxy.out" | head -1)
	[ -n "$session" ] || fail "the proxy saw no main hello"
	echo "session id read off the wire: $session"
}

# flood NAME COUNT ROLE[:SESSION]: COUNT valid-hello connections in the
# background, once all are open at the same time ($WORK/NAME.out).
flood() {
	: >"$WORK/$1.out" # here, not in the child: a race with the wait below
	[ "$N" -gt 0 ] || return 0
	python3 "$flood_py" 127.0.0.1 "$port" "$2" 600 --hello "$3" "${FLOOD_TLS[@]}" \
		"${FLOOD_FROM[@]}" >>"$WORK/$1.out" 2>&1 &
	PIDS+=($!)
	"$HARNESS" wait-line "$WORK/$1.out" "^open $2\$" 120 ||
		fail "$1: the $2 connections did not all open: $(tail -3 "$WORK/$1.out")"
}
# The flood holds the port (its connections evict each other) before the source comes.
settle_flood() {
	[ "$N" -gt 0 ] || return 0
	sleep 3
}
# after_flood: the flood's connections were evicted (valid hellos), not served.
after_flood() {
	[ "$N" -gt 0 ] || return 0
	wait_line dst.err "incoming: refused .*evicted: a hello and no complete record after it" 60
	echo "refusal lines: $(count_lines dst.err 'incoming: refused')"
}
took() { # WHAT T0
	echo "$1 took $((($(date +%s%N) - $2) / 1000000)) ms past $N valid-hello connections"
}
half=$((N / 2))

case $base in
fresh)
	start_vm dst run --incoming "127.0.0.1:$port" "${DST_TLS[@]}"
	wait_listen "$port" "$dst_pid"
	FLOOD_FROM=(--from 127.0.0.2) # the source's own address: see migrate
	flood main "$half" main
	flood data "$half" data
	settle_flood
	t0=$(date +%s%N)
	timeout --signal=KILL 60 "$FAKE_SOURCE" "127.0.0.1:$port" tsc-1khz >"$WORK/fake.out" 2>&1 ||
		{ cat "$WORK/fake.out"; fail "the source's description got no answer past the flood"; }
	took "the description's answer" "$t0"
	expect_line fake.out "target says: "
	reject_line fake.out "busy"
	echo "ok: $(grep -o 'target says: .*' "$WORK/fake.out")"
	after_flood
	;;
migrate)
	start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=vhvm --set vm.memory=512M \
		--set workload.working_set=32M --set workload.passes=0 --set workload.heartbeat_ms=0 \
		"${SRC_TLS[@]}"
	wait_line src.out "dirty pass [0-9]+ ok" 60
	start_vm dst run --incoming "127.0.0.1:$port" "${DST_TLS[@]}"
	wait_listen "$port" "$dst_pid"
	FLOOD_FROM=(--from 127.0.0.2)
	flood main "$half" main
	flood data "$half" data
	settle_flood
	t0=$(date +%s%N)
	run_vmm 300 migrate --to "127.0.0.1:$port" --vm vhvm --json
	expect_status 0
	took "the migration" "$t0"
	wait_exit "$src_pid" 60
	expect_status 0
	expect_progress dst.out 3
	after_flood
	expect_line dst.err "incoming: refused 127\.0\.0\.2:[0-9]+: evicted"
	;;
recover)
	VMM_TEST_FAULT=cut-before-commit start_vm src run "$EXAMPLES/dirty.cfg" \
		--set vm.name=vhvm --set vm.memory=512M --set workload.working_set=32M \
		--set workload.passes=0 --set workload.heartbeat_ms=0 "${SRC_TLS[@]}"
	;;
resume)
	VMM_TEST_FAULT=cut-postcopy start_vm src run "$EXAMPLES/dirty.cfg" \
		--set vm.name=vhvm --set vm.memory=1G --set vm.vcpus=2 \
		--set workload.working_set=64M --set workload.passes=0 --set workload.heartbeat_ms=0 \
		"${SRC_TLS[@]}"
	;;
*) fail "unknown case $case" ;;
esac
if [ "$base" = fresh ] || [ "$base" = migrate ]; then
	echo PASS
	exit 0
fi

# recover and resume: a migration that breaks, then the flood, then the operator.
wait_line src.out "dirty pass [0-9]+ ok" 60
start_vm dst run --incoming "127.0.0.1:$port" "${DST_TLS[@]}"
wait_listen "$port" "$dst_pid"
to=127.0.0.1:$port
if [ -z "${VMM_TEST_SESSION:-}" ]; then
	start_proxy "$port" # reads the wire, drops nothing
	to=127.0.0.1:$pport
fi
if [ "$base" = recover ]; then
	run_vmm 120 migrate --to "$to" --vm vhvm --timeout-ms 1500 --mode precopy
	[ "$status" = 4 ] || fail "vmm migrate exited $status, expected 4 (switchover-unknown)"
	wait_line dst.err "switchover-unknown" 60
	sniffed
	flood recover "$N" "recover:$session"
	settle_flood
	t0=$(date +%s%N)
	run_vmm 120 migrate --recover --vm vhvm
	expect_status 0
	took "--recover" "$t0"
	expect_line out "recovered: the VM runs on the target"
else
	run_vmm 120 migrate --to "$to" --vm vhvm --mode postcopy --no-final-bitmap
	[ "$status" = 3 ] || fail "vmm migrate exited $status, expected 3 (postcopy paused)"
	sniffed
	flood resume-main "$half" "main-resume:$session"
	flood resume-data "$half" "data:$session"
	settle_flood
	t0=$(date +%s%N)
	run_vmm 120 migrate --resume --to "$to" --vm vhvm --json
	expect_status 0
	took "--resume" "$t0"
fi
wait_exit "$src_pid" 60
expect_status 0
expect_progress dst.out 3
reject_line dst.out CORRUPTION
after_flood
echo PASS
