#!/usr/bin/env bash
# A malformed, truncated or oversized stream ends the incoming migration with
# a clear error naming the record, a non-zero exit and no crash.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
port=$(test_port)
check() { # CASE REGEX
	start_vm dst run --incoming "127.0.0.1:$port"
	wait_listen "$port"
	"$FAKE_SOURCE" "127.0.0.1:$port" "$1" || fail "fake_source $1 failed"
	wait_exit "$dst_pid" 20
	[ "$status" = 1 ] || { cat "$WORK/dst.err"; fail "$1: target exit status $status, expected 1"; }
	expect_line dst.err "$2"
	echo "ok: $1: $(cat "$WORK/dst.err")"
}
check bad-magic "not a vmm migration stream"
check huge-record "VM_DESC: record larger than 1 MiB"
check truncated-desc "VM_DESC"
check desc-bad-lengths "VM_DESC: length .* does not match 1000 slots"
check page-outside-slot "PAGES: page 65536 is outside slot 0"
check pages-bad-length "PAGES record length .* does not match"
check pages-too-many "PAGES with 0 zero \+ 100000 data pages"
check pages-bad-zstd "compressed data does not expand"
check pages-truncated "data connection 0"
check bitmap-bad-slot "BITMAP for slot 7"
check bitmap-bad-zstd "BITMAP for slot 0 does not expand"
check bitmap-end-mismatch "BITMAP_END announces 1 bitmaps / 2 pages, got 1 / 1"
check bitmap-before-postcopy "BITMAP before POSTCOPY"
echo PASS
