#!/usr/bin/env bash
# The guest platform of a PVH image, seen by the PVH test guest
# (tests/pvh-guest): the ACPI tables and the MP table, the initrd as PVH
# module 0, and the ways a guest ends the VM. One case per run:
#   tables          RSDP from start_info and from the legacy scan, every
#                   checksum, one MADT LAPIC and one MP processor per vCPU
#   poweroff        ACPI S5 through the FADT's sleep control register: exit 0
#   sleep-s1        a sleep state the DSDT does not offer: the VM goes on
#   reset           the FADT reset register, port 0xCF9 and the 8042: exit 5
#   initrd          the file arrives whole, page aligned, high in low RAM
#   initrd-errors   missing, empty, too big, not a PVH image: one line each
#   migrate-initrd  a VM booted with an initrd migrates to a target that
#                   has no such file
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1

boot() { # ARGS...: the PVH guest with the demo config
	run_vmm 60 run "$EXAMPLES/demo.cfg" --set firmware.path="$PVH_GUEST" "$@"
}

one_line_err() {
	expect_line err "$1"
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "expected one line on stderr, got: $(cat "$WORK/err")"
}

case $case in
tables)
	for n in 1 2 4; do
		boot --set vm.vcpus=$n
		expect_status 0
		expect_line out "^pvh-guest: rsdp 0x000e0000 ok$"
		expect_line out "^pvh-guest: rsdp scan 0x000e0000$"
		expect_line out "^pvh-guest: acpi xsdt 2 tables, checksums ok$"
		expect_line out "^pvh-guest: madt lapic=$n ioapic=1 iso=1 nmi=1$"
		expect_line out "^pvh-guest: mptable 0x0009fc00 cpus=$n ok$"
		expect_line out "^pvh-guest: modules 0$"
	done
	;;
poweroff)
	boot --set vm.vcpus=2 --set "firmware.cmdline=end=poweroff"
	expect_status 0
	one_line_err "guest powered off"
	reject_line out "still running"
	;;
sleep-s1)
	boot --set "firmware.cmdline=end=s1"
	expect_status 7
	expect_line out "pvh-guest: still running after the end request"
	;;
reset)
	for how in acpi-reset cf9 8042; do
		boot --set vm.vcpus=2 --set "firmware.cmdline=end=$how"
		expect_status 5
		one_line_err "guest reset the machine \(reboot\)"
		reject_line out "still running"
	done
	expect_line err "8042"
	;;
initrd)
	# 40000 bytes: not a page multiple. 256M RAM: the initrd ends below
	# 0x10000000 on a page boundary (0x10000000 - 0xa000 = 0x0fff6000).
	{ printf 'INITRD-0'; head -c 39992 /dev/zero; } >"$WORK/initrd.img"
	boot --initrd "$WORK/initrd.img"
	expect_status 0
	expect_line out "^pvh-guest: modules 1$"
	expect_line out "^pvh-guest: module0 paddr=0x0fff6000 size=40000 first=494e495452442d30$"
	# The same through the config key; with 4G the initrd stays below 3 GiB.
	boot --set firmware.initrd="$WORK/initrd.img" --set vm.memory=4G
	expect_status 0
	expect_line out "^pvh-guest: module0 paddr=0xbfff6000 size=40000 "
	;;
initrd-errors)
	boot --initrd "$WORK/no-such-initrd"
	expect_status 2
	one_line_err "\[firmware\] initrd: cannot use '.*no-such-initrd': No such file or directory"
	: >"$WORK/empty.img"
	boot --set firmware.initrd="$WORK/empty.img"
	expect_status 2
	one_line_err "\[firmware\] initrd: cannot use '.*empty.img': the file is empty"
	truncate -s 300M "$WORK/big.img"
	boot --initrd "$WORK/big.img"
	expect_status 1
	one_line_err "\[firmware\] initrd: '.*big.img' \(314572800 bytes\) does not fit in guest RAM"
	rm -f "$WORK/big.img"
	printf 'x' >"$WORK/small.img"
	run_vmm 60 run "$EXAMPLES/demo.cfg" --initrd "$WORK/small.img"
	expect_status 1
	one_line_err "\[firmware\] initrd: .* needs a PVH image"
	;;
migrate-initrd)
	printf 'INITRD-M' >"$WORK/mig-initrd.img"
	port=$(test_port)
	start_vm src run "$EXAMPLES/demo.cfg" --set vm.name=pvhinitrd --set firmware.path="$PVH_GUEST" \
		--set "firmware.cmdline=end=halt" --initrd "$WORK/mig-initrd.img"
	wait_line src.out "pvh-guest: halted" 30
	expect_line src.out "module0 .* first=494e495452442d4d"
	# The target host has no such file: it must not need it.
	rm -f "$WORK/mig-initrd.img"
	start_vm dst run --incoming "127.0.0.1:$port"
	wait_listen "$port" "$dst_pid"
	run_vmm 60 migrate --to "127.0.0.1:$port" --vm pvhinitrd
	expect_status 0
	wait_exit "$src_pid" 30
	[ "$status" = 0 ] || fail "the source exited with $status"
	sleep 1
	kill -0 "$dst_pid" 2>/dev/null || fail "the target is gone: $(cat "$WORK/dst.err")"
	reject_line dst.err "mig-initrd\.img|\[firmware\] initrd"
	kill -TERM "$dst_pid"
	wait_exit "$dst_pid" 30
	[ "$status" = 143 ] || fail "the target exited with $status, not 143 (SIGTERM)"
	;;
*)
	fail "unknown case '$case'"
	;;
esac
echo PASS
