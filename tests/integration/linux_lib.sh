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
# the tests wait for the answer to a typed command instead: boot_linux.)
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

# The emulating hosts' known user-space fault (docs/linux-guest.md, "A wrong
# user %fs base"): a process's first thread-local load reads 0 and it dies,
# under vmm and under QEMU alike.
LINUX_FS_FAULT='segfault at 0 ip [0-9a-f]+ .* in (busybox|memverify)'

# A console silent this long while the guest boots is a stalled boot (the
# periodic-tick livelock of SMP guests, which the test kernel's tick
# configuration avoids; docs/linux-guest.md, "The configuration"), kept as
# a safety net: a 4-vCPU boot under load was seen silent for 200 s and then
# fine.
LINUX_STALL_S=${LINUX_STALL_S:-480}

# linux_wait NAME REGEX COUNT SECONDS: waits until COUNT lines of NAME.out
# match REGEX (0). Returns 1 when the host's known fault shows on the
# console first, 2 when the console stays silent for LINUX_STALL_S; fails
# the test at once when the VM ends first, or after SECONDS.
linux_wait() {
	local pidvar="${1}_pid" end=$((SECONDS + $4)) size=-1 now_size quiet_since=$SECONDS
	while :; do
		"$HARNESS" wait-line "$WORK/$1.out" "$2" 2 "$3" 2>/dev/null && return 0
		grep -Eaq -- "$LINUX_FS_FAULT" "$WORK/$1.out" && return 1
		if ! kill -0 "${!pidvar}" 2>/dev/null; then
			"$HARNESS" wait-line "$WORK/$1.out" "$2" 0 "$3" 2>/dev/null && return 0
			echo "--- $1.out"; tail -20 "$WORK/$1.out"
			echo "--- $1.err"; tail -5 "$WORK/$1.err"
			fail "VM $1 ended before $3 lines of its console matched /$2/"
		fi
		now_size=$(stat -c %s "$WORK/$1.out" 2>/dev/null || echo 0)
		if [ "$now_size" != "$size" ]; then
			size=$now_size
			quiet_since=$SECONDS
		elif [ $((SECONDS - quiet_since)) -ge "$LINUX_STALL_S" ]; then
			return 2
		fi
		if [ "$SECONDS" -ge "$end" ]; then
			echo "--- $1.out"; tail -20 "$WORK/$1.out"
			fail "fewer than $3 lines of $1.out matched /$2/ within $4 s"
		fi
	done
}

# boot_linux NAME UNTIL SECONDS ARGS...: start_linux NAME ARGS, then waits
# until the guest is ready: UNTIL is `shell` (init ran and the interactive
# shell answers a typed command), `heartbeat` (that, and the workload printed
# two heartbeats) or an extended regex for one console line. A boot that one
# of the host's two known problems spoils before then (the %fs fault, or a
# console silent for LINUX_STALL_S) is thrown away and the VM started again,
# up to three boots (each one noted), all within SECONDS; anything else that
# goes wrong fails the test. What this prepares is not what a test checks:
# a fault after this point fails the test.
boot_linux() {
	local name=$1 until=$2 end=$((SECONDS + $3)) boot pidvar="${1}_pid" why rc
	shift 3
	for boot in 1 2 3; do
		start_linux "$name" "$@"
		rc=0
		case $until in
		shell | heartbeat)
			# Typed once the console is open (init's marker): the
			# driver's startup empties the UART's FIFOs. What the
			# shell has not read yet stays in the tty buffer.
			linux_wait "$name" "$LINUX_INIT" 1 $((end - SECONDS)) || rc=$?
			if [ "$rc" = 0 ]; then
				type_line "$name" 'echo shell-$((2 + 3))'
				linux_wait "$name" 'shell-5' 1 120 || rc=$?
			fi
			if [ "$rc" = 0 ] && [ "$until" = heartbeat ]; then
				linux_wait "$name" "$LINUX_HEARTBEAT" 2 $((end - SECONDS)) || rc=$?
			fi
			;;
		*)
			linux_wait "$name" "$until" 1 $((end - SECONDS)) || rc=$?
			;;
		esac
		[ "$rc" = 0 ] && return 0
		if [ "$rc" = 1 ]; then
			why="the host's %fs fault: $(grep -Eao -- "$LINUX_FS_FAULT" "$WORK/$name.out" | head -1)"
		else
			why="its console was silent for $LINUX_STALL_S s (a stalled boot)"
		fi
		echo "note: boot $boot of $name: $why"
		kill -9 "${!pidvar}" 2>/dev/null || true
		wait "${!pidvar}" 2>/dev/null || true
		close_input "$name"
		mv "$WORK/$name.out" "$WORK/$name.out.boot$boot"
		[ "$SECONDS" -lt "$end" ] || break
	done
	fail "three boots of $name were spoilt by the host's known problems, or its time ran out"
}

# run_typed NAME COMMAND REGEX [SECONDS]: types COMMAND and waits until its
# output (a line of NAME.out matching REGEX) appears.
run_typed() {
	type_line "$1" "$2"
	wait_line "$1.out" "$3" "${4:-60}"
}

# The host's %fs fault lines on NAME's console so far.
fs_faults() {
	grep -Eac -- "$LINUX_FS_FAULT" "$WORK/$1.out" 2>/dev/null || true
}

# typed_until NAME COMMAND SECONDS CHECK...: types COMMAND, then waits up to
# SECONDS for CHECK (a command, run every 0.2 s) to succeed. When the host's
# %fs fault kills the command's process first (the shell prompts again and
# nothing else happens), the fault is noted and COMMAND typed again, up to
# three times. Only for a guest that never migrated: on a migration's
# target a fault may be the migration's, and fails the test.
typed_until() {
	local name=$1 cmd=$2 secs=$3 pidvar="${1}_pid" try faults end
	shift 3
	for try in 1 2 3; do
		faults=$(fs_faults "$name")
		type_line "$name" "$cmd"
		end=$((SECONDS + secs))
		while [ "$SECONDS" -lt "$end" ]; do
			"$@" && return 0
			if [ "$(fs_faults "$name")" -gt "$faults" ] && kill -0 "${!pidvar}" 2>/dev/null; then
				echo "note: '$cmd' (try $try) was killed by the host's %fs fault: typed again"
				sleep 1 # the shell's next prompt
				continue 2
			fi
			sleep 0.2
		done
		return 1
	done
	return 1
}

# A line of NAME.out matches REGEX now.
console_has() {
	"$HARNESS" wait-line "$WORK/$1.out" "$2" 0 2>/dev/null
}

# guest_cmd NAME COMMAND REGEX [SECONDS]: run_typed with typed_until's retry.
guest_cmd() {
	if ! typed_until "$1" "$2" "${4:-60}" console_has "$1" "$3"; then
		echo "--- $1.out"; tail -20 "$WORK/$1.out"
		fail "'$2': no line of $1.out matched /$3/ within ${4:-60} s"
	fi
}

# True once process PID has ended.
proc_gone() {
	! kill -0 "$1" 2>/dev/null
}

# guest_end NAME COMMAND SECONDS: types COMMAND (poweroff -f, reboot -f) with
# typed_until's retry and waits for the VM to end; its exit status in $status.
guest_end() {
	local pidvar="${1}_pid"
	if ! typed_until "$1" "$2" "$3" proc_gone "${!pidvar}"; then
		echo "--- $1.out"; tail -20 "$WORK/$1.out"
		fail "'$2': the VM did not end within $3 s"
	fi
	wait_exit "${!pidvar}" 5
}

# memverify's heartbeat (docs/linux-guest.md).
LINUX_HEARTBEAT='memverify: pass'
