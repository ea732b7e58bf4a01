#!/usr/bin/env bash
# The studies on a GPU machine that has JAX or PyTorch and no TensorFlow (README.md, "On a GPU machine"): the
# product's own `study all` on that backend, which runs the L40S study's classification and the LeaderGPU grid
# (detection needs TensorFlow: the study leaves it out and says so), cut to fit BUDGET (default 8m: what a
# GPU session of 15 device minutes can spend on it).
#
#   benchmarks/gpu_run.sh [OUT_DIR]
#
# On the first Keras backend this Python can import (jax, else torch; BACKEND=jax|torch to choose), it runs
#   l40sbench study all --backend BACKEND --budget BUDGET --output-dir OUT_DIR
# then prints each step's energy and stability lines (NVML's figures need nvidia-ml-py: put its wheel in WHEELS).
# The study's plan, its summary beside the published rows and OUT_DIR/report.md are the study's own
# (docs/study.md). Every result stays under OUT_DIR (default: results/gpu-run-<UTC stamp>).
#
# Nothing is fetched from the network. l40sbench runs from this checkout (PYTHONPATH), not installed, so
# TensorFlow, which its install pulls, is never needed. WHEELS=DIR installs the wheels in DIR first (keras,
# namex and optree, say), with pip --no-index, into OUT_DIR/site. PYTHON picks the interpreter (default
# python3). GPU_RUN_TINY=1 runs the study's --quick check of its classification step for vgg19 and its sweep
# instead, a CPU-sized check of the script itself (tests use it).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/results/gpu-run-$(date -u +%Y%m%dT%H%M%SZ)}"
python="${PYTHON:-python3}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
log() { echo "gpu_run: $*" >&2; }

if [ -n "${WHEELS:-}" ]; then
  log "installing the wheels in $WHEELS into $out/site (no network) ..."
  "$python" -m pip install --quiet --no-index --no-deps --disable-pip-version-check --target "$out/site" "$WHEELS"/*.whl
  export PYTHONPATH="$out/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"

backend="${BACKEND:-}"
if [ -z "$backend" ]; then
  for candidate in jax torch; do
    if "$python" -c "import $candidate" 2>/dev/null; then backend="$candidate"; break; fi
  done
fi
if [ -z "$backend" ]; then
  echo "gpu_run: neither jax nor torch imports with $python; set PYTHON, or WHEELS=DIR to install from a folder" >&2
  exit 2
fi
# Keras reads KERAS_BACKEND when first imported and defaults to tensorflow, which is not there: set it first.
export KERAS_BACKEND="$backend"
if ! why="$("$python" -c "import keras" 2>&1)"; then
  echo "gpu_run: keras does not import on $backend with $python: $(printf '%s\n' "$why" | tail -n 1)" \
       "(WHEELS=DIR with the keras, namex and optree wheels installs it)" >&2
  exit 2
fi
export L40SBENCH_PEAK_FILE="$out/peak.json"  # one peak for every run of this script
log "backend $backend; results in $out"
# What the machine is and which boards a run would use (the device records, NVML's boards by UUID, the
# neighbours now), before anything is measured.
"$python" -m l40sbench env --backend "$backend" | tee "$out/env.txt" >&2

study=(study all --backend "$backend" --output-dir "$out")
if [ "${GPU_RUN_TINY:-}" = "1" ]; then
  study+=(--quick --only classify-vgg19,synthetic-leadergpu)
else
  study+=(--budget "${BUDGET:-8m}")
fi
log "l40sbench ${study[*]} ..."
"$python" -m l40sbench "${study[@]}" | tee "$out/study.txt"
# Each step's telemetry, neighbours and stability lines, so the first GPU session sees the energy, clocks,
# power-cap share and slowdowns it recorded for the boards it used (or why it could not), and who else ran.
"$python" - "$out" >&2 <<'PY'
import json
import sys
from pathlib import Path

from l40sbench.core.stability import line as stability_line
from l40sbench.core.telemetry import line as energy_line

for result in sorted(Path(sys.argv[1]).glob("[0-9][0-9]-*/result.json")):
    record, name = json.loads(result.read_text()), result.parent.name
    if "telemetry" in record:
        print(f"{name}: {energy_line(record['telemetry'])}")
        for phase, block in (record["telemetry"].get("neighbours") or {}).items():
            steal = block.get("steal_share")
            print(f"{name} {phase}: others {100 * block['cpu_share_others']:.1f} % of the CPU, steal "
                  f"{'unknown' if steal is None else f'{100 * steal:.1f} %'}, GPU processes "
                  f"{[p.get('pid') for p in block.get('gpu_processes', [])]}")
        used = (record.get("devices") or {}).get("used") or []
        print(f"{name}: devices used {[(d['name'], d.get('uuid')) for d in used]}")
    for row in record.get("rows", []):  # a sweep: each configuration's timed steps
        if row.get("telemetry"):
            label = f"{row['model']} b{row['per_device_batch']} x{row['devices']}"
            print(f"{name} {label}: {energy_line(row['telemetry'])}")
    bursts = ((record.get("stability") or {}).get("speed") or {}).get("bursts") or []
    if bursts:
        print(f"{name}: guard bursts {[round(b['gflops']) for b in bursts]} GFLOP/s, {bursts[0].get('form')}")
    print(f"{name}: {stability_line(record.get('stability'))}")
PY
log "results: $out (report: $out/report.md)"
