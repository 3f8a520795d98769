#!/usr/bin/env bash
# The whole test suite: a normal build and an ASan+UBSan build, each running
# every unit and integration test with ctest, then the fuzz targets (a clang
# build of their own): each replays its corpus, then fuzzes for
# VMM_FUZZ_TIME seconds (default 30; 0 skips the fuzzing, not the replay).
# Both builds share one cache of the Linux test kernel (built once, by the first).
# Guest-booting tests need /dev/kvm and fail without it unless VMM_TESTS_NO_KVM=1.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc)
run_suite() { # BUILD_DIR CMAKE_ARGS...
	local dir=$1
	shift
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
	cmake --build "$dir" -j "$jobs"
	ctest --test-dir "$dir" --output-on-failure -j 1
}
echo "== build and test (RelWithDebInfo)"
run_suite build
echo "== build and test (AddressSanitizer + UndefinedBehaviorSanitizer)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	run_suite build-asan -DVMM_SANITIZE=ON -DVMM_LINUX_CACHE_DIR="$PWD/build/linux-cache"
echo "== fuzz targets (clang, libFuzzer + ASan + UBSan)"
scripts/fuzz.sh --time "${VMM_FUZZ_TIME:-30}"
