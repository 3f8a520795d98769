#!/usr/bin/env bash
# lint.test_sh_phases: scripts/test.sh runs every phase whatever the ones
# before it did, exits 1 when any failed, and its report says which and why.
# A copy of the script runs in a scratch tree with cmake, ctest and
# scripts/fuzz.sh faked (nothing is built, nothing boots): the normal ctest
# has a failing test that also takes 95 s, the ASan tree does not configure,
# a fuzz target crashes.
#   test_sh_phases.sh SOURCE_DIR
set -eu
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree/scripts" "$tmp/bin"
cp "$src/scripts/test.sh" "$tmp/tree/scripts/test.sh"

cat >"$tmp/bin/cmake" <<'EOF'
#!/bin/sh
# The ASan tree does not configure; everything else builds.
case " $* " in
*" -B build-asan "*) printf 'CMake Error at CMakeLists.txt:9 (message):\n  fake: no ASan here\n' >&2; exit 1 ;;
esac
exit 0
EOF
cat >"$tmp/bin/ctest" <<'EOF'
#!/bin/sh
# The normal tree: one test passes, one fails after 95 s.
case " $* " in *" -N "*) exit 0 ;; esac
echo "1/2 Test  #1: unit.test_fine .......................   Passed    1.00 sec"
echo "2/2 Test  #2: unit.test_flaky ......................***Failed   95.00 sec"
printf '\nThe following tests FAILED:\n\t  2 - unit.test_flaky (Failed)\n'
exit 8
EOF
cat >"$tmp/tree/scripts/fuzz.sh" <<'EOF'
#!/bin/sh
echo "fuzz_wire_target   ok        100 runs    10 exec/s  cov: 1   ft: 1    corpus 1/1b"
echo "fuzz_config        FAILED (exit 77) after 1500 runs: build-fuzz/fuzz-artifacts/fuzz_config/crash-0 (log x)"
echo "fuzz_elf           ok        100 runs    10 exec/s  cov: 1   ft: 1    corpus 1/1b"
exit 1
EOF
chmod +x "$tmp/bin/cmake" "$tmp/bin/ctest" "$tmp/tree/scripts/fuzz.sh"

set +e
env -u VMM_TESTS_NESTED PATH="$tmp/bin:$PATH" VMM_TESTS_NO_KVM=1 \
	bash "$tmp/tree/scripts/test.sh" >"$tmp/out" 2>&1
rc=$?
set -e
cat "$tmp/out"
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
# want REGEX: a line of the output matches.
want() {
	grep -Eq -- "$1" "$tmp/out" || fail "no line matches /$1/"
}
[ "$rc" = 1 ] || fail "test.sh exited $rc, not 1"
# Every phase ran (or was reported not run), in order, after the failures.
want '^ctest \(normal\) +[0-9]+ +within 720 s +FAILED \(8\)$'
want '^build \(build-asan\) +[0-9]+ +FAILED \(1\)$'
want '^ctest -L asan \(ASan\+UBSan\) +0 +NOT RUN$'
want '^fuzz +[0-9]+ +FAILED \(1\)$'
# Why each failed.
want '^== 4 phases failed$'
want '^ctest \(normal\): FAILED \(8\): 1 tests failed: unit\.test_flaky \(Failed\)$'
want '^build \(build-asan\): FAILED \(1\): CMake Error at CMakeLists.txt:9 \(message\): fake: no ASan here'
want '^ctest -L asan \(ASan\+UBSan\): NOT RUN: build \(build-asan\) failed$'
want '^fuzz: FAILED \(1\): crashed: fuzz_config '
# The budget: the 95 s test is flagged, the 1 s one is not.
want '^== 1 tests over the 90 s budget for one test$'
want '^ +95\.0 +normal +OVER +unit\.test_flaky$'
want '^ +1\.0 +normal +unit\.test_fine$'
echo PASS
