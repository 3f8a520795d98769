#!/usr/bin/env bash
# Console input reaches COM1: the echo guest prints back what is piped into
# `vmm run` (all of it, in order, more than the UART's FIFO and queue hold:
# backpressure, not loss) and exits 0 on "quit"; [console] input = none
# gives it nothing; and a VM migrated to a target started with --incoming
# takes the target's stdin once it runs there.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
ECHO=(--set workload.kind=echo --set vm.memory=64M)

# start_in NAME FILE ARGS...: start_vm with stdin from FILE (a background
# job's stdin is /dev/null unless the job itself redirects it).
start_in() {
	local name=$1 in=$2
	shift 2
	: >"$WORK/$name.out"
	: >"$WORK/$name.err"
	"$VMM" "$@" <"$in" >>"$WORK/$name.out" 2>>"$WORK/$name.err" &
	PIDS+=($!)
	printf -v "${name}_pid" '%s' "$!"
}

# 1. A pipe, verbatim, with backpressure: 3000 lines (~30 KiB).
{
	printf 'hello, guest\n'
	seq 1 3000 | sed 's/^/line /'
	printf 'quit\n'
} >"$WORK/in.txt"
set +e
timeout --signal=KILL 120 "$VMM" run "$EXAMPLES/demo.cfg" "${ECHO[@]}" \
	<"$WORK/in.txt" >"$WORK/out" 2>"$WORK/err"
status=$?
set -e
expect_status 0
expect_line out "^vmm-firmware: echo: hello, guest$"
expect_line out "^vmm-firmware: echo: bye after 3002 lines$"
sed 's/^/vmm-firmware: echo: /' "$WORK/in.txt" >"$WORK/expected"
grep '^vmm-firmware: echo: ' "$WORK/out" | grep -v -e 'echo: ready' -e 'echo: bye' \
	>"$WORK/echoed" || true
cmp -s "$WORK/expected" "$WORK/echoed" || {
	diff "$WORK/expected" "$WORK/echoed" | head -20
	fail "the echoed lines differ from the input"
}

# 2. input = none: the guest reads nothing, even with a pipe on stdin.
start_in none "$WORK/in.txt" run "$EXAMPLES/demo.cfg" "${ECHO[@]}" --set vm.name=echonone \
	--set console.input=none
wait_line none.out "echo: ready" 30
"$HARNESS" wait-line "$WORK/none.out" "echo: hello" 2 >/dev/null 2>&1 &&
	fail "input = none, yet the guest read its stdin"
kill -TERM "$none_pid"
wait_exit "$none_pid" 30
expect_status 143

# 3. Migration: the target's stdin reaches the guest once it runs there.
rm -f "$WORK/src.fifo" "$WORK/dst.fifo"
mkfifo "$WORK/src.fifo" "$WORK/dst.fifo"
exec 3<>"$WORK/src.fifo" 4<>"$WORK/dst.fifo"
start_in src "$WORK/src.fifo" run "$EXAMPLES/demo.cfg" "${ECHO[@]}" --set vm.name=echomig
wait_line src.out "echo: ready" 30
printf 'on the source\n' >&3
wait_line src.out "echo: on the source" 30
port=$(test_port)
start_in dst "$WORK/dst.fifo" run --incoming "127.0.0.1:$port"
wait_listen "$port" "$dst_pid"
# Written before the migration: it waits in the pipe until the VM runs here.
printf 'typed at the target early\n' >&4
"$VMM" migrate --vm echomig --to "127.0.0.1:$port" >"$WORK/mig.out" 2>"$WORK/mig.err" ||
	fail "vmm migrate failed: $(tail -3 "$WORK/mig.err")"
wait_exit "$src_pid" 30
expect_status 0
wait_line dst.out "echo: typed at the target early" 30
printf 'on the target\nquit\n' >&4
wait_exit "$dst_pid" 30
expect_status 0
expect_line dst.out "echo: on the target"
expect_line dst.out "echo: bye after 4 lines"
reject_line src.out "echo: typed at the target"
echo PASS
