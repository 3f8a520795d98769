#!/usr/bin/env bash
# scripts/container-test.sh - build the vmm image and migrate a dirtying
# guest between two containers on a private network, precopy and then
# postcopy, checking that the guest goes on verifying on each target.
#
#   container A (src)  --precopy-->  container B (dst1)  --postcopy-->  container C (dst2)
#
# `vmm migrate` runs in a separate, short-lived client container that mounts
# the run directory volume (/run/vmm, the API socket) of the VM it drives:
# so it lives in another pid namespace than the VMM (completion must come
# through the API, not a process id) and is not killed when the source's
# container stops with its VMM.
#
# Not part of ctest/CI: it needs podman (or docker), /dev/kvm, root and a
# few minutes (the first run builds a Debian base image with debootstrap
# when no registry is reachable: ~4 minutes, cached).
#
# Environment overrides (defaults are detected):
#   VMM_ENGINE              podman | docker (default: podman if installed)
#   VMM_ENGINE_FLAGS        global engine flags (podman default, when runc is
#                           installed: --runtime runc --cgroup-manager cgroupfs;
#                           crun fails on a cgroup v1 "hybrid" host)
#   VMM_RUN_FLAGS           extra `run` flags (default:
#                           --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
#   VMM_IMAGE               image tag to build (default localhost/vmm:test)
#   VMM_BASE_CACHE          debootstrap cache (default ~/.cache/vmm-container)
#   VMM_DEBIAN_MIRROR       default http://deb.debian.org/debian
#   VMM_SKIP_BUILD=1        use an already built $VMM_IMAGE
#   VMM_PHASES              "precopy postcopy" (default), or one of them
# Exit status: 0 when every phase passed, 1 on a failure (the reason on the
# last line), 2 when a host facility is missing (named).
# shellcheck disable=SC2086 # the engine and run flag lists are word lists
set -euo pipefail
cd "$(dirname "$0")/.."

ENGINE=${VMM_ENGINE:-}
IMAGE=${VMM_IMAGE:-localhost/vmm:test}
CACHE=${VMM_BASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmm-container}
MIRROR=${VMM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PHASES=${VMM_PHASES:-precopy postcopy}
PORT=7000
P=vmm-ct-$$ # every container, volume and network of this run
NET=$P-net
LOGS=$(mktemp -d /tmp/vmm-container-test.XXXXXX)
T0=$(date +%s)

say() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*"; }
missing() {
	say "MISSING: $*"
	exit 2
}

# ---- the engine and its flags ------------------------------------------
if [ -z "$ENGINE" ]; then
	if command -v podman >/dev/null; then
		ENGINE=podman
	elif command -v docker >/dev/null; then
		ENGINE=docker
	else
		missing "neither podman nor docker is installed (Debian: apt-get install -y podman buildah runc)"
	fi
fi
command -v "$ENGINE" >/dev/null || missing "$ENGINE is not installed"
if [ -z "${VMM_ENGINE_FLAGS+x}" ]; then
	VMM_ENGINE_FLAGS=
	if [ "$ENGINE" = podman ] && command -v runc >/dev/null; then
		VMM_ENGINE_FLAGS="--runtime runc --cgroup-manager cgroupfs"
	fi
fi
RUN_FLAGS=${VMM_RUN_FLAGS:---ulimit nofile=4096:4096 --ulimit nproc=4096:4096}
eng() { "$ENGINE" $VMM_ENGINE_FLAGS "$@"; }
"$ENGINE" $VMM_ENGINE_FLAGS info >/dev/null 2>&1 || missing "'$ENGINE info' fails (no daemon, or no permission)"
[ "$(id -u)" = 0 ] || missing "run as root: the containers need /dev/kvm and a rootful network"
[ -c /dev/kvm ] || missing "/dev/kvm (KVM) is not available on this host"
# podman runs HEALTHCHECKs from systemd timers; without systemd it logs two
# errors per container: the script then runs the image's check itself.
HEALTH_FLAGS=
if [ "$ENGINE" = podman ] && [ ! -S /run/systemd/private ]; then
	HEALTH_FLAGS="--no-healthcheck"
fi
UFFD_DEV=
if [ -c /dev/userfaultfd ]; then
	UFFD_DEV="--device /dev/userfaultfd"
fi
say "engine: $ENGINE $VMM_ENGINE_FLAGS; run flags: $RUN_FLAGS; logs in $LOGS"

# ---- cleanup: everything of $P, whatever happened -----------------------
CONTAINERS=()
VOLUMES=()
cleanup() {
	local c v
	for c in "${CONTAINERS[@]}"; do
		eng logs "$c" >"$LOGS/$c.log" 2>&1 || true
		eng rm -f "$c" >/dev/null 2>&1 || true
	done
	for v in "${VOLUMES[@]}"; do eng volume rm -f "$v" >/dev/null 2>&1 || true; done
	eng network rm -f "$NET" >/dev/null 2>&1 || true
}
trap cleanup EXIT
fail() {
	local c
	for c in "${CONTAINERS[@]}"; do
		echo "--- logs of $c (last 15 lines)"
		eng logs "$c" 2>&1 | tail -15 || true
	done
	say "FAIL: $*"
	exit 1
}

# ---- the base images: a registry, else debootstrap -----------------------
have_image() { eng image inspect "$1" >/dev/null 2>&1; }
base_images() {
	if have_image debian:12 && have_image debian:12-slim; then
		say "base images debian:12 and debian:12-slim are present"
		return
	fi
	if timeout 30 "$ENGINE" $VMM_ENGINE_FLAGS pull docker.io/library/debian:12 >/dev/null 2>&1 &&
		timeout 30 "$ENGINE" $VMM_ENGINE_FLAGS pull docker.io/library/debian:12-slim >/dev/null 2>&1; then
		eng tag docker.io/library/debian:12 debian:12 2>/dev/null || true
		eng tag docker.io/library/debian:12-slim debian:12-slim 2>/dev/null || true
		say "base images pulled from docker.io"
		return
	fi
	say "no registry reachable: making debian:12 with debootstrap (cached in $CACHE)"
	local tar=$CACHE/debian-bookworm-minbase.tar
	if [ ! -s "$tar" ]; then
		command -v debootstrap >/dev/null || missing "no registry and no debootstrap (apt-get install -y debootstrap)"
		mkdir -p "$CACHE"
		rm -rf "$CACHE/rootfs"
		debootstrap --variant=minbase bookworm "$CACHE/rootfs" "$MIRROR" >"$LOGS/debootstrap.log" 2>&1 ||
			{
				tail -5 "$LOGS/debootstrap.log"
				missing "debootstrap from $MIRROR failed (no registry and no Debian mirror)"
			}
		tar -C "$CACHE/rootfs" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
		rm -rf "$CACHE/rootfs"
	fi
	eng import "$tar" localhost/debian:12 >/dev/null
	# One minbase image serves as both: the runtime stage still installs only
	# the runtime libraries on top of it.
	eng tag localhost/debian:12 localhost/debian:12-slim
	say "base image imported from $tar (also tagged debian:12-slim)"
}

# ---- the image ----------------------------------------------------------
build_image() {
	local fmt=
	[ "$ENGINE" = podman ] && fmt="--format docker" # HEALTHCHECK is Docker-format only
	say "building $IMAGE (log: $LOGS/build.log)"
	local version
	version=$(sed -n 's/^project(vmm VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
	if ! eng build $fmt $RUN_FLAGS --build-arg VERSION="${version:-unknown}" --build-arg REVISION="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		--build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" -t "$IMAGE" . >"$LOGS/build.log" 2>&1; then
		tail -30 "$LOGS/build.log"
		fail "the image does not build"
	fi
	say "image built: $(eng image inspect -f '{{.Size}}' "$IMAGE" 2>/dev/null) bytes"
}

# ---- containers -----------------------------------------------------------
# start NAME ARGS...: a detached vmm container on $NET with its run volume.
start() {
	local name=$P-$1
	shift
	eng volume create "$name-run" >/dev/null
	VOLUMES+=("$name-run")
	CONTAINERS+=("$name")
	eng run -d --name "$name" --network "$NET" $RUN_FLAGS $HEALTH_FLAGS --device /dev/kvm $UFFD_DEV \
		-v "$name-run:/run/vmm" "$IMAGE" "$@" >/dev/null || fail "cannot start container $name"
}
ip_of() { eng inspect -f "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" "$P-$1"; }
pid_of() { eng inspect -f '{{.State.Pid}}' "$P-$1"; }
running() { [ "$(eng inspect -f '{{.State.Running}}' "$P-$1" 2>/dev/null)" = true ]; }

# healthy NAME: the image's HEALTHCHECK passes in the container.
healthy() {
	local out
	if [ -n "$HEALTH_FLAGS" ]; then
		out=$(eng exec "$P-$1" /usr/local/lib/vmm-healthcheck 2>&1) ||
			fail "$P-$1 is unhealthy: $out"
	elif [ "$ENGINE" = podman ]; then
		out=$(eng healthcheck run "$P-$1" 2>&1) || fail "$P-$1 is unhealthy: $out"
	else
		out=$(eng exec "$P-$1" /usr/local/lib/vmm-healthcheck 2>&1) ||
			fail "$P-$1 is unhealthy: $out"
	fi
	say "$P-$1 is healthy"
}

# count NAME REGEX: lines of the container's console matching
count() { eng logs "$P-$1" 2>&1 | grep -Ec -- "$2" || true; }

# wait_count NAME REGEX N SECONDS
wait_count() {
	local i
	for ((i = 0; i < $4 * 2; i++)); do
		[ "$(count "$1" "$2")" -ge "$3" ] && return 0
		sleep 0.5
	done
	fail "$P-$1: fewer than $3 lines match /$2/ after $4 s"
}

# wait_listen NAME: the container's vmm listens on $PORT (its netns, seen from the host).
wait_listen() {
	local i pid hex
	hex=$(printf ':%04X' "$PORT")
	for ((i = 0; i < 60; i++)); do
		pid=$(pid_of "$1")
		if [ -n "$pid" ] && [ "$pid" != 0 ] &&
			awk -v p="$hex" '$2 ~ p"$" && $4 == "0A" {f = 1} END {exit !f}' \
				"/proc/$pid/net/tcp" "/proc/$pid/net/tcp6" 2>/dev/null; then
			return 0
		fi
		running "$1" || fail "$P-$1 exited before listening on $PORT"
		sleep 0.5
	done
	fail "$P-$1 does not listen on $PORT after 30 s"
}

# wait_exit NAME SECONDS: the container stops; its exit code in $code.
wait_exit() {
	local i
	for ((i = 0; i < $2 * 2; i++)); do
		if ! running "$1"; then
			code=$(eng inspect -f '{{.State.ExitCode}}' "$P-$1")
			return 0
		fi
		sleep 0.5
	done
	fail "$P-$1 still runs $2 s after its migration"
}

# migrate FROM TO MODE: `vmm migrate` in a client container on FROM's run volume.
migrate() {
	local from=$1 to=$2 mode=$3 sock=$4 rc=0 addr
	addr=$(ip_of "$to"):$PORT
	say "migrate $from -> $to ($addr), --mode $mode"
	CONTAINERS+=("$P-mig-$to")
	eng run --name "$P-mig-$to" --network "$NET" $RUN_FLAGS $HEALTH_FLAGS -v "$P-$from-run:/run/vmm" "$IMAGE" \
		migrate --api-socket "/run/vmm/$sock" --to "$addr" --mode "$mode" --json \
		--timeout-ms 30000 >"$LOGS/mig-$to.json" 2>"$LOGS/mig-$to.err" || rc=$?
	cat "$LOGS/mig-$to.json" "$LOGS/mig-$to.err"
	[ "$rc" = 0 ] || fail "vmm migrate $from -> $to --mode $mode exited $rc: $(tail -1 "$LOGS/mig-$to.err")"
	grep -q '"state"[[:space:]]*:[[:space:]]*"completed"' "$LOGS/mig-$to.json" ||
		fail "vmm migrate $from -> $to: the summary does not say completed"
}

# verified_on NAME: the guest goes on passing its checks there, never corrupt.
verified_on() {
	local before
	before=$(count "$1" 'dirty pass [0-9]+ ok')
	wait_count "$1" 'dirty pass [0-9]+ ok' $((before + 3)) 120
	[ "$(count "$1" CORRUPTION)" = 0 ] || fail "$P-$1: the guest reports CORRUPTION"
	say "$P-$1: the guest verifies ($(count "$1" 'dirty pass [0-9]+ ok') pass lines, no CORRUPTION)"
}

# ---- the run ----------------------------------------------------------------
base_images
[ "${VMM_SKIP_BUILD:-0}" = 1 ] || build_image
eng run --rm $RUN_FLAGS $HEALTH_FLAGS "$IMAGE" --version || fail "the image's vmm --version fails"
eng network create "$NET" >/dev/null || fail "cannot create network $NET"

# Source: the dirty guest, running for ever (passes=0); a 512M VM keeps it quick.
start src run /usr/local/share/vmm/examples/dirty.cfg --set vm.memory=512M \
	--set workload.passes=0
wait_count src 'dirty pass [0-9]+ ok' 2 120
say "source guest verifies: $(count src 'dirty pass [0-9]+ ok') pass lines"
healthy src

for phase in $PHASES; do
	case $phase in
	precopy)
		start dst1 run --incoming "0.0.0.0:$PORT"
		wait_listen dst1
		healthy dst1 # waiting, no API socket yet
		migrate src dst1 precopy dirty.sock
		wait_exit src 30
		[ "$code" = 0 ] || fail "the source container exited $code after its VM left"
		verified_on dst1
		healthy dst1 # now its VM's API socket answers
		from=dst1
		;;
	postcopy)
		[ -n "$UFFD_DEV" ] || missing "/dev/userfaultfd (Linux >= 6.1): postcopy in a default-seccomp container needs it"
		from=${from:-src}
		start dst2 run --incoming "0.0.0.0:$PORT"
		wait_listen dst2
		healthy dst2
		migrate "$from" dst2 postcopy dirty.sock
		wait_exit "$from" 30
		[ "$code" = 0 ] || fail "the container $from exited $code after its VM left"
		verified_on dst2
		healthy dst2
		;;
	*) fail "unknown phase '$phase' in VMM_PHASES" ;;
	esac
	say "PASS: $phase"
done
say "PASS: the guest migrated ($PHASES) between containers and verifies"
