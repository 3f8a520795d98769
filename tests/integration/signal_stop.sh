#!/usr/bin/env bash
# SIGTERM and SIGINT stop an idle VM cleanly, and the exit status says so.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
for sig in TERM INT; do
	"$VMM" run "$EXAMPLES/idle.cfg" --set vm.vcpus=2 >"$WORK/out" 2>"$WORK/err" &
	pid=$!
	for _ in $(seq 100); do
		grep -q "vmm-firmware: idle" "$WORK/out" && break
		sleep 0.1
	done
	expect_line out "vmm-firmware: idle"
	kill -s "$sig" "$pid"
	set +e
	wait "$pid"
	status=$?
	set -e
	if [ $sig = TERM ]; then expect_status 143; else expect_status 130; fi
	expect_line err "stopped by SIG$sig"
done
echo PASS
