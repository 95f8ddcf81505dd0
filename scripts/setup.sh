#!/usr/bin/env bash
# Installs what leocc needs on a Debian/Ubuntu machine, idempotently and quietly when all is present.
# Safe to run again and again: it only calls apt when a package is missing.
set -euo pipefail

APT_PACKAGES=(
  clang llvm            # core/ compiled to BPF and host; llvm-strip for BPF objects
  libelf-dev zlib1g-dev pkg-config make  # libbpf-rs vendors libbpf, which needs libelf and zlib
  bpftool               # vmlinux.h from /sys/kernel/btf/vmlinux, and for users to inspect programs
  iperf3 iproute2 iputils-ping  # traffic and namespaces for the emulator
  chromium              # headless screenshots of the HTML report in tests
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || {
  echo "setup: cargo not found; install Rust with rustup (https://rustup.rs) and run again" >&2
  exit 1
}

# Python side (python/leocc_ml: predictors and the video harness): a venv in .venv with
# numpy + scikit-learn + pytest only (no deep-learning framework: the LSTM is numpy).
# Quiet and offline when the venv already satisfies python/leocc_ml/pyproject.toml.
if [ -f python/leocc_ml/pyproject.toml ] || [ -f "$(dirname "$0")/../python/leocc_ml/pyproject.toml" ]; then
  ROOT="$(cd "$(dirname "$0")/.." && pwd)"
  VENV="$ROOT/.venv"
  STAMP="$VENV/.leocc_ml-installed"
  if [ ! -x "$VENV/bin/python" ]; then
    if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
      SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    fi
    echo "setup: creating $VENV"
    python3 -m venv "$VENV"
  fi
  if [ ! -f "$STAMP" ] || [ "$ROOT/python/leocc_ml/pyproject.toml" -nt "$STAMP" ] \
     || ! "$VENV/bin/python" -c 'import numpy, sklearn, pytest, leocc_ml' >/dev/null 2>&1; then
    echo "setup: installing python/leocc_ml into $VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -e "$ROOT/python/leocc_ml[test]"
    touch "$STAMP"
  fi
fi
