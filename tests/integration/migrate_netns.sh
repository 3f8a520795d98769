#!/usr/bin/env bash
# Two hosts: network namespaces joined by a veth pair, each with its own
# address, as a test cluster is built. The dirty guest migrates from one to
# the other (postcopy-capable default mode) and verifies its memory there.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
id=$$
a=vmmA$id b=vmmB$id
cleanup_ns() {
	cleanup_pids
	ip netns del "$a" 2>/dev/null || true
	ip netns del "$b" 2>/dev/null || true
}
trap cleanup_ns EXIT
if ! ip netns add "$a" 2>/dev/null; then
	echo "SKIP: cannot create network namespaces here (needs root and iproute2)"
	exit 77
fi
ip netns add "$b"
ip link add "va$id" netns "$a" type veth peer name "vb$id" netns "$b"
ip -n "$a" addr add 10.231.0.1/24 dev "va$id"
ip -n "$b" addr add 10.231.0.2/24 dev "vb$id"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "va$id" up
ip -n "$b" link set "vb$id" up

# Each VMM lives in its host's network; API sockets are files, reachable from here.
ip netns exec "$a" "$VMM" run "$EXAMPLES/dirty.cfg" --set vm.name=nsvm --set vm.memory=1G \
	--set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=30 \
	--set workload.heartbeat_ms=0 >"$WORK/src.out" 2>"$WORK/src.err" &
src_pid=$!
PIDS+=($src_pid)
ip netns exec "$b" "$VMM" run --incoming 10.231.0.2:7000 >"$WORK/dst.out" 2>"$WORK/dst.err" &
dst_pid=$!
PIDS+=($dst_pid)
for _ in $(seq 100); do
	[ -n "$(ip netns exec "$b" ss -Hltn 'sport = :7000')" ] && break
	sleep 0.1
done
wait_line src.out "dirty pass [0-9]+ ok" 60
run_vmm 60 migrate --to 10.231.0.2:7000 --vm nsvm --json
expect_status 0
expect_line out '"state": *"completed"'
wait_exit "$src_pid" 10
expect_status 0
wait_exit "$dst_pid" 120
expect_status 0
expect_line dst.out "dirty done: 30 passes verified"
reject_line dst.out "CORRUPTION"
echo PASS
