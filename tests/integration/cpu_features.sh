#!/usr/bin/env bash
# `vmm cpu-features` (docs/config.md, "A fleet's CPUs"): the intersection of
# hosts' --host --json files is a [vm] cpu_features every one of them can
# give, with the baselines it meets; bad files are refused in one line.
# This part needs no KVM. With /dev/kvm it also checks --host against a VM:
# a guest started with a baseline or "host" is described by the exact names
# it got (what a migration sends), and --common of this host alone is this
# host's set.
set -eu
. "$(dirname "$0")/lib.sh"

host_json() { # FILE VENDOR FEATURE...
	local f=$1 v=$2 list
	shift 2
	list=$(printf '"%s",' "$@")
	printf '{"format": 1, "vendor": "%s", "baselines": [], "features": [%s]}\n' "$v" "${list%,}" >"$WORK/$f"
}

base="fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 syscall nx lm"
v2="cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3"
v3="avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"
# shellcheck disable=SC2086 # word lists on purpose
host_json a.json amd $base $v2 $v3 aes sha_ni avx512f
# shellcheck disable=SC2086
host_json b.json amd $base $v2 aes rdrand
# shellcheck disable=SC2086
host_json c.json intel $base $v2 $v3 aes avx512f newfeature2031

run_vmm 10 cpu-features --common "$WORK/a.json" "$WORK/b.json"
expect_status 0
expect_line out '^vendor +amd$'
expect_line out '^baselines +x86-64, x86-64-v2$'
want=$(echo "$base $v2 aes" | tr ' ' '\n' | sort | tr '\n' ' ')
got=$(sed -n 's/^features *//p' "$WORK/out" | tr ',' '\n' | sort | tr '\n' ' ')
[ "$got" = "$want" ] || fail "a ∩ b: got '$got', want '$want'"
[ ! -s "$WORK/err" ] || fail "unexpected stderr: $(cat "$WORK/err")"

# The JSON form reads back, and a third host narrows it further: the vendor
# is mixed (said on stderr), the name this vmm does not know is left out.
run_vmm 10 cpu-features --common "$WORK/a.json" "$WORK/c.json" --json
expect_status 0
mv "$WORK/out" "$WORK/ac.json"
expect_line err 'left out 1 name\(s\) this vmm does not know'
expect_line err "the hosts' CPU vendors differ"
run_vmm 10 cpu-features --common "$WORK/ac.json"
expect_status 0
expect_line out '^vendor +mixed$'
expect_line out '^baselines +x86-64, x86-64-v2, x86-64-v3$'
want=$(echo "$base $v2 $v3 aes avx512f" | tr ' ' '\n' | sort | tr '\n' ' ')
got=$(sed -n 's/^features *//p' "$WORK/out" | tr ',' '\n' | sort | tr '\n' ' ')
[ "$got" = "$want" ] || fail "a ∩ c: got '$got', want '$want'"

# The common list is a [vm] cpu_features the config accepts, and so are the
# baselines and "host" (vmm reads the config before it opens /dev/kvm: an
# unknown name fails there, a known one gets as far as KVM or the guest).
for list in "$(sed -n 's/^features *//p' "$WORK/out")" x86-64-v3 "x86-64-v2,aes" host; do
	run_vmm 10 run "$EXAMPLES/demo.cfg" --set vm.cpu_features="$list" --set vm.memory=0
	reject_line err 'cpu_features'
done
run_vmm 10 run "$EXAMPLES/demo.cfg" --set vm.cpu_features=x86-64-v5
expect_status 2
expect_line err "^vmm: --set: \[vm\] cpu_features: unknown CPU feature 'x86-64-v5' "

# Refusals: one line naming the file and what is wrong, exit 1.
refused() { # REGEX FILE
	run_vmm 10 cpu-features --common "$2"
	expect_status 1
	expect_line err "$1"
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "expected one line, got: $(cat "$WORK/err")"
	[ ! -s "$WORK/out" ] || fail "expected no output, got: $(cat "$WORK/out")"
}
refused "^vmm cpu-features: $WORK/none.json: No such file or directory$" "$WORK/none.json"
echo 'vendor=amd' >"$WORK/bad1.json"
refused "^vmm cpu-features: $WORK/bad1.json: not JSON" "$WORK/bad1.json"
echo '{"format": 2, "vendor": "amd", "features": []}' >"$WORK/bad2.json"
refused "^vmm cpu-features: $WORK/bad2.json: \"format\" is not 1$" "$WORK/bad2.json"
echo '{"format": 1, "vendor": "amd", "features": ["sse2", 7]}' >"$WORK/bad3.json"
refused "^vmm cpu-features: $WORK/bad3.json: \"features\" holds a value that is not a name$" \
	"$WORK/bad3.json"
echo '{"format": 1, "vendor": "amd", "features": "sse2"}' >"$WORK/bad4.json"
refused "^vmm cpu-features: $WORK/bad4.json: \"features\" is not an array of names$" "$WORK/bad4.json"
head -c 300000 /dev/zero | tr '\0' ' ' >"$WORK/big.json"
refused "^vmm cpu-features: $WORK/big.json: larger than 262144 bytes" "$WORK/big.json"
run_vmm 10 cpu-features --common
expect_status 2
run_vmm 10 cpu-features --host --list
expect_status 2

if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
	run_vmm 10 cpu-features --host
	expect_status 1
	expect_line err '^vmm cpu-features: .*/dev/kvm'
	echo "PASS (the --host checks need /dev/kvm)"
	exit 0
fi

run_vmm 10 cpu-features --host --json
expect_status 0
mv "$WORK/out" "$WORK/host.json"
run_vmm 10 cpu-features --host
expect_status 0
mv "$WORK/out" "$WORK/host.txt"
run_vmm 10 cpu-features --common "$WORK/host.json"
expect_status 0
cmp -s "$WORK/out" "$WORK/host.txt" || fail "--common of this host alone is not --host"
hostlist=$(sed -n 's/^features *//p' "$WORK/host.txt")

# A guest given "host", or the highest baseline this host meets, is described
# by exactly the names it got.
best=$(sed -n 's/^baselines *//p' "$WORK/host.txt" | awk -F', ' '{print $NF}')
for list in host "$best"; do
	start_vm g run "$EXAMPLES/dirty.cfg" --set vm.cpu_features="$list" --set vm.name=cpu$$
	wait_line g.out 'dirty pass [0-9]+ ok' 60
	run_vmm 10 info --vm cpu$$ --json
	expect_status 0
	got=$("$HARNESS" json "$WORK/out" cpu_features)
	if [ "$list" = host ]; then
		[ "$got" = "$hostlist" ] || fail "a 'host' guest is described as '$got', not '$hostlist'"
	else
		case $got in *,*) ;; *) fail "a '$list' guest is described as '$got'" ;; esac
		case ",$got," in *,x86-64*) fail "the baseline name travels: '$got'" ;; esac
	fi
	run_vmm 10 stop --vm cpu$$
	wait_exit "$g_pid" 30
done
echo PASS
