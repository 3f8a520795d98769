#!/usr/bin/env bash
# compat_migrate.sh RELEASE MODE [DIRECTION]: a migration between a release
# listed in VERSIONS (built from this clone's history by
# scripts/release-build.sh, cached by commit) and the current tree, in one
# direction: "from" (the release is the source, this tree the target) or
# "to" (this tree is the source, the release the target). MODE is precopy
# or postcopy. The dirty guest (the release's own example config and
# firmware on a release source) rewrites its working set pass after pass
# for ever, verifying every page before it rewrites it, so the migration
# lands mid-run by construction; the target is done after two verified
# passes.
# MODE "local" is a local upgrade and its rollback (`vmm migrate --local`,
# guest RAM a memfd handed over a UNIX socket): a VM started by the release
# moves into this tree's vmm, then back into the release's, its guest
# verifying what it rewrites in each process. MODE "snapshot": a snapshot
# taken by one side and restored by the other (below).
#
# What it proves (docs/compatibility.md): a 6.1 target answers a 6.0
# source's hello with 6.0's CAPS (a 6.0 source refuses the longer 6.1
# CAPS) and reads the release's state blobs (framing 2); a 6.1 source
# reads a 6.0 target's CAPS as the release's row of the component table
# and writes that release's form, which the release loads. Either half
# missing ends in a refused CAPS or a refused state blob, not in "dirty
# done". The commit proof is 6.0's in both directions (same records).
set -eu
. "$(dirname "$0")/lib.sh"
release=${1:?usage: compat_migrate.sh RELEASE precopy|postcopy|snapshot from|to, or RELEASE local}
mode=${2:?}
dir=${3:-}
require_kvm
src_tree=$(cd "$(dirname "$0")/../.." && pwd)
rel=$("$src_tree/scripts/release-build.sh" "$release") || fail "building release $release"
old=$rel/bin/vmm
[ -x "$old" ] || fail "no vmm in $rel/bin"
old_ver=$("$old" --version | head -1)
echo "release $release: $old ($old_ver); current: $("$VMM" --version | head -1)"

# local: release -> current -> release, each hop a `vmm migrate --local`
# run by the binary the VM is in; the old process exits 0 and the guest
# runs on in the new one.
local_hop() { # HOP FROM-BINARY TO-BINARY
	local hop=$1 from=$2 to=$3 sock=$WORK/hop-$1.sock pid_var
	VMM=$to start_vm g$hop run --incoming "unix:$sock"
	wait_line g$hop.err "waiting for an incoming migration on unix:" 30
	VMM=$from run_vmm 120 migrate --vm compat --to "unix:$sock" --local --json
	expect_status 0
	"$HARNESS" json "$WORK/out" state >"$WORK/state" || fail "hop $hop: no state"
	[ "$(cat "$WORK/state")" = completed ] || fail "hop $hop: the upgrade ended $(cat "$WORK/state")"
	pid_var="g$((hop - 1))_pid"
	wait_exit "${!pid_var}" 30
	expect_status 0
	expect_line g$((hop - 1)).err "migrated to unix:$sock"
	expect_progress g$hop.out 1 120
	reject_line g$hop.out "CORRUPTION"
	wait_gone "$VMM_RUN_DIR/compat.sock.incoming" || fail "hop $hop kept compat.sock.incoming"
	VMM=$to run_vmm 30 status --vm compat
	expect_status 0
}
if [ "$mode" = local ]; then
	VMM=$old start_vm g0 run "$rel/src/examples/dirty.cfg" --set vm.name=compat \
		--set vm.memory=512M --set vm.memory_backend=memfd --set workload.working_set=32M \
		--set workload.passes=0 --set workload.heartbeat_ms=0
	wait_line g0.out "dirty pass [0-9]+ ok" 60
	local_hop 1 "$old" "$VMM" # the upgrade
	local_hop 2 "$VMM" "$old" # the rollback
	kill -TERM "$g2_pid"
	wait_exit "$g2_pid" 30
	echo PASS
	exit 0
fi

# snapshot: taken by one side (--stop), restored by the other. "from": the
# release takes it, this tree restores it. "to": this tree's own form is
# refused by the release with the policy's line (its state framing is
# newer), and --format-version RELEASE writes one the release restores.
if [ "$mode" = snapshot ]; then
	case $dir in
	from) taker=$old restorer=$VMM cfg=$rel/src/examples/dirty.cfg fv=() ;;
	to) taker=$VMM restorer=$old cfg=$EXAMPLES/dirty.cfg fv=(--format-version "$release") ;;
	*) fail "direction $dir: from or to" ;;
	esac
	VMM=$taker start_vm src run "$cfg" --set vm.name=compat --set vm.memory=512M \
		--set workload.working_set=32M --set workload.passes=0 --set workload.heartbeat_ms=0
	wait_line src.out "dirty pass [0-9]+ ok" 60
	if [ "$dir" = to ]; then
		VMM=$taker run_vmm 120 snapshot --vm compat --to "$WORK/own"
		expect_status 0
		VMM=$restorer run_vmm 60 run --restore "$WORK/own" --set vm.name=refused
		[ "$status" != 0 ] || fail "release $release restored this tree's own form"
		expect_line err "format version [0-9]+\.[0-9]+, this vmm reads"
		# What the release cannot be given is refused before the VM pauses.
		VMM=$taker run_vmm 30 snapshot --vm compat --to "$WORK/bad" --format-version 0.0.1
		expect_status 1
		expect_line err "format_version 0\.0\.1: release 0\.0\.1 is not one this vmm knows"
		expect_progress src.out 1
	fi
	VMM=$taker run_vmm 120 snapshot --vm compat --to "$WORK/snap" --stop "${fv[@]}"
	expect_status 0
	wait_exit "$src_pid" 60
	[ "$status" = 0 ] || fail "the source exited with $status after snapshot --stop"
	VMM=$restorer start_vm dst run --restore "$WORK/snap" --set vm.name=restored
	expect_progress dst.out 3 120
	expect_line dst.err "restored snapshot [0-9a-f]{32}"
	reject_line dst.out "CORRUPTION"
	kill -TERM "$dst_pid"
	wait_exit "$dst_pid" 30
	echo PASS
	exit 0
fi

case $dir in
from) sides=(--source-vmm "$old") cfg=$rel/src/examples/dirty.cfg ;;
to) sides=(--target-vmm "$old") cfg=$EXAMPLES/dirty.cfg ;;
*) fail "direction $dir: from or to" ;;
esac
case $mode in
precopy | postcopy) ;;
*) fail "mode $mode: precopy, postcopy, snapshot or local" ;;
esac

harness_migrate "${sides[@]}" --name compat --config "$cfg" --set vm.memory=1G \
	--set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=0 \
	--set workload.heartbeat_ms=0 --ready "dirty pass [0-9]+ ok" --migrate-timeout 120 \
	--expect state=completed --expect "mode_used=$mode" \
	--target-done "dirty pass [0-9]+ ok" --target-lines 2 --target-timeout 180 \
	-- --json --mode "$mode"
reject_line dst.out "CORRUPTION"
echo PASS
