#!/usr/bin/env bash
# A passive reader on a plaintext migration (recproxy.py prints every proof
# that crosses the wire, as such a reader captures it), then an operator's
# override, then the reader replaying what it captured (issue 36). Case:
#   replay-after-resume  finding 1: the target stops after PREPARED, the
#                   source is switchover-unknown, --recover cannot reach the
#                   target and the operator runs --recover --decide resume
#                   (the VM runs on the source). The source's proven ABORT
#                   that tells the target is lost (the proxy drops it). The
#                   target continues, finds the late COMMIT and waits for
#                   RELEASE; the reader sends RELEASE with the COMMIT's proof
#                   on a recover connection. The target refuses it and never
#                   runs (protocol 5: the COMMIT secret was RELEASE's too,
#                   and both guests ran).
#   resume-told     the same, the ABORT not dropped: the target, continuing,
#                   reads the late COMMIT and then the source's proven ABORT,
#                   and discards its copy by itself (protocol 5 sent none: it
#                   waited for the operator).
#   resume-told-postcopy  resume-told in postcopy: the source is
#                   postcopy-paused (no COMMITTED), its operator takes the VM
#                   back at once (a plain --recover there would be a resume),
#                   and the ABORT goes out on the switchover's main
#                   connection, which the source kept (until 6.0 it closed
#                   it: the continued target waited for RELEASE until it was
#                   stopped by hand).
#   release-forged  finding 6: the target runs on COMMIT, its COMMITTED is
#                   lost with the link, the source is switchover-unknown and
#                   alive. The reader sends RELEASE with the COMMIT's proof:
#                   refused, the target keeps its temporary API path, and
#                   `vmm migrate --recover` on the source settles it
#                   (protocol 5: the target took the source's API path and
#                   --recover answered "no migration to recover").
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1
T=1500
port=$(test_port)
proxy="$(dirname "$0")/recproxy.py"
dst_env=""
mode=(--mode precopy)
case $case in
replay-after-resume | resume-told) dst_env=VMM_TEST_STOP_AT=target-prepared ;;
resume-told-postcopy)
	dst_env=VMM_TEST_STOP_AT=target-prepared
	mode=(--mode postcopy --postcopy-after 1)
	;;
release-forged) ;;
*) fail "unknown case $case" ;;
esac
start_dirty_pair prvm "$port" "" "$dst_env"
case $case in
replay-after-resume) start_proxy "$port" --drop ABORT --then hold ;;
resume-told | resume-told-postcopy) start_proxy "$port" ;;
release-forged) start_proxy "$port" --drop COMMITTED --then cut ;;
esac
start_vm mig migrate --to "127.0.0.1:$pport" --vm prvm --timeout-ms "$T" "${mode[@]}"

# state_of WHO: the migration state in that side's API.
state_of() {
	local sock="$VMM_RUN_DIR/prvm.sock"
	[ "$1" = dst ] && sock="$VMM_RUN_DIR/prvm.sock.incoming"
	run_vmm 20 migrate --status --api-socket "$sock" --json
	"$HARNESS" json "$WORK/out" state 2>/dev/null || echo "?"
}
# paused WHO: that guest makes no progress for a while (a running guest
# prints a pass line several times a second).
paused() {
	local n
	n=$(count_lines "$1.out" 'dirty pass [0-9]+ ok')
	sleep 3
	[ "$(count_lines "$1.out" 'dirty pass [0-9]+ ok')" = "$n" ] ||
		fail "the $1 guest ran: two owners"
}
# replay NAME: the reader's recover connection with the COMMIT's captured
# proof, sent as record NAME, straight to the target.
replay() {
	local session version commit
	session=$(sed -n 's/^hello main \([0-9a-f]*\)$/\1/p' "$WORK/proxy.out" | head -1)
	version=$(sed -n 's/^version \([0-9.]*\)$/\1/p' "$WORK/proxy.out" | head -1)
	commit=$(sed -n 's/^record COMMIT on main \([0-9a-f]*\)$/\1/p' "$WORK/proxy.out" | head -1)
	[ -n "$session" ] && [ -n "$version" ] || fail "the proxy saw no main hello"
	[ -n "$commit" ] || fail "the proxy captured no COMMIT"
	timeout --signal=KILL 60 python3 "$proxy" --replay "127.0.0.1:$port" "$version" \
		"$session" "$1" "$commit" >"$WORK/replay.out" 2>&1 || true
	cat "$WORK/replay.out"
	expect_line replay.out "replay: got RECOVER_STATE"
}

case $case in
replay-after-resume | resume-told | resume-told-postcopy)
	wait_line dst.err "test hook: stopped at target-prepared" 120
	wait_exit "$mig_pid" 120
	if [ "$case" = resume-told-postcopy ]; then
		[ "$status" = 3 ] || fail "vmm migrate exited $status, expected 3 (postcopy-paused)"
	else
		[ "$status" = 4 ] || fail "vmm migrate exited $status, expected 4 (switchover-unknown)"
	fi
	expect_line proxy.out "^record COMMIT on main "
	if [ "$case" != resume-told-postcopy ]; then
		run_vmm 120 migrate --recover --vm prvm
		expect_status 1
	fi
	paused src
	run_vmm 60 migrate --recover --decide resume --vm prvm
	expect_status 0
	expect_line out "recovered: the VM runs on the source"
	expect_progress src.out 3
	d0=$(count_lines dst.out 'dirty pass [0-9]+ ok')
	kill -CONT "$dst_pid"
	if [ "$case" != replay-after-resume ]; then
		# The late COMMIT, then the source's proven ABORT: it discards.
		wait_exit "$dst_pid" 30
		[ "$status" = 1 ] || fail "the told target exited $status, expected 1"
		expect_line dst.err "the source's operator resumed the VM there"
	else
		expect_line proxy.out "^dropped ABORT on main"
		wait_line dst.err "COMMIT came [0-9]+ ms after PREPARED: waiting for RELEASE" 60
		replay RELEASE
		wait_line dst.err "incoming: refused .*RELEASE whose proof does not verify" 30
		paused dst
		[ "$(state_of dst)" = switchover-unknown ] ||
			fail "the target left switchover-unknown on a replayed proof"
		reject_line dst.err "switchover settled: the VM runs here"
		# The operator knows the source runs it; a pending target cannot discard: stop it.
		kill -9 "$dst_pid"
		wait "$dst_pid" 2>/dev/null || true
	fi
	[ "$(count_lines dst.out 'dirty pass [0-9]+ ok')" = "$d0" ] || fail "the target's guest ran"
	expect_progress src.out 3
	;;
release-forged)
	wait_exit "$mig_pid" 120
	[ "$status" = 4 ] || fail "vmm migrate exited $status, expected 4 (switchover-unknown)"
	expect_line proxy.out "^dropped COMMITTED on main"
	# The target runs on its COMMIT; nothing has let it go yet.
	expect_progress dst.out 3
	replay RELEASE
	wait_line dst.err "incoming: refused .*RELEASE whose proof does not verify" 30
	sleep 3
	# The source, alive and paused, keeps its API path; the target keeps its own.
	[ -e "$VMM_RUN_DIR/prvm.sock.incoming" ] ||
		fail "the target left its temporary API path on a forged RELEASE"
	[ "$(state_of src)" = switchover-unknown ] ||
		fail "the source's API path no longer answers as the source"
	paused src
	run_vmm 120 migrate --recover --vm prvm
	expect_status 0
	expect_line out "recovered: the VM runs on the target"
	wait_exit "$src_pid" 60
	expect_status 0
	wait_gone "$VMM_RUN_DIR/prvm.sock.incoming" || fail "the target kept its temporary API path"
	expect_progress dst.out 3
	;;
esac
reject_line src.out CORRUPTION
reject_line dst.out CORRUPTION
echo PASS
