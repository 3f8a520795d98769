#!/usr/bin/env bash
# The config's input caps (docs/config.md, "Limits"): a config file over
# 1 MiB, a line over 8192 bytes, a NUL byte in a value, or a path that is
# no regular file (/dev/zero, a FIFO nobody writes, a directory) is refused
# at once with one line naming the file (and the key) and exit status 2. vmm reads its config before
# it opens /dev/kvm, so this needs no KVM (no require_kvm).
set -eu
. "$(dirname "$0")/lib.sh"

refused() { # REGEX PATH
	run_vmm 10 run "$2"
	expect_status 2
	expect_line err "$1"
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "expected one line of error, got: $(cat "$WORK/err")"
	[ ! -s "$WORK/out" ] || fail "expected no output, got: $(head -c 200 "$WORK/out")"
}

refused '^vmm: /dev/zero: cannot read config: not a regular file \(a device\)$' /dev/zero

rm -f "$WORK/fifo.cfg"
mkfifo "$WORK/fifo.cfg"
refused "^vmm: $WORK/fifo.cfg: cannot read config: not a regular file \(a FIFO or pipe\)$" \
	"$WORK/fifo.cfg"

mkdir -p "$WORK/dir.cfg"
refused "^vmm: $WORK/dir.cfg: cannot read config: Is a directory$" "$WORK/dir.cfg"

# 1 MiB + 1 byte of comment lines
{
	printf '[vm]\n'
	head -c $((1024 * 1024 - 5 + 1)) /dev/zero | tr '\0' '#' | fold -w 79
} | head -c $((1024 * 1024 + 1)) >"$WORK/big.cfg"
[ "$(stat -c %s "$WORK/big.cfg")" -eq $((1024 * 1024 + 1)) ] || fail "big.cfg has the wrong size"
refused "^vmm: $WORK/big.cfg: cannot read config: the file is 1048577 bytes, the limit is 1 MiB$" \
	"$WORK/big.cfg"

# line 2 is 8193 bytes long
{
	printf '[vm]\n'
	head -c 8193 /dev/zero | tr '\0' ';'
	printf '\nvcpus = 2\n'
} >"$WORK/long.cfg"
refused "^vmm: $WORK/long.cfg:2: line is 8193 bytes long, the limit is 8192 bytes$" "$WORK/long.cfg"

# A NUL byte in a value: refused naming the file, line and key, not cut
# there (the value would silently be "nulvm").
printf '[vm]\nname = nulvm\000tail\nmemory = 64M\n' >"$WORK/nul.cfg"
refused "^vmm: $WORK/nul.cfg:2: \\[vm\\] name: a NUL byte in the value \\(byte 13 of the line\\)$" \
	"$WORK/nul.cfg"

# A CPU feature no name of the table: the key and the word, before any VM.
run_vmm 10 run "$EXAMPLES/demo.cfg" --set vm.cpu_features=sse2,avx3
expect_status 2
expect_line err "^vmm: --set: \[vm\] cpu_features: unknown CPU feature 'avx3'"
echo PASS
