#!/usr/bin/env bash
# A malformed, truncated or oversized stream is refused with a clear error
# naming the record, and no crash. Before the VM exists (the hello and the
# VM description) the target refuses the peer on its own: the peer gets an
# ERROR record with the reason, the target prints the refusal and keeps
# waiting, and the next peer is answered. Once the VM exists, a bad record
# fails the migration: the target exits 1 naming it.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
port=$(test_port)

# refused CASE REGEX: against the waiting target, which stays.
refused() {
	local before
	before=$(count_lines dst.err "refused 127\.0\.0\.1:[0-9]+: .*$2")
	timeout --signal=KILL 60 "$FAKE_SOURCE" "127.0.0.1:$port" "$1" >"$WORK/fake.out" ||
		{ cat "$WORK/fake.out"; fail "$1: fake_source got no ERROR from the target"; }
	expect_line fake.out "target says: .*$2"
	"$HARNESS" wait-line "$WORK/dst.err" "refused 127\.0\.0\.1:[0-9]+: .*$2" 30 $((before + 1)) ||
		fail "$1: the target did not print the refusal"
	kill -0 "$dst_pid" 2>/dev/null || fail "$1: the target exited"
	[ -n "$(ss -Hltn "sport = :$port")" ] || fail "$1: the target stopped listening"
	echo "ok: $1: $(tail -1 "$WORK/dst.err")"
}
# check CASE REGEX: the VM exists when the bad record comes; the target exits 1.
check() {
	[ "${2:-}" = same ] || { start_vm dst run --incoming "127.0.0.1:$port"; wait_listen "$port"; }
	"$FAKE_SOURCE" "127.0.0.1:$port" "$1" || fail "fake_source $1 failed"
	wait_exit "$dst_pid" 20
	[ "$status" = 1 ] || { cat "$WORK/dst.err"; fail "$1: target exit status $status, expected 1"; }
	expect_line dst.err "$3"
	echo "ok: $1: $(tail -1 "$WORK/dst.err")"
}
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
refused bad-magic "not a vmm migration stream"
refused huge-record "VM_DESC: record larger than 1 MiB"
refused truncated-desc "VM_DESC: the stream ended in the middle of a record"
refused desc-bad-lengths "VM_DESC: length .* does not match 1000 slots"
# The same target then takes the next peer's VM (and its bad page kills it).
check page-outside-slot same "PAGES: page 65536 is outside slot 0"
check pages-bad-length new "PAGES record length .* does not match"
check pages-too-many new "PAGES with 0 zero \+ 100000 data pages"
check pages-bad-zstd new "compressed data does not expand"
check pages-truncated new "data connection 0"
check bitmap-bad-slot new "BITMAP for slot 7"
check bitmap-bad-zstd new "BITMAP for slot 0 does not expand"
check bitmap-end-mismatch new "BITMAP_END announces 1 bitmaps / 2 pages, got 1 / 1"
check bitmap-before-postcopy new "BITMAP before POSTCOPY"
echo PASS
