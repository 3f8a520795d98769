#!/usr/bin/env bash
# userfaultfd where the syscall is refused, and the target's CAPS answer
# (docs/migration-protocol.md, "CAPS"). Test hooks on the target stand in
# for a container: uffd-syscall-eperm makes the userfaultfd syscall fail
# with EPERM (a default seccomp profile), uffd-unavailable makes
# /dev/userfaultfd fail too. Cases:
#   device        postcopy through /dev/userfaultfd, the guest verifies
#   postcopy-refused  --mode postcopy is refused before the pause with the
#                 target's reason; the source's guest runs on, verifying
#   auto-precopy  --mode auto that cannot converge stays precopy and
#                 switches over past the limits (no_converge switchover)
#   auto-fail     the same with --no-converge fail: fails naming the reason
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1
[ -e /dev/userfaultfd ] || [ "$case" != device ] ||
	fail "/dev/userfaultfd is missing: the device case needs Linux >= 6.1"

reason='userfaultfd: the syscall: Operation not permitted; /dev/userfaultfd: Operation not permitted'
# The auto cases' premise, "precopy cannot converge", set on both sides
# (docs/testing.md, "Premises"): the guest rewrites 16 MiB at 4096 pages/s
# (16 MiB/s, which every host's guest reaches) and the link carries a
# quarter of that, uncompressed. Pass 0 takes >= 4 s, in which the whole
# set is rewritten 4 times: every pass leaves >= 4 s of pages at the link
# against the 300 ms of downtime allowed (a guest under 70 pages/s would
# be needed to converge).
slow_guest=(--set workload.working_set=16M --set workload.dirty_rate=4096)
slow=(--compress none --max-bandwidth 4M --max-time-ms 2000)

case $case in
device)
	# Paced (passes of 1 s, no idle floor), so the guest writes all the time:
	# pages are stale at the switchover however short pass 0 is.
	harness_migrate --name ufdev --port 7510 --config "$EXAMPLES/dirty.cfg" \
		--set vm.memory=512M --set vm.vcpus=2 --set workload.working_set=32M \
		--set workload.dirty_rate=8192 --set workload.passes=0 --set workload.heartbeat_ms=0 \
		--target-env VMM_TEST_FAULT=uffd-syscall-eperm --ready "dirty pass [0-9]+ ok" \
		--migrate-timeout 120 --expect state=completed --expect mode_used=postcopy \
		--expect target_postcopy=true \
		--target-done "dirty pass [0-9]+ ok" --target-lines 3 \
		--target-timeout 180 -- --json --mode postcopy
	[ "$(summary postcopy_pages)" -gt 0 ] || fail "no page was stale at the switchover"
	;;
postcopy-refused)
	start_dirty_pair ufref 7511 VMM_TEST_UNSET= VMM_TEST_FAULT=uffd-unavailable
	run_vmm 60 migrate --to 127.0.0.1:7511 --vm ufref --mode postcopy --json
	expect_status 1
	expect_line err "target cannot do postcopy: $reason"
	# Refused in SETUP: the guest never paused and still verifies on the source.
	expect_progress src.out 2
	kill -0 "$src_pid" 2>/dev/null || fail "the source VM stopped"
	[ "$("$HARNESS" json "$WORK/out" state)" = failed ] || fail "the migration did not fail"
	[ "$("$HARNESS" json "$WORK/out" blackout_pause_us)" = 0 ] || fail "the source paused"
	[ "$("$HARNESS" json "$WORK/out" target_postcopy)" = false ] || fail "target_postcopy not false"
	wait_exit "$dst_pid" 30
	[ "$status" != 0 ] || fail "the target exited 0 without a VM"
	expect_line dst.err "the source closed its main connection instead of opening its data"
	echo "ok: $(grep -E 'target cannot do postcopy' "$WORK/err" | head -1)"
	;;
auto-precopy)
	harness_migrate --name ufauto --port 7512 --config "$EXAMPLES/dirty.cfg" \
		--set vm.memory=512M --set vm.vcpus=2 "${slow_guest[@]}" \
		--set workload.passes=0 --set workload.heartbeat_ms=0 \
		--target-env VMM_TEST_FAULT=uffd-unavailable --ready "dirty pass [0-9]+ ok" \
		--migrate-timeout 120 --expect state=completed --expect mode_used=precopy \
		--expect converged=false --expect switchover_reason=limits --expect target_postcopy=false \
		--target-done "dirty pass [0-9]+ ok" --target-lines 3 \
		--target-timeout 180 -- --json --mode auto "${slow[@]}"
	[ "$(summary postcopy_pages)" = 0 ] || fail "auto switched over the postcopy way"
	grep -q "$reason" "$WORK/mig.out" || fail "the summary lacks the target's reason"
	;;
auto-fail)
	dirty_args=("${slow_guest[@]}")
	start_dirty_pair ufafail 7513 VMM_TEST_UNSET= VMM_TEST_FAULT=uffd-unavailable
	run_vmm 120 migrate --to 127.0.0.1:7513 --vm ufafail --mode auto "${slow[@]}" \
		--no-converge fail --json
	expect_status 1
	expect_line err "precopy did not converge.*no postcopy: target cannot do postcopy: $reason"
	expect_progress src.out 2
	kill -0 "$src_pid" 2>/dev/null || fail "the source VM stopped"
	wait_exit "$dst_pid" 30
	echo "ok: $(grep -E 'did not converge' "$WORK/err" | head -1)"
	;;
*)
	fail "unknown case $case"
	;;
esac
echo PASS
