#!/usr/bin/env bash
# Helpers for the integration tests. Sourced; expects $VMM (the vmm binary),
# $HARNESS (the vmm-harness binary, tests/harness/) and $WORK (a scratch
# directory) to be set by the caller, as ctest does.
#
# The two-process migration itself (start a source and a target, migrate,
# check the guest's verification) is vmm-harness's: harness_migrate below.
# The waits here call it too, so a line, a port or a listener is waited for
# in one way everywhere, with a bounded timeout.
set -u
# Each run of a test starts with an empty work directory (ctest's
# work-NAME): a file an earlier run left there, such as linux_devices'
# probe.stop or an old VM's log, must not pass for this run's. Once per
# test: a script that runs itself again (in a network namespace) keeps it.
if [ "${INTEGRATION_WORK_FRESH:-}" != "$WORK" ]; then
	case ${WORK##*/} in work-*) rm -rf "$WORK" ;; esac
	export INTEGRATION_WORK_FRESH=$WORK
fi
mkdir -p "$WORK"
: "${HARNESS:?set HARNESS to the vmm-harness binary (build/tests/harness/vmm-harness)}"

# On failure, show the tail of every background VM's logs too: a migration
# that fails on one side is usually explained by the other side's stderr.
fail() {
	local f
	for f in "$WORK"/*.out "$WORK"/*.err; do
		[ -f "$f" ] || continue
		case "$(basename "$f")" in out | err) continue ;; esac
		echo "--- $(basename "$f")"
		tail -15 "$f"
	done
	echo "FAIL: $*" >&2
	exit 1
}

# Tests that boot guests must fail, not skip, without /dev/kvm, unless the
# builder explicitly opts out (e.g. a container build with no KVM).
require_kvm() {
	if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		if [ "${VMM_TESTS_NO_KVM:-0}" = 1 ]; then
			echo "SKIP: /dev/kvm not usable and VMM_TESTS_NO_KVM=1"
			exit 77
		fi
		fail "/dev/kvm is missing or not accessible (set VMM_TESTS_NO_KVM=1 to skip guest tests)"
	fi
}

# Every timeout here and in vmm-harness is multiplied by
# VMM_TEST_TIMEOUT_SCALE (an integer, default 1), which the emulated machine
# of scripts/nested-kvm.sh sets: everything runs slower there.
scale=${VMM_TEST_TIMEOUT_SCALE:-1}

# run_vmm TIMEOUT ARGS...: runs vmm, stdout to $WORK/out, stderr to $WORK/err,
# exit status in $status.
run_vmm() {
	local t=$(($1 * scale))
	shift
	set +e
	timeout --signal=KILL "$t" "$VMM" "$@" </dev/null >"$WORK/out" 2>"$WORK/err"
	status=$?
	set -e
	if [ "$status" = 137 ]; then
		echo "--- stdout"; tail -20 "$WORK/out"; echo "--- stderr"; tail -20 "$WORK/err"
		fail "vmm $* did not finish within $t s"
	fi
}

expect_status() {
	if [ "$status" != "$1" ]; then
		echo "--- stdout"; tail -20 "$WORK/out"; echo "--- stderr"; tail -20 "$WORK/err"
		fail "expected exit status $1, got $status"
	fi
}

# expect_line FILE REGEX: some line of $WORK/FILE matches the extended regex.
expect_line() {
	if ! grep -Eq -- "$2" "$WORK/$1"; then
		echo "--- $1"; tail -30 "$WORK/$1"
		fail "no line of $1 matches /$2/"
	fi
}

reject_line() {
	if grep -Eq -- "$2" "$WORK/$1"; then
		echo "--- $1"; tail -30 "$WORK/$1"
		fail "a line of $1 matches /$2/"
	fi
}

# wait_line FILE REGEX SECONDS: waits until a line of $WORK/FILE matches.
wait_line() {
	if ! "$HARNESS" wait-line "$WORK/$1" "$2" "$3"; then
		echo "--- $1"; tail -20 "$WORK/$1" 2>/dev/null
		fail "no line of $1 matched /$2/ within $3 s"
	fi
}

# Count of lines of $WORK/FILE matching REGEX.
count_lines() {
	grep -Ec -- "$2" "$WORK/$1" 2>/dev/null || true
}

# expect_progress FILE N [SECONDS]: the dirty guest logging to $WORK/FILE
# completes N more passes within SECONDS (default 60), counting lines, not
# pass numbers: the guest may skip a line, and a migration renumbers nothing.
# Each pass verifies every page it rewrites.
expect_progress() {
	local before
	before=$(count_lines "$1" 'dirty pass [0-9]+ ok')
	"$HARNESS" wait-line "$WORK/$1" 'dirty pass [0-9]+ ok' "${3:-60}" $((before + $2)) ||
		fail "the guest of $1 stopped making progress"
}

# Every VM of a test gets its API socket under $WORK, so tests never collide.
export VMM_RUN_DIR="$WORK/run"
mkdir -p "$VMM_RUN_DIR"

PIDS=()
cleanup_pids() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup_pids EXIT

# start_vm NAME ARGS...: `vmm ARGS` in the background, output in $WORK/NAME.out/.err;
# the pid lands in the variable named NAME_pid.
start_vm() {
	local name=$1
	shift
	# Empty the files before the child starts: truncating them in the
	# background child races with a wait_line that would read a previous
	# run's output.
	: >"$WORK/$name.out"
	: >"$WORK/$name.err"
	"$VMM" "$@" </dev/null >>"$WORK/$name.out" 2>>"$WORK/$name.err" &
	PIDS+=($!)
	printf -v "${name}_pid" '%s' "$!"
}

# wait_exit PID SECONDS: waits for a background process; its status in $status.
wait_exit() {
	local i
	for ((i = 0; i < $2 * 10 * scale; i++)); do
		if ! kill -0 "$1" 2>/dev/null; then
			set +e
			wait "$1"
			status=$?
			set -e
			return 0
		fi
		sleep 0.1
	done
	fail "process $1 did not exit within $2 s"
}

# A TCP port nothing listens on now, for this test's target.
test_port() {
	"$HARNESS" port
}

# wait_listen PORT [PID]: waits until something (process PID) listens on the
# TCP port (a target started with --incoming), without connecting to it.
wait_listen() {
	"$HARNESS" wait-listen "$1" 10 ${2:+"$2"} || fail "nothing listens on port $1"
}

# harness_migrate OPTIONS [-- VMM-MIGRATE-ARGS]: the common scenario, run by
# `vmm-harness migrate` (see its --help): a source and a target VM, `vmm
# migrate`, its summary, the source's exit and the target's guest verified.
# Its files are this test's: src.out/.err, dst.out/.err, mig.out/.err.
harness_migrate() {
	"$HARNESS" migrate --vmm "$VMM" --dir "$WORK" "$@" || fail "vmm-harness migrate $*"
}

# summary KEY: a field of the JSON summary of the last harness_migrate.
summary() {
	"$HARNESS" json "$WORK/mig.out" "$1" || fail "no $1 in the migration summary"
}

# start_dirty_pair NAME PORT [SRC_ENV] [DST_ENV]: a source VM named NAME
# running the dirty guest (512M, a 32M working set, forever, then the
# --set options in the array dirty_args, if any), once it has verified its
# first pass, and a target waiting on 127.0.0.1:PORT. Each may get one
# VAR=VALUE in its environment (a test hook: it must be the VMM's own).
# Files src.out/.err, dst.out/.err; pids in src_pid and dst_pid.
dirty_args=()
start_dirty_pair() {
	local name=$1 port=$2 senv=${3:-VMM_TEST_UNSET=} denv=${4:-VMM_TEST_UNSET=}
	: >"$WORK/src.out"
	: >"$WORK/src.err"
	env "$senv" "$VMM" run "$EXAMPLES/dirty.cfg" --set vm.name="$name" --set vm.memory=512M \
		--set workload.working_set=32M --set workload.passes=0 --set workload.heartbeat_ms=0 \
		${dirty_args[@]+"${dirty_args[@]}"} </dev/null >>"$WORK/src.out" 2>>"$WORK/src.err" &
	src_pid=$!
	PIDS+=("$src_pid")
	wait_line src.out "dirty pass [0-9]+ ok" 60
	: >"$WORK/dst.out"
	: >"$WORK/dst.err"
	env "$denv" "$VMM" run --incoming "127.0.0.1:$port" </dev/null >>"$WORK/dst.out" \
		2>>"$WORK/dst.err" &
	dst_pid=$!
	PIDS+=("$dst_pid")
	wait_listen "$port" "$dst_pid"
}

# start_proxy TARGET_PORT [recproxy.py options]: tests/integration/recproxy.py
# between a source and the target on TARGET_PORT (plain TCP). Sets pport
# (where the source migrates to) and proxy_pid; its lines go to
# $WORK/proxy.out ("hello ROLE SESSION", "dropped NAME on ROLE").
start_proxy() {
	local target=$1
	shift
	pport=$(test_port)
	# Emptied here, not by the child's redirection: that races with the
	# wait below, which would find a previous run's "listening".
	: >"$WORK/proxy.out"
	python3 "$(dirname "${BASH_SOURCE[0]}")/recproxy.py" "$pport" "$target" "$@" \
		>>"$WORK/proxy.out" 2>&1 &
	proxy_pid=$!
	PIDS+=("$proxy_pid")
	"$HARNESS" wait-line "$WORK/proxy.out" "^listening $pport\$" 30 ||
		fail "the proxy did not start"
}

# wait_gone PATH: up to 30 s for PATH to go (a target leaving its temporary API path).
wait_gone() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ -e "$1" ] || return 0
		sleep 0.1
	done
	return 1
}

# Test certificates (EC P-256, valid 2 days) for the TLS tests, in DIR:
# pki_ca DIR NAME makes a self-signed CA DIR/NAME.{pem,key};
# pki_cert DIR CA NAME SAN makes DIR/NAME.{pem,key} signed by CA, whose
# subjectAltName is SAN (e.g. IP:127.0.0.1 or DNS:source.test).
pki_ca() {
	mkdir -p "$1"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=$2" -keyout "$1/$2.key" -out "$1/$2.pem" 2>/dev/null
}
# tls_set_args VAR DIR SIDE: VAR=(--set migration.tls_* ...) for SIDE's
# certificate and key in DIR (pki_cert) and DIR/ca.pem.
tls_set_args() {
	local -n _args=$1
	_args=(--set "migration.tls_cert=$2/$3.pem" --set "migration.tls_key=$2/$3.key"
		--set "migration.tls_ca=$2/ca.pem")
}
pki_cert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$3" \
		-keyout "$1/$3.key" -out "$1/$3.csr" 2>/dev/null
	printf 'subjectAltName=%s\n' "$4" >"$1/$3.ext"
	openssl x509 -req -in "$1/$3.csr" -CA "$1/$2.pem" -CAkey "$1/$2.key" \
		-CAcreateserial -days 2 -extfile "$1/$3.ext" -out "$1/$3.pem" 2>/dev/null
}

# bridge_with_taps NS ADDR/PREFIX TAP...: in network namespace NS (made
# here; the caller deletes it), loopback up, a bridge br0 with ADDR and one
# tap per name, each a port of it: a test LAN for VMs with [net] tap.
bridge_with_taps() {
	local ns=$1 addr=$2 t
	shift 2
	ip netns add "$ns" || fail "cannot create a network namespace (needs root and iproute2)"
	ip -n "$ns" link set lo up
	ip -n "$ns" link add br0 type bridge
	ip -n "$ns" addr add "$addr" dev br0
	ip -n "$ns" link set br0 up
	for t in "$@"; do
		ip -n "$ns" tuntap add dev "$t" mode tap
		ip -n "$ns" link set "$t" master br0
		ip -n "$ns" link set "$t" up
	done
}
