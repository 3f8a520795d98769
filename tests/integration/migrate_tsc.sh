#!/usr/bin/env bash
# The guest TSC frequency travels in the VM description ([vm] tsc_khz, the
# effective value) and the target sets it with KVM_SET_TSC_KHZ before any
# vCPU runs. A target that cannot run it refuses the VM with the reason
# before taking any data, and the source keeps running its guest.
# On this host KVM has no TSC scaling (no KVM_CAP_TSC_CONTROL): it runs a
# guest TSC only within +-250 ppm of its own, so 1 kHz is refused.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
port=$(test_port)
want='\[vm\] tsc_khz: .*1 kHz'

# 1. vmm run with a frequency this host cannot run: one line, before the guest runs.
run_vmm 30 run "$EXAMPLES/demo.cfg" --set vm.tsc_khz=1
[ "$status" != 0 ] || fail "vmm run with a 1 kHz TSC exited 0"
expect_line err "$want.*this host's|$want.*its own runs at [0-9]+ kHz"
[ "$(wc -l <"$WORK/err")" = 1 ] || { cat "$WORK/err"; fail "expected a one-line error"; }
echo "ok: run: $(cat "$WORK/err")"
cp "$WORK/err" "$WORK/run.err"

# 2. A description asking for 1 kHz (a fake source): the target answers ERROR and exits.
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
timeout --signal=KILL 60 "$FAKE_SOURCE" "127.0.0.1:$port" tsc-1khz >"$WORK/fake.out" ||
	{ cat "$WORK/fake.out"; fail "fake_source got no ERROR from the target"; }
expect_line fake.out "target says: .*$want"
wait_exit "$dst_pid" 20
[ "$status" = 1 ] || { cat "$WORK/dst.err"; fail "target exit status $status, expected 1"; }
expect_line dst.err "$want"
echo "ok: fake source: $(grep -E "$want" "$WORK/fake.out")"

# 3. A real source whose description asks for 1 kHz: the migration fails with
#    the reason, the source's guest keeps verifying its pages.
VMM_TEST_FAULT=desc-tsc-1khz start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=tscvm \
	--set vm.memory=256M --set workload.working_set=16M --set workload.passes=0 \
	--set workload.heartbeat_ms=0
wait_line src.out "dirty pass [0-9]+ ok" 60
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
run_vmm 60 migrate --to "127.0.0.1:$port" --vm tscvm
expect_status 1
expect_line err "$want"
wait_exit "$dst_pid" 20
[ "$status" = 1 ] || { cat "$WORK/dst.err"; fail "target exit status $status, expected 1"; }
expect_progress src.out 2
kill -0 "$src_pid" 2>/dev/null || fail "the source VM stopped"
echo "ok: real source: $(tail -1 "$WORK/err")"

# 4. A frequency this host runs (its own - 500 kHz, inside KVM's 250 ppm) is
#    what the guest gets, and what the target sets after the migration.
host_khz=$(grep -Eo 'its own runs at [0-9]+ kHz' "$WORK/run.err" | grep -Eo '[0-9]+')
[ -n "$host_khz" ] || fail "no host TSC frequency in the refusal"
want_khz=$((host_khz - 500))
# vm_info NAME FIELD: one field of GET /api/v1/vm on NAME's API socket.
vm_info() {
	python3 - "$VMM_RUN_DIR/$1.sock" "$2" <<'PY'
import http.client, json, socket, sys
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(sys.argv[1])
c = C("localhost", timeout=10); c.request("GET", "/api/v1/vm")
print(json.loads(c.getresponse().read())[sys.argv[2]])
PY
}
kill -9 "$src_pid" 2>/dev/null || true
start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=tscvm2 --set vm.memory=256M \
	--set vm.tsc_khz=$want_khz --set vm.cpu_vendor=intel --set workload.working_set=16M \
	--set workload.passes=0 --set workload.heartbeat_ms=0
wait_line src.out "dirty pass [0-9]+ ok" 60
[ "$(vm_info tscvm2 tsc_khz)" = "$want_khz" ] || fail "source: tsc_khz is not $want_khz"
[ "$(vm_info tscvm2 cpu_vendor)" = intel ] || fail "source: cpu_vendor is not intel"
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
run_vmm 120 migrate --to "127.0.0.1:$port" --vm tscvm2
expect_status 0
expect_progress dst.out 2
got=$(vm_info tscvm2 tsc_khz)
[ "$got" = "$want_khz" ] || fail "target: tsc_khz $got, the source's guest had $want_khz"
[ "$(vm_info tscvm2 cpu_vendor)" = intel ] || fail "target: cpu_vendor is not intel"
echo "ok: host $host_khz kHz, guest $want_khz kHz on the source and on the target"

# 5. The default (0 = this host's): the description carries the effective value.
start_vm dst2 run --incoming "127.0.0.1:$port"
wait_listen "$port"
start_vm src3 run "$EXAMPLES/dirty.cfg" --set vm.name=tscvm3 --set vm.memory=256M \
	--set workload.working_set=16M --set workload.passes=0 --set workload.heartbeat_ms=0
wait_line src3.out "dirty pass [0-9]+ ok" 60
[ "$(vm_info tscvm3 tsc_khz)" = "$host_khz" ] || fail "default: tsc_khz is not the host's"
run_vmm 120 migrate --to "127.0.0.1:$port" --vm tscvm3
expect_status 0
expect_progress dst2.out 2
[ "$(vm_info tscvm3 tsc_khz)" = "$host_khz" ] || fail "default: target tsc_khz differs"
echo PASS
