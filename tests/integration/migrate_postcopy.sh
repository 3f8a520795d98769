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
mem=1G
[ "$case" = bitmap-size ] && mem=4G

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
harness_migrate --name pcvm --config "$EXAMPLES/dirty.cfg" --set vm.memory=$mem \
	--set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=16 \
	--set workload.heartbeat_ms=0 --ready "dirty pass [0-9]+ ok" --migrate-timeout 120 \
	--expect state=completed --expect "mode_used=$want" \
	--target-done "dirty done: 16 passes verified" --target-timeout 180 \
	-- --json "${args[@]}"
if [ "$want" = postcopy ]; then
	# Requests are served once each: everything stale was requested or pushed.
	stale=$(summary postcopy_pages)
	req=$(summary pages_requested)
	push=$(summary pages_pushed)
	echo "stale $stale, requested $req, pushed $push"
	[ $((req + push)) -eq "$stale" ] || fail "requested + pushed != stale pages"
fi
if [ "$case" = bitmap-size ]; then
	raw=$(summary bitmap_raw_bytes)
	z=$(summary bitmap_bytes)
	echo "final bitmap: $raw bytes raw, $z compressed"
	[ "$raw" -eq $((4 * 1024 * 1024 * 1024 / 4096 / 8)) ] || fail "raw bitmap is not 4 GiB worth"
	[ "$z" -gt 0 ] && [ $((z * 100)) -le "$raw" ] || fail "compressed bitmap above 1% of raw"
fi
echo PASS
