#!/usr/bin/env bash
# Migration over TLS 1.3 with mutual X.509 authentication ([migration]
# tls_cert/tls_key/tls_ca on both sides). Case:
#   ok        the dirty guest migrates over TLS and verifies on the target
#   postcopy  the same through a postcopy switchover (page requests and the
#             push share TLS connections with their readers)
#   plain     a source without TLS is refused by a TLS target; the VM stays
#   wrong-ca  a source whose certificate another CA signed is refused
#   untrusted-target  the source does not trust the target's certificate:
#             each side says who rejected whom
#   bad-files a missing key file is a clear error before anything connects
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1
port=$(test_port)
pki=$WORK/pki
mkdir -p "$pki"

ca() { pki_ca "$pki" "$1"; }
cert() { pki_cert "$pki" "$@"; }
ca ca
ca other-ca
cert ca target "IP:127.0.0.1"
cert ca source "DNS:source.test"
cert other-ca intruder "DNS:intruder.test"
tls() { # OPTION NAME CA: options for a side using NAME's certificate
	echo "$1" "migration.tls_cert=$pki/$2.pem" "$1" "migration.tls_key=$pki/$2.key" \
		"$1" "migration.tls_ca=$pki/$3.pem"
}

# A migration that must succeed is the harness's common scenario, over TLS.
if [ "$case" = ok ] || [ "$case" = postcopy ]; then
	mode=auto
	[ "$case" = postcopy ] && mode=postcopy
	used=precopy
	[ "$case" = postcopy ] && used=postcopy
	# ok: auto stays precopy because precopy converges, which this sets
	# (docs/testing.md, "Premises"): the guest dirties 4096 pages/s, far
	# fewer than any host's vmm sends. The guest runs until stopped: it
	# verifies 3 passes on the target, however long the migration took.
	# shellcheck disable=SC2046 # word splitting of the --set options is intended
	harness_migrate --name tlsvm --config "$EXAMPLES/dirty.cfg" --set vm.memory=1G \
		--set vm.vcpus=2 --set workload.working_set=16M --set workload.dirty_rate=4096 \
		--set workload.passes=0 --set workload.heartbeat_ms=0 $(tls --set source ca) \
		$(tls --target-set target ca) --ready "dirty pass [0-9]+ ok" --migrate-timeout 120 \
		--expect state=completed --expect "mode_used=$used" \
		--target-done "dirty pass [0-9]+ ok" --target-lines 3 \
		-- --json --mode "$mode"
	echo PASS
	exit 0
fi

# Refusals: endless, since the VM stays on the source.
src_tls=$(tls --set source ca)
[ "$case" = plain ] && src_tls=
[ "$case" = wrong-ca ] && src_tls=$(tls --set intruder ca)
[ "$case" = untrusted-target ] && src_tls=$(tls --set source other-ca)
# shellcheck disable=SC2086 # word splitting of the --set options is intended
start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=tlsvm --set vm.memory=1G \
	--set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=0 \
	--set workload.heartbeat_ms=0 $src_tls
wait_line src.out "dirty pass [0-9]+ ok" 60

if [ "$case" = bad-files ]; then
	run_vmm 10 run --incoming "127.0.0.1:$port" --set "migration.tls_cert=$pki/target.pem" \
		--set "migration.tls_key=$pki/missing.key" --set "migration.tls_ca=$pki/ca.pem"
	expect_status 1
	expect_line err "missing.key"
	[ -z "$(ss -Hltn "sport = :$port")" ] || fail "the target listened with unusable key files"
	kill -TERM "$src_pid"
	wait_exit "$src_pid" 10
	echo PASS
	exit 0
fi

# shellcheck disable=SC2046
start_vm dst run --incoming "127.0.0.1:$port" $(tls --set target ca)
wait_listen "$port"
run_vmm 60 migrate --to "127.0.0.1:$port" --vm tlsvm
expect_status 1
case $case in
plain) expect_line err "TLS|the target|connection" ;;
wrong-ca) expect_line err "the target rejected this source's certificate" ;;
untrusted-target) expect_line err "this source rejected the target's certificate" ;;
*) fail "unknown case $case" ;;
esac
# The target refused that peer on its own and waits on for a real source.
case $case in
plain) wait_line dst.err "refused 127\.0\.0\.1:[0-9]+: TLS: not authenticated" 30 ;;
wrong-ca) wait_line dst.err "refused 127\.0\.0\.1:[0-9]+: TLS: not authenticated: this target rejected the source's certificate" 30 ;;
untrusted-target) wait_line dst.err "refused 127\.0\.0\.1:[0-9]+: TLS: the source rejected this target's certificate" 30 ;;
esac
kill -0 "$dst_pid" 2>/dev/null || fail "the target exited after refusing the source"
[ -n "$(ss -Hltn "sport = :$port")" ] || fail "the target stopped listening"
kill -TERM "$dst_pid"
wait_exit "$dst_pid" 30
# The source VM runs on, verifying its memory.
kill -0 "$src_pid" || fail "the source VM exited"
expect_progress src.out 3
kill -TERM "$src_pid"
wait_exit "$src_pid" 10
expect_status 143
reject_line src.out "CORRUPTION"
echo PASS
