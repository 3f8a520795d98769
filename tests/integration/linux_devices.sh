#!/usr/bin/env bash
# linux_devices.sh [RELEASE from|to]
# The Linux test guest with its virtio devices (docs/devices.md), one boot,
# in a network namespace of its own with a bridge and two taps:
#   1. a TCP client (tcp_probe.py) connects to tcpecho in the guest and keeps
#      one connection open, echoing every 20 ms, through a precopy migration
#      (tap0 -> tap1) and then a postcopy one (tap1 -> tap0); the connection
#      must never break, and the client's largest gap is printed;
#   2. blkverify writes and verifies a pattern on /dev/vda with O_DIRECT on
#      the last target: writes acknowledged before each switchover are read
#      back after it (blkverify runs from the first boot in the background).
# With RELEASE (a release in VERSIONS, built by scripts/release-build.sh),
# the three VMMs alternate between that release and this tree
# (docs/compatibility.md): "from" boots under the release, precopy moves it
# into this tree and postcopy back into the release; "to" boots under this
# tree, precopy moves it into the release and postcopy back. The two cells
# cover both modes in both directions with the same disk and connection.
set -eu
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/linux_lib.sh"
require_linux
if [ "${VMM_IN_NETNS:-}" = "" ]; then
	ns=vmmlnx$$
	trap 'ip netns del "$ns" 2>/dev/null || true' EXIT
	bridge_with_taps "$ns" 10.78.0.1/24 tap0 tap1
	set +e
	VMM_IN_NETNS=$ns ip netns exec "$ns" bash "$0" "$@"
	rc=$?
	set -e
	exit $rc
fi
name=lnet
# The binary each of the three VMs runs (and that runs `vmm migrate` from it).
src_vmm=$VMM mid_vmm=$VMM dst_vmm=$VMM
if [ -n "${1:-}" ]; then
	rel=$("$(dirname "$0")/../../scripts/release-build.sh" "$1") || fail "building release $1"
	[ -x "$rel/bin/vmm" ] || fail "no vmm in $rel/bin"
	case ${2:-} in
	from) src_vmm=$rel/bin/vmm dst_vmm=$rel/bin/vmm ;;
	to) mid_vmm=$rel/bin/vmm ;;
	*) fail "direction ${2:-}: from or to" ;;
	esac
	echo "src: $("$src_vmm" --version | head -1); mid: $("$mid_vmm" --version | head -1); dst: $("$dst_vmm" --version | head -1)"
fi
truncate -s 64M "$WORK/disk.img"
# A release's VM starts from the release's own example config.
[ "$src_vmm" = "$VMM" ] || EXAMPLES=$rel/src/examples
linux_args 1 256M "ip=10.78.0.2::10.78.0.1:255.255.255.0::eth0:off vmm_workload=tcpecho vmm_args=7777"
LARGS+=(--set "vm.name=$name" --set net.tap=tap0 --set "disk.path=$WORK/disk.img")

# migrate_to FROM TO MODE TAP: a target TO on TAP, `vmm migrate` from FROM.
migrate_to() {
	local from=$1 to=$2 mode=$3 tap=$4 port mig pidvar="${1}_pid" extra=""
	port=$(test_port)
	local tovmm="${to}_vmm" fromvmm="${from}_vmm"
	# The target binds the VM's devices itself: its tap, the shared disk.
	VMM=${!tovmm} start_linux "$to" run --incoming "127.0.0.1:$port" --set "net.tap=$tap" \
		--set "disk.path=$WORK/disk.img"
	local topid="${to}_pid"
	wait_listen "$port" "${!topid}"
	[ "$mode" = postcopy ] && extra="--postcopy-after 0"
	set +e
	# shellcheck disable=SC2086
	timeout --signal=KILL 300 "${!fromvmm}" migrate --to "127.0.0.1:$port" --vm "$name" \
		--mode "$mode" $extra --json >"$WORK/mig-$to.out" 2>"$WORK/mig-$to.err"
	mig=$?
	set -e
	[ "$mig" = 0 ] || fail "vmm migrate ($mode, $from to $to) exited $mig: $(tail -3 "$WORK/mig-$to.err")"
	wait_exit "${!pidvar}" 60
	[ "$status" = 0 ] || fail "$from exited $status after the $mode migration"
	echo "migrated $from -> $to ($mode): downtime $("$HARNESS" json "$WORK/mig-$to.out" downtime_ms) ms"
}

# echoes_after N: the client prints N more of its once-a-second "N echoes"
# lines than now. Two show that echoes go on over the connection: every
# echo is checked, and a break ends the client (checked at the end); more
# seconds of echoing checked nothing more.
echoes_after() {
	local now
	now=$(grep -c 'echoes' "$WORK/probe.out" || true)
	"$HARNESS" wait-line "$WORK/probe.out" 'tcp_probe: [0-9]+ echoes' 300 $((now + $1)) ||
		fail "the TCP client stopped getting echoes: $(tail -2 "$WORK/probe.out")"
}

VMM=$src_vmm boot_linux src 'tcpecho: listening on 7777' "$LINUX_BOOT_S" "${LARGS[@]}"
# The block check runs beside the server from now on, through both migrations.
guest_cmd src 'blkverify /dev/vda 64 1000 &' 'blkverify: pass 1 ok'
python3 "$(dirname "$0")/tcp_probe.py" 10.78.0.2 7777 "$WORK/probe.stop" >"$WORK/probe.out" 2>&1 &
probe_pid=$!
PIDS+=("$probe_pid")
wait_line probe.out 'tcp_probe: connected' 600
echoes_after 2

migrate_to src mid precopy tap1
echoes_after 2
linux_wait mid 'blkverify: pass [0-9]+ ok' 1 300

migrate_to mid dst postcopy tap0
echoes_after 2
before=$(grep -c 'blkverify: pass' "$WORK/dst.out" || true)
linux_wait dst 'blkverify: pass [0-9]+ ok' $((before + 2)) 300

touch "$WORK/probe.stop"
wait_exit "$probe_pid" 300
[ "$status" = 0 ] || fail "the TCP connection did not survive: $(tail -2 "$WORK/probe.out")"
tail -1 "$WORK/probe.out"
reject_line mid.out CORRUPTION
reject_line dst.out CORRUPTION
# The consoles' FIFOs go with the test (a build tree copied back from the
# emulated KVM's tmpfs cannot hold them).
rm -f "$WORK"/*.in
echo PASS
