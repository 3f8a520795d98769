#!/usr/bin/env bash
# The dirty guest with [workload] fill = random, order = random and
# latency = true (32 MiB working set, 2 vCPUs) migrates mid-run, precopy or
# postcopy, and goes on verifying on the target (3 passes; it runs until
# stopped, so the migration is mid-run however long it takes). Also checked:
# precopy with zstd sends at least 90% of the working set (a random-filled
# page does not compress; with fill = zero the same run sends a few MiB),
# and the latency lines appear on both sides and parse (p50 <= p99 <= max,
# one line per pass covering every page).
# Case: precopy | postcopy.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1
ws=$((32 * 1024 * 1024))
case $case in
precopy) args=(--mode precopy --compress zstd) ;;
postcopy) args=(--mode postcopy) ;;
*) fail "unknown case $case" ;;
esac
harness_migrate --name rndvm --config "$EXAMPLES/dirty.cfg" --set vm.memory=512M \
	--set vm.vcpus=2 --set workload.working_set=$ws --set workload.passes=0 \
	--set workload.heartbeat_ms=0 --set workload.min_pass_ms=1000 \
	--set workload.fill=random --set workload.order=random \
	--set workload.latency=true --ready "dirty pass [0-9]+ ok" --migrate-timeout 120 \
	--expect state=completed --expect "mode_used=$case" \
	--target-done "dirty pass [0-9]+ ok" --target-lines 3 \
	--target-timeout 180 -- --json "${args[@]}"
expect_line src.out "fill random, order random"

sent=$(summary sent_bytes)
echo "sent $sent bytes for a $ws-byte random working set"
if [ "$case" = precopy ]; then
	[ $((sent * 10)) -ge $((ws * 9)) ] || fail "sent $sent bytes: random pages compressed?"
else
	echo "postcopy: $(summary pages_requested) pages requested, $(summary pages_pushed) pushed"
fi

# Latency lines: every one parses; both sides print some; each covers the set.
# The switchover may cut the source's last console line (its tail then opens
# the target's console, without the prefix), and the SIGTERM that ends the
# target its last: that one line of each is let off.
pages=$((ws / 4096))
lat='dirty lat pass ([0-9]+): p50_us=([0-9]+)\.([0-9]) p99_us=([0-9]+)\.([0-9]) max_us=([0-9]+)\.([0-9]) pages=([0-9]+) pass_ms=([0-9]+)$'
n=0
for side in src dst; do
	count=0
	last=$(tail -n 1 "$WORK/$side.out" | sed 's/\r$//')
	while IFS= read -r line; do
		if ! [[ "$line" =~ $lat ]]; then
			[ "$line" = "$last" ] && continue
			fail "$side: latency line does not parse: $line"
		fi
		p50=$((BASH_REMATCH[2] * 10 + BASH_REMATCH[3]))
		p99=$((BASH_REMATCH[4] * 10 + BASH_REMATCH[5]))
		max=$((BASH_REMATCH[6] * 10 + BASH_REMATCH[7]))
		[ "$p50" -le "$p99" ] && [ "$p99" -le "$max" ] || fail "$side: p50 > p99 > max: $line"
		[ "${BASH_REMATCH[8]}" -eq "$pages" ] || fail "$side: not $pages pages: $line"
		count=$((count + 1))
	done < <(grep '^vmm-firmware: dirty lat pass' "$WORK/$side.out" | sed 's/\r$//')
	echo "$side: $count latency lines"
	[ "$count" -gt 0 ] || fail "$side: no latency line"
	n=$((n + count))
done
echo PASS
