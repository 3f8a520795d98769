#!/usr/bin/env bash
# A target whose incoming migration fails before PREPARED says so, then
# discards the VM and exits 1 (docs/migration-protocol.md, "Failures"),
# whatever the order in which its source's connections end. A fake source
# (fake_source, the case of the same name) fixes that order:
#   create-fails     the VM cannot be created here (a 1 kHz guest TSC, or
#                    no /dev/kvm at all): needs no KVM
#   desc-then-close  main ends right after its VM description, while the
#                    target's gate still holds it
#   caps-then-close  main ends after CAPS, instead of the data connections
#   data-end-first   data connection 0 ends inside a record, main stays open
#   main-end-first   main ends once the receiver runs, data 0 stays open
#   stop-races       create-fails, and a SIGTERM comes as it fails
#   shutdown-races   create-fails, and a PUT /api/v1/vm/shutdown as it fails
# The target stops at the step target-failed (VMM_TEST_STOP_AT), where its
# failure is recorded: an event stream opened while it waited and a GET
# /api/v1/vm/migrate sent while it is stopped must both say "failed" with
# the reason before it exits, never "none" with no error.
set -eu
. "$(dirname "$0")/lib.sh"
case=$1
api=$(dirname "$0")/target_api.py
fake=$case
case $case in
stop-races | shutdown-races) fake=create-fails ;;
esac
[ "$fake" = create-fails ] || require_kvm
port=$(test_port)
sock="$VMM_RUN_DIR/vmm.sock.incoming"
case $fake in
create-fails) reason='.' ;; # this host's: the TSC, or no /dev/kvm
desc-then-close) reason='^(sending CAPS: .*|the source closed its main connection instead of opening its data connections .*)$' ;;
caps-then-close) reason='^the source closed its main connection instead of opening its data connections ' ;;
data-end-first) reason='^data connection 0: reading PAGES: the stream ended in the middle of a record$' ;;
main-end-first) reason='^main connection: the stream ended in the middle of a record$' ;;
*) fail "unknown case $case" ;;
esac

VMM_TEST_STOP_AT=target-failed start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port" "$dst_pid"

# 1. A watcher, there before the source: its first line is the waiting target.
: >"$WORK/watch.out" # not a previous run's, which a wait would read
: >"$WORK/get.out"
python3 "$api" watch "$sock" "$WORK/watch.out" >"$WORK/watch.done" 2>&1 &
watch_pid=$!
PIDS+=("$watch_pid")
wait_line watch.out '"vm_state":"waiting"' 30

# 2. The source, its connections ending in the case's order; the target fails.
"$FAKE_SOURCE" "127.0.0.1:$port" "$fake" >"$WORK/fake.out" 2>&1 &
fake_pid=$!
PIDS+=("$fake_pid")
wait_line dst.err "test hook: stopped at target-failed" 120
for ((i = 0; i < 100 * scale; i++)); do
	[ "$(awk '{print $3}' "/proc/$dst_pid/stat")" = T ] && break
	sleep 0.1
done
[ "$(awk '{print $3}' "/proc/$dst_pid/stat")" = T ] || fail "the target did not stop"

# 3. A status request while it is stopped: in its socket before it goes on.
python3 "$api" get "$sock" /api/v1/vm/migrate "$WORK/get.reply" >"$WORK/get.out" 2>&1 &
get_pid=$!
PIDS+=("$get_pid")
wait_line get.out '^sent$' 30
# A stop, pending until it continues: it comes as the failure unfolds.
case $case in
stop-races) kill -TERM "$dst_pid" ;;
shutdown-races)
	: >"$WORK/put.out"
	python3 "$api" put "$sock" /api/v1/vm/shutdown "$WORK/put.reply" >"$WORK/put.out" 2>&1 &
	put_pid=$!
	PIDS+=("$put_pid")
	wait_line put.out '^sent$' 30
	;;
esac
kill -CONT "$dst_pid"

# 4. It exits 1, its last line the reason; both clients heard "failed" with it.
wait_exit "$dst_pid" 60
[ "$status" = 1 ] || { cat "$WORK/dst.err"; fail "target exit status $status, expected 1"; }
why=$(sed -n 's/.*incoming migration: //p' "$WORK/dst.err" | tail -1)
[[ "$why" =~ $reason ]] || fail "the target's last line says '$why', not /$reason/"
wait_exit "$get_pid" 60
[ "$status" = 0 ] || { cat "$WORK/get.out"; fail "the status request got no answer"; }
python3 "$api" reply "$WORK/get.reply" "$reason" "$why" || fail "GET /api/v1/vm/migrate"
wait_exit "$watch_pid" 60
[ "$status" = 0 ] || { cat "$WORK/watch.done"; fail "the event stream did not end"; }
python3 "$api" events "$WORK/watch.out" "$reason" "$why" || fail "the event stream"

if [ "$case" = shutdown-races ]; then
	wait_exit "$put_pid" 60
	grep -q '^HTTP/1.1 202 ' "$WORK/put.reply" && grep -q '"stopping"' "$WORK/put.reply" ||
		{ cat "$WORK/put.reply"; fail "the shutdown was not answered 202 stopping"; }
fi

# 5. The source was told why, where its main connection was still open.
wait_exit "$fake_pid" 60
[ "$status" = 0 ] || { cat "$WORK/fake.out"; fail "fake_source $fake: exit $status"; }
case $fake in
create-fails | data-end-first)
	grep -qF "target says: $why" "$WORK/fake.out" || { cat "$WORK/fake.out"; fail "the source was not told"; } ;;
esac
[ ! -e "$sock" ] || fail "the target left its API socket behind"
echo "ok: $case: $why"
echo PASS
