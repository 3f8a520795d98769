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

# Each VMM lives in its host's network; API sockets are files, reachable from
# here. The harness finds the target's listener in the target's namespace.
harness_migrate --name nsvm --config "$EXAMPLES/dirty.cfg" --set vm.memory=1G \
	--set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=0 \
	--set workload.heartbeat_ms=0 --source-wrap "ip netns exec $a" \
	--target-wrap "ip netns exec $b" --host 10.231.0.2 --port 7000 \
	--ready "dirty pass [0-9]+ ok" --expect state=completed \
	--target-done "dirty pass [0-9]+ ok" --target-lines 3 -- --json
echo PASS
