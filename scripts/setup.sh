#!/usr/bin/env bash
# Installs what leocc needs on a Debian/Ubuntu machine, idempotently and quietly when all is present.
# Safe to run again and again: it only calls apt or pip when something is missing or changed.
#
#   scripts/setup.sh           what `make demo` needs: the build tools and the emulator's tools
#   scripts/setup.sh --all     everything `make test` needs besides: chromium (report
#                              screenshots) and the Python environment .venv (Ray, leocc_ml, the
#                              `leocc` Python package built by maturin)
#   scripts/setup.sh --python  just the Python environment
set -euo pipefail

ALL=0; PYTHON=0
for arg in "$@"; do
  case "$arg" in
    --all) ALL=1; PYTHON=1 ;;
    --python) PYTHON=1 ;;
    *) echo "setup: unknown option $arg (--all or --python)" >&2; exit 2 ;;
  esac
done

APT_PACKAGES=(
  clang llvm            # core/ compiled to BPF and host; llvm-strip for BPF objects
  libelf-dev zlib1g-dev pkg-config make  # libbpf-rs vendors libbpf, which needs libelf and zlib
  bpftool               # vmlinux.h from /sys/kernel/btf/vmlinux, and for users to inspect programs
  iperf3 iproute2 iputils-ping  # traffic and namespaces for the emulator
)
if [ "$ALL" = 1 ]; then
  APT_PACKAGES+=(chromium)  # headless screenshots of the HTML report in tests, and dash.js sessions
  APT_PACKAGES+=(ffmpeg)    # the dash.js sessions' content (leocc-video --player dashjs)
  # promtool and a Prometheus server: tests check `leocc probe --metrics` and the testbed's
  # metrics with them (the tests start their own server on loopback; on a machine with systemd
  # the package also enables Debian's prometheus service: `systemctl disable --now prometheus`)
  APT_PACKAGES+=(prometheus)
fi

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

if [ "$PYTHON" = 0 ]; then
  if [ ! -x "$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python" ]; then
    echo "setup: the optional Python parts (.venv: Ray for --executor ray, python/leocc_ml for the video scenario, the leocc Python package) are not installed; \`make test\` or \`scripts/setup.sh --python\` installs them"
  fi
  exit 0
fi

# Python: one virtual environment, .venv, for everything Python in the project, each part
# (re)installed only when its sources change:
# - python/requirements.txt: Ray, for `leocc eval --executor ray`;
# - python/leocc_ml: predictors and the video harness (numpy, scikit-learn, pytest; the LSTM is
#   numpy: no deep-learning framework);
# - python/leocc_testbed: `leocc testbed` (Ray, SQLite and TOML from Python's library);
# - the package `leocc` (PyO3, built by maturin from the repository's crates).
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.venv"
command -v python3 >/dev/null 2>&1 || { echo "setup: python3 not found; install Python 3.9 or newer" >&2; exit 1; }
if [ ! -x "$VENV/bin/python" ]; then
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  fi
  echo "setup: creating $VENV"
  python3 -m venv "$VENV"
fi
REQS="$ROOT/python/requirements.txt"
STAMP="$VENV/.leocc-requirements"
if ! cmp -s "$REQS" "$STAMP" 2>/dev/null; then
  echo "setup: installing Python packages from python/requirements.txt into .venv"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQS"
  cp "$REQS" "$STAMP"
fi
# install_editable DIR "IMPORTS": the project's pure-Python package in DIR, editable (its
# sources are used where they are), with its test extras; again when its pyproject.toml changed
# or when IMPORTS stop importing.
install_editable() {
  local name; name="$(basename "$1")"
  local stamp="$VENV/.$name-installed"
  if [ ! -f "$stamp" ] || [ "$ROOT/$1/pyproject.toml" -nt "$stamp" ] \
     || ! "$VENV/bin/python" -c "import $2" >/dev/null 2>&1; then
    echo "setup: installing $1 into .venv"
    "$VENV/bin/pip" install -q --disable-pip-version-check -e "$ROOT/$1[test]"
    touch "$stamp"
  fi
}
install_editable python/leocc_ml "numpy, sklearn, pytest, leocc_ml"
# dash.js, pinned (DASHJS_VERSION in leocc_ml/video/dash.py, which finds it here), from the npm
# registry, beside the environment that uses it.
DASHJS_VERSION="$(sed -n 's/^DASHJS_VERSION = "\(.*\)"$/\1/p' "$ROOT/python/leocc_ml/leocc_ml/video/dash.py")"
[ -n "$DASHJS_VERSION" ] || { echo "setup: no DASHJS_VERSION in python/leocc_ml/leocc_ml/video/dash.py" >&2; exit 1; }
DASHJS_DIR="$VENV/dashjs"
if [ "$(cat "$DASHJS_DIR/.version" 2>/dev/null)" != "$DASHJS_VERSION" ] \
   || [ ! -f "$DASHJS_DIR/node_modules/dashjs/dist/dash.all.min.js" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
  fi
  echo "setup: installing dash.js $DASHJS_VERSION (npm) into .venv/dashjs"
  mkdir -p "$DASHJS_DIR"
  npm install --silent --no-audit --no-fund --prefix "$DASHJS_DIR" "dashjs@$DASHJS_VERSION" >/dev/null
  echo "$DASHJS_VERSION" > "$DASHJS_DIR/.version"
fi
install_editable python/leocc_testbed "leocc_testbed, ray, pytest"
PY_STAMP="$VENV/.leocc-package"
py_src_hash() {
  # Every crate: the package links the simulator and what it stands on (leocc-base, the probe's
  # detector, the signal, the plots), and a list kept here went stale when crates were added.
  (cd "$ROOT" && find crates core python/src python/pyproject.toml \
      -type f \( -name '*.rs' -o -name '*.toml' -o -name '*.c' -o -name '*.h' -o -name '*.py' -o -name 'Cargo.lock' \) \
      -not -path '*/target/*' -not -path '*/build/*' | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-32)
}
PY_HASH="$(py_src_hash)"
if [ "$(cat "$PY_STAMP" 2>/dev/null)" != "$PY_HASH" ]; then
  echo "setup: building the Python package leocc (pip install ./python; about two minutes the first time)"
  CARGO_TARGET_DIR="$ROOT/target/py" "$VENV/bin/pip" install -q --disable-pip-version-check "$ROOT/python"
  echo "$PY_HASH" > "$PY_STAMP"
fi
