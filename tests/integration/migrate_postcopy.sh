#!/usr/bin/env bash
# Postcopy: the dirty guest (64 MiB working set, 2 vCPUs, 1 GiB) resumes on
# the target right after the switchover and goes on verifying every page it
# rewrites there (3 passes, then SIGTERM), while stale pages arrive on
# demand and in the background. Case: bitmap | no-final-bitmap |
# auto-fallback | auto-precopy | bitmap-size (4 GiB: the compressed final
# bitmap is at most 1% of raw).
#
# The guest runs until stopped, so no case needs the migration to end
# before the guest's last pass. The two auto cases set both sides of what
# they assume (docs/testing.md, "Premises"): a 16 MiB set dirtied at 4096
# pages/s (16 MiB/s), which every host's guest reaches, and a link of a
# quarter of that (auto-fallback: pass 0 takes >= 4 s, in which the guest
# rewrites the whole set 4 times, so every pass leaves >= 4 s of pages at
# the link against the 300 ms of downtime allowed; it would take a guest
# under 70 pages/s to converge), or no limit with compression (auto-precopy:
# every host's vmm sends far more than 4096 pages/s, so each pass shrinks
# the rest until it fits).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1
mem=1G
[ "$case" = bitmap-size ] && mem=4G

# As many stale pages as the unpaced guest makes, unless a case sets its rate.
workload=(--set workload.working_set=64M)
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
	workload=(--set workload.working_set=16M --set workload.dirty_rate=4096)
	args=(--mode auto --compress none --max-bandwidth 4M --max-time-ms 3000)
	want=postcopy
	;;
auto-precopy)
	workload=(--set workload.working_set=16M --set workload.dirty_rate=4096)
	args=(--mode auto)
	want=precopy
	;;
*)
	fail "unknown case $case"
	;;
esac
harness_migrate --name pcvm --config "$EXAMPLES/dirty.cfg" --set vm.memory=$mem \
	--set vm.vcpus=2 "${workload[@]}" --set workload.passes=0 \
	--set workload.heartbeat_ms=0 --ready "dirty pass [0-9]+ ok" --migrate-timeout 120 \
	--expect state=completed --expect "mode_used=$want" \
	--target-done "dirty pass [0-9]+ ok" --target-lines 3 \
	--target-timeout 180 -- --json "${args[@]}"
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
