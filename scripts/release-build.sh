#!/usr/bin/env bash
# release-build.sh VERSION|COMMIT: builds a release of vmm from this clone's
# own history and prints the directory that holds it (bin/vmm and
# bin/vmm-firmware.elf), building it only once per commit.
#
# A VERSION is looked up in VERSIONS ("release 0.3.0 <commit>"); anything
# else is taken as a commit of this clone. The build is cached outside the
# clone, keyed by the full commit: $VMM_CACHE_DIR/releases/<commit>
# (default ~/.cache/vmm/releases/<commit>), like the Linux test guest's
# kernel. Only the vmm binary and the firmware are built (RelWithDebInfo, no
# tests, no bench), so a release costs one small build (about 40 s on the
# 2-core reference host, once). The sources come from `git archive`, so the
# clone's worktree and index are never touched. Concurrent callers take a
# lock on the cache entry. Used by tests/integration/compat_*.sh and
# scripts/goldens.sh; docs/compatibility.md.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
want=${1:?usage: release-build.sh VERSION|COMMIT}
commit=$(awk -v v="$want" '$1 == "release" && $2 == v { print $3 }' "$here/VERSIONS")
[ -n "$commit" ] || commit=$want
commit=$(git -C "$here" rev-parse --verify --quiet "$commit^{commit}") ||
	{ echo "release-build.sh: $want is neither a release in VERSIONS nor a commit of this clone" >&2; exit 2; }
cache=${VMM_CACHE_DIR:-$HOME/.cache/vmm}/releases/$commit
mkdir -p "$cache"
exec 9>"$cache.lock"
flock 9
if [ ! -x "$cache/bin/vmm" ] || [ ! -f "$cache/bin/vmm-firmware.elf" ]; then
	rm -rf "$cache/bin" "$cache/bin.tmp"
	if [ ! -f "$cache/src/VERSIONS" ] && [ ! -f "$cache/src/CMakeLists.txt" ]; then
		rm -rf "$cache/src" "$cache/build" "$cache/src.tmp"
		mkdir -p "$cache/src.tmp"
		git -C "$here" archive "$commit" | tar -x -C "$cache/src.tmp"
		mv "$cache/src.tmp" "$cache/src"
	fi
	{
		cmake -S "$cache/src" -B "$cache/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
			-DVMM_BUILD_TREE_FIRMWARE=ON
		nice cmake --build "$cache/build" -j"${VMM_RELEASE_JOBS:-2}" --target vmm vmm-firmware
	} >"$cache/build.log" 2>&1 || { echo "release-build.sh: building $commit failed: $cache/build.log" >&2; tail -20 "$cache/build.log" >&2; exit 1; }
	mkdir -p "$cache/bin.tmp"
	cp "$cache/build/vmm/vmm" "$cache/build/guest-firmware/vmm-firmware.elf" "$cache/bin.tmp/"
	mv "$cache/bin.tmp" "$cache/bin"
fi
echo "$cache"
