#!/usr/bin/env bash
# Postcopy: the dirty guest (64 MiB working set, 2 vCPUs, 1 GiB) resumes on
# the target right after the switchover and finishes its passes there with
# its own verification passing, while stale pages arrive on demand and in
# the background. Case: bitmap | no-final-bitmap | auto-fallback | auto-precopy
# | bitmap-size (4 GiB: the compressed final bitmap is at most 1% of raw).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1
port=$(test_port)
mem=1G
[ "$case" = bitmap-size ] && mem=4G
start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=pcvm --set vm.memory=$mem \
	--set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=40 \
	--set workload.heartbeat_ms=0
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
wait_line src.out "dirty pass [0-9]+ ok" 60

case $case in
bitmap | bitmap-size)
	args=(--mode postcopy)
	want=postcopy
	;;
no-final-bitmap)
	args=(--mode postcopy --no-final-bitmap)
	want=postcopy
	;;
auto-fallback)
	# Uncompressed at 20 MB/s the guest dirties memory far faster than it can be sent.
	args=(--mode auto --compress none --max-bandwidth 20M --max-time-ms 3000)
	want=postcopy
	;;
auto-precopy)
	args=(--mode auto)
	want=precopy
	;;
*)
	fail "unknown case $case"
	;;
esac
run_vmm 120 migrate --to "127.0.0.1:$port" --vm pcvm --json "${args[@]}"
expect_status 0
expect_line out '"state": *"completed"'
expect_line out "\"mode_used\": *\"$want\""
if [ "$want" = postcopy ]; then
	# Requests are served once each: everything stale was requested or pushed.
	stale=$(sed -n 's/.*"postcopy_pages": *\([0-9]*\).*/\1/p' "$WORK/out")
	req=$(sed -n 's/.*"pages_requested": *\([0-9]*\).*/\1/p' "$WORK/out")
	push=$(sed -n 's/.*"pages_pushed": *\([0-9]*\).*/\1/p' "$WORK/out")
	echo "stale $stale, requested $req, pushed $push"
	[ $((req + push)) -eq "$stale" ] || fail "requested + pushed != stale pages"
fi
if [ "$case" = bitmap-size ]; then
	raw=$(sed -n 's/.*"bitmap_raw_bytes": *\([0-9]*\).*/\1/p' "$WORK/out")
	z=$(sed -n 's/.*"bitmap_bytes": *\([0-9]*\).*/\1/p' "$WORK/out")
	echo "final bitmap: $raw bytes raw, $z compressed"
	[ "$raw" -eq $((4 * 1024 * 1024 * 1024 / 4096 / 8)) ] || fail "raw bitmap is not 4 GiB worth"
	[ "$z" -gt 0 ] && [ $((z * 100)) -le "$raw" ] || fail "compressed bitmap above 1% of raw"
fi
wait_exit "$src_pid" 10
expect_status 0
wait_exit "$dst_pid" 180
expect_status 0
expect_line dst.out "dirty done: 40 passes verified"
reject_line dst.out "CORRUPTION"
echo PASS
