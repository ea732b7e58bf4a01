#!/usr/bin/env bash
# The wheels the GPU machine lacks (keras, namex, optree, plotly, narwhals at this checkout's pins, for its Python 3.12 on
# x86_64 Linux), fetched here from the package registry into an ignored folder that the device tool carries:
#
#   gpu/wheels.sh [DIR]        # default build/gpu-wheels (build/ is ignored)
#   gpu/wheels.sh --here [DIR] # for this machine's Python instead, into DIR (default
#                                         # build/test-wheels); gpu/shape_venv.sh puts them beside its
#                                         # venv, where the long tier's rehearsal reads them
#
# then, on the GPU machine: WHEELS=build/gpu-wheels gpu/run.sh OUT (carry: build/gpu-wheels).
# About 13 MB (plotly 9.7 of it); the tree that travels must stay under 64 MiB (tests/test_gpu_run.py checks both).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$repo/.venv/bin/python}"
target=(--python-version 3.12 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
        --platform manylinux2014_x86_64)
if [ "${1:-}" = "--here" ]; then target=(); dir="${2:-$repo/build/test-wheels}"; else dir="${1:-$repo/build/gpu-wheels}"; fi
pin() { grep -o "\"$1==[^\";]*" "$repo/pyproject.toml" | head -n 1 | tr -d '"'; }
keras="$(pin keras)"
[ -n "$keras" ] || { echo "gpu/wheels.sh: no keras pin in pyproject.toml" >&2; exit 2; }
# namex and optree are keras' own dependencies, pinned through the venv that runs keras' tests here.
version() { "$python" -c "import importlib.metadata as m; print(m.version('$1'))"; }
mkdir -p "$dir"
# plotly (and its narwhals) draw the studies' report pages; without them the run writes report.md alone.
"$python" -m pip download --quiet --no-deps --only-binary=:all: "${target[@]}" \
  -d "$dir" "$keras" "namex==$(version namex)" "optree==$(version optree)" "$(pin plotly)" \
  "narwhals==$(version narwhals)"
ls -l "$dir" >&2
