#!/bin/sh
# Write the initramfs of the vmm Linux test guest.
#
#   build-initramfs.sh OUT GEN_INIT_CPIO BUSYBOX INIT GUESTBOX NAME...
#
# OUT is an uncompressed newc cpio (the test kernel has no decompressor):
# /init, /bin/busybox with its applet links, GUESTBOX (the multi-call binary
# of the guest's own programs) once, as hard links /bin/NAME for each NAME
# (memverify tcpecho blkverify), /dev/console, the mount points.
# GEN_INIT_CPIO is the kernel's usr/gen_init_cpio (from the test kernel's
# build): it writes device nodes and hard links without root and, with
# -t 0, the same bytes for the same inputs. Keep it small: the kernel unpacks an
# initramfs at ~2.6 s per MB on the emulating hosts.
set -eu
[ $# -ge 6 ] || { echo "usage: $0 OUT GEN_INIT_CPIO BUSYBOX INIT GUESTBOX NAME..." >&2; exit 2; }
out=$1 gen=$2 busybox=$3 init=$4 guestbox=$5
shift 5
[ -x "$busybox" ] || { echo "build-initramfs.sh: $busybox not found (apt-get install busybox-static)" >&2; exit 1; }

applets="sh ash cat cttyhack dmesg echo grep ls mount umount poweroff reboot halt ps setsid sleep uptime free top kill"
list=$out.list
{
	echo "dir /dev 0755 0 0"
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "dir /proc 0755 0 0"
	echo "dir /sys 0755 0 0"
	echo "dir /tmp 1777 0 0"
	echo "dir /root 0700 0 0"
	echo "dir /bin 0755 0 0"
	echo "file /init $init 0755 0 0"
	echo "file /bin/busybox $busybox 0755 0 0"
	# Hard links: the cpio holds the data once, after the last name.
	first=$1
	shift
	links=
	for name in "$@"; do
		links="$links /bin/$name"
	done
	echo "file /bin/$first $guestbox 0755 0 0$links"
	for a in $applets; do
		echo "slink /bin/$a busybox 0777 0 0"
	done
} >"$list"
"$gen" -t 0 "$list" >"$out.tmp"
mv -f "$out.tmp" "$out"
echo "build-initramfs.sh: $out, $(wc -c <"$out") bytes"
