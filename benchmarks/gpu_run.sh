#!/usr/bin/env bash
# The study's protocol on a GPU machine that has JAX or PyTorch and no TensorFlow (README.md, "On a GPU machine").
#
#   benchmarks/gpu_run.sh [OUT_DIR]
#
# Runs, on the first Keras backend this Python can import (jax, else torch; BACKEND=jax|torch to choose):
#   - classify for xception, inceptionv3 and vgg19: the article's 10 epochs, batch 16, each base's native
#     size, the stand-in's 140 test images one at a time (139 timed); random weights (--weights none: the
#     machine has no network, and speed does not depend on the weights);
#   - a short synthetic sweep: resnet50, inceptionv3 and vgg16 at batch 32 and 64 per device, one device,
#     fp32 then mixed_bfloat16;
# then writes OUT_DIR/report/report.md beside the L40S and LeaderGPU studies' rows and prints it.
# Every result stays under OUT_DIR (default: results/gpu-run-<UTC stamp>).
#
# Nothing is fetched from the network. l40sbench runs from this checkout (PYTHONPATH), not installed, so
# TensorFlow, which its install pulls, is never needed. WHEELS=DIR installs the wheels in DIR first (keras,
# namex and optree, say), with pip --no-index, into OUT_DIR/site. PYTHON picks the interpreter (default
# python3). GPU_RUN_TINY=1 shrinks everything to a CPU-sized check of the script itself (tests use it).
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
if ! "$python" -c "import keras" 2>/dev/null; then
  echo "gpu_run: keras does not import with $python; WHEELS=DIR with the keras, namex and optree wheels installs it" >&2
  exit 2
fi
export KERAS_BACKEND="$backend"
export L40SBENCH_PEAK_FILE="$out/peak.json"  # one peak for every run of this script
log "backend $backend; results in $out"

if [ "${GPU_RUN_TINY:-}" = "1" ]; then
  bases=("vgg19 32")  # tests/conftest.py's tiny vgg19 run, which the tests set this one beside
  classify_flags=(--epochs 3 --batch-size 4 --limit 8)
  sweep_flags=(--models lenet --batch-sizes 4 --warmup-steps 1 --steps 2)
else
  bases=("xception 299" "inceptionv3 299" "vgg19 224")
  classify_flags=(--epochs 10 --batch-size 16)
  sweep_flags=(--models resnet50,inceptionv3,vgg16 --batch-sizes 32,64 --warmup-steps 5 --steps 30)
fi

l40sbench() { "$python" -m l40sbench "$@"; }
results=()
for entry in "${bases[@]}"; do
  read -r base size <<<"$entry"
  log "classify $base at ${size} px ..."
  l40sbench classify --backend "$backend" --base "$base" --image-size "$size" --weights none "${classify_flags[@]}" \
    --output-dir "$out/classify-$base" >"$out/classify-$base.log"
  results+=("$out/classify-$base")
done
for precision in fp32 mixed_bfloat16; do
  log "synthetic sweep, $precision ..."
  l40sbench synthetic --backend "$backend" --devices 1 --precision "$precision" "${sweep_flags[@]}" \
    --output-dir "$out/synthetic-$precision" >"$out/synthetic-$precision.log"
  results+=("$out/synthetic-$precision")
done
# Each run's telemetry and stability lines (NVML needs nvidia-ml-py: put its wheel in WHEELS), so the first GPU
# session sees the energy, clocks and throttle reasons it recorded, or why it could not.
"$python" - "${results[@]}" >&2 <<'PY'
import json
import sys
from pathlib import Path

from l40sbench.core.stability import line as stability_line
from l40sbench.core.telemetry import line as energy_line

for folder in sys.argv[1:]:
    record = json.loads((Path(folder) / "result.json").read_text())
    if "telemetry" in record:
        print(f"{Path(folder).name}: {energy_line(record['telemetry'])}")
    print(f"{Path(folder).name}: {stability_line(record.get('stability'))}")
PY
# `study`'s plan on this backend and machine (its peak is the one kept above; nothing runs): what a user of the
# rented machine would run next, and a check that the plan reads the GPU and its device count.
log "study all --plan on $backend ..."
l40sbench study all --backend "$backend" --plan >"$out/study-plan.txt"
cat "$out/study-plan.txt" >&2
l40sbench report "${results[@]}" l40s leadergpu-2017 --out "$out/report" >&2
cat "$out/report/report.md"
log "results: $out (report: $out/report/report.md)"
