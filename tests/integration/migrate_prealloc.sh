#!/usr/bin/env bash
# [vm] prealloc: guest RAM made resident before the guest runs, or on a
# migration target before it listens. Case:
#   boot      `vmm run` with prealloc: the guest verifies pass after pass, and
#             its RSS is the whole of vm.memory while it touches only its working set
#   precopy   a target started with the VM's vm.memory and prealloc is
#             resident before any source connects; the migrated dirty guest
#             verifies every page there
#   postcopy  the same with --mode postcopy (random fill and order): the
#             dropped stale pages fault in on the resident RAM
#   mismatch  a VM whose RAM differs from what the target preallocated is
#             refused with both sizes named; the VM runs on at the source
#             and the target keeps waiting, and takes a VM that fits
#   errors    prealloc on a target without vm.memory, and more RAM than the
#             host has: one clear line each, exit 1, before any listening
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1

# rss_mib PID: the resident set of a process in MiB.
rss_mib() {
	awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$1/status"
}

case $case in
boot)
	start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=prevm --set vm.memory=512M \
		--set vm.prealloc=true --set workload.working_set=16M --set workload.passes=0 \
		--set workload.heartbeat_ms=0
	wait_line src.out "dirty pass [0-9]+ ok" 60
	r=$(rss_mib "$src_pid")
	echo "RSS with prealloc: $r MiB (512 MiB of RAM, a 16 MiB working set)"
	[ "$r" -ge 500 ] || fail "RSS $r MiB: the RAM was not preallocated"
	expect_progress src.out 3
	reject_line src.out "CORRUPTION"
	kill -TERM "$src_pid"
	wait_exit "$src_pid" 10
	expect_status 143
	;;
precopy | postcopy)
	if [ "$case" = precopy ]; then
		wl=(--set workload.working_set=64M)
		args=(--mode precopy)
	else
		wl=(--set workload.working_set=32M --set workload.fill=random
			--set workload.order=random)
		args=(--mode postcopy)
	fi
	harness_migrate --name prevm --config "$EXAMPLES/dirty.cfg" --set vm.memory=512M \
		--set vm.vcpus=2 "${wl[@]}" --set workload.passes=0 --set workload.heartbeat_ms=0 \
		--target-set vm.prealloc=true --target-set vm.memory=512M \
		--ready "dirty pass [0-9]+ ok" --migrate-timeout 120 --expect state=completed \
		--expect "mode_used=$case" \
		--target-done "dirty pass [0-9]+ ok" --target-lines 3 --target-timeout 180 \
		-- --json "${args[@]}"
	echo "pages requested: $(summary pages_requested 2>/dev/null || echo n/a)"
	;;
mismatch)
	port=$(test_port)
	start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=bigvm --set vm.memory=1G \
		--set workload.working_set=32M --set workload.passes=0 --set workload.heartbeat_ms=0
	wait_line src.out "dirty pass [0-9]+ ok" 60
	start_vm dst run --incoming "127.0.0.1:$port" --set vm.prealloc=true --set vm.memory=512M
	wait_listen "$port" "$dst_pid"
	# Listening means resident: the RAM was made so before the socket opened.
	r=$(rss_mib "$dst_pid")
	echo "waiting target's RSS: $r MiB"
	[ "$r" -ge 500 ] || fail "the waiting target holds $r MiB, not its 512 MiB"
	run_vmm 60 migrate --to "127.0.0.1:$port" --vm bigvm
	expect_status 1
	expect_line err "1024 MiB of RAM in 512 MiB memslots \(anonymous\); this target preallocated 512 MiB"
	kill -0 "$src_pid" || fail "the source VM exited"
	kill -0 "$dst_pid" || fail "the target exited after refusing a VM"
	expect_progress src.out 3
	# The same target takes a VM that fits (its guest runs until stopped:
	# the migration is mid-run however long it takes).
	start_vm src2 run "$EXAMPLES/dirty.cfg" --set vm.name=fitvm --set vm.memory=512M \
		--set workload.working_set=32M --set workload.passes=0 --set workload.heartbeat_ms=0
	wait_line src2.out "dirty pass [0-9]+ ok" 60
	run_vmm 120 migrate --to "127.0.0.1:$port" --vm fitvm
	expect_status 0
	expect_progress dst.out 3 180
	reject_line dst.out "CORRUPTION"
	kill -TERM "$dst_pid"
	wait_exit "$dst_pid" 60
	expect_status 143
	kill -TERM "$src_pid"
	wait_exit "$src_pid" 10
	expect_status 143
	;;
errors)
	port=$(test_port)
	run_vmm 30 run --incoming "127.0.0.1:$port" --set vm.prealloc=true
	expect_status 1
	expect_line err "vm.prealloc on a migration target needs vm.memory"
	reject_line err "waiting for an incoming migration"
	run_vmm 30 run --incoming "127.0.0.1:$port" --set vm.prealloc=true --set vm.memory=8T
	expect_status 1
	expect_line err "MiB of guest RAM to preallocate, but"
	reject_line err "waiting for an incoming migration"
	run_vmm 30 run "$EXAMPLES/demo.cfg" --set vm.prealloc=true --set vm.memory=8T
	expect_status 1
	expect_line err "MiB of guest RAM to preallocate, but"
	run_vmm 30 run "$EXAMPLES/demo.cfg" --set vm.prealloc=maybe
	expect_status 2
	expect_line err "prealloc"
	;;
*)
	fail "unknown case $case"
	;;
esac
echo PASS
