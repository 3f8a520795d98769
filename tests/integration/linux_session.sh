#!/usr/bin/env bash
# One boot of the Linux test guest (2 vCPUs, the memverify workload), many
# checks, in the order a guest's life gives them:
#   1. precopy in the middle of the kernel's boot (both vCPUs up, their LAPIC
#      timers ticking, the IOAPIC programmed; init tens of seconds away);
#   2. on that target: init with both vCPUs online, the shell answers what
#      is typed (a program reading the console gets the next line typed);
#   3. postcopy while memverify rewrites an incompressible working set in
#      random order: the workload verifies every page it rewrites and
#      CLOCK_MONOTONIC never goes back;
#   4. on the second target: the console both ways, the clock;
#   5. a snapshot of it (--stop), restored --lazy: the shell answers, the
#      workload verifies on, then `reboot -f` ends vmm with status 5 ("guest
#      reset the machine").
# A Linux boot costs tens of seconds to minutes of emulated kernel code, so
# the suite boots once here instead of once per check.
set -eu
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/linux_lib.sh"
require_linux
name=lsession
linux_args 2 256M "vmm_workload=memverify vmm_ws_mib=8 vmm_order=random"

# migrate_to FROM TO MODE: a target TO waiting on a fresh port, `vmm migrate`
# from FROM in MODE, FROM's exit 0 ("migrated to").
migrate_to() {
	local from=$1 to=$2 mode=$3 port mig pidvar="${1}_pid"
	port=$(test_port)
	start_linux "$to" run --incoming "127.0.0.1:$port"
	local topid="${to}_pid"
	wait_listen "$port" "${!topid}"
	set +e
	timeout --signal=KILL 300 "$VMM" migrate --to "127.0.0.1:$port" --vm "$name" \
		--mode "$mode" --json >"$WORK/mig-$to.out" 2>"$WORK/mig-$to.err"
	mig=$?
	set -e
	[ "$mig" = 0 ] || fail "vmm migrate ($mode, $from to $to) exited $mig: $(tail -3 "$WORK/mig-$to.err")"
	wait_exit "${!pidvar}" 60
	[ "$status" = 0 ] || fail "$from exited $status after the $mode migration"
	expect_line "$from.err" 'migrated to'
	echo "migrated $from -> $to ($mode): $("$HARNESS" json "$WORK/mig-$to.out" total_ms) ms total"
}

# 1. Precopy during the boot.
boot_linux src 'smp: Brought up .* 2 CPUs' "$LINUX_BOOT_S" "${LARGS[@]}" --set "vm.name=$name"
migrate_to src mid precopy
if grep -q "$LINUX_INIT" "$WORK/src.out"; then
	echo "note: the source reached init before the switchover"
fi

# 2. Init, SMP and the shell on the first target.
grep -q "$LINUX_INIT" "$WORK/src.out" || wait_line mid.out "$LINUX_INIT" "$LINUX_BOOT_S"
grep -Eqa "init ok.* 2 cpus online" "$WORK/src.out" "$WORK/mid.out" ||
	fail "init did not see 2 cpus online"
run_typed mid 'echo shell-$((2 + 3))' 'shell-5' 120
type_line mid 'read a b; echo "got <$b> <$a>"'
type_line mid 'second first'
wait_line mid.out 'got <first> <second>' 60
run_typed mid 'grep -c ^processor /proc/cpuinfo' '^2[[:space:]]*$'

# 3. Postcopy under the workload.
before=$(count_lines mid.out "$LINUX_HEARTBEAT")
"$HARNESS" wait-line "$WORK/mid.out" "$LINUX_HEARTBEAT" "$LINUX_BOOT_S" $((before + 2)) ||
	fail "the workload printed no two heartbeats on the first target"
migrate_to mid dst postcopy
"$HARNESS" wait-line "$WORK/dst.out" "$LINUX_HEARTBEAT" 120 2 ||
	fail "the workload printed no two heartbeats on the second target"

# 4. The console both ways, the clock, then a reset.
run_typed dst 'echo after-$((40 + 2))' 'after-42'
run_typed dst 'cat /proc/uptime' '^[0-9]+\.[0-9]+ '
for f in src.out mid.out dst.out; do
	reject_line "$f" 'CORRUPTION|CLOCK_BACKWARDS'
done
# CLOCK_MONOTONIC went on across the switchovers: no step between two of
# memverify's page steps came near a clock restored from the wrong base (the
# guest had run for tens of seconds); the bound is for a host that
# deschedules vCPUs, not a timing target.
worst=$(grep -aho 'max_step_us=[0-9]*' "$WORK/mid.out" "$WORK/dst.out" | cut -d= -f2 | sort -n | tail -1)
[ -n "$worst" ] || fail "no max_step_us on the targets"
[ "$worst" -lt 20000000 ] || fail "CLOCK_MONOTONIC jumped by $worst us on a target"
echo "largest CLOCK_MONOTONIC step on the targets: $worst us"
# 5. A snapshot of the running Linux guest (--stop: the second target ends),
# restored --lazy: the shell answers, memverify goes on verifying, and
# `reboot -f` ends the restored VM with status 5.
rm -rf "$WORK/lsnap"
set +e
timeout --signal=KILL 300 "$VMM" snapshot --vm "$name" --to "$WORK/lsnap" --stop \
	>"$WORK/snap.out" 2>"$WORK/snap.err"
snap=$?
set -e
[ "$snap" = 0 ] || fail "vmm snapshot of the Linux guest exited $snap: $(tail -3 "$WORK/snap.err")"
wait_exit "$dst_pid" 60
[ "$status" = 0 ] || fail "the second target exited $status after snapshot --stop"
start_linux rst run --restore "$WORK/lsnap" --lazy
run_typed rst 'echo restored-$((6 * 7))' 'restored-42' 120
before=$(count_lines rst.out "$LINUX_HEARTBEAT")
"$HARNESS" wait-line "$WORK/rst.out" "$LINUX_HEARTBEAT" 120 $((before + 2)) ||
	fail "the workload printed no two heartbeats on the restored VM"
wait_line rst.err 'lazy restore done' 300
reject_line rst.out 'CORRUPTION|CLOCK_BACKWARDS'
type_line rst 'reboot -f'
wait_exit "$rst_pid" 120
[ "$status" = 5 ] || fail "reboot on the restored VM: exit status $status, expected 5"
expect_line rst.err 'guest reset the machine'
echo PASS
