#!/usr/bin/env bash
# A waiting target that idle connections cannot fill. 64 idle TCP
# connections, each opened again as soon as the target drops it, hold every
# handshake slot of the gate; a real source's description still gets in
# (the gate evicts the oldest connection that sent nothing valid), and the
# refusals are logged at a limited rate with a count, not one line each.
# Admission comes before the VM exists, so this test needs no /dev/kvm: the
# description (fake_source tsc-1khz) asks for a guest TSC no host runs, and
# the target answers about the VM, not "busy", then exits 1.
set -eu
. "$(dirname "$0")/lib.sh"
port=$(test_port)
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port" "$dst_pid"

: >"$WORK/flood.out" # here, not in the child: a race with the wait below
python3 "$(dirname "$0")/flood.py" 127.0.0.1 "$port" 64 120 >>"$WORK/flood.out" &
PIDS+=($!)
"$HARNESS" wait-line "$WORK/flood.out" "^open 64" 60 || fail "the flood did not get 64 connections open"
# The gate is full and churning: the first refusals are printed, the rest
# counted into one line per interval (10 s).
wait_line dst.err "incoming: refused .*evicted: nothing valid yet" 30
wait_line dst.err "incoming: refused .*\\(and [0-9]+ more refused since the last line\\)" 60
expect_line dst.err "waiting for an incoming migration"

timeout --signal=KILL 60 "$FAKE_SOURCE" "127.0.0.1:$port" tsc-1khz >"$WORK/fake.out" ||
	{ cat "$WORK/fake.out"; fail "the source's description got no answer past the flood"; }
expect_line fake.out "target says: "
reject_line fake.out "busy"
echo "ok: past 64 idle connections: $(grep -o 'target says: .*' "$WORK/fake.out")"
wait_exit "$dst_pid" 30
[ "$status" = 1 ] || fail "target exit status $status, expected 1 (it could not create that VM)"

lines=$(count_lines dst.err "incoming: refused")
reopened=$(sed -n 's/^reopened //p' "$WORK/flood.out" || true)
echo "refusal lines: $lines (the flood reopened ${reopened:-?} connections so far)"
[ "$lines" -le 40 ] || fail "the target printed $lines refusal lines: not rate-limited"
echo PASS
