#!/usr/bin/env bash
# The main job: installs what the demo needs (build tools, the emulator's tools; not the optional
# Python parts, which `make test` installs), builds leocc and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
# cargo's own progress (a bar on a terminal, a line per crate otherwise): the first build
# compiles a few hundred crates and takes minutes on a small machine.
echo "demo: building leocc (release)"
cargo build --release --locked -p leocc
exec "${CARGO_TARGET_DIR:-target}/release/leocc" demo "$@"
