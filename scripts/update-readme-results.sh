#!/usr/bin/env bash
# Regenerates the README's results section from results/main/results.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(mktemp)
cargo run --release -q -p leocc -- report results/main --markdown > "$table"
python3 - "$table" <<'PY'
import sys
table = open(sys.argv[1]).read()
readme = open("README.md").read()
b, e = "<!-- results:begin -->\n", "<!-- results:end -->"
i, j = readme.index(b) + len(b), readme.index(e)
open("README.md.tmp", "w").write(readme[:i] + table + readme[j:])
PY
mv README.md.tmp README.md
rm -f "$table"
echo "README.md results section updated"
