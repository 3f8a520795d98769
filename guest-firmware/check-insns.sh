#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# check-insns.sh OBJDUMP ELF - fail if the guest image contains instructions
# the nested-PVM emulator cannot execute (it stops with KVM_EXIT_INTERNAL_ERROR): SSE/AVX/MMX
# registers, x87, popcnt, cmpxchg16b, int3, xsave/xrstor, clac/stac, and
# endbr (CET) in case a compiler default slips one in. Also fails on
# sanitizer symbols, which would mean host flags leaked into the build.
set -eu
objdump=$1
elf=$2

dis=$("$objdump" -d --no-show-raw-insn "$elf")
bad=$(printf '%s\n' "$dis" | awk -F'\t' 'NF >= 2 && $1 ~ /^ *[0-9a-f]+:$/ {
	split($2, w, " "); m = w[1];
	if (m ~ /^(rep|repz|repnz|lock|data16|addr32|notrack|bnd)$/) m = w[2];
	if (m ~ /^f/ || m ~ /^(popcnt|cmpxchg16b|int3|xsave|xrstor|xsaveopt|xsavec|fxsave|fxrstor|clac|stac|endbr64|endbr32|emms)/ ||
	    $2 ~ /%[xyz]mm[0-9]|%mm[0-7]|%st(\(|$|,)/)
		print
}')
if [ -n "$bad" ]; then
	echo "$elf: instructions the PVM emulator cannot run:" >&2
	printf '%s\n' "$bad" | head -20 >&2
	exit 1
fi
if "$objdump" -t "$elf" | grep -Eq '__(a|ub|t|m)san'; then
	echo "$elf: contains sanitizer symbols (host flags leaked into the guest build)" >&2
	exit 1
fi
if ! "$objdump" -p "$elf" | grep -q '^ *NOTE '; then
	echo "$elf: no PT_NOTE segment" >&2
	exit 1
fi
exit 0
