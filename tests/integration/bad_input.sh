#!/usr/bin/env bash
# Bad configuration and bad images: one clear line naming what is wrong,
# the right exit status, and no guest started.
set -eu
. "$(dirname "$0")/lib.sh"
cfg=$WORK/bad.cfg

check() { # STATUS REGEX CONFIG-TEXT [ARGS...]
	local want=$1 re=$2 text=$3
	shift 3
	printf '%b' "$text" >"$cfg"
	run_vmm 30 run "$cfg" "$@"
	expect_status "$want"
	expect_line err "$re"
	[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "expected one line of error, got: $(cat "$WORK/err")"
}

check 2 "bad.cfg:2: \[vm\] memory" '[vm]\nmemory = 12Q\n'
check 2 "bad.cfg:2: \[vm\] memory" '[vm]\nmemory = 1000\n'
check 2 "bad.cfg:3: \[vm\] vcpus" '[vm]\nname = x\nvcpus = 0\n'
check 2 "bad.cfg:2: \[vm\] vcpus" '[vm]\nvcpus = 1000\n'
check 2 "bad.cfg:2: \[vm\] nosuchkey" '[vm]\nnosuchkey = 1\n'
check 2 "bad.cfg:1: \[nosuchsection\]" '[nosuchsection]\nkey = 1\n'
check 2 "bad.cfg:2: \[workload\] kind" '[workload]\nkind = sleepy\n'
check 2 "bad.cfg:2: \[firmware\] path: .*/no/such/firmware.elf" '[firmware]\npath = /no/such/firmware.elf\n'
check 2 "--set" '[vm]\n' --set vm.memory
check 2 "tls_cert, tls_key and tls_ca go together: tls_key and tls_ca not set" \
	'[migration]\ntls_cert = /etc/hostname\n'
check 2 "--set: \[vm\] memory" '[vm]\n' --set vm.memory=-1
run_vmm 10 run /no/such.cfg
expect_status 2
expect_line err "/no/such.cfg"

# A file that is not an ELF image, and one that is truncated: refused at load.
require_kvm
head -c 100 /dev/urandom >"$WORK/garbage.elf"
check 1 "garbage.elf" '[firmware]\npath = '"$WORK"'/garbage.elf\n'
head -c 3000 "$FIRMWARE" >"$WORK/truncated.elf"
check 1 "truncated.elf" '[firmware]\npath = '"$WORK"'/truncated.elf\n'
# CPU features no host has all of (AMD's xop and Intel's amx_tile among
# them): refused when the VM is created, the missing ones named.
check 1 "\[vm\] cpu_features: this host cannot give the guest [0-9]+ of its CPU features: .*(xop|amx_tile)" \
	'[vm]\ncpu_features = sse2,xop,fma4,amx_tile,amx_int8,avx512_fp16\n'
echo PASS
