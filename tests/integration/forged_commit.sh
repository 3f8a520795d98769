#!/usr/bin/env bash
# Usage: [precopy | postcopy]. A COMMIT only this migration's source can
# give (protocol 5.0, the commit proof; 6.0, a proof per decision). A proxy on the path drops the target's PREPARED and cuts the link:
# the source never learns that the target prepared, aborts, and runs the VM
# on; the target, PREPARED and cut off, keeps its copy paused
# (switchover-unknown). A party that read the session id off the wire (the
# proxy prints it) then opens a recover connection to the target and sends
# COMMIT and RELEASE without the secret: the target refuses both and never
# runs the VM, so only the source's guest runs. (On protocol 4.x the forged
# COMMIT was taken and both guests ran.) The operator then discards the
# target's copy. postcopy: the target may be resumed, and the party opens
# a resumed session's main with a COMMIT (protocol 5's opening), then with
# a made-up RESUME: each is refused saying what was wrong (issue 36,
# finding 8c: protocol 5 said "(got COMMIT)" of a COMMIT with a bad proof).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
T=1500
mode=${1:-precopy}
port=$(test_port)
extra=()
[ "$mode" = postcopy ] && extra=(--postcopy-after 1)
start_dirty_pair fcvm "$port"
start_proxy "$port" --drop PREPARED --then cut

start_vm mig migrate --to "127.0.0.1:$pport" --vm fcvm --timeout-ms "$T" --mode "$mode" \
	"${extra[@]}"
wait_exit "$mig_pid" 120
[ "$status" = 1 ] || { cat "$WORK/mig.err"; fail "vmm migrate exited $status, expected 1 (aborted)"; }
expect_line proxy.out "dropped PREPARED on main"
wait_line dst.err "switchover-unknown" 60
session=$(sed -n 's/^hello main \([0-9a-f]*\)$/\1/p' "$WORK/proxy.out" | head -1)
[ -n "$session" ] || fail "the proxy saw no main hello"
# The source aborted and kept its VM: its guest runs on.
expect_progress src.out 3

# The forgery, straight to the target with the session id from the wire.
n=$(count_lines dst.out 'dirty pass [0-9]+ ok')
timeout --signal=KILL 60 "$FAKE_SOURCE" "127.0.0.1:$port" "forge-recover:$session" \
	>"$WORK/forge.out" 2>&1 || { cat "$WORK/forge.out"; fail "the forged COMMIT was answered"; }
cat "$WORK/forge.out"
expect_line forge.out "RECOVER_STATE 1"
wait_line dst.err "incoming: refused .*COMMIT whose proof does not verify" 30
if [ "$mode" = postcopy ]; then
	timeout --signal=KILL 60 "$FAKE_SOURCE" "127.0.0.1:$port" "forge-resume:$session" \
		>"$WORK/forge-resume.out" 2>&1 ||
		{ cat "$WORK/forge-resume.out"; fail "a forged resume was answered"; }
	cat "$WORK/forge-resume.out"
	wait_line dst.err "incoming: refused .*a resumed session must open with RESUME \(its attempt's proof\), not COMMIT" 30
	wait_line dst.err "incoming: refused .*RESUME whose proof does not verify" 30
	reject_line dst.err "got COMMIT\)"
fi
sleep 3
[ "$(count_lines dst.out 'dirty pass [0-9]+ ok')" = "$n" ] ||
	fail "the target's guest ran on a forged COMMIT: two owners"
run_vmm 20 migrate --status --api-socket "$VMM_RUN_DIR/fcvm.sock.incoming" --json
"$HARNESS" json "$WORK/out" state | grep -qx switchover-unknown ||
	fail "the target left switchover-unknown on a forged COMMIT"

# The operator knows the source runs it: the target discards its copy and exits.
run_vmm 20 migrate --recover --decide discard --api-socket "$VMM_RUN_DIR/fcvm.sock.incoming"
expect_status 0
wait_exit "$dst_pid" 60
[ "$status" != 0 ] || fail "the discarding target exited 0"
[ "$(count_lines dst.out 'dirty pass [0-9]+ ok')" = "$n" ] || fail "the target's guest ran"
expect_progress src.out 3
reject_line src.out CORRUPTION
echo PASS
