#!/usr/bin/env bash
# Who binds a migrating VM's devices (issue 36, finding 3): the target's
# operator, never the stream. A description whose config names a disk or a
# tap (fake_source desc:...) reaches a target that binds none: it refuses
# the VM before it exists, naming the device and the options that bind it
# (--set disk.path / net.tap, [migration] allow_disk_dirs / allow_taps),
# opens nothing, and keeps waiting. A target with allow-lists refuses a
# path outside its directories (or one with '..' in it) and a tap no
# pattern matches. Admission comes before the VM exists: no /dev/kvm
# needed. The accepting side is devices.sh bind (a guest on the disk).
set -eu
. "$(dirname "$0")/lib.sh"

victim="$WORK/victim.img"
head -c 65536 /dev/urandom >"$victim"
sum=$(sha256sum <"$victim")

# refused DST CASE REGEX: the waiting target DST refuses the description.
refused() {
	local dst=$1 port_var="${1}_port" pid_var="${1}_pid" before
	before=$(count_lines "$dst.err" "refused 127\.0\.0\.1:[0-9]+: .*$3")
	timeout --signal=KILL 60 "$FAKE_SOURCE" "127.0.0.1:${!port_var}" "desc:$2" >"$WORK/fake.out" ||
		{ cat "$WORK/fake.out"; fail "$2: fake_source got no ERROR from the target"; }
	expect_line fake.out "target says: .*$3"
	"$HARNESS" wait-line "$WORK/$dst.err" "refused 127\.0\.0\.1:[0-9]+: .*$3" 30 $((before + 1)) ||
		fail "$2: the target did not print the refusal"
	kill -0 "${!pid_var}" 2>/dev/null || fail "$2: the target exited"
	[ "$(sha256sum <"$victim")" = "$sum" ] || fail "$2: the file the stream named was written"
	echo "ok: $dst $2: $(grep -o 'target says: .*' "$WORK/fake.out")"
}

bare_port=$(test_port)
start_vm bare run --incoming "127.0.0.1:$bare_port"
wait_listen "$bare_port" "$bare_pid"
refused bare "disk.path=$victim" \
	"binds no file to the VM's disk: start it with --set disk.path=PATH or allow the source's with \[migration\] allow_disk_dirs \(the source's \[disk\] path: '$victim'\)"
refused bare "net.tap=vmmtap0" \
	"binds no tap to the VM's network device: start it with --set net.tap=NAME or allow the source's with \[migration\] allow_taps \(the source's \[net\] tap: 'vmmtap0'\)"
refused bare "disk.path=$victim;disk.readonly=true" "binds no file to the VM's disk"

kill -TERM "$bare_pid"
wait_exit "$bare_pid" 30

mkdir -p "$WORK/allowed"
pol_port=$(test_port)
start_vm pol run --incoming "127.0.0.1:$pol_port" --set migration.allow_disk_dirs="$WORK/allowed" \
	--set "migration.allow_taps=vm-*,tap[0-3]"
wait_listen "$pol_port" "$pol_pid"
refused pol "disk.path=$victim" \
	"the VM's disk is outside \[migration\] allow_disk_dirs: start the target with --set disk.path=PATH or allow its directory"
refused pol "disk.path=$WORK/allowed/../victim.img" \
	"cannot be allowed by \[migration\] allow_disk_dirs: start the target with --set disk.path=PATH \(.*'\.', '\.\.' or '//'"
refused pol "disk.path=$WORK/allowedX/disk.img" "outside \[migration\] allow_disk_dirs"
refused pol "net.tap=tap7" \
	"the VM's tap matches nothing in \[migration\] allow_taps: start the target with --set net.tap=NAME"
# An allowed disk, a tap no pattern matches: the whole VM is refused.
refused pol "disk.path=$WORK/allowed/d.img;net.tap=eth0" "matches nothing in \[migration\] allow_taps"

# A bad policy is the config's error: exit 2, one line.
run_vmm 10 run --incoming "127.0.0.1:$(test_port)" --set migration.allow_disk_dirs=relative
expect_status 2
expect_line err "\[migration\] allow_disk_dirs: 'relative' is not an absolute directory"
echo PASS
