#!/usr/bin/env bash
# --converge throttle (docs/architecture.md, "The throttle"). The premise is
# set, not hoped for: the guest dirties a 4 MiB hot set of random words at
# 1024 pages/s ([workload] dirty_rate) and makes up no lag (catch_up_ms = 0:
# time it does not run is work it does not do, so a throttle slows its
# writes on any host), while the link carries 2 MiB/s uncompressed
# (--max-bandwidth 2M --compress none: ~509 pages/s at most; a slower host
# sends less, and the guest outwrites it by more). At twice the link's rate
# or more, plain precopy never converges: every pass finds the whole hot
# set dirty again, 1024 pages, 2 s or more at the link, more than the
# downtime limit (1.5 s: the commit's round trips take up to 0.7 s of any
# blackout on the emulated KVM, docs/performance.md). Case:
#   converge  --mode precopy --converge throttle converges (converged,
#             reason converged) with its downtime under the limit, the
#             throttle rose and went back to 0 (progress and a watcher's
#             throttle lines, numbered, before "completed"), and the guest
#             finishes its passes on the target, verifying every page
#   cancel    cancelled while throttled: the VM runs on here unthrottled
#   fail      the target killed while throttled: the same
# After cancel and fail, GET /api/v1/vm says no vCPU is throttled and their
# throttled sleep stops growing while the guest completes more passes.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1
port=$(test_port)
sock="$VMM_RUN_DIR/thvm.sock"
limit_ms=1500
passes=$([ "$case" = converge ] && echo 60 || echo 0)
src_sets=(--set vm.name=thvm --set vm.memory=256M --set vm.vcpus=1
	--set workload.working_set=4M --set workload.fill=random --set workload.dirty_rate=1024
	--set workload.catch_up_ms=0 --set workload.passes="$passes" --set workload.heartbeat_ms=0
	--set workload.min_pass_ms=0)
mig_args=(--to "127.0.0.1:$port" --api-socket "$sock" --mode precopy --converge throttle
	--compress none --max-bandwidth 2M --downtime-ms "$limit_ms" --json)

# A field of GET /api/v1/vm's "throttle" object.
vm_throttle() {
	run_vmm 10 status --api-socket "$sock" --json
	expect_status 0
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["throttle"][sys.argv[2]])' \
		"$WORK/out" "$1"
}

# Killed processes leave their API sockets: gone with the test (a build tree
# copied back from tmpfs cannot hold them).
trap 'cleanup_pids; rm -f "$VMM_RUN_DIR"/*.sock "$VMM_RUN_DIR"/*.sock.incoming' EXIT

start_vm src run "$EXAMPLES/dirty.cfg" "${src_sets[@]}"
wait_line src.out "dirty pass [0-9]+ ok" 120
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port" "$dst_pid"
[ "$(vm_throttle pct)" = 0 ] || fail "throttled before any migration"

# Every line the source's event stream has, for throttle_events.py.
: >"$WORK/events.out"
curl -s -N --max-time 600 --unix-socket "$sock" http://x/api/v1/vm/events \
	>>"$WORK/events.out" 2>"$WORK/curl.err" &
curl_pid=$!
PIDS+=("$curl_pid")
wait_line events.out '"type":"state"' 30

start_vm mig migrate "${mig_args[@]}"
case $case in
converge)
	wait_exit "$mig_pid" 240
	[ "$status" = 0 ] || fail "vmm migrate exited $status: $(tail -3 "$WORK/mig.err")"
	wait_exit "$src_pid" 30
	expect_status 0
	wait_exit "$curl_pid" 30
	python3 "$(dirname "$0")/throttle_events.py" "$WORK/events.out" "$WORK/mig.out" \
		completed "$limit_ms" || fail "the throttle's record did not hold (above)"
	# Every page verified on the target, to the last pass.
	wait_line dst.out "dirty done: $passes passes verified" 180
	wait_exit "$dst_pid" 30
	expect_status 0
	reject_line dst.out CORRUPTION
	echo PASS
	exit 0
	;;
cancel)
	wait_line events.out '"type":"throttle"' 120
	run_vmm 10 migrate --cancel --api-socket "$sock"
	expect_status 0
	wait_exit "$mig_pid" 60
	expect_status 1
	outcome=cancelled
	;;
fail)
	wait_line events.out '"type":"throttle"' 120
	kill -9 "$dst_pid"
	wait_exit "$mig_pid" 60
	expect_status 1
	outcome=failed
	;;
*)
	fail "unknown case $case"
	;;
esac

# The source runs on, at full speed: no vCPU throttled, and the vCPUs'
# throttled sleep does not grow while the guest verifies three more passes.
wait_line events.out "\"type\":\"$outcome\"" 30
[ "$(vm_throttle pct)" = 0 ] || fail "a vCPU is still throttled after the migration $outcome"
[ "$(vm_throttle vcpus)" = 0 ] || fail "vCPUs still throttled after the migration $outcome"
slept=$(vm_throttle slept_ms)
[ "$slept" -gt 0 ] || fail "the throttle never slowed a vCPU (slept_ms $slept)"
expect_progress src.out 3
[ "$(vm_throttle slept_ms)" = "$slept" ] || fail "vCPUs slept for a throttle after the migration $outcome"
run_vmm 10 migrate --status --api-socket "$sock" --json
expect_status 0
cp "$WORK/out" "$WORK/status.json"
kill "$curl_pid" 2>/dev/null || true
python3 "$(dirname "$0")/throttle_events.py" "$WORK/events.out" "$WORK/status.json" \
	"$outcome" "$limit_ms" || fail "the throttle's record did not hold (above)"
kill -TERM "$src_pid"
wait_exit "$src_pid" 10
expect_status 143
reject_line src.out CORRUPTION
echo PASS
