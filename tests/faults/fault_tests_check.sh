#!/usr/bin/env bash
# lint.fault_cell_tests: ctest's fault-cell tests are the program's own list:
# the faults_ci tests are exactly `vmm-faults --names --quick`, and every
# faults_rotation test is a cell of the matrix outside it (which ones depends
# on the hour, so only that is compared). Needs no KVM.
#   fault_tests_check.sh VMM_FAULTS BUILD_DIR
set -eu
faults=$1 build=$2
names() { # LABEL: the cells of ctest's tests with that label, sorted
	ctest --test-dir "$build" -N -L "^$1\$" | sed -n 's/^ *Test *#[0-9]*: faults\.//p' | sort
}
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
ci=$(names faults_ci)
want=$("$faults" --names --quick | sort)
[ -n "$want" ] || fail "vmm-faults --names --quick lists no cell"
[ "$ci" = "$want" ] || fail "ctest's faults_ci tests are not vmm-faults --names --quick:
$(diff <(echo "$want") <(echo "$ci") || true)"
all=$("$faults" --names | sort)
for c in $(names faults_rotation); do
	grep -qx -- "$c" <<<"$all" || fail "faults.$c: no such cell"
	! grep -qx -- "$c" <<<"$want" || fail "faults.$c: a CI cell in the rotation"
done
echo "ok: $(wc -l <<<"$ci") CI cells, rotation: $(names faults_rotation | tr '\n' ' ')"
echo PASS
