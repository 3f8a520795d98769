#!/usr/bin/env bash
# Installs everything vmm needs to build, test and benchmark on Debian 12.
# Run as root (or with sudo); safe to run again. clang-14 and its runtime
# (libFuzzer, ASan, UBSan) are for the fuzz build only (scripts/fuzz.sh).
# linux-source-6.1 and the tools after it build the Linux test guest
# (guest-linux/); qemu-system-x86 is the reference bench_linux compares with
# and, with busybox-static and kmod, runs the nested machine of
# scripts/nested-kvm.sh on hosts without /dev/kvm;
# gnuplot-nox draws bench/run's plots.
# --build: only what building vmm and its unit tests needs (the container
# image's build stage; no Linux test guest, QEMU or clang).
set -eu
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if [ "${1:-}" = --build ]; then
	$SUDO apt-get install -y -qq --no-install-recommends \
		build-essential cmake pkg-config \
		libfdt-dev libzstd-dev libevent-dev libssl-dev libinih-dev libcjson-dev libcmocka-dev \
		libseccomp-dev python3 >/dev/null
	echo "vmm: build dependencies (--build) installed"
	exit 0
fi
$SUDO apt-get install -y -qq --no-install-recommends \
	build-essential cmake pkg-config \
	libfdt-dev libzstd-dev libevent-dev libssl-dev libinih-dev libcjson-dev libcmocka-dev \
	libseccomp-dev \
	iproute2 iputils-ping procps openssl python3 nftables curl \
	linux-source-6.1 flex bison bc libelf-dev busybox-static cpio kmod \
	qemu-system-x86 gnuplot-nox \
	clang-14 libclang-rt-14-dev >/dev/null
echo "vmm: build dependencies installed"
