#!/usr/bin/env bash
# The test suite.
#   scripts/test.sh          the whole suite (what CI runs, README.md):
#     1. build   the normal build (RelWithDebInfo) with the Linux test guest
#     2. ctest   every test of it, in parallel (ctest -j; the tests that boot
#                the Linux guest hold a lock so only one runs at a time)
#     3. asan    an ASan+UBSan build
#     4. ctest   under ASan+UBSan: the tests labelled `asan` (the unit tests,
#                the codec and one integration test per path through the VMM
#                and the engine; tests/integration/CMakeLists.txt lists them)
#     5. fuzz    every libFuzzer target (a clang build of its own) replays its
#                corpus, then fuzzes for VMM_FUZZ_TIME seconds (default 30; 0
#                skips the fuzzing, not the replay)
#   scripts/test.sh --quick  the edit loop: the tests labelled `quick` (unit
#     tests, lint, a boot and one smoke migration each of precopy and
#     postcopy) in the existing build tree, which it configures as it is.
# It ends with the wall time of each phase and the 15 slowest tests, also
# when a phase fails. Guest-booting tests need /dev/kvm; on a machine without
# it they are skipped; VMM_TESTS_NESTED=smoke adds the smoke tier in a
# TCG-emulated machine that has KVM (scripts/nested-kvm.sh) at the end,
# VMM_TESTS_NESTED=all runs every phase there. VMM_CTEST_JOBS sets ctest's
# -j (default: twice the cores: most integration tests wait on a guest, a
# timeout or a peer).
set -eu
cd "$(dirname "$0")/.."
quick=0
case ${1:-} in
--quick) quick=1 ;;
"") ;;
-h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) echo "test.sh: unknown option $1 (--quick, --help)" >&2; exit 2 ;;
esac
cores=$(nproc)
jobs=${VMM_CTEST_JOBS:-$((2 * cores))}
logs=$PWD/build/test-logs
mkdir -p "$logs"
rm -f "$logs"/*.ctest.log

phase_names=()
phase_secs=()
phase_results=()
# phase NAME COMMAND...: runs COMMAND, timed; a failure ends the suite (after the report).
phase() {
	local name=$1 start=$SECONDS rc=0
	shift
	echo "== $name"
	"$@" || rc=$?
	phase_names+=("$name")
	phase_secs+=($((SECONDS - start)))
	if [ "$rc" = 0 ]; then phase_results+=(ok); else phase_results+=("failed ($rc)"); fi
	return "$rc"
}

# Where the guest tests run, on a machine without /dev/kvm (a guest whose
# kernel does not bind KVM):
#   default            every ctest phase here with the guest tests skipped
#                      (VMM_TESTS_NO_KVM=1, counted in the report)
#   VMM_TESTS_NESTED=smoke  the same, then the smoke tier (labels quick and
#                      linux, not lint: a boot, a precopy and a postcopy
#                      migration, the Linux guest's session) inside a
#                      TCG-emulated machine that has KVM
#                      (scripts/nested-kvm.sh). Not CI's default: that
#                      machine once made a firmware vCPU triple-fault in 4
#                      runs (docs/testing.md)
#   VMM_TESTS_NESTED=all  every ctest phase inside that machine (the whole
#                      suite with guests; its kernel panicked every few
#                      minutes under that load, see docs/testing.md)
#   VMM_TESTS_NO_KVM=1 guest tests skipped, no emulated machine
# Builds and fuzzing always run here.
nested=0
smoke=0
# From here on ctest runs in the emulated machine, with its guest tests, and
# (everything being slower there) as many tests at once as cores.
go_nested() {
	unset VMM_TESTS_NO_KVM
	nested=1
	jobs=${VMM_CTEST_JOBS:-$cores}
}
if [ ! -c /dev/kvm ] && [ -z "${VMM_TESTS_NO_KVM:-}" ]; then
	if [ "${VMM_TESTS_NESTED:-}" = all ]; then
		go_nested
		echo "test.sh: no /dev/kvm on this machine: ctest runs in a TCG machine with KVM (scripts/nested-kvm.sh), -j $jobs"
	else
		[ "${VMM_TESTS_NESTED:-}" != smoke ] || smoke=1
		export VMM_TESTS_NO_KVM=1
		echo "test.sh: no /dev/kvm on this machine: guest tests are skipped (VMM_TESTS_NESTED=smoke or all runs them in a TCG machine with KVM, scripts/nested-kvm.sh)"
	fi
fi

# ctest_log NAME DIR ARGS...: ctest in DIR, its output also in $logs/NAME.ctest.log.
ctest_log() {
	local name=$1 dir=$2
	shift 2
	if [ "$nested" = 1 ]; then
		ctest_nested "$name" "$dir" "$@"
		return
	fi
	ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" 2>&1 | tee "$logs/$name.ctest.log"
	return "${PIPESTATUS[0]}"
}

# ctest_nested NAME DIR ARGS...: ctest_log inside the emulated machine. QEMU's
# TCG emulation of SVM is not flawless: the machine itself may panic or hang
# (scripts/nested-kvm.sh exits 124 or 125 then, and says so). Such a machine
# failure is no test result: the tests it did not finish run again in a new
# machine (twice at most), and the log says which. A test that failed is
# never run again.
ctest_nested() {
	local name=$1 dir=$2 boot rc=0 left=() sel=()
	shift 2
	: >"$logs/$name.ctest.log"
	for boot in 1 2 3; do
		scripts/nested-kvm.sh --tmpfs "$dir" -- \
			ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" ${sel[@]+"${sel[@]}"} 2>&1 |
			tee -a "$logs/$name.ctest.log"
		rc=${PIPESTATUS[0]}
		[ "$rc" = 124 ] || [ "$rc" = 125 ] || return "$rc"
		# Every test the selection names, less those with a result line.
		mapfile -t left < <(comm -23 \
			<(ctest --test-dir "$dir" -N "$@" ${sel[@]+"${sel[@]}"} |
				sed -n 's/^ *Test *#[0-9]*: //p' | sort) \
			<(sed -n 's/.*Test *#[0-9]*: \([^ ]*\) .*sec$/\1/p' "$logs/$name.ctest.log" | sort))
		[ "${#left[@]}" -gt 0 ] || return 1
		echo "!! test.sh: the emulated machine failed (exit $rc), not a test:" \
			"running the ${#left[@]} tests it did not finish in a new one: ${left[*]}" |
			tee -a "$logs/$name.ctest.log"
		sel=(-R "^($(printf '%s|' "${left[@]}" | sed 's/[.]/\\./g; s/|$//'))\$")
	done
	return "$rc"
}

configure_build() { # DIR CMAKE_ARGS...
	local dir=$1
	shift
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null &&
		cmake --build "$dir" -j "$cores"
}

report() {
	local rc=$? i total=0
	echo
	echo "== time per phase (wall)"
	printf '%-28s %8s  %s\n' phase seconds result
	for i in "${!phase_names[@]}"; do
		printf '%-28s %8s  %s\n' "${phase_names[$i]}" "${phase_secs[$i]}" "${phase_results[$i]}"
		total=$((total + phase_secs[i]))
	done
	printf '%-28s %8s\n' total "$total"
	# A skipped test did not pass: say how many, so a green run without
	# /dev/kvm (VMM_TESTS_NO_KVM=1) cannot pass for a full one.
	for i in "$logs"/*.ctest.log; do
		[ -f "$i" ] || continue
		printf '%s: %s tests skipped\n' "$(basename "$i" .ctest.log)" \
			"$(grep -c -- '\*\*\*Skipped' "$i" || true)"
	done
	echo
	echo "== the 15 slowest tests"
	# ctest's result lines: "12/140 Test  #7: unit.test_x ....   Passed   1.23 sec"
	awk '/Test +#[0-9]+: / && / sec$/ {
			run = FILENAME; sub(/.*\//, "", run); sub(/\.ctest\.log$/, "", run)
			name = $0; sub(/.*Test +#[0-9]+: +/, "", name); sub(/ .*/, "", name)
			printf "%10.1f  %-8s %s\n", $(NF - 1), run, name
		}' "$logs"/*.ctest.log 2>/dev/null | sort -rn | head -15
	exit "$rc"
}
trap report EXIT

if [ "$quick" = 1 ]; then
	if [ "$smoke" = 1 ]; then # the quick tier is small enough for the emulated machine
		go_nested
	fi
	phase "build (build)" configure_build build
	phase "ctest -L quick" ctest_log quick build -L quick
	exit 0
fi
phase "build (build)" configure_build build -DVMM_LINUX_GUEST=ON
phase "ctest (normal)" ctest_log normal build
phase "build (build-asan)" configure_build build-asan -DVMM_SANITIZE=ON -DVMM_LINUX_GUEST=ON
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	phase "ctest -L asan (ASan+UBSan)" ctest_log asan build-asan -L asan
phase "fuzz" scripts/fuzz.sh --time "${VMM_FUZZ_TIME:-30}"
if [ "$smoke" = 1 ]; then
	go_nested
	phase "ctest smoke (emulated KVM)" ctest_log smoke build -L 'quick|linux' -LE lint
fi
