#!/usr/bin/env bash
# Regenerates docs/algorithm.md's parameter table from the core's table (LEOCC_PARAMS in
# core/leocc.h), as `leocc kernel params --markdown` prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(mktemp)
cargo run --release -q -p leocc -- kernel params --markdown > "$table"
python3 - "$table" <<'PY'
import sys
table = open(sys.argv[1]).read()
doc = open("docs/algorithm.md").read()
b, e = "<!-- params:begin -->\n", "<!-- params:end -->"
i, j = doc.index(b) + len(b), doc.index(e)
open("docs/algorithm.md.tmp", "w").write(doc[:i] + table + doc[j:])
PY
mv docs/algorithm.md.tmp docs/algorithm.md
rm -f "$table"
echo "docs/algorithm.md parameter table updated"
