#!/usr/bin/env bash
# `cmake --install` into a fresh prefix outside the build tree, then the
# installed vmm, run from another directory, answers --version/--help and
# boots the hello guest with the firmware it finds next to itself
# (bin/../share/vmm/vmm-firmware.elf): the config names no firmware. A copy
# of the prefix whose firmware is broken then fails on that very file, so
# the installed firmware is the one used, not the build tree's fallback.
# BUILD_DIR is the build tree to install from (set by ctest).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
: "${BUILD_DIR:?set BUILD_DIR to the build tree}"

tmp=$(mktemp -d /tmp/vmm-install-test.XXXXXX)
trap 'cleanup_pids; rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
if ! cmake --install "$BUILD_DIR" --prefix "$prefix" >"$WORK/install.log" 2>&1; then
	tail -20 "$WORK/install.log"
	fail "cmake --install into $prefix failed"
fi
for f in bin/vmm share/vmm/vmm-firmware.elf share/vmm/examples/demo.cfg \
	share/vmm/examples/dirty.cfg share/doc/vmm/README.md share/doc/vmm/docs/config.md \
	share/man/man1/vmm.1 share/bash-completion/completions/vmm; do
	[ -f "$prefix/$f" ] || fail "the install has no $f"
done
[ -x "$prefix/bin/vmm" ] || fail "the installed bin/vmm is not executable"

mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
VMM=$prefix/bin/vmm

run_vmm 10 --version
expect_status 0
expect_line out '^vmm [0-9]+\.[0-9]+\.[0-9]+$'
run_vmm 10 --help
expect_status 0
expect_line out '^  run CONFIG'
expect_line out '^  migrate '

# The example names no [firmware] path: the default is the installed one.
grep -q '^\[firmware\]' "$prefix/share/vmm/examples/demo.cfg" &&
	fail "demo.cfg sets a firmware: the test would not exercise the default"
run_vmm 60 run "$prefix/share/vmm/examples/demo.cfg"
expect_status 0
expect_line out 'hello from vCPU 0: 1 vCPUs, 256 MiB RAM'
expect_line out 'vmm-firmware: done'

# A moved copy of the prefix whose firmware is not an ELF: vmm must pick
# that file (and refuse it), not fall back to the build tree's.
cp -a "$prefix" "$tmp/moved"
echo "not a firmware" >"$tmp/moved/share/vmm/vmm-firmware.elf"
VMM=$tmp/moved/bin/vmm
run_vmm 60 run "$tmp/moved/share/vmm/examples/demo.cfg"
[ "$status" != 0 ] || fail "a broken installed firmware booted (the build tree's was used?)"
expect_line err "$tmp/moved/bin/\.\./share/vmm/vmm-firmware\.elf"
reject_line out 'vmm-firmware: done'
echo PASS
