#!/bin/busybox sh
# /init of the nested-KVM machine that scripts/nested-kvm.sh boots under QEMU
# TCG. Stage 1 (the initramfs) loads KVM (AMD SVM, which TCG emulates with
# nested paging), mounts the host's root file system over virtio-9p and
# switches to it; stage 2 (this script again, from STATE) runs the job the
# host wrote to STATE/cmd (STATE from `vmm.nested=` on the kernel command
# line), writes its exit status to STATE/rc and powers off.
#
# Unix sockets cannot live on 9p (QEMU refuses to open special files through
# it), so /tmp, /run and /dev/shm are tmpfs, and the directories listed in
# STATE/tmpfs (build trees, where the tests keep their sockets) are copied to
# tmpfs, bind-mounted at their own paths, and copied back (only what changed)
# when the job ends. Stage 2 runs under bash, which reaps the orphans that
# PID 1 inherits.
if [ "${1:-}" = stage2 ]; then
	# Stage 2: PID 1 on the host's tree. Run the job, copy the tmpfs
	# directories back (only what changed), leave the status, power off.
	state=$2
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	# Whoever records timings (bench/run) says they are the emulator's.
	export VMM_NESTED_GUEST=1
	stty -opost 2>/dev/null
	# The heartbeat scripts/nested-kvm.sh watches (the second serial port).
	(while :; do
		date +%s >/dev/ttyS1
		sleep 15
	done) &
	hb=$!
	/bin/bash "$state/cmd"
	rc=$?
	kill "$hb"
	for d in $(cat "$state/tmpfs"); do
		umount "$d" && cp -a -u "/tmp/nested-bind$(echo "$d" | tr / _)/." "$d/" ||
			echo "nested-init: copying $d back failed"
	done
	echo $rc >"$state/rc"
	sync
	echo o >/proc/sysrq-trigger
	sleep 60
	exit 1
fi
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# kvm_amd without the SVM extensions beyond nested paging: under QEMU 7.2's
# TCG, runs with them on ended in L1 kernel panics ("corrupted stack end
# detected inside scheduler") after some minutes of guest tests.
for m in $(cat /mods/order); do
	args=
	[ "$m" = kvm-amd.ko ] && args="vgif=0 vls=0 lbrv=0 avic=0 nested=0 pause_filter_count=0"
	insmod "/mods/$m" $args || echo "nested-init: insmod $m failed"
done
state=$(sed -n 's/.*vmm\.nested=\([^ ]*\).*/\1/p' /proc/cmdline)
r=/host
mkdir -p $r
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576,cache=loose hostroot $r; then
	echo "nested-init: cannot mount the host's root over 9p"
	poweroff -f
fi
mount -t proc proc $r/proc
mount -t sysfs sys $r/sys
mount -t devtmpfs dev $r/dev
mkdir -p $r/dev/pts $r/dev/shm
mount -t devpts devpts $r/dev/pts
mount -t tmpfs tmpfs $r/dev/shm
ln -sfn /proc/self/fd $r/dev/fd
ln -sfn /proc/self/fd/0 $r/dev/stdin
ln -sfn /proc/self/fd/1 $r/dev/stdout
ln -sfn /proc/self/fd/2 $r/dev/stderr
# The job's directory stays the host's when it lies under /tmp or /run
# (a CI clone in /tmp): held aside before the tmpfs covers it, put back after.
keep=$(cat "$r$state/keep" 2>/dev/null)
if [ -n "$keep" ]; then
	mkdir -p /keep
	mount --bind "$r$keep" /keep
fi
mount -t tmpfs -o size=75% tmpfs $r/tmp
mount -t tmpfs tmpfs $r/run
if [ -n "$keep" ]; then
	mkdir -p "$r$keep"
	mount --bind /keep "$r$keep"
fi
# The job's own state is under the host's cache directory, never in /tmp.
for d in $(cat "$r$state/tmpfs" 2>/dev/null); do
	t=$r/tmp/nested-bind$(echo "$d" | tr / _)
	mkdir -p "$t"
	cp -a "$r$d/." "$t/"
	mount --bind "$t" "$r$d"
done
[ -c /dev/kvm ] || echo "nested-init: no /dev/kvm in the nested machine (kvm_amd did not load)"
# The host's root becomes the root (not a chroot: `nsenter --mount` and
# `unshare` then see the same tree), and this script goes on from there.
exec switch_root $r /bin/bash "$state/nested-init.sh" stage2 "$state"
