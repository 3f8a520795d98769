#!/usr/bin/env bash
# One cell of the fault matrix as a ctest test: fault_cell.sh FAULT:PHASE
# runs `vmm-faults --cell FAULT:PHASE` in a work directory of its own
# ($WORK). ctest makes one such test of every cell that `vmm-faults --names
# --quick --rotate N` lists (fault_tests.cmake). Like the integration tests
# it needs /dev/kvm and fails without it unless VMM_TESTS_NO_KVM=1; it also
# needs root for nftables and prlimit on the VMs.
set -eu
if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
	if [ "${VMM_TESTS_NO_KVM:-0}" = 1 ]; then
		echo "SKIP: /dev/kvm not usable and VMM_TESTS_NO_KVM=1"
		exit 77
	fi
	echo "FAIL: /dev/kvm is missing or not accessible (set VMM_TESTS_NO_KVM=1 to skip guest tests)" >&2
	exit 1
fi
rm -rf "$WORK"
mkdir -p "$WORK"
# The target of cell i listens on 23000 + i (its row in fault_cells.c), so
# cells that ctest runs side by side never share a port.
exec "$VMM_FAULTS" --cell "$1" --port-base 23000 --vmm "$VMM" --config "$EXAMPLES/dirty.cfg" \
	--scripts "$SCRIPTS" --work "$WORK" --verbose
