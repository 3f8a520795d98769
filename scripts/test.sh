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
# Every phase runs, whatever an earlier one did (a ctest phase whose build
# failed is reported as not run); the exit status is 1 if any failed. The
# report at the end says which phases failed and why (the failed tests, the
# fuzz targets that crashed), the wall time of each phase against the
# suite's budget (docs/testing.md), every test over 90 s and the 15 slowest.
# Guest-booting tests need /dev/kvm; on a machine without it they are
# skipped; VMM_TESTS_NESTED=smoke adds the smoke tier in a TCG-emulated
# machine that has KVM (scripts/nested-kvm.sh) at the end,
# VMM_TESTS_NESTED=all runs every phase there. VMM_CTEST_JOBS sets ctest's
# -j (default: twice the cores: most integration tests wait on a guest, a
# timeout or a peer).
set -eu
cd "$(dirname "$0")/.."
quick=0
case ${1:-} in
--quick) quick=1 ;;
"") ;;
-h | --help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) echo "test.sh: unknown option $1 (--quick, --help)" >&2; exit 2 ;;
esac
cores=$(nproc)
jobs=${VMM_CTEST_JOBS:-$((2 * cores))}
logs=$PWD/build/test-logs
mkdir -p "$logs"
rm -f "$logs"/*.ctest.log "$logs"/*.build.log "$logs"/fuzz.log

# The suite's budget on a host with KVM (docs/testing.md, "Budget"): the
# report compares with it and never fails a run for it (a slow host is no
# bug). Tests in the emulated machine get VMM_TEST_TIMEOUT_SCALE times as long.
BUDGET_TEST_S=90      # any one test
BUDGET_NORMAL_S=720   # the normal ctest phase
BUDGET_SUITE_S=1800   # the whole of this script (.ci/run adds install-deps.sh)

phase_names=()
phase_secs=()
phase_results=()
phase_whys=()
phase_budgets=()
declare -A log_scale # ctest log name -> the factor its tests' budget gets
why=""               # what a failed phase leaves here goes into the report

# phase NAME BUDGET COMMAND...: runs COMMAND, timed, and records its result
# (and $why on failure); never stops the suite. BUDGET is seconds or "-".
phase() {
	local name=$1 budget=$2 start=$SECONDS rc=0
	shift 2
	echo "== $name"
	why=""
	"$@" || rc=$?
	phase_names+=("$name")
	phase_secs+=($((SECONDS - start)))
	phase_budgets+=("$budget")
	if [ "$rc" = 0 ]; then
		phase_results+=(ok)
		phase_whys+=("")
	else
		phase_results+=("FAILED ($rc)")
		phase_whys+=("${why:-exit status $rc}")
	fi
}

# phase_ok NAME: whether phase NAME ran and passed.
phase_ok() {
	local i
	for i in "${!phase_names[@]}"; do
		[ "${phase_names[$i]}" != "$1" ] || [ "${phase_results[$i]}" != ok ] || return 0
	done
	return 1
}

# not_run NAME BECAUSE: records phase NAME as failed without running it.
not_run() {
	echo "== $1: not run: $2"
	phase_names+=("$1")
	phase_secs+=(0)
	phase_budgets+=(-)
	phase_results+=("NOT RUN")
	phase_whys+=("$2")
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

# ctest_log NAME DIR ARGS...: ctest in DIR, its output also in
# $logs/NAME.ctest.log; on failure $why names the tests that failed.
ctest_log() {
	local name=$1 dir=$2 rc=0
	shift 2
	log_scale[$name]=1
	if [ "$nested" = 1 ]; then
		log_scale[$name]=${VMM_TEST_TIMEOUT_SCALE:-3} # what nested-kvm.sh sets in there
		ctest_nested "$name" "$dir" "$@" || rc=$?
	else
		ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" 2>&1 |
			tee "$logs/$name.ctest.log" || true
		rc=${PIPESTATUS[0]}
	fi
	[ "$rc" = 0 ] || why=$(ctest_failures "$logs/$name.ctest.log" "$rc")
	return "$rc"
}

# ctest_failures LOG RC: one line: the tests LOG's "tests FAILED" lists, or
# ctest's last words when it names none (ctest itself failed).
ctest_failures() {
	local failed n
	failed=$(awk '/The following tests FAILED:/ { on = 1; next }
		on && /^[ \t]*[0-9]+ - / { sub(/^[ \t]*[0-9]+ - /, ""); printf "%s%s", sep, $0; sep = ", "; next }
		{ on = 0 }' "$1")
	if [ -n "$failed" ]; then
		n=$(grep -o ', ' <<<"$failed" | wc -l)
		echo "$((n + 1)) tests failed: $failed"
	else
		echo "ctest exit $2, no failed test named: $(grep -v '^[[:space:]]*$' "$1" | tail -1)"
	fi
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
			tee -a "$logs/$name.ctest.log" || true
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
	why="the emulated machine failed 3 times (exit $rc)"
	return "$rc"
}

# configure_build DIR CMAKE_ARGS...: configures and builds DIR, its output
# also in $logs/DIR.build.log; on failure $why holds the first error.
configure_build() {
	local dir=$1 log=$logs/$1.build.log rc=0
	shift
	{ cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null &&
		cmake --build "$dir" -j "$cores"; } 2>&1 | tee "$log" || true
	rc=${PIPESTATUS[0]}
	# The first error and the line after it (cmake puts its message there).
	[ "$rc" = 0 ] ||
		why="$(grep -m1 -A1 -E 'error|Error' "$log" | tr -s ' \n' ' ' ||
			tail -1 "$log")(log: ${log#"$PWD"/})"
	return "$rc"
}

# fuzz: scripts/fuzz.sh, its output also in $logs/fuzz.log; on failure $why
# names the targets that crashed and the corpus inputs that failed.
fuzz() {
	local log=$logs/fuzz.log rc=0 crashed replay
	scripts/fuzz.sh --time "${VMM_FUZZ_TIME:-30}" 2>&1 | tee "$log" || true
	rc=${PIPESTATUS[0]}
	if [ "$rc" != 0 ]; then
		crashed=$(awk '/ FAILED \(exit / { printf "%s%s", sep, $1; sep = ", " }' "$log")
		replay=$(awk '/The following tests FAILED:/ { on = 1; next }
			on && /^[ \t]*[0-9]+ - / { printf "%s%s", sep, $3; sep = ", "; next }
			{ on = 0 }' "$log")
		why="${crashed:+crashed: $crashed (build-fuzz/fuzz-artifacts/)}"
		why+="${replay:+${why:+; }corpus replay failed: $replay}"
		[ -n "$why" ] || why="$(grep -m1 -E '^fuzz(\.sh)?: ' "$log" || tail -1 "$log")"
	fi
	return "$rc"
}

# within SECONDS BUDGET: "" or a flag for the report.
within() {
	[ "$2" = - ] && return
	if [ "$1" -le "$2" ]; then echo "within ${2} s"; else echo "OVER ${2} s"; fi
}

report() {
	local rc=$? i total=0 failed=0 skipped n f name scale
	set +e
	echo
	echo "== phases (wall time; the budget is for a host with KVM, docs/testing.md)"
	printf '%-28s %8s  %-14s %s\n' phase seconds budget result
	for i in "${!phase_names[@]}"; do
		printf '%-28s %8s  %-14s %s\n' "${phase_names[$i]}" "${phase_secs[$i]}" \
			"$(within "${phase_secs[$i]}" "${phase_budgets[$i]}")" "${phase_results[$i]}"
		total=$((total + phase_secs[i]))
		[ "${phase_results[$i]}" = ok ] || failed=$((failed + 1))
	done
	if [ "$quick" = 1 ] || [ "$nested" = 1 ]; then # (the budget is for a run on KVM)
		printf '%-28s %8s\n' total "$total"
	else
		printf '%-28s %8s  %s\n' total "$total" "$(within "$total" "$BUDGET_SUITE_S")"
	fi
	# A skipped test did not pass: say how many, so a green run without
	# /dev/kvm (VMM_TESTS_NO_KVM=1) cannot pass for a full one, nor its
	# times for the budget's.
	for f in "$logs"/*.ctest.log; do
		[ -f "$f" ] || continue
		skipped=$(grep -c -- '\*\*\*Skipped' "$f")
		printf '%s: %s tests skipped%s\n' "$(basename "$f" .ctest.log)" "$skipped" \
			"$([ "$skipped" = 0 ] || echo ' (their time is not in the phase: no measure of the budget)')"
	done
	if [ "$failed" -gt 0 ]; then
		echo
		echo "== $failed phases failed"
		for i in "${!phase_names[@]}"; do
			[ "${phase_results[$i]}" = ok ] ||
				echo "${phase_names[$i]}: ${phase_results[$i]}: ${phase_whys[$i]}"
		done
	fi
	# ctest's result lines: "12/140 Test  #7: unit.test_x ....   Passed   1.23 sec"
	test_times() {
		for f in "$logs"/*.ctest.log; do
			[ -f "$f" ] || continue
			name=$(basename "$f" .ctest.log)
			scale=${log_scale[$name]:-1}
			awk -v run="$name" -v budget=$((BUDGET_TEST_S * scale)) '
				/Test +#[0-9]+: / && / sec$/ {
					t = $0; sub(/.*Test +#[0-9]+: +/, "", t); sub(/ .*/, "", t)
					printf "%10.1f  %-8s %-6s %s\n", $(NF - 1), run, \
						($(NF - 1) > budget ? "OVER" : ""), t
				}' "$f"
		done
	}
	n=$(test_times | awk '$3 == "OVER"' | wc -l)
	echo
	echo "== $n tests over the ${BUDGET_TEST_S} s budget for one test$([ "$nested" = 0 ] ||
		echo " (x${VMM_TEST_TIMEOUT_SCALE:-3} in the emulated machine)")"
	test_times | awk '$3 == "OVER"' | sort -rn
	echo
	echo "== the 15 slowest tests"
	test_times | sort -rn | head -15
	[ "$failed" = 0 ] || exit 1
	exit "$rc"
}
trap report EXIT

if [ "$quick" = 1 ]; then
	if [ "$smoke" = 1 ]; then # the quick tier is small enough for the emulated machine
		go_nested
	fi
	phase "build (build)" - configure_build build
	if phase_ok "build (build)"; then
		phase "ctest -L quick" - ctest_log quick build -L quick
	else
		not_run "ctest -L quick" "build (build) failed"
	fi
	exit 0
fi
phase "build (build)" - configure_build build -DVMM_LINUX_GUEST=ON
if phase_ok "build (build)"; then
	phase "ctest (normal)" $((BUDGET_NORMAL_S * (nested ? ${VMM_TEST_TIMEOUT_SCALE:-3} : 1))) \
		ctest_log normal build
else
	not_run "ctest (normal)" "build (build) failed"
fi
phase "build (build-asan)" - configure_build build-asan -DVMM_SANITIZE=ON -DVMM_LINUX_GUEST=ON
if phase_ok "build (build-asan)"; then
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		phase "ctest -L asan (ASan+UBSan)" - ctest_log asan build-asan -L asan
else
	not_run "ctest -L asan (ASan+UBSan)" "build (build-asan) failed"
fi
phase "fuzz" - fuzz
if [ "$smoke" = 1 ]; then
	go_nested
	if phase_ok "build (build)"; then
		phase "ctest smoke (emulated KVM)" - ctest_log smoke build -L 'quick|linux' -LE lint
	else
		not_run "ctest smoke (emulated KVM)" "build (build) failed"
	fi
fi
