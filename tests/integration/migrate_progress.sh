#!/usr/bin/env bash
# The progress a watcher sees while a migration runs (docs/api.md, "the
# progress object") is true at every read, not only between passes:
# a postcopy migration whose first pass is slowed by a bandwidth limit is
# followed through the events stream and by `vmm migrate --progress`, and
# migrate_progress.py checks the lines (time, bytes, percent, rates and
# expected downtime move within pass 0; postcopy counts the pages it sends
# on request; fields that no longer apply are cleared once it completed).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
port=$(test_port)
sock="$VMM_RUN_DIR/progvm.sock"
limit=$((10 << 20))
start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=progvm --set vm.memory=512M \
	--set workload.working_set=40M --set workload.passes=0 --set workload.heartbeat_ms=0
wait_line src.out "dirty pass [0-9]+ ok" 60
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port" "$dst_pid"

: >"$WORK/events.out"
curl -s -N --max-time 300 --unix-socket "$sock" http://x/api/v1/vm/events \
	>>"$WORK/events.out" 2>"$WORK/curl.err" &
curl_pid=$!
PIDS+=("$curl_pid")
wait_line events.out '"type":"state"' 30

# Not a terminal: --progress prints a line a second.
start_vm mig migrate --to "127.0.0.1:$port" --api-socket "$sock" --mode postcopy \
	--compress none --max-bandwidth "$limit" --progress --json
wait_line mig.err 'precopy pass 0: [1-9]' 60
# --status while it runs: where it goes and for how long, and the line's
# numbers (not a summary of an end not reached: "precopy in 0 ms").
run_vmm 10 migrate --status --api-socket "$sock"
expect_status 0
expect_line out "^migration precopy to 127\.0\.0\.1:$port, running for [0-9]+\.[0-9] s"
expect_line out '^  precopy pass 0: [0-9]+% of [0-9.]+ MiB, ETA'
reject_line out 'in 0 ms'
wait_exit "$mig_pid" 240
[ "$status" = 0 ] || fail "vmm migrate exited $status: $(tail -3 "$WORK/mig.err")"
wait_exit "$src_pid" 30
expect_status 0
wait_exit "$curl_pid" 30
python3 "$(dirname "$0")/migrate_progress.py" "$WORK/events.out" "$WORK/mig.out" "$WORK/mig.err" \
	"$limit" $((512 << 20)) || fail "the progress did not hold (above)"

# The guest goes on verifying on the target.
expect_progress dst.out 2
reject_line dst.out CORRUPTION
kill -TERM "$dst_pid"
wait_exit "$dst_pid" 20
expect_status 143
echo PASS
