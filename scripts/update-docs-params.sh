#!/usr/bin/env bash
# Regenerates docs/algorithm.md's parameter table from the core's table (LEOCC_PARAMS in
# core/leocc.h), as `leocc kernel params --markdown` prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/splice-generated.sh docs/algorithm.md params -- cargo run --release -q -p leocc -- kernel params --markdown
echo "docs/algorithm.md parameter table updated"
