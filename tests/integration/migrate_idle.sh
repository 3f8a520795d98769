#!/usr/bin/env bash
# An idle guest migrates: the source exits 0, the target runs the VM and
# serves its API under the VM's usual socket once the source is gone.
# The sockets live deeper than sun_path's 108 bytes reach, as in a CI
# workspace with a long path.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
export VMM_RUN_DIR="$VMM_RUN_DIR/a-run-directory-whose-name-alone-is-long-enough-to-push-every-socket-path-past-108-bytes"
[ ${#VMM_RUN_DIR} -gt 110 ] || fail "the run directory path is not long enough to test"
# --target-serves: after the source has exited, the target takes over the
# VM's API socket, `vmm migrate --status --json` works, and SIGTERM ends it (143).
harness_migrate --name idlevm --config "$EXAMPLES/idle.cfg" --set vm.vcpus=2 \
	--ready "vmm-firmware: idle" --ready-timeout 30 --target-serves --target-timeout 10
expect_line mig.out "downtime"
echo PASS
