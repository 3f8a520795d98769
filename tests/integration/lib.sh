#!/usr/bin/env bash
# Shared helpers for integration tests. Sourced; expects $VMM (path to the
# vmm binary) and $WORK (a scratch directory) to be set by the caller.
set -u
mkdir -p "$WORK"

fail() {
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
