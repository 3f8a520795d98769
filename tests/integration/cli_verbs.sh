#!/usr/bin/env bash
# vmm status | info | pause | resume | stop on a running VM: each does what
# it says (the guest stops and resumes verifying), --json prints the API's
# reply, and a VM that is not there is one clear line with status 1. Also
# docs/openapi.json against this live server's replies.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=verbs --set vm.memory=256M \
	--set workload.working_set=8M --set workload.passes=0 --set workload.heartbeat_ms=0
wait_line src.out "dirty pass [0-9]+ ok" 60

run_vmm 20 status --vm verbs
expect_status 0
expect_line out '^verbs: running \(2 vCPUs, 256 MiB\)$'
run_vmm 20 info --vm verbs --json
expect_status 0
expect_line out '"name":"verbs".*"version":"[0-9]+\.[0-9]+\.[0-9]+"'
run_vmm 20 info --vm verbs
expect_line out '^vmm +[0-9.]+ \(the VM.s\), [0-9.]+ \(this command.s\)$'

# docs/openapi.json describes what this server really answers.
python3 "$EXAMPLES/../tests/lint/check_openapi.py" "$EXAMPLES/.." --live "$VMM_RUN_DIR/verbs.sock" ||
	fail "docs/openapi.json does not match the server's replies"

run_vmm 20 pause --vm verbs
expect_status 0
expect_line out '^paused$'
run_vmm 20 status --vm verbs --json
expect_line out '"state":"paused"'
# Paused: no pass completes (a pass of 8 MiB takes well under a second).
before=$(count_lines src.out 'dirty pass [0-9]+ ok')
sleep 2
[ "$(count_lines src.out 'dirty pass [0-9]+ ok')" = "$before" ] || fail "the guest ran while paused"

run_vmm 20 resume --vm verbs
expect_status 0
expect_line out '^running$'
expect_progress src.out 2

run_vmm 20 stop --vm verbs
expect_status 0
expect_line out '^stopping$'
wait_exit "$src_pid" 30
reject_line src.out CORRUPTION

run_vmm 20 status --vm verbs
expect_status 1
expect_line err "^vmm status: no API socket at '.*verbs.sock'"
run_vmm 20 pause --vm verbs --bogus
expect_status 2
expect_line err "^vmm pause: bad option '--bogus'"
echo PASS
