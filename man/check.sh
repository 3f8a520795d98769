#!/bin/sh
# lint.man_page: the manual page renders without groff warnings, and it and
# the bash completion name every long option each command's --help lists
# (so neither can drift from the code), and the completion completes.
# usage: check.sh VMM
set -eu
vmm=$1
here=$(cd "$(dirname "$0")/.." && pwd)
page=$here/man/man1/vmm.1
comp=$here/completions/vmm.bash
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
if command -v groff >/dev/null; then
	out=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff: $out"
	[ -z "$out" ] || fail "groff warnings: $out"
fi
# Every command `vmm --help` lists: the first words of its command lines.
commands=$("$vmm" --help | awk '/^commands:/ { on = 1; next } on && /^$/ { exit }
	on { for (i = 1; i <= NF; i++) { if ($i == "|") continue; if ($i !~ /^[a-z][a-z-]*$/) break; print $i } }' | sort -u)
[ "$(echo "$commands" | wc -l)" -ge 8 ] || fail "vmm --help lists too few commands: $commands"
for c in $commands; do
	# the option list: lines that start with (-x, )--option
	opts=$("$vmm" "$c" --help 2>&1 | sed -nE 's/^ +(-[a-zA-Z], )?(--[a-z][a-z-]*).*/\2/p' | sort -u)
	[ -n "$opts" ] || fail "vmm $c --help lists no options"
	for o in $opts; do
		# the page writes a dash as \-
		grep -qF -- "$(echo "$o" | sed 's/-/\\-/g')" "$page" || fail "vmm.1 lacks vmm $c $o"
		bash -c ". '$comp'; COMP_WORDS=('$vmm' $c --); COMP_CWORD=2; _vmm; printf '%s\n' \"\${COMPREPLY[@]}\"" |
			grep -qx -- "$o" || fail "the bash completion of vmm $c lacks $o"
	done
done
got=$(bash -c ". '$comp'; COMP_WORDS=(vmm mi); COMP_CWORD=1; _vmm; echo \"\${COMPREPLY[*]}\"")
[ "$got" = migrate ] || fail "completing 'vmm mi' gave '$got'"
echo PASS
