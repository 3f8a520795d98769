#!/usr/bin/env bash
# The virtio devices ([disk], [net]) with the firmware's blk and net
# workloads (docs/devices.md). One case per run:
#   blk             a disk written and verified by the guest; the file holds it
#   blk-readonly    a read-only disk: the guest reads it, a write is refused
#   errors          a missing disk file, a directory as disk, a missing tap
#                   that cannot be created, an interface that is not a tap,
#                   bad MACs: one clear line each, nothing runs
#   migrate-blk MODE  (precopy | postcopy) the guest writes and verifies its
#                   disk across a live migration: every write acknowledged
#                   before the switchover is read back after it, and a
#                   whole pass verifies on the target
#   snapshot        a disk-writing guest snapshotted --live and --stop,
#                   restored eagerly and --lazy: the guest verifies on; a
#                   restore onto a copy of the disk (--set disk.path) too
#   upgrade         a guest with a disk and a ping responder on a
#                   multi-queue tap upgraded in place 3 times (vmm migrate
#                   --local): each new vmm attaches to the same tap while
#                   the old one still holds it; the guest answers on
#   bind            who binds a migrating VM's disk (issue 36, finding 3): a
#                   source in a mount namespace of its own, where its [disk]
#                   path P is its real disk while P on the host is an
#                   unrelated file; a bare target refuses the VM, naming the
#                   disk and --set disk.path / [migration] allow_disk_dirs,
#                   and so does one whose allow-list P is outside, the source
#                   running on; a target with --set disk.path takes it, and
#                   from there one whose allow-list holds the disk's
#                   directory; the guest verifies its disk throughout, and
#                   the unrelated file is never written
#   ping MODE       (precopy | postcopy) the firmware's ARP/ICMP responder on a
#                   tap in a bridge, in a network namespace of its own, answers
#                   `ping -i 0.005` across a migration to a VM on another tap;
#                   prints the loss and the largest gap between replies
set -eu
. "$(dirname "$0")/lib.sh"
case=$1
mode=${2:-precopy}
require_kvm

migrate_args() {
	if [ "$mode" = postcopy ]; then
		echo "--mode postcopy --postcopy-after 0"
	else
		echo "--mode precopy"
	fi
}

disk_cfg() {
	cat >"$WORK/blk.cfg" <<EOF
[vm]
memory = 256M
[workload]
kind = blk
heartbeat_ms = 0
[disk]
path = $WORK/disk.img
EOF
}

case $case in
blk)
	truncate -s 4M "$WORK/disk.img"
	disk_cfg
	run_vmm 120 run "$WORK/blk.cfg" --set workload.passes=3
	[ "$status" = 0 ] || fail "exit status $status: $(tail -3 "$WORK/err")"
	expect_line out 'blk: disk of 8192 sectors, read-write'
	expect_line out 'blk: done, 3 passes verified'
	reject_line out CORRUPTION
	# The guest's pattern reached the file: its first 1 MiB is not zero any more.
	[ "$(head -c 1048576 "$WORK/disk.img" | tr -d '\0' | wc -c)" -gt 1000000 ] ||
		fail "the disk file does not hold what the guest wrote"
	;;
blk-readonly)
	head -c 1048576 /dev/urandom >"$WORK/disk.img"
	sum=$(sha256sum <"$WORK/disk.img")
	disk_cfg
	run_vmm 120 run "$WORK/blk.cfg" --set workload.passes=2 --set disk.readonly=true
	[ "$status" = 0 ] || fail "exit status $status: $(tail -3 "$WORK/err")"
	expect_line out 'blk: disk of 2048 sectors, read-only'
	expect_line out 'blk: write to a read-only disk refused \(status 1\)'
	expect_line out 'blk: done, 2 passes read'
	[ "$(sha256sum <"$WORK/disk.img")" = "$sum" ] || fail "a read-only disk changed"
	;;
errors)
	disk_cfg
	rm -f "$WORK/disk.img"
	run_vmm 60 run "$WORK/blk.cfg"
	[ "$status" = 1 ] || fail "a missing disk file: exit status $status, expected 1"
	expect_line err "\[disk\] path: cannot open '$WORK/disk.img' for reading and writing: No such file or directory"
	mkdir -p "$WORK/dir.img"
	run_vmm 60 run "$WORK/blk.cfg" --set disk.path="$WORK/dir.img" --set disk.readonly=true
	[ "$status" = 1 ] || fail "a directory as disk: exit status $status, expected 1"
	expect_line err "\[disk\] path: '$WORK/dir.img': neither a regular file nor a block device"
	# A tap that is missing and cannot be made: no CAP_NET_ADMIN.
	set +e
	timeout 60 setpriv --bounding-set=-net_admin "$VMM" run "$EXAMPLES/idle.cfg" \
		--set net.tap=vmmnone$$ </dev/null >"$WORK/out" 2>"$WORK/err"
	status=$?
	set -e
	[ "$status" = 1 ] || fail "a tap that cannot be created: exit status $status, expected 1"
	expect_line err "\[net\] tap 'vmmnone[0-9]+': cannot create it: Operation not permitted \(creating a tap needs CAP_NET_ADMIN"
	run_vmm 60 run "$EXAMPLES/idle.cfg" --set net.tap=lo
	[ "$status" = 1 ] || fail "lo as a tap: exit status $status, expected 1"
	expect_line err "\[net\] tap 'lo': cannot attach to it: .*not a tap"
	run_vmm 60 run "$EXAMPLES/idle.cfg" --set net.tap=t0 --set net.mac=01:00:5e:00:00:01
	[ "$status" = 2 ] || fail "a multicast MAC: exit status $status, expected 2"
	expect_line err "\[net\] mac: '01:00:5e:00:00:01' is a multicast address"
	run_vmm 60 run "$EXAMPLES/idle.cfg" --set net.tap=t0 --set net.mac=52:54:00:zz:00:01
	[ "$status" = 2 ] || fail "a bad MAC: exit status $status, expected 2"
	expect_line err "\[net\] mac: bad MAC address"
	run_vmm 60 run "$EXAMPLES/idle.cfg" --set net.tap=this-name-is-too-long
	[ "$status" = 2 ] || fail "a tap name of 21 characters: exit status $status, expected 2"
	expect_line err "\[net\] tap: value is too long"
	;;
migrate-blk)
	truncate -s 4M "$WORK/disk.img"
	disk_cfg
	# The guest writes and verifies forever (passes=0), so the migration
	# lands in the middle of its passes however fast the host is. On the
	# target the pass the switchover interrupted reads back the blocks it
	# wrote and the source acknowledged, and one more whole pass writes and
	# reads there: two verified passes, no CORRUPTION, then SIGTERM ends the
	# target (the 38 more passes it used to run checked nothing more and cost
	# over a minute on a host with KVM).
	# shellcheck disable=SC2046
	harness_migrate --name blkvm --config "$WORK/blk.cfg" --set workload.passes=0 \
		--ready "blk: pass [0-9]+ ok" --target-set disk.path="$WORK/disk.img" \
		--target-done "blk: pass [0-9]+ ok" --target-lines 2 \
		--migrate-timeout 120 -- $(migrate_args) --json
	[ "$(count_lines dst.out 'blk: pass [0-9]+ ok')" -ge 2 ] ||
		fail "the target's guest verified fewer than 2 passes"
	echo "migrated: $(summary downtime_ms) ms downtime"
	;;
snapshot)
	truncate -s 4M "$WORK/disk.img"
	disk_cfg
	start_vm src run "$WORK/blk.cfg" --set vm.name=blksnap --set workload.passes=0
	wait_line src.out "blk: pass [0-9]+ ok" 120
	# The API shows the device, driven by the guest's driver, serving requests.
	run_vmm 30 info --vm blksnap
	expect_status 0
	expect_line out "^device +blk on $WORK/disk.img at 0xd0000000 irq 5: driver running, [1-9][0-9]* requests, 0 errors"
	rm -rf "$WORK/s1" "$WORK/s2"
	run_vmm 120 snapshot --vm blksnap --to "$WORK/s1" --live
	expect_status 0
	run_vmm 120 snapshot --vm blksnap --to "$WORK/s2" --stop
	expect_status 0
	wait_exit "$src_pid" 60
	[ "$status" = 0 ] || fail "the source exited with $status after snapshot --stop"
	# The disk is the user's: the restore of s2 continues on the same file,
	# which holds what the guest wrote up to the snapshot.
	cp "$WORK/disk.img" "$WORK/disk2.img"
	start_vm r1 run --restore "$WORK/s2"
	"$HARNESS" wait-line "$WORK/r1.out" "blk: pass [0-9]+ ok" 120 3 ||
		fail "the restored guest verified fewer than 3 passes: $(tail -3 "$WORK/r1.err")"
	reject_line r1.out CORRUPTION
	kill -TERM "$r1_pid"
	wait_exit "$r1_pid" 30
	# A lazy restore onto a copy of the disk taken at the same moment.
	start_vm r2 run --restore "$WORK/s2" --lazy --set disk.path="$WORK/disk2.img"
	"$HARNESS" wait-line "$WORK/r2.out" "blk: pass [0-9]+ ok" 120 3 ||
		fail "the lazily restored guest verified fewer than 3 passes: $(tail -3 "$WORK/r2.err")"
	reject_line r2.out CORRUPTION
	kill -TERM "$r2_pid"
	wait_exit "$r2_pid" 30
	;;
upgrade)
	ns=vmmupg$$
	cleanup_ns() {
		cleanup_pids
		ip netns del "$ns" 2>/dev/null || true
	}
	trap cleanup_ns EXIT
	bridge_with_taps "$ns" 10.79.0.1/24
	ip -n "$ns" tuntap add dev tapu mode tap multi_queue
	ip -n "$ns" link set tapu master br0
	ip -n "$ns" link set tapu up
	in_ns="ip netns exec $ns"
	truncate -s 4M "$WORK/disk.img"
	cat >"$WORK/up.cfg" <<EOF
[vm]
name = upvm
memory = 256M
memory_backend = memfd
[firmware]
cmdline = ip=10.79.0.2
[workload]
kind = net
heartbeat_ms = 250
[net]
tap = tapu
[disk]
path = $WORK/disk.img
EOF
	: >"$WORK/g0.out"
	$in_ns "$VMM" run "$WORK/up.cfg" </dev/null >"$WORK/g0.out" 2>"$WORK/g0.err" &
	prev_pid=$!
	PIDS+=("$prev_pid")
	wait_line g0.out "net: .* up" 120
	(exec $in_ns ping -D -n -i 0.005 -W 1 10.79.0.2) >"$WORK/ping.txt" 2>&1 &
	ping_pid=$!
	PIDS+=("$ping_pid")
	"$HARNESS" wait-line "$WORK/ping.txt" "bytes from" 60 20 || fail "no ping replies before the upgrades"
	for i in 1 2 3; do
		sock="$WORK/up-$i.sock"
		: >"$WORK/g$i.out"
		# The VM's own config binds its tap and disk here (a local
		# handover binds like any migration).
		$in_ns "$VMM" run --incoming "unix:$sock" "$WORK/up.cfg" </dev/null \
			>"$WORK/g$i.out" 2>"$WORK/g$i.err" &
		pid=$!
		PIDS+=("$pid")
		wait_line "g$i.err" "waiting for an incoming migration on unix:" 30
		run_vmm 120 migrate --vm upvm --to "unix:$sock" --local --json
		[ "$status" = 0 ] || fail "upgrade $i: vmm migrate --local exited $status: $(tail -2 "$WORK/err")"
		wait_exit "$prev_pid" 30
		[ "$status" = 0 ] || fail "upgrade $i: the old vmm exited $status"
		"$HARNESS" wait-line "$WORK/g$i.out" "net: pass [0-9]+: [1-9][0-9]* replies" 60 2 ||
			fail "upgrade $i: the guest answers no ping in the new vmm"
		before=$(grep -c 'bytes from' "$WORK/ping.txt" || true)
		"$HARNESS" wait-line "$WORK/ping.txt" "bytes from" 60 $((before + 20)) ||
			fail "upgrade $i: the client gets no replies from the new vmm"
		prev_pid=$pid
	done
	kill -INT "$ping_pid" 2>/dev/null || true
	python3 "$(dirname "$0")/ping_gap.py" "$WORK/ping.txt" "3 local upgrades" ||
		fail "the ping log could not be read"
	;;
bind)
	command -v unshare >/dev/null || fail "unshare is missing (util-linux)"
	mkdir -p "$WORK/disks" "$WORK/real" "$WORK/other"
	truncate -s 4M "$WORK/real/disk.img"
	# P, the source's [disk] path: on this host an unrelated file.
	head -c 4194304 /dev/urandom >"$WORK/disks/disk.img"
	victim=$(sha256sum <"$WORK/disks/disk.img")
	cat >"$WORK/bind.cfg" <<EOF
[vm]
name = bindvm
memory = 256M
[workload]
kind = blk
heartbeat_ms = 0
min_pass_ms = 100
[disk]
path = $WORK/disks/disk.img
EOF
	# The source in a mount namespace of its own, where P is its real disk.
	: >"$WORK/src.out"
	: >"$WORK/src.err"
	unshare --mount --propagation private sh -c 'mount --bind "$1" "$2" && exec "$3" run "$4"' \
		sh "$WORK/real/disk.img" "$WORK/disks/disk.img" "$VMM" "$WORK/bind.cfg" \
		</dev/null >>"$WORK/src.out" 2>>"$WORK/src.err" &
	src_pid=$!
	PIDS+=("$src_pid")
	wait_line src.out "blk: pass [0-9]+ ok" 120
	# passes_after FILE N: N more verified passes in FILE than now.
	passes_after() {
		local now
		now=$(grep -c 'blk: pass [0-9]* ok' "$WORK/$1" || true)
		"$HARNESS" wait-line "$WORK/$1" "blk: pass [0-9]+ ok" 120 $((now + $2)) ||
			fail "$1: the guest verified no $2 more passes: $(tail -3 "$WORK/${1%.out}.err")"
	}
	# refused NAME WHAT ARGS...: a target started with ARGS refuses the VM,
	# both sides naming the disk and WHAT; the source's guest runs on.
	refused() {
		local name=$1 what=$2 port pid
		shift 2
		port=$(test_port)
		start_vm "$name" run --incoming "127.0.0.1:$port" "$@"
		pid_var="${name}_pid"
		pid=${!pid_var}
		wait_listen "$port" "$pid"
		run_vmm 120 migrate --vm bindvm --to "127.0.0.1:$port"
		[ "$status" != 0 ] || fail "$name: the migration to a target that binds no disk succeeded"
		expect_line err "$what"
		expect_line err "--set disk.path=PATH"
		expect_line "$name.err" "refused .*$what"
		kill -0 "$src_pid" 2>/dev/null || fail "$name: the source exited after the refusal"
		# The refusal left the target waiting, with nothing of the VM.
		kill -0 "$pid" 2>/dev/null || fail "$name: the waiting target exited"
		reject_line "$name.out" "blk:"
		kill -TERM "$pid"
		wait_exit "$pid" 30
		passes_after src.out 2
		[ "$(sha256sum <"$WORK/disks/disk.img")" = "$victim" ] ||
			fail "$name: the unrelated file at the source's path was written"
	}
	refused bare "binds no file to the VM's disk.*allow_disk_dirs"
	refused elsewhere "outside \[migration\] allow_disk_dirs" \
		--set migration.allow_disk_dirs="$WORK/other"
	# The operator names this host's file of the disk: the VM moves.
	port=$(test_port)
	start_vm t1 run --incoming "127.0.0.1:$port" --set disk.path="$WORK/real/disk.img"
	wait_listen "$port" "$t1_pid"
	run_vmm 120 migrate --vm bindvm --to "127.0.0.1:$port"
	[ "$status" = 0 ] || fail "the migration to a bound target exited $status: $(tail -2 "$WORK/err")"
	wait_exit "$src_pid" 60
	[ "$status" = 0 ] || fail "the source exited $status after the migration"
	passes_after t1.out 3
	# From there (its [disk] path is the real disk's), a target whose
	# allow-list holds that directory keeps the path the stream names.
	port=$(test_port)
	start_vm t2 run --incoming "127.0.0.1:$port" \
		--set migration.allow_disk_dirs="$WORK/other,$WORK/real/"
	wait_listen "$port" "$t2_pid"
	run_vmm 120 migrate --vm bindvm --to "127.0.0.1:$port"
	[ "$status" = 0 ] || fail "the migration to an allowing target exited $status: $(tail -2 "$WORK/err")"
	wait_exit "$t1_pid" 60
	[ "$status" = 0 ] || fail "the first target exited $status after the second migration"
	passes_after t2.out 3
	run_vmm 30 info --vm bindvm
	expect_line out "^device +blk on $WORK/real/disk.img "
	for f in src t1 t2; do reject_line $f.out CORRUPTION; done
	[ "$(sha256sum <"$WORK/disks/disk.img")" = "$victim" ] ||
		fail "the unrelated file at the source's path was written"
	kill -TERM "$t2_pid"
	wait_exit "$t2_pid" 30
	;;
ping)
	command -v ping >/dev/null || fail "ping is missing (iputils-ping, scripts/install-deps.sh)"
	ns=vmmdev$$
	cleanup_ns() {
		cleanup_pids
		ip netns del "$ns" 2>/dev/null || true
	}
	trap cleanup_ns EXIT
	bridge_with_taps "$ns" 10.77.0.1/24 tap0 tap1
	in_ns="ip netns exec $ns"
	cat >"$WORK/net.cfg" <<EOF
[vm]
memory = 256M
[firmware]
cmdline = ip=10.77.0.2
[workload]
kind = net
heartbeat_ms = 250
[net]
tap = tap0
EOF
	# The client pings every 5 ms from before the migration to after it.
	(sleep 1 && exec $in_ns ping -D -n -i 0.005 -W 1 10.77.0.2) >"$WORK/ping.txt" 2>&1 &
	ping_pid=$!
	PIDS+=("$ping_pid")
	# The responder runs until stopped: the target answers for 8 heartbeats
	# (2 s) after the switchover, however long the migration took.
	# shellcheck disable=SC2046
	harness_migrate --name netvm --config "$WORK/net.cfg" --target-set net.tap=tap1 \
		--source-wrap "$in_ns" --target-wrap "$in_ns" --port 7000 \
		--ready "net: pass [0-9]+: [1-9][0-9]* replies" \
		--target-done "net: pass [0-9]+: [1-9][0-9]* replies" --target-lines 8 \
		--migrate-timeout 120 -- $(migrate_args) --json
	# The guest's counters migrate with its memory: the target's guest
	# answered many more after the switchover than the source's before it.
	replies() { sed -n 's/.*net: pass [0-9]*: \([0-9]*\) replies.*/\1/p' "$WORK/$1" | tail -1; }
	src_n=$(replies src.out) dst_n=$(replies dst.out)
	[ "${dst_n:-0}" -gt $((${src_n:-0} + 50)) ] ||
		fail "the migrated guest answered ${dst_n:-no} pings in all, ${src_n:-none} before the migration"
	echo "guest replies: $src_n before the switchover, $dst_n in all"
	kill -INT "$ping_pid" 2>/dev/null || true
	python3 "$(dirname "$0")/ping_gap.py" "$WORK/ping.txt" "$mode" ||
		fail "the ping log could not be read"
	;;
*)
	fail "unknown case $case"
	;;
esac
echo PASS
