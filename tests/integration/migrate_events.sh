#!/usr/bin/env bash
# GET /api/v1/vm/events and the completion `vmm migrate` learns from it
# (docs/api.md). Case:
#   stream   a watcher (curl) gets the first state, progress lines while a
#            real migration runs, and the final "completed" line; a 9th
#            watcher gets a JSON 503; a watcher that never reads delays the
#            source's exit by the bounded linger only; a body over 64 KiB
#            gets a JSON 413
#   pidns    the source runs in its own pid namespace (as in a container):
#            `vmm migrate` from outside cannot see its pid and still
#            completes and prints its summary; run inside that namespace,
#            where the source is pid 1, it prints its summary before the
#            source exits (which kills everything left in the namespace)
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1
port=$(test_port)
sock="$VMM_RUN_DIR/evvm.sock"
src_args=(run "$EXAMPLES/dirty.cfg" --set vm.name=evvm --set vm.memory=512M
	--set workload.working_set=32M --set workload.passes=0 --set workload.heartbeat_ms=0)
# Slow enough to take a few seconds (progress lines), bounded in time.
mig_args=(--to "127.0.0.1:$port" --api-socket "$sock" --compress none --max-bandwidth 20M
	--max-time-ms 2000 --json)

start_target() {
	start_vm dst run --incoming "127.0.0.1:$port"
	wait_listen "$port" "$dst_pid"
}

# The target runs the guest on, verifying, and shuts down cleanly.
check_target() {
	expect_progress dst.out 2
	reject_line dst.out CORRUPTION
	kill -TERM "$dst_pid"
	wait_exit "$dst_pid" 20
	expect_status 143
}

case $case in
stream)
	start_vm src "${src_args[@]}"
	wait_line src.out "dirty pass [0-9]+ ok" 60

	# 8 streams are served; the 9th gets a JSON error, and a freed slot serves again.
	# (files emptied before the child starts: see start_vm in lib.sh)
	: >"$WORK/hold.out"
	python3 "$(dirname "$0")/events_watch.py" hold 8 "$sock" >>"$WORK/hold.out" &
	hold_pid=$!
	PIDS+=("$hold_pid")
	wait_line hold.out '^ready' 30
	code=$(curl -s --max-time 10 --unix-socket "$sock" -o "$WORK/ninth.out" -w '%{http_code}' \
		http://x/api/v1/vm/events)
	[ "$code" = 503 ] || fail "a 9th watcher got HTTP $code, not 503"
	expect_line ninth.out '^\{"error":"too many event streams'
	kill "$hold_pid"
	wait "$hold_pid" 2>/dev/null || true

	# A watcher has nothing to send: what it sends anyway is not read into
	# memory without bound (the server stops reading at 4 KiB; only the
	# socket buffers take more).
	python3 "$(dirname "$0")/events_watch.py" junk 64 "$sock" >"$WORK/junk.out" ||
		fail "the junk watcher failed: $(cat "$WORK/junk.out")"
	accepted=$(sed -n 's/^accepted //p' "$WORK/junk.out")
	[ "${accepted:-0}" -lt $((8 << 20)) ] ||
		fail "the VMM read $accepted bytes a watcher sent on its stream"

	# Libevent's own 413 is an HTML page: the server answers in JSON.
	head -c 70000 /dev/zero | tr '\0' ' ' >"$WORK/big.json"
	code=$(curl -s --max-time 10 --unix-socket "$sock" -o "$WORK/big.out" -w '%{http_code}' \
		-X PUT --data-binary @"$WORK/big.json" http://x/api/v1/vm/migrate)
	[ "$code" = 413 ] || fail "a 70000-byte body got HTTP $code, not 413"
	expect_line big.out '^\{"error":"the request body is larger than 65536 bytes"\}'

	start_target
	: >"$WORK/events.out"
	curl -s -N --max-time 120 -D "$WORK/events.hdr" --unix-socket "$sock" \
		http://x/api/v1/vm/events >>"$WORK/events.out" 2>"$WORK/curl.err" &
	curl_pid=$!
	PIDS+=("$curl_pid")
	: >"$WORK/noread.out"
	python3 "$(dirname "$0")/events_watch.py" noread "$sock" >>"$WORK/noread.out" &
	noread_pid=$!
	PIDS+=("$noread_pid")
	wait_line noread.out '^ready' 30
	wait_line events.out '"type":"state".*"vm_state":"running"' 30

	run_vmm 120 migrate "${mig_args[@]}"
	expect_status 0
	expect_line out '"state":"completed"'
	# The watcher that never reads holds the source for the linger (3 s) at most.
	wait_exit "$src_pid" 15
	expect_status 0
	wait_exit "$curl_pid" 15
	[ "$status" = 0 ] || fail "curl exited $status: the stream did not end cleanly"
	expect_line events.out '"type":"state".*"state":"(setup|precopy)"'
	[ "$(count_lines events.out '"type":"progress".*"state":"precopy"')" -ge 2 ] ||
		fail "fewer than 2 progress lines during precopy"
	tail -1 "$WORK/events.out" | grep -q '"type":"completed".*"vm_state":"migrated".*"state":"completed"' ||
		fail "the last event is not completed: $(tail -c 300 "$WORK/events.out")"
	[ "$(count_lines events.out '"type":"completed"')" = 1 ] || fail "more than one final line"
	# One stream per connection: no second request can reuse its slot.
	expect_line events.hdr '^Connection: close'
	kill "$noread_pid" 2>/dev/null || true
	check_target
	;;
pidns)
	# As root a new pid namespace; else a user namespace around it. Killing
	# unshare kills its child too (--kill-child): no VMM outlives the test.
	ns=(unshare --pid --fork --mount-proc --kill-child=KILL)
	[ "$(id -u)" = 0 ] || ns=(unshare --user --map-root-user --pid --fork --mount-proc --kill-child=KILL)
	"${ns[@]}" true 2>/dev/null || fail "cannot create a pid namespace: ${ns[*]}"
	# The source VM inside a new pid namespace, once it has verified a pass.
	start_ns_source() {
		: >"$WORK/src.out"
		: >"$WORK/src.err"
		"${ns[@]}" "$VMM" "${src_args[@]}" </dev/null >>"$WORK/src.out" 2>>"$WORK/src.err" &
		src_pid=$!
		PIDS+=("$src_pid")
		wait_line src.out "dirty pass [0-9]+ ok" 60
	}

	# From outside: the source reports pid 1, which is not the VMM here.
	start_ns_source
	curl -s --max-time 10 --unix-socket "$sock" http://x/api/v1/vm >"$WORK/info.out"
	expect_line info.out '"pid":1,'
	start_target
	run_vmm 120 migrate "${mig_args[@]}"
	expect_status 0
	expect_line out '"state":"completed"'
	wait_exit "$src_pid" 15
	expect_status 0
	check_target

	# From inside, with the source as pid 1: its exit kills `vmm migrate`
	# if it still runs, so the summary must be out before.
	[ "$(id -u)" = 0 ] || { echo "PASS (not root: the nsenter half skipped)"; exit 0; }
	port=$(test_port)
	mig_args[1]="127.0.0.1:$port"
	start_ns_source
	init=
	read -r init _ <"/proc/$src_pid/task/$src_pid/children" || true
	[ -n "$init" ] || fail "no pid 1 under unshare $src_pid"
	start_target
	# Not run_vmm: its 137 means "timed out", here it may be the namespace's end.
	set +e
	timeout 120 nsenter --target "$init" --pid --mount "$VMM" migrate "${mig_args[@]}" \
		</dev/null >"$WORK/out" 2>"$WORK/err"
	status=$?
	set -e
	echo "vmm migrate in the namespace exited $status"
	[ "$status" = 0 ] || [ "$status" = 137 ] || { cat "$WORK/err"; fail "vmm migrate exited $status"; }
	expect_line out '"state":"completed"'
	wait_exit "$src_pid" 15
	expect_status 0
	check_target
	;;
*)
	fail "unknown case $case"
	;;
esac
echo PASS
