#!/usr/bin/env bash
# The Linux test guest (2 vCPUs) migrated during its boot or while the
# memverify workload rewrites an incompressible working set in random order:
# the guest goes on on the target (boot reaches init; the workload verifies
# every page it rewrites and CLOCK_MONOTONIC never goes back), and the
# console works there in both directions.
#   linux_migrate.sh precopy|postcopy boot|workload
set -eu
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/linux_lib.sh"
mode=$1 when=$2
require_linux
port=$(test_port)
name=lmig-$mode-$when

if [ "$when" = boot ]; then
	linux_args 2 256M
else
	linux_args 2 256M "vmm_workload=memverify vmm_ws_mib=8 vmm_order=random"
fi
if [ "$when" = boot ]; then
	# In the middle of the kernel's boot: both vCPUs run, their LAPIC timers
	# tick and the IOAPIC is programmed; init is tens of seconds away.
	boot_linux src 'smp: Brought up .* 2 CPUs' "$LINUX_BOOT_S" "${LARGS[@]}" --set "vm.name=$name"
else
	boot_linux src heartbeat "$LINUX_BOOT_S" "${LARGS[@]}" --set "vm.name=$name"
	run_typed src 'echo before-$((40 + 2))' 'before-42'
fi
start_linux dst run --incoming "127.0.0.1:$port"
wait_listen "$port" "$dst_pid"

set +e
timeout --signal=KILL 300 "$VMM" migrate --to "127.0.0.1:$port" --vm "$name" --mode "$mode" \
	--json >"$WORK/mig.out" 2>"$WORK/mig.err"
mig=$?
set -e
[ "$mig" = 0 ] || fail "vmm migrate exited $mig: $(tail -3 "$WORK/mig.err")"
wait_exit "$src_pid" 60
[ "$status" = 0 ] || fail "the source exited $status after the migration"
expect_line src.err 'migrated to'
if [ "$when" = boot ] && grep -q "$LINUX_INIT" "$WORK/src.out"; then
	echo "note: the source reached init before the switchover"
fi

# The guest goes on on the target.
if [ "$when" = boot ]; then
	grep -q "$LINUX_INIT" "$WORK/src.out" || wait_line dst.out "$LINUX_INIT" "$LINUX_BOOT_S"
	run_typed dst 'echo shell-$((2 + 3))' 'shell-5' 120
else
	"$HARNESS" wait-line "$WORK/dst.out" "$LINUX_HEARTBEAT" 120 2 ||
		fail "the workload printed no two heartbeats on the target"
fi
run_typed dst 'echo after-$((40 + 2))' 'after-42'
if [ "$when" = workload ]; then
	run_typed dst 'cat /proc/uptime' '^[0-9]+\.[0-9]+ '
fi
type_line dst 'poweroff -f'
wait_exit "$dst_pid" 120
[ "$status" = 0 ] || fail "power-off on the target: exit status $status"
for f in src.out dst.out; do
	reject_line "$f" 'CORRUPTION|CLOCK_BACKWARDS'
done
if [ "$when" = workload ]; then
	# CLOCK_MONOTONIC went on across the switchover: no step between two of
	# memverify's page steps on the target came near a clock restored from
	# the wrong base (the guest had run for tens of seconds); the bound is
	# for a host that deschedules vCPUs, not a timing target.
	worst=$(grep -ao 'max_step_us=[0-9]*' "$WORK/dst.out" | cut -d= -f2 | sort -n | tail -1)
	[ -n "$worst" ] || fail "no max_step_us on the target"
	[ "$worst" -lt 20000000 ] || fail "CLOCK_MONOTONIC jumped by $worst us on the target"
	echo "largest CLOCK_MONOTONIC step on the target: $worst us"
fi
echo PASS
