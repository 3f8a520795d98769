#!/usr/bin/env bash
# scripts/nested-kvm.sh [--tmpfs DIR]... -- COMMAND [ARG]...
#
# Runs COMMAND where /dev/kvm exists, on a machine that has none.
#
# Some hosts are themselves guests whose kernel does not bind KVM (a PVM
# guest logs "kvm-pvm: this kernel is itself a kvm-pvm guest; not binding"),
# so vmm's guest tests cannot run there directly. QEMU's TCG emulates AMD SVM
# with nested paging, so Debian's own kernel, booted under
# `qemu-system-x86_64 -accel tcg -cpu max`, loads kvm_amd and offers a real
# /dev/kvm. This script boots that kernel with a small initramfs
# (scripts/nested-init.sh), shares this machine's root file system over
# virtio-9p, and runs COMMAND in the current directory inside it, with the
# environment variables named VMM_*, CTEST_* and *SAN_*, and exits with
# COMMAND's status, or 124 (hung) or 125 (panicked) when the machine itself
# failed. Everything runs under emulation, guests and vmm alike, so timings
# are the emulator's, not a host's: use it to test behaviour, never to
# benchmark.
#
# --tmpfs DIR: DIR (a build tree, where tests keep their unix sockets, which
# 9p cannot hold) is copied to tmpfs inside and copied back afterwards.
#
# The kernel (the version Debian's linux-image-amd64 points at) and the
# initramfs are cached in $VMM_CACHE_DIR/nested (default
# ~/.cache/vmm/nested), like the Linux test guest. Needs qemu-system-x86,
# busybox-static and kmod (scripts/install-deps.sh). VMM_NESTED_CPUS and
# VMM_NESTED_MEM (MiB) size the machine (default: every core, 3/4 of the
# available memory up to 16 GiB).
set -euo pipefail
tmpfs_dirs=()
while [ $# -gt 0 ]; do
	case $1 in
	--tmpfs) tmpfs_dirs+=("$(realpath "$2")"); shift 2 ;;
	--) shift; break ;;
	*) echo "nested-kvm: unknown option $1 (--tmpfs DIR, then -- COMMAND)" >&2; exit 2 ;;
	esac
done
[ $# -gt 0 ] || { echo "nested-kvm: no command (scripts/nested-kvm.sh -- COMMAND)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
cache=${VMM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vmm}/nested
mkdir -p "$cache"
for t in qemu-system-x86_64 /sbin/depmod /sbin/modprobe /bin/busybox apt-get dpkg-deb cpio; do
	command -v "$t" >/dev/null || {
		echo "nested-kvm: $t is missing (scripts/install-deps.sh installs it)" >&2
		exit 2
	}
done

# The kernel: whatever version linux-image-amd64 depends on today.
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$pkg" ] || { echo "nested-kvm: apt does not know linux-image-amd64 (apt-get update?)" >&2; exit 2; }
kver=${pkg#linux-image-}
# kvm_amd, 9p over virtio-pci, and what the tests use: network namespaces,
# nftables (the fault matrix's blackhole), inet_diag (`ss -K`) and tbf
# (cluster_tbf). Nothing loads on demand: /lib/modules is the host's.
modules="kvm-amd 9p 9pnet_virtio virtio_pci tun bridge veth nf_tables tcp_diag sch_tbf"
key=$kver-$( (cat "$here/nested-init.sh"; echo "$modules") | sha256sum | cut -c1-12)
kdir=$cache/$key
if [ ! -f "$kdir/ready" ]; then
	echo "nested-kvm: preparing $pkg and its initramfs in $kdir"
	rm -rf "$kdir"
	mkdir -p "$kdir/deb" "$kdir/initrd/mods"
	(cd "$kdir/deb" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >/dev/null)
	dpkg-deb -x "$kdir"/deb/*.deb "$kdir/root"
	/sbin/depmod -b "$kdir/root" "$kver"
	for m in $modules; do
		/sbin/modprobe -d "$kdir/root" -S "$kver" --show-depends "$m"
	done | awk '$1 == "insmod" && !seen[$2]++ {print $2}' >"$kdir/mods.list"
	while read -r f; do
		cp "$f" "$kdir/initrd/mods/"
		basename "$f"
	done <"$kdir/mods.list" >"$kdir/initrd/mods/order"
	mkdir -p "$kdir/initrd/bin" "$kdir/initrd/proc" "$kdir/initrd/sys" "$kdir/initrd/dev"
	cp /bin/busybox "$kdir/initrd/bin/busybox"
	cp "$here/nested-init.sh" "$kdir/initrd/init"
	chmod +x "$kdir/initrd/init"
	(cd "$kdir/initrd" && find . | cpio -o -H newc --quiet) | gzip -1 >"$kdir/initrd.gz"
	cp "$kdir/root/boot/vmlinuz-$kver" "$kdir/vmlinuz"
	rm -rf "$kdir/deb" "$kdir/root" "$kdir/initrd"
	touch "$kdir/ready"
fi

# The job: a script on the shared file system, with this directory and environment.
state=$(mktemp -d "$cache/job.XXXXXX")
trap 'rm -rf "$state"' EXIT
{
	echo "cd $(printf %q "$PWD") || exit 125"
	echo "export HOME=$(printf %q "$HOME") PATH=$(printf %q "$PATH")"
	env | awk -F= '/^(VMM_|CTEST_|ASAN_|UBSAN_|LSAN_)/ {print $1}' | while read -r v; do
		echo "export $v=$(printf %q "${!v}")"
	done
	echo "ip link set lo up"
	# Everything runs several times slower in here: the tests' waits scale.
	echo "export VMM_TEST_TIMEOUT_SCALE=\${VMM_TEST_TIMEOUT_SCALE:-3}"
	printf '%q ' "$@"
	echo
} >"$state/cmd"
printf '%s\n' "${tmpfs_dirs[@]}" >"$state/tmpfs"
cp "$here/nested-init.sh" "$state/nested-init.sh"
# /tmp and /run are tmpfs in there: a job directory under them is bound back.
case $PWD/ in
/tmp/* | /run/*) echo "$PWD" >"$state/keep" ;;
esac

cpus=${VMM_NESTED_CPUS:-$(nproc)}
avail=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
mem=${VMM_NESTED_MEM:-$((avail * 3 / 4 < 16384 ? avail * 3 / 4 : 16384))}
echo "nested-kvm: no /dev/kvm here: running '$*' in a TCG machine with KVM ($cpus vCPUs, $mem MiB, kernel $kver)"
# The nested machine writes a heartbeat to its second serial port
# (nested-init.sh); one silent for VMM_NESTED_HANG seconds (default 300) is
# hung, which QEMU's SVM emulation can be: killed, exit 124. A kernel panic
# powers it off: exit 125. Neither is a result of COMMAND.
hang=${VMM_NESTED_HANG:-300}
: >"$state/heartbeat"
qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "$cpus" -m "$mem" \
	-nographic -no-reboot -nodefaults -serial stdio -serial "file:$state/heartbeat" \
	-monitor none \
	-kernel "$kdir/vmlinuz" -initrd "$kdir/initrd.gz" \
	-append "console=ttyS0 quiet loglevel=4 panic=-1 vmm.nested=$state" \
	-virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,id=hostroot,multidevs=remap" </dev/null &
qemu=$!
while kill -0 "$qemu" 2>/dev/null; do
	sleep 5
	silent=$(($(date +%s) - $(stat -c %Y "$state/heartbeat")))
	if [ "$silent" -gt "$hang" ]; then
		echo "nested-kvm: the nested machine's heartbeat stopped $silent s ago: it hung (the emulator, not '$*'): killed" >&2
		kill -KILL "$qemu"
		wait "$qemu" 2>/dev/null
		exit 124
	fi
done
wait "$qemu" || true
if [ ! -f "$state/rc" ]; then
	echo "nested-kvm: the nested machine stopped before '$*' finished (a kernel panic above?)" >&2
	exit 125
fi
exit "$(cat "$state/rc")"
