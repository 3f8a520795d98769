#!/usr/bin/env bash
# Helpers for the Linux guest tests (sourced after lib.sh). The guest is the
# project's own test kernel and initramfs (guest-linux/, docs/linux-guest.md):
# $LINUX_KERNEL and $LINUX_INITRD are set by ctest.
#
# A Linux VM here is started with its stdin on a FIFO the test holds open,
# so the test types on the guest's console: `type_line NAME TEXT`.

# The kernel command line this host's emulator needs (docs/linux-guest.md).
LINUX_CMDLINE="console=ttyS0 panic=-1 noxsave nofsgsbase clearcpuid=151,297,308,580 rodata=off rcupdate.rcu_cpu_stall_suppress=1 rdinit=/init"
# /init's marker once user space runs. (The shell's prompt ends no line, so
# the tests wait for the answer to a typed command instead: wait_shell.)
LINUX_INIT='vmm-linux: init ok'
# Kernel code is emulated (~1 us per instruction): a boot takes 10-30 s on
# a quiet host, minutes with 4 vCPUs on 2 host cores; these bounds are for a
# loaded host.
LINUX_BOOT_S=600

require_linux() {
	require_kvm
	[ -n "${LINUX_KERNEL:-}" ] && [ -f "$LINUX_KERNEL" ] && [ -f "${LINUX_INITRD:-}" ] ||
		fail "the test kernel ${LINUX_KERNEL:-?} or initramfs ${LINUX_INITRD:-?} is missing: build the linux-guest target (needs Debian's linux-source-6.1, see scripts/install-deps.sh)"
}

# start_linux NAME ARGS...: `vmm ARGS` in the background with its stdin on
# the FIFO $WORK/NAME.in (held open for writing on an fd of this shell), its
# console in $WORK/NAME.out; the pid lands in NAME_pid. ARGS is `run CFG ...`
# or `run --incoming ...`.
start_linux() {
	local name=$1 fd
	shift
	rm -f "$WORK/$name.in"
	mkfifo "$WORK/$name.in"
	: >"$WORK/$name.out"
	: >"$WORK/$name.err"
	"$VMM" "$@" <"$WORK/$name.in" >>"$WORK/$name.out" 2>>"$WORK/$name.err" &
	PIDS+=($!)
	printf -v "${name}_pid" '%s' "$!"
	# Opening the writer end releases the child's open of the reader end.
	exec {fd}>"$WORK/$name.in"
	printf -v "${name}_infd" '%s' "$fd"
}

# The source's arguments for the test guest: linux_args [VCPUS] [MEM] [EXTRA CMDLINE].
linux_args() {
	local vcpus=${1:-1} mem=${2:-128M} extra=${3:-}
	LARGS=(run "$EXAMPLES/linux.cfg" --set "vm.vcpus=$vcpus" --set "vm.memory=$mem"
		--set "firmware.path=$LINUX_KERNEL" --initrd "$LINUX_INITRD"
		--set "firmware.cmdline=$LINUX_CMDLINE $extra")
}

# type_line NAME TEXT: types TEXT and Enter on the console of VM NAME.
type_line() {
	local fdvar="${1}_infd"
	printf '%s\n' "$2" >&"${!fdvar}"
}

# close_input NAME: EOF on the VM's console input.
close_input() {
	local fdvar="${1}_infd" fd
	fd=${!fdvar}
	exec {fd}>&-
}

# wait_shell NAME [SECONDS]: waits for the init marker, then until the
# interactive shell answers a typed command (what is typed before the shell
# reads stays in the guest's tty buffer, or in the UART while the port is
# closed: it is never lost).
wait_shell() {
	wait_line "$1.out" "$LINUX_INIT" "${2:-$LINUX_BOOT_S}"
	run_typed "$1" 'echo shell-$((2 + 3))' 'shell-5' 120
}

# run_typed NAME COMMAND REGEX [SECONDS]: types COMMAND and waits until its
# output (a line of NAME.out matching REGEX) appears.
run_typed() {
	type_line "$1" "$2"
	wait_line "$1.out" "$3" "${4:-60}"
}

# memverify's heartbeat (docs/linux-guest.md).
LINUX_HEARTBEAT='memverify: pass'
