#!/usr/bin/env bash
# faults.quick: the CI subset of the fault matrix (vmm-faults --quick). Like
# the integration tests it needs /dev/kvm and fails without it unless
# VMM_TESTS_NO_KVM=1; it also needs root for nftables and prlimit on the VMs.
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
exec "$VMM_FAULTS" --quick --rotate "${VMM_FAULTS_ROTATE:-3}" --vmm "$VMM" \
	--config "$EXAMPLES/dirty.cfg" --scripts "$SCRIPTS" --work "$WORK" --verbose
