#!/usr/bin/env bash
# A 64 GiB guest in 128 memslots boots without the VMM touching its RAM (and
# sees its RAM as 2 ranges, below and above the hole, not 128 slots):
# the VMM's peak RSS stays far below the guest's size.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
run_vmm 60 run "$EXAMPLES/demo.cfg" --set vm.memory=64G --set vm.memslot_size=512M --timing
expect_status 0
expect_line out "hello from vCPU 0: 1 vCPUs, 65536 MiB RAM in 2 memory regions"
rss=$(sed -n 's/.*max_rss_kib=\([0-9]*\).*/\1/p' "$WORK/err")
[ -n "$rss" ] || fail "no max_rss_kib in --timing output"
echo "peak RSS: $rss KiB"
[ "$rss" -lt 65536 ] || fail "peak RSS $rss KiB: the VMM touched guest RAM it did not need"

# More memslots than the firmware remembers memory regions (1024): 1100 slots
# of 2 MiB still boot, as one range (the device tree has a node per range).
run_vmm 60 run "$EXAMPLES/demo.cfg" --set vm.memory=2200M --set vm.memslot_size=2M
expect_status 0
expect_line out "hello from vCPU 0: 1 vCPUs, 2200 MiB RAM in 1 memory regions"
echo PASS
