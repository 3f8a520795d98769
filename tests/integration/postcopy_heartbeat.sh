#!/usr/bin/env bash
# Postcopy's waits are bounded (the target's HEARTBEAT, protocol 5.0). Case:
#   drop-done   a proxy on the path drops POSTCOPY_DONE and keeps the link:
#               the next heartbeat says DONE went out, and the source
#               completes (4.x waited for it without end)
#   blackhole   the proxy stops forwarding anything as postcopy starts
#               (the source stops itself right after the switchover's commit,
#               a test hook, and goes on once the proxy is stopped; SIGSTOP:
#               the kernel still takes the bytes until its buffers fill):
#               the heartbeat's 10 s of silence or a push send's timeout (T)
#               pauses the source and `vmm migrate` returns 3, saying where
#               the VM runs; a resume straight to the target finishes it
#   trickle     once the first HEARTBEAT has passed, the proxy lets the
#               target's replies on main through one byte every 7 s
#               (issue 36, finding 4): each record the source waits for
#               has a deadline of 10 s from the start of its wait, so it
#               pauses within that of its wait for POSTCOPY_DONE (a timeout
#               per read, 10 s, never fired: 3ef8d6c stayed postcopy-active
#               for good); a resume straight to the target finishes it
# Either way exactly one guest runs on, and it verifies its memory.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1
port=$(test_port)
src_env=VMM_TEST_UNSET=
[ "$case" = blackhole ] && src_env=VMM_TEST_STOP_AT=source-postcopy-early
start_dirty_pair hbvm "$port" "$src_env"
if [ "$case" = drop-done ]; then
	start_proxy "$port" --drop POSTCOPY_DONE --then hold
elif [ "$case" = trickle ]; then
	# A byte every 7 s: under the 10 s a per-read timeout would allow.
	start_proxy "$port" --trickle HEARTBEAT --every 7
else
	start_proxy "$port"
fi
# The blackhole lands as the push starts (the step above). Every page is stale
# (--no-final-bitmap): the push is all resident RAM, over 32 MiB raw, more
# than the kernel's buffers take, and at 4 MiB/s no faster than it fills them.
rate=()
[ "$case" = blackhole ] && rate=(--max-bandwidth 4M --compress none)
start_vm mig migrate --to "127.0.0.1:$pport" --vm hbvm --mode postcopy --no-final-bitmap "${rate[@]}"

case $case in
drop-done)
	wait_exit "$mig_pid" 180
	[ "$status" = 0 ] || { cat "$WORK/mig.err"; fail "vmm migrate exited $status, expected 0"; }
	expect_line proxy.out "dropped POSTCOPY_DONE on main"
	wait_exit "$src_pid" 60
	expect_status 0
	;;
blackhole)
	# The VM runs on the target, the source waits at the push's start; then
	# the path goes silent, and the source goes on into it.
	wait_line src.err "test hook: stopped at source-postcopy-early" 120
	kill -STOP "$proxy_pid"
	kill -CONT "$src_pid"
	t0=$(date +%s%N)
	wait_exit "$mig_pid" 120
	echo "vmm migrate returned $(($(date +%s%N) - t0)) ns after the blackhole"
	[ "$status" = 3 ] || { cat "$WORK/mig.err"; fail "vmm migrate exited $status, expected 3"; }
	expect_line mig.err "postcopy paused"
	run_vmm 10 migrate --status --vm hbvm --json
	expect_line out '"state": *"postcopy-paused"'
	# The heartbeat's silence, or a push send's own timeout (T), whichever bites first.
	expect_line out "no whole record from the target|dead, blackholed|timed out"
	run_vmm 120 migrate --resume --to "127.0.0.1:$port" --vm hbvm
	expect_status 0
	wait_exit "$src_pid" 60
	expect_status 0
	kill -KILL "$proxy_pid" 2>/dev/null || true
	;;
trickle)
	wait_line proxy.out "^trickling main after HEARTBEAT\$" 120
	# The VM runs on the target; the push completes; the source then waits
	# for POSTCOPY_DONE behind trickled heartbeats.
	wait_exit "$mig_pid" 120
	[ "$status" = 3 ] || { cat "$WORK/mig.err"; fail "vmm migrate exited $status, expected 3 (paused)"; }
	expect_line mig.err "postcopy paused"
	run_vmm 10 migrate --status --vm hbvm --json
	expect_line out '"state": *"postcopy-paused"'
	expect_line out "no whole record from the target within 10000 ms.*trickling"
	run_vmm 120 migrate --resume --to "127.0.0.1:$port" --vm hbvm
	expect_status 0
	wait_exit "$src_pid" 60
	expect_status 0
	kill -KILL "$proxy_pid" 2>/dev/null || true
	;;
*) fail "unknown case $case" ;;
esac
expect_progress dst.out 3 300
reject_line dst.out CORRUPTION
echo PASS
