#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, a clang build of its own in
# build-fuzz) and runs each for a bounded time, one after the other:
#   scripts/fuzz.sh                      30 s per target (what CI runs)
#   scripts/fuzz.sh --time 3600          an hour per target
#   scripts/fuzz.sh --time 600 fuzz_elf  only the named targets
#   scripts/fuzz.sh --time 0             build and replay the corpora only
# First the committed seeds are checked against what fuzz_seeds writes now
# (the encoders' output), then every target replays its committed corpus and
# regression inputs (ctest -L fuzz), then fuzzes. One line per target: its result, executions,
# execs/s, coverage (cov: edges, ft: features) and corpus size.
# Exit status 1 if a seed is stale, a committed input fails, or any target
# crashed, leaked, timed out or ran out of memory (every step runs all the
# same); the input that did it is left in build-fuzz/fuzz-artifacts/<target>/
# (crash-*, leak-*, timeout-*, oom-*); the full log next to it (log).
# Inputs that found new coverage accumulate in build-fuzz/fuzz-corpus/<target>/
# (kept between runs, never committed automatically; see tests/fuzz/README.md).
# FUZZ_FLAGS adds libFuzzer options, e.g. FUZZ_FLAGS=-use_value_profile=1;
# FUZZ_CC picks the compiler (default clang-14, else clang).
set -eu
cd "$(dirname "$0")/.."
time_per=30
build=build-fuzz
targets=()
while [ $# -gt 0 ]; do
	case $1 in
	--time) time_per=$2; shift 2 ;;
	--build-dir) build=$2; shift 2 ;;
	-h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
	*) targets+=("$1"); shift ;;
	esac
done
all=(fuzz_wire_target fuzz_wire_source fuzz_state fuzz_config fuzz_elf fuzz_api fuzz_virtq fuzz_snapshot
	fuzz_virtio_mmio)
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

# The largest input each target takes: a few records of a stream (the
# socketpair holds it whole), a state blob, a config, the firmware image,
# a virtqueue's knobs and guest memory (rings of 256 entries and some buffers),
# a snapshot state file, 255 virtio-mmio accesses and a little guest memory.
max_len() {
	case $1 in
	fuzz_wire_target) echo 65536 ;;
	fuzz_wire_source) echo 16384 ;;
	fuzz_state) echo 16384 ;;
	fuzz_config) echo 8192 ;;
	fuzz_elf) echo 65536 ;;
	fuzz_api) echo 8192 ;;
	fuzz_virtq) echo 16384 ;;
	fuzz_snapshot) echo 16384 ;;
	fuzz_virtio_mmio) echo 8192 ;;
	*) echo "fuzz.sh: unknown target $1" >&2; exit 2 ;;
	esac
}
for t in "${targets[@]}"; do max_len "$t" >/dev/null; done

cc=${FUZZ_CC:-}
if [ -z "$cc" ]; then
	for c in clang-14 clang; do
		if command -v "$c" >/dev/null; then cc=$c; break; fi
	done
fi
[ -n "$cc" ] || { echo "fuzz.sh: clang not found (scripts/install-deps.sh installs clang-14)" >&2; exit 2; }
echo "== fuzz: build ($cc, $build)"
configure() {
	cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="$cc" \
		-DVMM_FUZZ=ON >/dev/null
}
configure
# A change of compiler makes cmake drop the cache, and the -D options with it: again.
grep -q '^VMM_FUZZ:BOOL=ON' "$build/CMakeCache.txt" || configure
cmake --build "$build" -j "$(nproc)" --target fuzz_all fuzz_seeds >/dev/null

# Each step runs whatever the one before found (a stale seed does not hide a
# crash), and the exit status says whether any found something.
failed=0
# The committed seeds are what the encoders write today (tests/fuzz/README.md).
seeds=$(mktemp -d)
"$build/tests/fuzz/fuzz_seeds" "$seeds"
for f in "$seeds"/*/*; do
	committed=tests/fuzz/corpus/${f#"$seeds"/}
	if ! cmp -s "$f" "$committed"; then
		echo "fuzz: $committed is not what fuzz_seeds writes now: rerun" \
			"$build/tests/fuzz/fuzz_seeds tests/fuzz/corpus and commit it" >&2
		failed=1
		break
	fi
done
rm -rf "$seeds"

echo "== fuzz: replay the committed corpora"
if ! ctest --test-dir "$build" -L fuzz --output-on-failure -j 1; then
	echo "fuzz: a committed corpus or regression input fails (see above)" >&2
	failed=1
fi

[ "$time_per" -gt 0 ] || exit $failed

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "== fuzz: ${time_per} s per target"
for t in "${targets[@]}"; do
	work=$build/fuzz-corpus/$t
	art=$build/fuzz-artifacts/$t
	mkdir -p "$work" "$art"
	dirs=("$work" tests/fuzz/corpus/$t)
	[ -d tests/fuzz/regress/$t ] && dirs+=(tests/fuzz/regress/$t)
	log=$art/log
	touch "$art/.start"
	rc=0
	# New inputs go into the first directory only: the committed ones stay as they are.
	"$build/tests/fuzz/$t" -max_total_time="$time_per" -max_len="$(max_len "$t")" \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$art/" ${FUZZ_FLAGS:-} "${dirs[@]}" >"$log" 2>&1 || rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$last")
	# This run's artifacts only: older ones stay in the directory for inspection.
	found=$(find "$art" -maxdepth 1 -newer "$art/.start" \
		\( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) \
		-printf '%p ' || true)
	if [ "$rc" -eq 0 ]; then
		printf '%-18s ok     %9s runs %7s exec/s  cov: %-5s ft: %-6s corpus %s\n' \
			"$t" "${runs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}"
	else
		failed=1
		printf '%-18s FAILED (exit %s) after %s runs: %s(log %s)\n' "$t" "$rc" "${runs:-?}" \
			"${found:-no artifact }" "$log"
		grep -m1 -E 'ERROR: |runtime error|SUMMARY' "$log" | sed 's/^/    /' || true
	fi
done
exit $failed
