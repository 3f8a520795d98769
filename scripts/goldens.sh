#!/usr/bin/env bash
# goldens.sh RELEASE VMM HARNESS [WORKDIR]: writes tests/data/golden/RELEASE/, what
# release RELEASE (in VERSIONS; built by scripts/release-build.sh) puts on
# the wire and on disk, for unit.test_golden to read with the current code
# (docs/compatibility.md, "Goldens"):
#   stream.main    the source's side of a migration's main connection, byte
#                  for byte (the hello, VM_DESC, the state records, END, the
#                  commit...), captured by tests/integration/recproxy.py
#                  --dump between RELEASE's source and VMM's target (an
#                  idle guest, 64 MiB, 1 vCPU)
#   snapshot.state the state file of RELEASE's `vmm snapshot --stop` of the
#                  same guest (the memory file is not kept: the test reads
#                  the state file's header, sections, CRCs and page index)
# Needs KVM: on a host without it, run it under scripts/nested-kvm.sh, with
# WORKDIR (scratch, where the VMs' API sockets go) in a --tmpfs directory:
#   scripts/nested-kvm.sh --tmpfs build -- scripts/goldens.sh 0.3.0 \
#       build/vmm/vmm build/tests/harness/vmm-harness build
# Run it once when a release is cut, then commit the directory.
set -eu
release=${1:?usage: goldens.sh RELEASE VMM HARNESS}
VMM=$(realpath "${2:?}")
HARNESS=$(realpath "${3:?}")
here=$(cd "$(dirname "$0")/.." && pwd)
rel=$("$here/scripts/release-build.sh" "$release")
old=$rel/bin/vmm
out=$here/tests/data/golden/$release
work=$(mktemp -d -p "$(realpath "${4:-${TMPDIR:-/tmp}}")" goldens.XXXXXX)
export VMM_RUN_DIR=$work/run
mkdir -p "$VMM_RUN_DIR" "$out"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
small=(--set vm.memory=64M --set vm.vcpus=1)
wait_for() { # FILE REGEX
	"$HARNESS" wait-line "$1" "$2" 120 >/dev/null || { tail "$1" >&2; exit 1; }
}

# The stream: RELEASE's source -> recproxy --dump -> VMM's target.
tport=$("$HARNESS" port)
pport=$("$HARNESS" port)
"$old" run "$rel/src/examples/idle.cfg" --set vm.name=gsrc "${small[@]}" \
	>"$work/src.out" 2>"$work/src.err" </dev/null &
src=$!
pids+=($src)
wait_for "$work/src.out" "vmm-firmware: idle"
"$VMM" run --incoming "127.0.0.1:$tport" >"$work/dst.out" 2>"$work/dst.err" </dev/null &
dst=$!
pids+=($dst)
"$HARNESS" wait-listen "$tport" 30 "$dst"
python3 "$here/tests/integration/recproxy.py" "$pport" "$tport" --dump "$work/stream.main" \
	>"$work/proxy.out" 2>&1 &
pids+=($!)
wait_for "$work/proxy.out" "^listening $pport\$"
"$old" migrate --vm gsrc --to "127.0.0.1:$pport" --mode precopy >"$work/mig.out"
wait "$src" # it exits 0 once the target runs the VM
wait_for "$work/proxy.out" "^dumped main\$"
cp "$work/stream.main" "$out/stream.main"
kill "$dst"

# The snapshot.
"$old" run "$rel/src/examples/idle.cfg" --set vm.name=gsnap "${small[@]}" \
	>"$work/snap.out" 2>"$work/snap.err" </dev/null &
pids+=($!)
wait_for "$work/snap.out" "vmm-firmware: idle"
"$old" snapshot --vm gsnap --to "$work/snap" --stop >/dev/null
cp "$work/snap/state" "$out/snapshot.state"
ls -l "$out"
