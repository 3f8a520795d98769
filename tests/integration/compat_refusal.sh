#!/usr/bin/env bash
# A target that cannot read a component this VM has (protocol 6.1,
# docs/compatibility.md): tests/integration/recproxy.py takes the serial
# port's component out of the real target's CAPS formats block, as a target
# without it would send it. The source refuses before any page and before
# any connection but main, in one line naming the component; the guest runs
# on at the source. Then the same pair without the proxy's edit migrates:
# the CAPS it saw carried the block (a 6.1 target to a 6.1 source) and the
# guest verifies every page on the target.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
port=$(test_port)
start_dirty_pair capsvm "$port"
start_proxy "$port" --caps-without 4
run_vmm 60 migrate --to "127.0.0.1:$pport" --vm capsvm
[ "$status" != 0 ] || fail "the migration to a target without serial state succeeded"
expect_line err "^vmm migrate: migration failed: the target's vmm \(protocol 6\.1\) cannot take this VM: serial state: the peer's vmm has no such component$"
expect_line proxy.out "^caps: took component 4 out$"
reject_line proxy.out "^hello (data|urgent)"
kill -0 "$src_pid" 2>/dev/null || fail "the source exited after the refusal"
expect_progress src.out 2
reject_line src.out "CORRUPTION"
kill -TERM "$proxy_pid" "$dst_pid" 2>/dev/null || true
wait_exit "$dst_pid" 30

# The same source, a fresh target, the proxy only watching.
port=$(test_port)
: >"$WORK/dst.out"
: >"$WORK/dst.err"
"$VMM" run --incoming "127.0.0.1:$port" </dev/null >>"$WORK/dst.out" 2>>"$WORK/dst.err" &
dst_pid=$!
PIDS+=("$dst_pid")
wait_listen "$port" "$dst_pid"
start_proxy "$port"
run_vmm 120 migrate --to "127.0.0.1:$pport" --vm capsvm --json
expect_status 0
expect_line proxy.out "^version 6\.1$"
expect_line proxy.out "^caps formats minor 1 framings 2-3 components 1:1-1,2:1-1,3:1-1,4:1-1,5:1-1,6:1-1,7:1-1$"
wait_exit "$src_pid" 60
expect_status 0
expect_progress dst.out 2 120
reject_line dst.out "CORRUPTION"
kill -TERM "$dst_pid"
wait_exit "$dst_pid" 30
echo PASS
