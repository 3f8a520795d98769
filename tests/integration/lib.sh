#!/usr/bin/env bash
# Shared helpers for integration tests. Sourced; expects $VMM (path to the
# vmm binary) and $WORK (a scratch directory) to be set by the caller.
set -u
mkdir -p "$WORK"

# On failure, show the tail of every background VM's logs too: a migration
# that fails on one side is usually explained by the other side's stderr.
fail() {
	local f
	for f in "$WORK"/*.out "$WORK"/*.err; do
		[ -f "$f" ] || continue
		case "$(basename "$f")" in out | err) continue ;; esac
		echo "--- $(basename "$f")"
		tail -15 "$f"
	done
	echo "FAIL: $*" >&2
	exit 1
}

# Tests that boot guests must fail, not skip, without /dev/kvm, unless the
# builder explicitly opts out (e.g. a container build with no KVM).
require_kvm() {
	if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		if [ "${VMM_TESTS_NO_KVM:-0}" = 1 ]; then
			echo "SKIP: /dev/kvm not usable and VMM_TESTS_NO_KVM=1"
			exit 77
		fi
		fail "/dev/kvm is missing or not accessible (set VMM_TESTS_NO_KVM=1 to skip guest tests)"
	fi
}

# run_vmm TIMEOUT ARGS...: runs vmm, stdout to $WORK/out, stderr to $WORK/err,
# exit status in $status.
run_vmm() {
	local t=$1
	shift
	set +e
	timeout --signal=KILL "$t" "$VMM" "$@" >"$WORK/out" 2>"$WORK/err"
	status=$?
	set -e
	if [ "$status" = 137 ]; then
		echo "--- stdout"; tail -20 "$WORK/out"; echo "--- stderr"; tail -20 "$WORK/err"
		fail "vmm $* did not finish within $t s"
	fi
}

expect_status() {
	if [ "$status" != "$1" ]; then
		echo "--- stdout"; tail -20 "$WORK/out"; echo "--- stderr"; tail -20 "$WORK/err"
		fail "expected exit status $1, got $status"
	fi
}

# expect_line FILE REGEX: some line of $WORK/FILE matches the extended regex.
expect_line() {
	if ! grep -Eq -- "$2" "$WORK/$1"; then
		echo "--- $1"; tail -30 "$WORK/$1"
		fail "no line of $1 matches /$2/"
	fi
}

reject_line() {
	if grep -Eq -- "$2" "$WORK/$1"; then
		echo "--- $1"; tail -30 "$WORK/$1"
		fail "a line of $1 matches /$2/"
	fi
}

# wait_line FILE REGEX SECONDS: waits until a line of $WORK/FILE matches.
wait_line() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -Eq -- "$2" "$WORK/$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "--- $1"; tail -20 "$WORK/$1" 2>/dev/null
	fail "no line of $1 matched /$2/ within $3 s"
}

# Count of lines of $WORK/FILE matching REGEX.
count_lines() {
	grep -Ec -- "$2" "$WORK/$1" 2>/dev/null || true
}

# expect_progress FILE N: the dirty guest logging to $WORK/FILE completes N
# more passes within 60 s (counting lines, not pass numbers: the guest may
# skip a line, and a migration renumbers nothing).
expect_progress() {
	local before i
	before=$(count_lines "$1" 'dirty pass [0-9]+ ok')
	for ((i = 0; i < 600; i++)); do
		[ "$(count_lines "$1" 'dirty pass [0-9]+ ok')" -ge $((before + $2)) ] && return 0
		sleep 0.1
	done
	fail "the guest of $1 stopped making progress"
}

# Every VM of a test gets its API socket under $WORK, so tests never collide.
export VMM_RUN_DIR="$WORK/run"
mkdir -p "$VMM_RUN_DIR"

PIDS=()
cleanup_pids() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup_pids EXIT

# start_vm NAME ARGS...: `vmm ARGS` in the background, output in $WORK/NAME.out/.err;
# the pid lands in the variable named NAME_pid.
start_vm() {
	local name=$1
	shift
	"$VMM" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
	PIDS+=($!)
	printf -v "${name}_pid" '%s' "$!"
}

# wait_exit PID SECONDS: waits for a background process; its status in $status.
wait_exit() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		if ! kill -0 "$1" 2>/dev/null; then
			set +e
			wait "$1"
			status=$?
			set -e
			return 0
		fi
		sleep 0.1
	done
	fail "process $1 did not exit within $2 s"
}

# A port for this test: distinct per test name, so parallel runs do not collide.
test_port() {
	echo $((20000 + $(echo "$WORK" | cksum | cut -d' ' -f1) % 20000))
}

# wait_listen PORT: waits until something listens on the TCP port (a target
# started with --incoming), without connecting to it.
wait_listen() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
	fail "nothing listens on port $1"
}
