#!/usr/bin/env bash
# Every keras.applications base end to end: `classify --base NAME` at its smallest size (at least 32 px), one
# epoch of random weights on 8 stand-in images, smallest first. A check that each fine-tunes and serves, not a
# timing (the epochs are a few images). One line per base in OUT/summary.txt: exit code, wall seconds; each
# run's folder under OUT/runs/NAME. RUNTIMES (default tf) is passed to --runtimes: `RUNTIMES=all` times every
# installed runtime too (about 2 minutes a base on two cores instead of one).
#   bash .ci/every_application.sh /tmp/every-app
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${1:?usage: every_application.sh OUT_DIR}
PY=${PYTHON:-.venv/bin/python}
mkdir -p "$OUT/runs"
"$PY" - <<'EOF' > "$OUT/bases.txt"
from l40sbench.classify.bases import BASES

for name in sorted(BASES.names(), key=lambda n: BASES.get(n).parameters):
    print(name, max(BASES.get(name).min_size, 32))
EOF
while read -r base size; do
  grep -q "^$base " "$OUT/summary.txt" 2>/dev/null && continue  # done in an earlier call
  started=$(date +%s)
  "$PY" -m l40sbench classify --base "$base" --image-size "$size" --limit 8 --batch-size 4 --epochs 1 \
    --weights none --runtimes "${RUNTIMES:-tf}" --output-dir "$OUT/runs/$base" > "$OUT/runs/$base.log" 2>&1
  echo "$base $size exit=$? $(( $(date +%s) - started ))s" >> "$OUT/summary.txt"
done < "$OUT/bases.txt"
cat "$OUT/summary.txt"
