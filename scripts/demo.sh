#!/usr/bin/env bash
# The main job: installs what is missing, builds leocc and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release --locked -q -p leocc
exec ./target/release/leocc demo "$@"
