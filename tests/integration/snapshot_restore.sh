#!/usr/bin/env bash
# Snapshot and restore of a running dirty guest (docs/snapshot-format.md):
# a live snapshot is taken while the guest verifies its memory pass after
# pass, its passes stopped by a migration's convergence decision and its
# limits (--max-passes), and the source runs on (restored, it verifies
# too); a second one with --stop ends the source; that
# snapshot, restored (eagerly) twice side by side, gives two clones whose
# guests each go on verifying every page they wrote before the snapshot.
# A waiting process (--restore-wait) restores one on request. The memory
# file is sparse. A directory that holds a snapshot is never
# written over, and a flipped byte, a truncated file, another format
# version and another memory size are each refused with one line.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm

start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=snap --set vm.memory=512M \
	--set workload.working_set=32M --set workload.passes=0 --set workload.heartbeat_ms=0
wait_line src.out "dirty pass [0-9]+ ok" 60

# 1. Taken --live (pages copied while the guest dirties them, pass after
# pass, until a migration's precopy would switch over); the guest runs on
# and keeps verifying.
rm -rf "$WORK/s1" "$WORK/s1b" "$WORK/s2"
run_vmm 120 snapshot --vm snap --to "$WORK/s1" --live
expect_status 0
expect_line out "^snapshot [0-9a-f]{32} written to $WORK/s1: .* [0-9]+ live passes \((converged|at the pass or time cap)\), VM paused "
[ -f "$WORK/s1/state" ] && [ -f "$WORK/s1/memory" ] || fail "s1 lacks its state or memory file"
[ ! -e "$WORK/s1/state.tmp" ] || fail "s1 kept its state.tmp"
expect_progress src.out 2
# Sparse: a 512 MiB guest with a 32 MiB working set (and firmware) stores far less.
used_kib=$(du -k "$WORK/s1/memory" | cut -f1)
[ "$used_kib" -lt $((128 * 1024)) ] || fail "the memory file uses $used_kib KiB: not sparse"

# 1b. The passes stop where precopy's decision says, with the snapshot's
# own limits: one pass at most with --max-passes 1 (then the pause writes
# what the guest dirtied during it), whatever the guest does; a limit
# without --live is refused.
run_vmm 120 snapshot --vm snap --to "$WORK/s1b" --live --max-passes 1 --downtime-ms 50 --json
expect_status 0
expect_line out '"live":true,"passes":1,"converged":(true|false),"expected_pause_ms":[0-9]+,'
expect_progress src.out 1
run_vmm 30 snapshot --vm snap --to "$WORK/s1b-no" --max-time-ms 5
expect_status 2
expect_line err "^vmm snapshot: --max-time-ms goes with --live"
rm -rf "$WORK/s1b"

# 2. Never over another snapshot; the VM is untouched by the refusal.
run_vmm 30 snapshot --vm snap --to "$WORK/s1"
expect_status 1
expect_line err "^vmm snapshot: cannot take the snapshot: .*s1 already holds a snapshot"
expect_progress src.out 1

# 3. --stop: the snapshot, then the source's end (status 0).
run_vmm 120 snapshot --vm snap --to "$WORK/s2" --stop --json
expect_status 0
expect_line out '"state":"completed"'
wait_exit "$src_pid" 60
[ "$status" = 0 ] || fail "the source exited with $status after snapshot --stop"
expect_line src.err "snapshot [0-9a-f]{32} written to $WORK/s2: .*; stopping the VM"

# 4. Two clones of one snapshot, each with its own name (its own API socket).
start_vm r1 run --restore "$WORK/s2" --set vm.name=clone1
start_vm r2 run --restore "$WORK/s2" --set vm.name=clone2
expect_progress r1.out 3 120
expect_progress r2.out 3 120
expect_line r1.err "restored snapshot [0-9a-f]{32}: [0-9]+ pages read"
reject_line r1.out "CORRUPTION"
reject_line r2.out "CORRUPTION"
"$VMM" status --vm clone1 >"$WORK/st1" || fail "vmm status --vm clone1"
grep -q "^clone1: running" "$WORK/st1" || fail "clone1 is not running: $(cat "$WORK/st1")"
kill -TERM "$r1_pid" "$r2_pid"
wait_exit "$r1_pid" 30
wait_exit "$r2_pid" 30

# 4b. Into a waiting process (vmm run --restore-wait): its API serves with
# no VM, refuses what needs one and a directory without a snapshot (and
# waits on), then restores the one a request names, lazily; the guest
# verifies, and --timing counts from the request. A waiting process asked
# to shut down ends with 0.
wsock="$VMM_RUN_DIR/warm.sock"
api() { # METHOD PATH [BODY]: the reply in $WORK/api.out, the code in $code
	local a=(-s --max-time $((30 * scale)) --unix-socket "$wsock" -o "$WORK/api.out"
		-w '%{http_code}' -X "$1" "http://localhost$2")
	[ $# -lt 3 ] || a+=(-d "$3")
	code=$(curl "${a[@]}")
}
start_vm w run --restore-wait "$wsock" --set vm.name=warm --timing
wait_line w.err "waiting for a restore on $wsock" 60
api GET /api/v1/vm
[ "$code" = 200 ] && grep -q '"state":"waiting-restore"' "$WORK/api.out" ||
	fail "GET /api/v1/vm while waiting: $code $(cat "$WORK/api.out")"
api PUT /api/v1/vm/pause
[ "$code" = 409 ] && grep -q 'no VM here yet' "$WORK/api.out" ||
	fail "pause while waiting: $code $(cat "$WORK/api.out")"
api PUT /api/v1/vm/restore "{\"from\": \"$WORK\"}"
[ "$code" = 400 ] && grep -q 'holds no snapshot' "$WORK/api.out" ||
	fail "a restore from a directory without a snapshot: $code $(cat "$WORK/api.out")"
api PUT /api/v1/vm/restore "{\"from\": \"$WORK/s2\", \"lazy\": true}"
[ "$code" = 200 ] && grep -Eq '"state":"running",.*"name":"warm","lazy":true,"restore_us":[0-9]+' \
	"$WORK/api.out" || fail "the restore into the waiting process: $code $(cat "$WORK/api.out")"
expect_progress w.out 3 120
reject_line w.out "CORRUPTION"
expect_line w.err "restored snapshot [0-9a-f]{32} from $WORK/s2 into this waiting process \(lazily\)"
api PUT /api/v1/vm/restore "{\"from\": \"$WORK/s2\"}"
[ "$code" = 409 ] || fail "a second restore into one process: $code $(cat "$WORK/api.out")"
kill -TERM "$w_pid"
wait_exit "$w_pid" 30
expect_line w.err "timing: setup_ms=[0-9.]+ first_run_ms=[0-9.]+ "
start_vm w2 run --restore-wait "$wsock.2" --set vm.name=warm2
wsock="$wsock.2"
wait_line w2.err "waiting for a restore on $wsock" 60
api PUT /api/v1/vm/shutdown
[ "$code" = 202 ] || fail "shutdown of a waiting process: $code $(cat "$WORK/api.out")"
wait_exit "$w2_pid" 30
[ "$status" = 0 ] || fail "a waiting process shut down exited with $status"

# 5. The live snapshot, restored --lazy (pages on first touch through
# userfaultfd, the rest in the background): the guest verifies what it
# wrote before the snapshot, the pages copied while it ran included, and
# every page comes in.
start_vm r3 run --restore "$WORK/s1" --lazy --set vm.name=clone3
expect_progress r3.out 3 120
wait_line r3.err "lazy restore done: [0-9]+ pages in after [0-9]+ ms" 120
reject_line r3.out "CORRUPTION"
expect_progress r3.out 2 120
kill -TERM "$r3_pid"
wait_exit "$r3_pid" 30
run_vmm 10 run --lazy "$EXAMPLES/dirty.cfg"
expect_status 2
expect_line err "^vmm run: --lazy goes with --restore DIR"
run_vmm 10 run --restore "$WORK/s1" --lazy --set vm.prealloc=true
expect_status 2
expect_line err "^vmm run: --lazy: \[vm\] prealloc is on"

# 6. Refusals, each one line naming what is wrong; nothing runs.
refuse() { # DIR REGEX [--set ...]
	local dir=$1 re=$2
	shift 2
	run_vmm 60 run --restore "$dir" "$@"
	expect_status 1
	expect_line err "$re"
	[ "$(wc -l <"$WORK/err")" -le 2 ] || fail "more than one line of error: $(cat "$WORK/err")"
}
copy() { rm -rf "$WORK/$1" && cp -a --sparse=always "$WORK/s1" "$WORK/$1"; }
copy bad1
printf '\xff' | dd of="$WORK/bad1/state" bs=1 seek=300 conv=notrunc status=none
refuse "$WORK/bad1" "bad1/state: snapshot state: .*(CRC mismatch|corrupted)"
copy bad2
truncate -s -4096 "$WORK/bad2/memory"
refuse "$WORK/bad2" "bad2/memory: snapshot memory: truncated"
copy bad3
truncate -s -1 "$WORK/bad3/state"
refuse "$WORK/bad3" "bad3/state: .*truncated"
copy bad4
printf '\x02' | dd of="$WORK/bad4/state" bs=1 seek=8 conv=notrunc status=none
refuse "$WORK/bad4" "bad4/state: snapshot format version 2\.0, this vmm reads 1\.x"
refuse "$WORK/s1" "memory layout differs" --set vm.memory=256M
refuse "$WORK" "holds no snapshot: no state file"
echo PASS
