#!/usr/bin/env bash
# A failed or cancelled migration gives back every fd, thread and buffer it
# took as soon as it ends, not when the next one starts (issue 8, finding 9).
# The source VM's /proc counts are taken while idle, then after each of
# several failing migrations in a row (a refused connection, a target killed
# mid-precopy, a cancel, a target killed before its ACK): once the state
# says failed/cancelled they must come back to the idle values, and the RSS
# must stay within a generous bound. Then a migration still succeeds and the
# guest verifies its memory on the target.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
port=$(test_port)
name=resvm
# Generous: RSS may wobble with malloc's arenas and caches, not by a leak
# of the senders' zstd contexts and buffers (several MiB per attempt).
RSS_SLACK_KB=$((64 * 1024))

start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=$name --set vm.memory=1G \
	--set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=0 \
	--set workload.heartbeat_ms=0
wait_line src.out "dirty pass [0-9]+ ok" 60
# The whole working set is resident once a pass was verified.
expect_progress src.out 1

nfds() { find "/proc/$src_pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
ntasks() { find "/proc/$src_pid/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$src_pid/status"; }

# The migration state the source reports (vmm migrate --status --json).
mig_state() {
	run_vmm 10 migrate --status --vm $name --json
	expect_status 0
	"$HARNESS" json "$WORK/out" state || fail "no state in vmm migrate --status --json"
}

# What the source holds, for a failure message.
show_resources() {
	local task
	echo "--- fds of the source (pid $src_pid)"
	ls -l "/proc/$src_pid/fd" 2>/dev/null | sed 1d | awk '{ print $(NF-2), $(NF-1), $NF }'
	echo "--- threads of the source"
	for task in /proc/$src_pid/task/*; do
		echo "$(basename "$task") $(cat "$task/comm" 2>/dev/null) $(cat "$task/wchan" 2>/dev/null)"
	done
}

# Idle: no migration yet, and no API client connected (the --status call
# above, if any, has gone): two samples a second apart that agree.
mig_state >/dev/null
idle_fds=-1
idle_tasks=-1
for ((i = 0; i < 30; i++)); do
	f=$(nfds)
	t=$(ntasks)
	if [ "$f" = "$idle_fds" ] && [ "$t" = "$idle_tasks" ]; then
		break
	fi
	idle_fds=$f
	idle_tasks=$t
	sleep 1
done
idle_rss=$(rss_kb)
echo "idle: $idle_fds fds, $idle_tasks threads, RSS $idle_rss KiB"
[ "$idle_fds" -gt 0 ] && [ "$idle_tasks" -gt 0 ] || fail "cannot read /proc/$src_pid"

# released WHAT STATE: waits (bounded, generous: a loaded host) until the
# source says STATE and holds no more fds and threads than while idle; then
# checks the RSS. Fails naming what stayed.
released() {
	local what=$1 want=$2 s="" f t rss i msg=""
	for ((i = 0; i < 120; i++)); do
		s=$(mig_state)
		f=$(nfds)
		t=$(ntasks)
		if [ "$s" = "$want" ] && [ "$f" -le "$idle_fds" ] && [ "$t" -le "$idle_tasks" ]; then
			break
		fi
		sleep 0.5
	done
	kill -0 "$src_pid" 2>/dev/null || fail "the source VM exited after the $what migration"
	[ "$s" = "$want" ] || fail "after the $what migration the state is '$s', expected '$want'"
	if [ "$f" -gt "$idle_fds" ] || [ "$t" -gt "$idle_tasks" ]; then
		show_resources
		[ "$f" -le "$idle_fds" ] || msg="$((f - idle_fds)) fds ($f, idle $idle_fds)"
		[ "$t" -le "$idle_tasks" ] ||
			msg="${msg:+$msg and }$((t - idle_tasks)) threads ($t, idle $idle_tasks)"
		fail "the $what migration ended ($s) but the source still holds $msg after 60 s"
	fi
	rss=$(rss_kb)
	echo "after the $what migration ($s): $f fds, $t threads, RSS $rss KiB"
	[ "$rss" -le $((idle_rss + RSS_SLACK_KB)) ] ||
		fail "the source's RSS grew from $idle_rss KiB to $rss KiB after the $what migration"
}

# 1. Nothing listens: the main connection is refused.
run_vmm 30 migrate --to "127.0.0.1:$port" --vm $name
expect_status 1
expect_line err "cannot connect to 127.0.0.1:$port"
released refused failed
# A finished migration still answers, from what it kept (the progress, the lock).
run_vmm 10 migrate --cancel --vm $name
[ "$status" != 0 ] || fail "cancelling a failed migration succeeded"
expect_line err "no migration is running"
run_vmm 10 migrate --resume --to "127.0.0.1:$port" --vm $name
[ "$status" != 0 ] || fail "resuming a failed migration succeeded"
expect_line err "no postcopy migration is paused"

# 2. The target dies mid-precopy: every connection was up, both teams running.
VMM_TEST_FAULT=kill-during-precopy start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
run_vmm 60 migrate --to "127.0.0.1:$port" --vm $name --compress none --max-bandwidth 50M
expect_status 1
wait_exit "$dst_pid" 10
expect_status 137
released kill-during-precopy failed

# 3. Cancelled by the user mid-precopy: the target stops itself once pass 0
# is in (test hook), so the source waits in precopy for that pass's
# SYNC_ACK (up to 60 s, --timeout-ms) when the cancel comes.
port=$(test_port)
VMM_TEST_STOP_AT=target-first-sync start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
start_vm mig migrate --to "127.0.0.1:$port" --vm $name --timeout-ms 60000
wait_line dst.err "test hook: stopped at target-first-sync" 60
[ "$(mig_state)" = precopy ] || fail "the migration to cancel is not in precopy"
run_vmm 10 migrate --cancel --vm $name
expect_status 0
wait_exit "$mig_pid" 30
expect_status 1
kill -CONT "$dst_pid"
wait_exit "$dst_pid" 30
released cancel cancelled

# 4. The target dies before PREPARED: the vCPUs were paused, then resumed here.
port=$(test_port)
VMM_TEST_FAULT=kill-before-ack start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
run_vmm 120 migrate --to "127.0.0.1:$port" --vm $name
expect_status 1
expect_line err "the target to prepare"
wait_exit "$dst_pid" 10
expect_status 137
released kill-before-ack failed

# The source VM kept running and verifying through all of that.
expect_progress src.out 2
reject_line src.out "CORRUPTION"

# 5. A migration still succeeds, and the guest verifies on the target.
port=$(test_port)
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
run_vmm 120 migrate --to "127.0.0.1:$port" --vm $name --json
expect_status 0
"$HARNESS" json "$WORK/out" state >"$WORK/state" || fail "no state in the summary"
[ "$(cat "$WORK/state")" = completed ] || fail "the last migration: state $(cat "$WORK/state")"
wait_exit "$src_pid" 30
expect_status 0
expect_line src.err "migrated to 127.0.0.1:$port"
expect_progress dst.out 3
reject_line dst.out "CORRUPTION"
kill -TERM "$dst_pid"
wait_exit "$dst_pid" 10
echo PASS
