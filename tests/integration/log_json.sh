#!/usr/bin/env bash
# `vmm run`'s log on stderr: timestamped text lines with a level by default,
# JSON lines with --log-format json (or [log] format = json), on a booted VM
# and on both sides of a migration, the VM's end line included.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
check() { python3 "$(dirname "$0")/log_lines.py" "$@" || fail "$1: not the expected JSON log"; }
ts='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'

# text: the time and the level before the message vmm always wrote; debug dropped
run_vmm 60 run "$EXAMPLES/demo.cfg" --timing
expect_status 0
expect_line err "^$ts info  vmm: timing: setup_ms="
reject_line err "debug|booted|guest exited"

# JSON, down to debug: the start, the end (a guest exiting 0 says it at debug), the timing
run_vmm 60 run "$EXAMPLES/demo.cfg" --timing --log-format json --log-level debug
expect_status 0
check "$WORK/err" demo 'debug:^booted: 1 vCPU, 256 MiB, API socket ' \
	'debug:^guest exited with status 0$' 'info:^timing: setup_ms='

# the command line's format and level over the config's
run_vmm 60 run "$EXAMPLES/demo.cfg" --set log.format=text --set log.level=error \
	--log-format json --log-level info --timing
expect_status 0
check "$WORK/err" demo 'info:^timing: setup_ms='
# a level from the config: warn drops the info records
run_vmm 60 run "$EXAMPLES/demo.cfg" --set log.level=warn --timing
expect_status 0
[ ! -s "$WORK/err" ] || fail "info records at level warn: $(cat "$WORK/err")"

# A migration with JSON logs on both sides: the target knows the VM's name
# once the stream says it; the source's end line says where it went, the
# target's (SIGTERM, after 3 verified passes: the guest runs until stopped)
# why it ended. Precopy by name: the digest cannot be checked in postcopy.
harness_migrate --name logjson --config "$EXAMPLES/dirty.cfg" --set vm.memory=256M \
	--set workload.working_set=16M --set workload.passes=0 --set workload.heartbeat_ms=0 \
	--set log.format=json --target-set log.format=json --target-set log.level=debug \
	--source-env VMM_TEST_DIGEST=1 --migrate-env VMM_TEST_DIGEST=1 \
	--ready "dirty pass [0-9]+ ok" \
	--target-done "dirty pass [0-9]+ ok" --target-lines 3 -- --mode precopy
check "$WORK/src.err" logjson 'info:^migrated to 127\.0\.0\.1:[0-9]+$'
check "$WORK/dst.err" logjson "info:^memory digest 0x[0-9a-f]{16} matches the source's$" \
	'info:^stopped by SIGTERM$'
python3 - "$WORK/dst.err" <<'PY' || fail "dst.err: the waiting line"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
w = [x for x in r if x["msg"].startswith("waiting for an incoming migration on 127.0.0.1:")]
assert w and w[0]["level"] == "info" and "vm" not in w[0], r
PY
echo PASS
