#!/usr/bin/env bash
# A PVH image (Xen PHYS32_ENTRY note, as in a Linux vmlinux) gets its
# command line and memory map through hvm_start_info. The map reserves the
# legacy hole 0x9FC00-0x100000 (MP table, ACPI tables as ACPI memory):
# RAM below it, RAM from 1 MiB to 3 GiB and RAM above 4 GiB, 6 entries,
# 4 GiB less the 385 KiB hole.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
run_vmm 60 run "$EXAMPLES/demo.cfg" --set firmware.path="$PVH_GUEST" \
	--set "firmware.cmdline=console=ttyS0 vmm-test=42" --set vm.memory=4G
expect_status 0
expect_line out "pvh-guest: cmdline=console=ttyS0 vmm-test=42"
expect_line out "pvh-guest: memmap 6 entries, 4095 MiB RAM"
echo PASS
