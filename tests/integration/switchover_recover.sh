#!/usr/bin/env bash
# A switchover whose outcome neither side knows: both keep the VM paused,
# report switchover-unknown, and `vmm migrate --recover` settles it, after
# which exactly one guest runs and verifies its memory. Case:
#   cut-before-commit   main breaks between PREPARED and COMMIT: the target
#                       is prepared; --recover commits through a recover
#                       connection and the VM runs on the target
#   cut-after-commit    main breaks right after COMMIT: the target runs;
#                       --recover learns it and the source lets go
#   target-killed       the target dies after PREPARED: --recover reports it
#                       unreachable, --recover --decide resume runs the VM on
#                       the source
#   postcopy-target-killed  the same in postcopy: the source pauses, and
#                       --decide resume is allowed while no resume reached
#                       the target (it never ran)
#   source-killed       the source dies after END: the target stays paused;
#                       --recover --decide run on the target runs it there
#   trickle             cut-before-commit, with 8 connections trickling a
#                       byte a second and 64 idle ones, reconnecting, on the
#                       target's port while --recover runs: the recover
#                       still settles it (each holds only its own slot)
#   target-stalled      the target stops after PREPARED (alive, unreachable):
#                       --recover times out, the operator resumes the source
#                       anyway; the target, continuing, finds the COMMIT late,
#                       gets no RELEASE and never runs
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1
T=1500
port=$(test_port)
src_env="" dst_env=""
case $case in
cut-before-commit | cut-after-commit) src_env="VMM_TEST_FAULT=$case" ;;
trickle) src_env=VMM_TEST_FAULT=cut-before-commit ;;
target-killed | target-stalled | postcopy-target-killed) dst_env=VMM_TEST_STOP_AT=target-prepared ;;
source-killed) src_env=VMM_TEST_STOP_AT=source-end-sent ;;
*) fail "unknown case $case" ;;
esac
start_dirty_pair recvm "$port" "$src_env" "$dst_env"
mode=precopy
[ "$case" = postcopy-target-killed ] && mode=postcopy
start_vm mig migrate --to "127.0.0.1:$port" --vm recvm --timeout-ms "$T" --mode "$mode"

# state_of WHO: the migration state in that side's API.
state_of() {
	local sock="$VMM_RUN_DIR/recvm.sock"
	[ "$1" = dst ] && sock="$VMM_RUN_DIR/recvm.sock.incoming"
	run_vmm 20 migrate --status --api-socket "$sock" --json
	"$HARNESS" json "$WORK/out" state 2>/dev/null || echo "?"
}
# paused WHO: that guest makes no progress for a while (it is paused, not slow:
# a running guest prints a pass line several times a second).
paused() {
	local n
	n=$(count_lines "$1.out" 'dirty pass [0-9]+ ok')
	sleep 3
	[ "$(count_lines "$1.out" 'dirty pass [0-9]+ ok')" = "$n" ] ||
		fail "the $1 guest ran while the outcome was unknown"
}

owner=dst
case $case in
cut-before-commit | cut-after-commit | trickle)
	wait_exit "$mig_pid" 120
	[ "$status" = 4 ] || fail "vmm migrate exited $status, expected 4 (switchover-unknown)"
	expect_line mig.err "vmm migrate --recover"
	[ "$(state_of src)" = switchover-unknown ] || fail "the source is not switchover-unknown"
	paused src
	if [ "$case" != cut-after-commit ]; then
		wait_line dst.err "switchover-unknown" 30
		[ "$(state_of dst)" = switchover-unknown ] || fail "the target is not switchover-unknown"
		paused dst
	fi
	if [ "$case" = trickle ]; then
		flood="$(dirname "$0")/flood.py"
		: >"$WORK/trickle.out" # not in the child: a race with the wait below
		python3 "$flood" 127.0.0.1 "$port" 8 300 1 >>"$WORK/trickle.out" &
		PIDS+=($!)
		python3 "$flood" 127.0.0.1 "$port" 64 300 >"$WORK/idle.out" &
		PIDS+=($!)
		"$HARNESS" wait-line "$WORK/trickle.out" "^open 8" 60 ||
			fail "the trickling connections did not open"
		# They hold the port (and evict each other) before the recover comes.
		sleep 3
	fi
	t0=$(date +%s%N)
	run_vmm 120 migrate --recover --vm recvm
	expect_status 0
	echo "recover took $((($(date +%s%N) - t0) / 1000000)) ms"
	if [ "$case" = trickle ]; then
		# Each trickler was cut off at its deadline, not served forever.
		wait_line dst.err "incoming: refused .*(nothing valid within|evicted)" 30
	fi
	expect_line out "recovered: the VM runs on the target"
	wait_exit "$src_pid" 60
	expect_status 0
	;;
target-killed)
	wait_line dst.err "test hook: stopped at target-prepared" 120
	kill -9 "$dst_pid"
	wait_exit "$mig_pid" 120
	[ "$status" = 4 ] || fail "vmm migrate exited $status, expected 4 (switchover-unknown)"
	paused src
	run_vmm 120 migrate --recover --vm recvm
	expect_status 1
	expect_line err "recover failed: .*(refused|connect)"
	[ "$(state_of src)" = switchover-unknown ] || fail "a failed recover changed the state"
	paused src
	run_vmm 60 migrate --recover --decide resume --vm recvm
	expect_status 0
	expect_line out "recovered: the VM runs on the source"
	owner=src
	;;
postcopy-target-killed)
	wait_line dst.err "test hook: stopped at target-prepared" 120
	kill -9 "$dst_pid"
	wait_exit "$mig_pid" 120
	[ "$status" = 3 ] || fail "vmm migrate exited $status, expected 3 (postcopy paused)"
	paused src
	run_vmm 60 migrate --recover --decide resume --vm recvm
	expect_status 0
	expect_line out "recovered: the VM runs on the source"
	owner=src
	;;
target-stalled)
	wait_line dst.err "test hook: stopped at target-prepared" 120
	wait_exit "$mig_pid" 120
	[ "$status" = 4 ] || fail "vmm migrate exited $status, expected 4 (switchover-unknown)"
	run_vmm 120 migrate --recover --vm recvm
	expect_status 1
	run_vmm 60 migrate --recover --decide resume --vm recvm
	expect_status 0
	kill -CONT "$dst_pid"
	# The late COMMIT is answered but never released: the target must not run.
	wait_line dst.err "switchover-unknown" 60
	paused dst
	kill -9 "$dst_pid"
	wait "$dst_pid" 2>/dev/null || true
	owner=src
	;;
source-killed)
	wait_line src.err "test hook: stopped at source-end-sent" 120
	wait_line dst.err "switchover-unknown" 60
	kill -9 "$src_pid"
	[ "$(state_of dst)" = switchover-unknown ] || fail "the target is not switchover-unknown"
	paused dst
	# A target cannot ask a dead source: --recover needs the operator's decision.
	run_vmm 20 migrate --recover --vm recvm --decide run
	expect_status 0
	expect_line out "decided: the target will run the VM"
	wait_line dst.err "switchover settled: the VM runs here" 30
	;;
esac

# Exactly one guest runs from here on, and it verifies its memory.
expect_progress "$owner.out" 3
if [ "$owner" = dst ]; then
	kill -0 "$src_pid" 2>/dev/null && fail "the source still runs"
	# The settled target takes over the VM's usual API socket path.
	wait_gone "$VMM_RUN_DIR/recvm.sock.incoming" || fail "the target kept its temporary API path"
	run_vmm 20 migrate --status --vm recvm --json
	expect_status 0
else
	kill -0 "$dst_pid" 2>/dev/null && fail "the target still runs"
fi
reject_line src.out CORRUPTION
reject_line dst.out CORRUPTION
