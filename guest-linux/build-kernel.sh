#!/bin/sh
# Build (or fetch from the cache) the vmm test kernel.
#
#   build-kernel.sh TARBALL CACHE_DIR OUT [JOBS]
#
# TARBALL    Debian's linux-source-6.1 tarball (/usr/src/linux-source-6.1.tar.xz)
# CACHE_DIR  where built kernels are kept: CACHE_DIR/<key>/vmlinux
# OUT        where the vmlinux is copied to (the build tree's guest-linux/vmlinux);
#            the kernel's usr/gen_init_cpio (which writes the initramfs: it
#            makes /dev/console without root) goes next to it
# JOBS       make -j value, default 2 (never more on the shared CI host)
#
# The key is a hash of this script, kernel.config, patches/*.patch and the
# tarball's identity (name, size, mtime: a new linux-source package changes
# them). A hit costs a copy: no extraction, no make. A miss extracts the
# tarball, applies the patches, runs tinyconfig + the fragment +
# olddefconfig, refuses a .config that lost any option of the fragment,
# builds vmlinux, checks its PVH note and moves the result into place
# atomically. Builds of the same key are serialised with flock on
# CACHE_DIR/<key>.lock, so two build trees (normal, ASan) can share a cache.
# docs/linux-guest.md describes the kernel; the log of a build is kept as
# CACHE_DIR/<key>/build.log (CACHE_DIR/<key>.log while it runs).
set -eu

[ $# -ge 3 ] || { echo "usage: $0 TARBALL CACHE_DIR OUT [JOBS]" >&2; exit 2; }
tarball=$1
cache=$2
out=$3
jobs=${4:-2}
here=$(cd "$(dirname "$0")" && pwd)
fragment=$here/kernel.config

[ -r "$tarball" ] || { echo "build-kernel.sh: $tarball not found (apt-get install linux-source-6.1)" >&2; exit 1; }

# The cache key: everything that decides what the kernel is.
key=$( {
    cat "$0" "$fragment"
    for p in "$here"/patches/*.patch; do echo "patch $(basename "$p")"; cat "$p"; done
    echo "tarball $(basename "$tarball") $(stat -L -c '%s %Y' "$tarball")"
} | sha256sum | cut -c1-16)
dir=$cache/$key

publish() {
    mkdir -p "$(dirname "$out")"
    # A copy, not a link: the cache may live on another file system or be
    # wiped while the build tree stays.
    cp -f "$dir/vmlinux" "$out.tmp"
    mv -f "$out.tmp" "$out"
    cp -f "$dir/gen_init_cpio" "$out.gen_init_cpio.tmp"
    mv -f "$out.gen_init_cpio.tmp" "$(dirname "$out")/gen_init_cpio"
    echo "build-kernel.sh: $out from cache $dir"
}

if [ -f "$dir/vmlinux" ]; then
    publish
    exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/$key.lock"
flock 9
# Another build tree may have built it while we waited for the lock.
if [ -f "$dir/vmlinux" ]; then
    publish
    exit 0
fi

work=$cache/$key.work
log=$cache/$key.log
rm -rf "$work" "$dir.tmp"
mkdir -p "$work"
: >"$log"
fail() {
    echo "build-kernel.sh: $1 (last lines of $log:)" >&2
    tail -n 30 "$log" >&2
    exit 1
}

echo "build-kernel.sh: building the test kernel $key (a few minutes; log: $log)"
start=$(date +%s)
tar -xf "$tarball" -C "$work" --strip-components=1 >>"$log" 2>&1 || fail "extracting $tarball failed"
for p in "$here"/patches/*.patch; do
    echo "== patch $p" >>"$log"
    patch -d "$work" -p1 --forward --batch <"$p" >>"$log" 2>&1 || fail "patch $(basename "$p") does not apply"
done

# Reproducible: the same key gives the same kernel banner.
KBUILD_BUILD_USER=vmm
KBUILD_BUILD_HOST=vmm
KBUILD_BUILD_TIMESTAMP="1970-01-01"
export KBUILD_BUILD_USER KBUILD_BUILD_HOST KBUILD_BUILD_TIMESTAMP
# Our own -j, not the jobserver or flags of a make that runs this script.
unset MAKEFLAGS MFLAGS MAKELEVEL
mk() { make -C "$work" ARCH=x86_64 "$@" >>"$log" 2>&1; }

mk tinyconfig || fail "make tinyconfig failed"
(cd "$work" && scripts/kconfig/merge_config.sh -m .config "$fragment") >>"$log" 2>&1 ||
    fail "merging kernel.config failed"
mk olddefconfig || fail "make olddefconfig failed"

# Every option of the fragment must have survived olddefconfig: Kconfig
# silently drops an option whose dependencies are off.
bad=0
while IFS= read -r line; do
    case $line in
    CONFIG_*=*)
        grep -qxF "$line" "$work/.config" || {
            echo "build-kernel.sh: kernel.config asks for $line, .config has:" \
                "$(grep -E "^(# )?${line%%=*}[= ]" "$work/.config" || echo 'nothing')" >&2
            bad=1
        }
        ;;
    "# CONFIG_"*" is not set")
        opt=${line#\# }
        opt=${opt%% *}
        if grep -q "^$opt=" "$work/.config"; then
            echo "build-kernel.sh: kernel.config turns $opt off, .config has $(grep "^$opt=" "$work/.config")" >&2
            bad=1
        fi
        ;;
    esac
done <"$fragment"
[ $bad = 0 ] || fail "the .config does not match kernel.config"

mk -j"$jobs" vmlinux || fail "make vmlinux failed"

# The PVH entry point (XEN_ELFNOTE_PHYS32_ENTRY, note type 0x12) is what vmm boots.
readelf -n "$work/vmlinux" 2>>"$log" | grep -A1 '^ *Xen ' | grep -q '0x00000012' ||
    fail "vmlinux has no PVH note (XEN_ELFNOTE_PHYS32_ENTRY)"

mkdir -p "$dir.tmp"
cp "$work/vmlinux" "$dir.tmp/vmlinux"
cp "$work/.config" "$dir.tmp/config"
cp "$work/usr/gen_init_cpio" "$dir.tmp/gen_init_cpio"
mv "$log" "$dir.tmp/build.log"
mv "$dir.tmp" "$dir"
rm -rf "$work"
echo "build-kernel.sh: built $key in $(($(date +%s) - start)) s"
publish
