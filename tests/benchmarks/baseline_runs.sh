#!/usr/bin/env bash
# The CI gate's baseline from several benchmark runs: `./run.sh test --benchmarks` RUNS times back to back
# (default 5), then tests/benchmarks/gate.py --update over all their JSONs (per figure the median, and the
# runs' spread beside it). Run it on a quiet machine, nothing else running: about 6 minutes a run on a
# slow 2-core host. Usage: bash tests/benchmarks/baseline_runs.sh [RUNS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
runs="${1:-5}"
jsons=()
for i in $(seq "$runs"); do
  echo "baseline_runs: run $i of $runs ($(date -u +%H:%M:%S))" >&2
  before="$(ls results/ci/benchmarks-*.json 2>/dev/null || true)"
  ./run.sh test --benchmarks >/dev/null || true  # the gate may fail against the old baseline; the JSON is what counts
  json="$(ls -t results/ci/benchmarks-*.json | head -1)"
  if printf '%s\n' "$before" | grep -qxF "$json"; then echo "baseline_runs: run $i wrote no JSON" >&2; exit 1; fi
  jsons+=("$json")
done
.venv/bin/python tests/benchmarks/gate.py --update "${jsons[@]}"
