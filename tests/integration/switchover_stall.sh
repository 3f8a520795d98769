#!/usr/bin/env bash
# The switchover is a commit: whichever side stalls, at whichever step,
# for longer than every timeout, at most one guest ever makes progress and
# the one that runs keeps verifying its memory. Usage: STEP MODE, with STEP
# a VMM_TEST_STOP_AT step (test_hooks.h: the process SIGSTOPs itself there)
# and MODE precopy | postcopy.
#
# Expected (T = --timeout-ms):
#   source-*         the source continues: the migration completes on the target
#   target-end       the source aborts after 3T and keeps the VM; the target,
#                    continuing, reads ABORT and exits 1
#   target-prepared, target-commit
#                    precopy: the source is switchover-unknown (paused) while
#                    the target is stopped; the target then runs on COMMIT and
#                    its COMMITTED settles the source
#                    postcopy: the source pauses without COMMITTED; the
#                    target, continuing, runs on COMMIT and waits for pages;
#                    `vmm migrate --recover --to` (a resume) completes it
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
step=$1
mode=$2
T=1500
port=$(test_port)
case $step in
source-*) stalled=src ;;
target-*) stalled=dst ;;
*) fail "unknown step $step" ;;
esac
hook_src="" hook_dst=""
[ "$stalled" = src ] && hook_src="VMM_TEST_STOP_AT=$step"
[ "$stalled" = dst ] && hook_dst="VMM_TEST_STOP_AT=$step"
start_dirty_pair stallvm "$port" "$hook_src" "$hook_dst"
extra=()
[ "$mode" = postcopy ] && extra=(--postcopy-after 1)
start_vm mig migrate --to "127.0.0.1:$port" --vm stallvm --timeout-ms "$T" --mode "$mode" \
	"${extra[@]}"

stalled_pid=$src_pid
[ "$stalled" = dst ] && stalled_pid=$dst_pid
wait_line "$stalled.err" "test hook: stopped at $step" 120
# The hook raised SIGSTOP: wait until the kernel shows the process stopped.
for ((i = 0; i < 100; i++)); do
	[ "$(awk '{print $3}' "/proc/$stalled_pid/stat")" = T ] && break
	sleep 0.1
done
[ "$(awk '{print $3}' "/proc/$stalled_pid/stat")" = T ] || fail "$stalled did not stop at $step"

# The stall: longer than every timeout (3T for PREPARED, T for COMMITTED,
# T for the target's decision). While it lasts the running side must not be
# the target (no COMMIT yet) unless the source's COMMIT already went out.
dst_lines=$(count_lines dst.out 'dirty pass [0-9]+ ok')
src_lines=$(count_lines src.out 'dirty pass [0-9]+ ok')
sleep $((3 * T / 1000 + 3))
case $step in
source-commit-sent) ;; # the target may run on the COMMIT it already has
source-*)
	[ "$(count_lines dst.out 'dirty pass [0-9]+ ok')" = "$dst_lines" ] ||
		fail "the target ran while the source was stopped before COMMIT"
	;;
target-prepared | target-commit)
	# The source committed: it must not have resumed on its own.
	[ "$(count_lines src.out 'dirty pass [0-9]+ ok')" = "$src_lines" ] ||
		fail "the source resumed after COMMIT while the target was stopped"
	;;
esac
kill -CONT "$stalled_pid"

# owner: the side that must run the VM in the end.
owner=dst
case $step in
target-end)
	owner=src
	wait_exit "$mig_pid" 60
	[ "$status" = 1 ] || fail "vmm migrate exited $status, expected 1 (aborted)"
	wait_exit "$dst_pid" 60
	[ "$status" = 1 ] || fail "the target exited $status, expected 1"
	# ABORT read, or (postcopy: the source closed every connection) PREPARED unsent.
	expect_line dst.err "the source aborted the switchover|it cannot have committed"
	;;
target-prepared | target-commit)
	wait_exit "$mig_pid" 120
	if [ "$mode" = postcopy ]; then
		# Paused without COMMITTED (3), or settled if the target was quicker (0).
		case $status in
		3) run_vmm 120 migrate --recover --to "127.0.0.1:$port" --vm stallvm
		   expect_status 0 ;;
		0) ;;
		*) fail "vmm migrate exited $status, expected 3 (postcopy paused) or 0" ;;
		esac
	else
		# switchover-unknown (4) until the target's late COMMITTED, or 0.
		[ "$status" = 0 ] || [ "$status" = 4 ] ||
			fail "vmm migrate exited $status, expected 0 or 4 (switchover-unknown)"
		[ "$status" = 4 ] && expect_line mig.err "switchover-unknown"
	fi
	wait_exit "$src_pid" 120
	[ "$status" = 0 ] || fail "the source exited $status, expected 0 (migrated)"
	;;
*)
	wait_exit "$mig_pid" 120
	[ "$status" = 0 ] || fail "vmm migrate exited $status, expected 0"
	wait_exit "$src_pid" 60
	[ "$status" = 0 ] || fail "the source exited $status, expected 0 (migrated)"
	;;
esac

# Exactly one guest runs from here on, and it verifies its memory.
other=src
[ "$owner" = src ] && other=dst
other_pid=$src_pid
[ "$other" = dst ] && other_pid=$dst_pid
other_lines=$(count_lines "$other.out" 'dirty pass [0-9]+ ok')
expect_progress "$owner.out" 3
kill -0 "$other_pid" 2>/dev/null &&
	fail "$other is still running after the switchover settled"
[ "$(count_lines "$other.out" 'dirty pass [0-9]+ ok')" = "$other_lines" ] ||
	fail "both guests made progress"
reject_line src.out CORRUPTION
reject_line dst.out CORRUPTION
# A source stopped between END and COMMIT: the target's poll for COMMIT ran
# out and its blocking wait took over, counted as a sleep (spin_wait.h).
case $step in
source-end-sent | source-prepared)
	expect_line dst.err "switchover: END to PREPARED [0-9]+ us; [0-9]+ waits for the source in the blackout: .*, [1-9][0-9]* slept"
	;;
esac
