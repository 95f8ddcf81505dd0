#!/usr/bin/env bash
# Runs every test: C unit tests of core/, then the Rust workspace (unit, integration and
# root-only namespace tests, which skip with a message when not root), then the Python ones.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --all
export PATH="$HOME/.cargo/bin:$PATH"
if [ -f core/Makefile ]; then
  echo "== core/ (C unit and scenario tests, BPF build test)"
  make -s -C core test
fi
echo "== cargo test"
cargo test --workspace --release --locked -q 2>&1
# After cargo: two of these tests drive the leocc binary, which cargo test has just built
# (before it, on a clean checkout, they would skip).
if [ -f python/leocc_ml/pyproject.toml ]; then
  echo "== python/leocc_ml (pytest: predictors, LSTM gradient check, video over loopback TCP, dash.js in Chromium)"
  (cd python/leocc_ml && ../../.venv/bin/python -m pytest -q tests)
fi
if [ -f python/leocc_testbed/pyproject.toml ]; then
  echo "== python/leocc_testbed (pytest: jobs, cron, store; a real Ray cluster of node processes, emulated terminals)"
  (cd python/leocc_testbed && ../../.venv/bin/python -m pytest -q tests)
fi
echo "== python (the leocc package, docs/python.md's example, every shell block of README.md and docs/*.md)"
.venv/bin/python -m unittest discover -s python/tests
