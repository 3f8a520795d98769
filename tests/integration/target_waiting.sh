#!/usr/bin/env bash
# A waiting target (vmm run --incoming) serves its API from the moment it
# prints its waiting line, and it can be cancelled or stopped. Case:
#   waiting    status (state waiting, where it listens); cancel (exit 1, no
#              socket left); SIGTERM (exit 143); vmm stop (exit 0)
#   receiving  a migration held in pass 0 (the source stops itself there,
#              a test hook): status says receiving (peer, bytes); a cancel
#              ends the target (exit 1), the source, continued, is told why
#              and its VM runs on, verifying its memory
#   receiving-tls  the same over TLS
#   prepared   the source stopped after PREPARED: a cancel is refused (409)
#              and the migration completes once the source continues
set -eu
. "$(dirname "$0")/lib.sh"
case=$1
port=$(test_port)

# start_target NAME [ARGS...]: a target on $port, once it says it waits.
start_target() {
	local name=$1
	shift
	start_vm "$name" run --incoming "127.0.0.1:$port" "$@"
	wait_line "$name.err" "vmm: waiting for an incoming migration on 127.0.0.1:$port\$" 10
}

# status_is SOCKET STATE: vmm status --json on SOCKET says STATE (in $WORK/out).
status_is() {
	run_vmm 10 status --api-socket "$1" --json
	expect_status 0
	grep -q "^{\"name\":\"[^\"]*\",\"state\":\"$2\"" "$WORK/out"
}

gone() {
	[ ! -e "$1" ] || fail "$1 is still there"
}

case $case in
waiting)
	# No config: the default name "vmm", at vmm.sock.incoming, found by --vm.
	start_target dst
	run_vmm 10 status --vm vmm --json
	expect_status 0
	expect_line out '"state":"waiting"'
	expect_line out "\"listen\":\"127.0.0.1:$port\""
	run_vmm 10 status --vm vmm
	expect_status 0
	expect_line out "^vmm: waiting for an incoming migration on 127.0.0.1:$port\$"
	# vmm migrate --status too: where it waits, not a migration "waiting in 0 ms".
	run_vmm 10 migrate --status --vm vmm
	expect_status 0
	expect_line out "^waiting for an incoming migration on 127.0.0.1:$port\$"
	# A connection that is no migration is refused, and the status says so:
	# how many, and the last one's peer and reason.
	run_vmm 10 status --vm vmm --json
	expect_line out '"refused":0,"last_refused":""'
	exec 3<>"/dev/tcp/127.0.0.1/$port"
	printf 'GET / HTTP/1.0\r\n\r\n' >&3
	for ((i = 0; i < 100; i++)); do
		run_vmm 10 status --vm vmm --json
		grep -q '"refused":1' "$WORK/out" && break
		sleep 0.1
	done
	exec 3>&-
	expect_line out '"refused":1'
	expect_line out '"last_refused":"127\.0\.0\.1:[0-9]+: [^"]+"'
	run_vmm 10 status --vm vmm
	expect_status 0
	expect_line out "^vmm: waiting for an incoming migration on 127.0.0.1:$port \(1 connection refused, the last 127\.0\.0\.1:[0-9]+: .+\)\$"
	# Verbs that need a VM are refused, and say why.
	run_vmm 10 pause --vm vmm
	expect_status 1
	expect_line err "no VM yet"
	run_vmm 10 migrate --cancel --vm vmm
	expect_status 0
	wait_exit "$dst_pid" 10
	expect_status 1
	expect_line dst.err "vmm: incoming migration: cancelled through the API while waiting on 127.0.0.1:$port\$"
	gone "$VMM_RUN_DIR/vmm.sock.incoming"

	# SIGTERM: the loop handles it, the socket goes, 128 + 15.
	start_target term --set vm.name=termvm
	[ -S "$VMM_RUN_DIR/termvm.sock.incoming" ] || fail "no socket at termvm.sock.incoming"
	kill -TERM "$term_pid"
	wait_exit "$term_pid" 10
	expect_status 143
	expect_line term.err "incoming migration: stopped by SIGTERM"
	gone "$VMM_RUN_DIR/termvm.sock.incoming"

	# vmm stop: asked to, so 0. An explicit --api-socket is used from the start.
	start_target stop --api-socket "$WORK/stop.sock"
	[ -S "$WORK/stop.sock" ] || fail "no socket at --api-socket's path"
	run_vmm 10 stop --api-socket "$WORK/stop.sock"
	expect_status 0
	wait_exit "$stop_pid" 10
	expect_status 0
	expect_line stop.err "incoming migration: shut down through the API"
	gone "$WORK/stop.sock"
	;;
receiving | receiving-tls)
	require_kvm
	src_tls=() dst_tls=()
	if [ "$case" = receiving-tls ]; then
		# The ERROR must get through TLS after the cancel shut main's reading side.
		pki=$WORK/pki
		pki_ca "$pki" ca
		pki_cert "$pki" ca target "IP:127.0.0.1"
		pki_cert "$pki" ca source "DNS:source.test"
		tls_set_args src_tls "$pki" source
		tls_set_args dst_tls "$pki" target
	fi
	# The source stops itself in pass 0 once 256 pages are out (test hook):
	# the cancel finds the target receiving, however fast either side is.
	VMM_TEST_STOP_AT=source-first-pass start_vm src run "$EXAMPLES/dirty.cfg" \
		--set vm.name=recvvm --set vm.memory=1G --set vm.vcpus=2 \
		--set workload.working_set=64M --set workload.passes=0 --set workload.heartbeat_ms=0 \
		${src_tls[@]+"${src_tls[@]}"}
	wait_line src.out "dirty pass [0-9]+ ok" 60
	start_target dst ${dst_tls[@]+"${dst_tls[@]}"}
	start_vm mig migrate --to "127.0.0.1:$port" --vm recvvm --compress none
	wait_line src.err "test hook: stopped at source-first-pass" 60
	# Receiving: the socket follows the VM's name (VM_DESC), the pages that
	# went out arrive.
	sock="$VMM_RUN_DIR/recvvm.sock.incoming"
	for ((i = 0; i < 300; i++)); do
		[ -S "$sock" ] && status_is "$sock" receiving &&
			grep -q '"bytes_received":[1-9]' "$WORK/out" && break
		kill -0 "$mig_pid" 2>/dev/null || fail "vmm migrate ended early"
		sleep 0.1
	done
	expect_line out '"state":"receiving"'
	expect_line out '"peer":"127\.0\.0\.1:[0-9]+"'
	expect_line out '"bytes_received":[1-9]'
	gone "$VMM_RUN_DIR/vmm.sock.incoming"
	run_vmm 10 status --api-socket "$sock"
	expect_status 0
	expect_line out "^recvvm: receiving for an incoming migration on 127.0.0.1:$port, from 127\.0\.0\.1:[0-9]+: "
	run_vmm 10 migrate --cancel --api-socket "$sock"
	expect_status 0
	wait_exit "$dst_pid" 30
	expect_status 1
	expect_line dst.err "cancelled through the API while receiving from 127\.0\.0\.1:[0-9]+: the source keeps the VM"
	gone "$sock"
	# The source, continued, gets the reason and resumes: its guest goes on verifying.
	kill -CONT "$src_pid"
	wait_exit "$mig_pid" 30
	expect_status 1
	if [ "$case" = receiving ]; then
		expect_line mig.err "the target failed: cancelled through the API"
	else
		# The source finds the target's ERROR by peeking at main's raw
		# bytes, which TLS encrypts: it reports the broken connection.
		expect_line mig.err "migration failed: "
	fi
	kill -0 "$src_pid" || fail "the source VM exited"
	expect_progress src.out 3
	run_vmm 10 status --vm recvvm --json
	expect_status 0
	expect_line out '"state":"running"'
	;;
prepared)
	# From PREPARED on the source's commit decides: a cancel is refused.
	require_kvm
	start_dirty_pair prepvm "$port" VMM_TEST_STOP_AT=source-prepared
	start_vm mig migrate --to "127.0.0.1:$port" --vm prepvm --timeout-ms 30000
	wait_line src.err "test hook: stopped at source-prepared" 120
	sock="$VMM_RUN_DIR/prepvm.sock.incoming"
	run_vmm 10 migrate --cancel --api-socket "$sock"
	expect_status 1
	expect_line err "cannot cancel the incoming migration: .*PREPARED went to the source"
	kill -CONT "$src_pid"
	wait_exit "$mig_pid" 120
	expect_status 0
	wait_exit "$src_pid" 60
	expect_status 0
	expect_progress dst.out 3
	reject_line dst.out CORRUPTION
	;;
*)
	fail "unknown case $case"
	;;
esac
echo PASS
