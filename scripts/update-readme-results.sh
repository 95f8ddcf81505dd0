#!/usr/bin/env bash
# Regenerates the README's results section from results/main/results.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/splice-generated.sh README.md results -- cargo run --release -q -p leocc -- report results/main --markdown
echo "README.md results section updated"
