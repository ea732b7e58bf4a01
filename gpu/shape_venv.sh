#!/usr/bin/env bash
# The GPU machine's shape on this CPU (../shared/GPU-MACHINE.md), for the GPU run's rehearsal: a fresh venv with
# jax, SciPy, OpenCV headless, nvidia-ml-py, matplotlib and the few small packages that machine has, and no
# TensorFlow, keras, plotly or l40sbench; beside it the wheels that travel there (gpu/wheels.sh, for
# this venv's Python). Made once, from the package registry; the long tier's rehearsal (tests/test_backends.py,
# gpu_run) reads it and never downloads:
#
#   gpu/shape_venv.sh [DIR]      # default build/gpu-shape (build/ is ignored): DIR/venv, DIR/wheels
#
# Versions: this checkout's venv's (the pins), not the GPU machine's own (jax 0.11.2, numpy 2.5 on Python 3.12
# there); the shape, not the versions, is what the rehearsal checks.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$repo/build/gpu-shape}"
project="$repo/.venv/bin/python"
[ -x "$project" ] || { echo "gpu/shape_venv.sh: run ./run.sh --version first (the pins come from .venv)" >&2; exit 2; }
version() { "$project" -c "import importlib.metadata as m; print(m.version('$1'))"; }
packages=()
for name in jax jaxlib numpy scipy opencv-python-headless nvidia-ml-py matplotlib absl-py rich h5py ml-dtypes \
            packaging typing-extensions; do
  packages+=("$name==$(version "$name" 2>/dev/null || echo missing)")
done
if printf '%s\n' "${packages[@]}" | grep -q '==missing'; then
  echo "gpu/shape_venv.sh: .venv lacks $(printf '%s\n' "${packages[@]}" | grep '==missing' | cut -d= -f1 | xargs)" >&2
  exit 2
fi
rm -rf "$dir/venv"
mkdir -p "$dir"
"$("$project" -c "import sys; print(sys._base_executable)")" -m venv "$dir/venv"  # the Python of .venv and of the --here wheels
"$project" -m uv pip install --quiet --python "$dir/venv/bin/python" "${packages[@]}"
bash "$repo/gpu/wheels.sh" --here "$dir/wheels"  # this venv's Python is this machine's
echo "gpu/shape_venv.sh: $dir/venv ($("$dir/venv/bin/python" --version)), wheels in $dir/wheels" >&2
