#!/usr/bin/env bash
# Refusals that leave a waiting target waiting, and say why (issue 36,
# findings 7 and 8). Case:
#   local            a target waiting on unix:PATH (local upgrade) is sent
#                    a local handover whose RAM_FD is /dev/zero, then one
#                    whose memfd is half the VM's size, then a description
#                    whose config has a NUL byte in the VM's name: each is
#                    refused with its reason before any VM exists, and the
#                    target waits on (no KVM needed)
#   resume-busy      a paused postcopy's --resume reaches a target that is
#                    busy (tests/integration/fake_target busy: a plain
#                    ERROR at the accept, as a full gate answers): the
#                    source stays postcopy-paused saying "busy", not "no
#                    reason given"; a --resume to the real target completes
#   resume-busy-tls  the same over TLS: the source reads the target's plain
#                    refusal before its handshake and says "busy", not
#                    "does it use TLS?"
set -eu
. "$(dirname "$0")/lib.sh"
case=$1

if [ "$case" = local ]; then
	sock=$WORK/up.sock
	rm -f "$sock"
	start_vm dst run --incoming "unix:$sock"
	wait_line dst.err "waiting for an incoming migration on unix:" 30
	# refused CASE REGEX: the fake source's local handover is refused for REGEX.
	refused() {
		timeout --signal=KILL 60 "$FAKE_SOURCE" "unix:$sock" "$1" >"$WORK/fake.out" 2>&1 ||
			{ cat "$WORK/fake.out"; fail "$1: no answer from the target"; }
		expect_line fake.out "target says: .*$2"
		echo "ok: $1: $(grep -o 'target says: .*' "$WORK/fake.out")"
		# Waiting still: alive, and its API says so.
		kill -0 "$dst_pid" 2>/dev/null || fail "$1: the waiting target exited"
		run_vmm 10 status --vm vmm --json
		expect_status 0
		expect_line out '"state":"waiting"'
	}
	refused ramfd-devzero "RAM_FD: the guest RAM descriptor is not a memfd .*a character device"
	refused ramfd-size "RAM_FD: the guest RAM descriptor is not a memfd .*size 134217728"
	refused desc-config-nul \
		"VM_DESC: migration stream:[0-9]+: \\[vm\\] name: a NUL byte in the value"
	wait_line dst.err "incoming: refused .*a NUL byte in the value" 10
	[ -S "$sock" ] || fail "the target's socket is gone"
	run_vmm 10 stop --vm vmm
	wait_exit "$dst_pid" 30
	echo PASS
	exit 0
fi

require_kvm
port=$(test_port)
bport=$(test_port)
while [ "$bport" = "$port" ]; do bport=$(test_port); done
SRC_TLS=() DST_TLS=()
if [ "$case" = resume-busy-tls ]; then
	pki=$WORK/pki
	pki_ca "$pki" ca
	pki_cert "$pki" ca target "IP:127.0.0.1"
	pki_cert "$pki" ca source "DNS:source.test"
	tls_set_args SRC_TLS "$pki" source
	tls_set_args DST_TLS "$pki" target
elif [ "$case" != resume-busy ]; then
	fail "unknown case $case"
fi

VMM_TEST_FAULT=cut-postcopy start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=busyvm \
	--set vm.memory=1G --set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=0 \
	--set workload.heartbeat_ms=0 "${SRC_TLS[@]}"
wait_line src.out "dirty pass [0-9]+ ok" 60
start_vm dst run --incoming "127.0.0.1:$port" "${DST_TLS[@]}"
wait_listen "$port" "$dst_pid"
run_vmm 120 migrate --to "127.0.0.1:$port" --vm busyvm --mode postcopy --no-final-bitmap
[ "$status" = 3 ] || fail "vmm migrate exited $status, expected 3 (postcopy paused)"

# A target busy at the accept: the resume attempt fails, and says so.
: >"$WORK/busy.out"
"$FAKE_TARGET" "127.0.0.1:$bport" busy >>"$WORK/busy.out" 2>&1 &
PIDS+=($!)
wait_line busy.out "fake_target: busy" 30
run_vmm 60 migrate --resume --to "127.0.0.1:$bport" --vm busyvm
[ "$status" = 3 ] || fail "the resume to a busy target exited $status, expected 3 (still paused)"
cat "$WORK/err"
expect_line err "postcopy-paused: .*busy: too many connections in their handshake"
reject_line err "no reason given|does it use TLS"
run_vmm 20 migrate --status --vm busyvm --json
"$HARNESS" json "$WORK/out" state | grep -qx postcopy-paused || fail "the source left postcopy-paused"

# The real target takes the resume.
run_vmm 120 migrate --resume --to "127.0.0.1:$port" --vm busyvm --json
expect_status 0
wait_exit "$src_pid" 60
expect_status 0
expect_progress dst.out 3
reject_line dst.out CORRUPTION
echo PASS
