#!/usr/bin/env bash
# splice-generated.sh FILE NAME -- CMD...: replaces what lies between FILE's
# "<!-- NAME:begin -->" and "<!-- NAME:end -->" markers with CMD's output, atomically
# (a failing CMD leaves FILE as it was). Used by the update-*.sh scripts.
set -euo pipefail
file=$1 name=$2
shift 3
table=$(mktemp)
trap 'rm -f "$table"' EXIT
"$@" > "$table"
python3 - "$file" "$name" "$table" <<'PY'
import sys
path, name, table = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
doc = open(path).read()
b, e = f"<!-- {name}:begin -->\n", f"<!-- {name}:end -->"
i, j = doc.index(b) + len(b), doc.index(e)
open(path + ".tmp", "w").write(doc[:i] + table + doc[j:])
PY
mv "$file.tmp" "$file"
