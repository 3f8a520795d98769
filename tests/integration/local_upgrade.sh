#!/usr/bin/env bash
# Local live upgrade (issue 22): `vmm migrate --local --to unix:PATH` hands a
# running VM to a new vmm on this host. Guest RAM is a memfd ([vm]
# memory_backend = memfd), passed with SCM_RIGHTS: no page is copied, only
# the device and vCPU state cross the socket, and the switchover is the
# migration's commit.
#
# local_upgrade.sh [N [hog]]: a dirtying guest is upgraded N times in a row
# (default 20), each time into a fresh `vmm run --incoming unix:PATH`. After
# each one the old process has exited 0 ("migrated to unix:PATH"), the guest
# verifies its memory in the new one (a pass of the dirty workload checks
# every page it rewrites), and the new process's fd, thread and RSS counts
# are taken: they must stay flat from the first generation to the last.
# With "hog", a busy loop runs on every CPU throughout (a loaded host).
# First, the refusals: --local to host:port, --local of a VM whose RAM is
# anonymous, each with a clear error and the VM running on.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
N=${1:-20}
HOG=${2:-}
name=upvm
# Slack for the flat counts: RSS may wobble with malloc's arenas (not by a
# leak of a generation's worth of buffers); fds and threads must be equal,
# bar the API client that may be connected while they are read.
RSS_SLACK_KB=$((32 * 1024))

if [ "$HOG" = hog ]; then
	for ((c = 0; c < $(nproc); c++)); do
		bash -c 'while :; do :; done' &
		PIDS+=($!)
	done
	echo "a busy loop on each of $(nproc) CPUs"
fi

# --- Refusals ----------------------------------------------------------------
# A VM with anonymous RAM cannot hand it over.
start_vm anon run "$EXAMPLES/idle.cfg" --set vm.name=anonvm
wait_line anon.out "vmm-firmware: idle" 60
run_vmm 30 migrate --vm anonvm --to "unix:$WORK/nobody.sock" --local
[ "$status" != 0 ] || fail "--local of a VM with anonymous RAM succeeded"
expect_line err "memory_backend = memfd"
# --local needs a vmm on this host.
run_vmm 30 migrate --vm anonvm --to 127.0.0.1:1 --local
[ "$status" != 0 ] || fail "--local to host:port succeeded"
expect_line err "unix:PATH"
kill -0 "$anon_pid" 2>/dev/null || fail "the VM exited after a refused --local"
run_vmm 30 stop --vm anonvm
wait_exit "$anon_pid" 30

# --- The chain ---------------------------------------------------------------
start_vm g0 run "$EXAMPLES/dirty.cfg" --set vm.name=$name --set vm.memory=512M \
	--set vm.memory_backend=memfd --set workload.working_set=32M --set workload.passes=0 \
	--set workload.heartbeat_ms=0
wait_line g0.out "dirty pass [0-9]+ ok" 60

counts() {
	local pid=$1
	printf '%s %s %s' "$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" \
		"$(find "/proc/$pid/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" \
		"$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")"
}

prev=g0
prev_pid=$g0_pid
first=""
printf '%-4s %8s %6s %8s %10s\n' gen fds threads rss_kib downtime_us >"$WORK/table"
for ((i = 1; i <= N; i++)); do
	sock="$WORK/up-$i.sock"
	start_vm g$i run --incoming "unix:$sock"
	pid_var="g${i}_pid"
	pid=${!pid_var}
	wait_line g$i.err "waiting for an incoming migration on unix:" 30
	[ -S "$sock" ] || fail "generation $i: no socket at $sock"
	run_vmm 120 migrate --vm $name --to "unix:$sock" --local --json
	expect_status 0
	"$HARNESS" json "$WORK/out" state >"$WORK/state" || fail "generation $i: no state"
	[ "$(cat "$WORK/state")" = completed ] ||
		fail "generation $i: the upgrade ended $(cat "$WORK/state")"
	down=$("$HARNESS" json "$WORK/out" downtime_us)
	sent=$("$HARNESS" json "$WORK/out" pages_sent)
	[ "$sent" = 0 ] || fail "generation $i: $sent pages were copied (a local upgrade copies none)"
	# The old process leaves with 0, saying where the VM went.
	wait_exit "$prev_pid" 30
	expect_status 0
	expect_line $prev.err "migrated to unix:$sock"
	# The guest runs on in the new process and verifies what it rewrites.
	expect_progress g$i.out 1 120
	reject_line g$i.out "CORRUPTION"
	# The new process takes the VM's API socket over from the old one.
	wait_gone "$VMM_RUN_DIR/$name.sock.incoming" ||
		fail "generation $i kept $name.sock.incoming"
	run_vmm 30 status --vm $name
	expect_status 0
	# The socket file went with the listener once the upgrade was settled.
	for ((w = 0; w < 100 * scale; w++)); do
		[ -e "$sock" ] || break
		sleep 0.1
	done
	[ ! -e "$sock" ] || fail "generation $i left its socket file $sock"
	# Two readings a second apart that agree: the settled process.
	c1=""
	for ((w = 0; w < 20; w++)); do
		c2=$(counts "$pid")
		[ "${c1% *}" = "${c2% *}" ] && break
		c1=$c2
		sleep 1
	done
	read -r f t r <<<"$c2"
	printf '%-4s %8s %6s %8s %10s\n' "$i" "$f" "$t" "$r" "$down" >>"$WORK/table"
	[ -n "$first" ] || first="$f $t $r"
	prev=g$i
	prev_pid=$pid
done
cat "$WORK/table"

read -r f1 t1 r1 <<<"$first"
read -r fN tN rN <<<"$(tail -1 "$WORK/table" | awk '{ print $2, $3, $4 }')"
[ "$fN" -le "$f1" ] || fail "fds grew from $f1 (generation 1) to $fN (generation $N)"
[ "$tN" -le "$t1" ] || fail "threads grew from $t1 (generation 1) to $tN (generation $N)"
[ "$rN" -le $((r1 + RSS_SLACK_KB)) ] ||
	fail "RSS grew from $r1 KiB (generation 1) to $rN KiB (generation $N)"

kill -TERM "$prev_pid"
wait_exit "$prev_pid" 30
echo PASS
