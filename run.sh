#!/usr/bin/env bash
# Bootstraps .venv on first use (and whenever pyproject.toml changes), then runs
# the l40sbench CLI with the given arguments. `./run.sh test` runs the merge tier of the tests (what CI runs);
# `./run.sh test --full` adds the long tier; `./run.sh test --benchmarks` the speed benchmarks and the CI gate.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
# The Python versions every pinned package publishes wheels for, newest first; pyproject.toml's
# requires-python says the same (tests/test_cli.py checks that the two agree).
supported=(3.13 3.12 3.11)
uv_version=0.13.8  # the installer run.sh uses (not a dependency of l40sbench)

version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }

pick_python() {  # $PYTHON if set, else the newest supported interpreter on the PATH that runs
  local candidates=() candidate version
  if [ -n "${PYTHON:-}" ]; then candidates=("$PYTHON"); else
    for version in "${supported[@]}"; do candidates+=("python$version"); done
    candidates+=(python3)
  fi
  for candidate in "${candidates[@]}"; do
    version="$(version_of "$candidate")" || continue
    for want in "${supported[@]}"; do
      if [ "$version" = "$want" ]; then echo "$candidate"; return 0; fi
    done
  done
  return 1
}

# Which build of TensorFlow and jax: their CUDA builds (pyproject.toml's `gpu` extra) where the CUDA driver shows a
# GPU, else the CPU builds. One driver query (l40sbench/backends/cuda_driver.py as a file, stdlib only, so it runs
# before the venv holds l40sbench), abandoned after 10 s (cuda_driver.LIMIT_SECONDS): a stuck driver never
# answers. Once the venv holds a build, a call that sees no GPU (a login node sharing the venv, a driver that does
# not answer) keeps it and says so; a driver that shows a GPU to a CPU venv installs the GPU build.
# L40SBENCH_BUILD=gpu or cpu forces one; the install stamp holds the choice, so a change reinstalls.
stamp="$venv/.l40sbench-pyproject.sha256"
driver_gpus() {  # $1: a python to ask with; prints how many GPUs the driver shows, or "timeout"
  local out pid i
  out="$(mktemp)"
  "$1" "$here/l40sbench/backends/cuda_driver.py" --count >"$out" 2>/dev/null &
  pid=$!
  disown "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    [ -s "$out" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -s "$out" ]; then head -n 1 "$out"
  elif kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null; echo timeout
  else echo 0
  fi
  rm -f "$out"
}
held="$(sed -n 's/.*, \(gpu\|cpu\) build$/\1/p' "$stamp" 2>/dev/null || true)"
asker="$venv/bin/python"
[ -x "$asker" ] || asker="$(pick_python || echo python3)"
case "${L40SBENCH_BUILD:-auto}" in
  gpu|cpu) build="$L40SBENCH_BUILD"; why="L40SBENCH_BUILD=$L40SBENCH_BUILD" ;;
  auto)
    shown="$(driver_gpus "$asker")"
    if [ "$shown" = timeout ]; then
      build="${held:-cpu}"
      echo "run.sh: the CUDA driver gave no answer within 10 s (a stuck driver?); $([ -n "$held" ] && echo "keeping the $held build this venv holds" || echo "installing the CPU build") (L40SBENCH_BUILD=gpu or cpu chooses)" >&2
      why="the CUDA driver gave no answer within 10 s"
      export L40SBENCH_DRIVER_NO_ANSWER=1  # the command's own check takes this answer instead of waiting again
    elif [ "${shown:-0}" -gt 0 ] 2>/dev/null; then
      build=gpu; why="the CUDA driver shows $shown GPU(s)"
    elif [ "$held" = gpu ]; then
      build=gpu; why="this venv holds the GPU build"
      echo "run.sh: no CUDA driver shows a GPU to this call; keeping the GPU build this venv holds (L40SBENCH_BUILD=cpu installs the CPU build)" >&2
    else
      build=cpu; why="no NVIDIA driver shows a GPU (L40SBENCH_BUILD=gpu installs the GPU build anyway)"
    fi ;;
  *) echo "run.sh: L40SBENCH_BUILD must be gpu, cpu or auto; got ${L40SBENCH_BUILD}" >&2; exit 2 ;;
esac
extras="test,runtimes,loadgen,jax"
if [ "$build" = gpu ]; then
  extras="$extras,gpu"
  chosen="the GPU build (tensorflow[and-cuda] with CUDA and cuDNN wheels, jax[cuda12])"
else
  chosen="the CPU build (plain tensorflow and jaxlib, no CUDA wheels)"
fi
if [ -n "${L40SBENCH_INSTALL_DRY_RUN:-}" ]; then  # the choice and the command, nothing installed (tests/test_cli.py)
  echo "run.sh: $chosen: $why"
  echo "run.sh: would run: uv pip install --compile-bytecode -e \"$here[$extras]\""
  exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
  if ! python="$(pick_python)"; then
    found="${PYTHON:-python3}: $(version_of "${PYTHON:-python3}" || echo 'does not run')"
    echo "run.sh: needs Python ${supported[-1]} to ${supported[0]} (the versions TensorFlow 2.20 and every other pin publish wheels for); found ${found}. Set PYTHON=/path/to/python3.12 or install one of them." >&2
    exit 2
  fi
  echo "run.sh: creating $venv with $python (Python $(version_of "$python"))" >&2
  "$python" -m venv "$venv"
fi
# What the venv was installed from: the pins, and how (a changed recipe reinstalls, as a changed pin does).
recipe="uv $uv_version, bytecode compiled, $build build"
want="$(sha256sum "$here/pyproject.toml" | cut -d' ' -f1) $recipe"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "run.sh: installing l40sbench and its pinned dependencies into $venv (first run, pyproject.toml changed, or another build) ..." >&2
  echo "run.sh: $chosen: $why" >&2
  extras="$here[$extras]"
  # uv fetches and installs the same pins in parallel (about 16 s against pip's 133 s here, from the same
  # registry); pip does it where uv cannot be had or fails. Both compile every module to bytecode once, here
  # (pip does by default, uv when asked): where PYTHONDONTWRITEBYTECODE is set, as on these machines, an
  # uncompiled venv compiles TensorFlow's modules again in every process that imports it (docs/performance-log.md,
  # "The test suite on several workers").
  if ! { "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$uv_version" >&2 &&
         "$venv/bin/python" -m uv pip install --quiet --compile-bytecode --python "$venv/bin/python" -e "$extras" >&2; }; then
    echo "run.sh: uv $uv_version could not install; installing with pip instead ..." >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$extras" >&2
  fi
  echo "$want" > "$stamp"
fi

export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
if [ "${1:-}" = "test" ]; then
  shift
  cd "$here"
  # The report page's browser test (tests/test_report_page.py) drives Debian's chromium through its
  # chromium-driver; installed from Debian's packages where missing and this is root (CI), never a browser
  # download at run time. Elsewhere the browser test skips and says why.
  if [ "${1:-}" != "--benchmarks" ] && ! command -v chromedriver >/dev/null 2>&1 && [ "$(id -u)" = 0 ] &&
     command -v apt-get >/dev/null 2>&1; then
    echo "run.sh: installing Debian's chromium and chromium-driver for the report page's browser test ..." >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } \
      >/dev/null 2>&1 || echo "run.sh: chromium could not be installed: the browser test will skip" >&2
  fi
  # The merge tier (what CI runs) leaves out the tests marked `long`; --full runs them too.
  tier="not long"
  if [ "${1:-}" = "--full" ]; then tier="long or not long"; shift; fi
  if [ $# -gt 0 ] && [ "$1" != "--benchmarks" ]; then  # a selection of the user's: one plain pytest
    exec "$venv/bin/python" -m pytest --ignore=tests/benchmarks "$@"
  fi
  if [ $# -eq 0 ]; then
    # Lint and the layers contract first (seconds): pyproject.toml's [tool.ruff] and [tool.importlinter].
    "$venv/bin/ruff" check --quiet .
    "$venv/bin/lint-imports" --no-cache | sed -n '/^Contracts:/,$p'
    # The suite on four workers (pytest-xdist; a module's tests stay on one, slowest modules first), then the
    # tests marked serial alone: a LoadGen verdict taken while other workers run says nothing, and a test that
    # needs most of the host's memory (tf2onnx on a detector: 6.4 GB) was killed beside three others. Four on two cores:
    # much of a tiny run is single-threaded Python (tracing, Model Garden's builders, imports), which overlaps
    # (docs/performance-log.md, "The test suite on several workers"). No timed assertion runs in the first part; the speed gate is the
    # --benchmarks run below. The two parts share the tests' tiny result folders (tests/conftest.py), each made once.
    runs="$(mktemp -d "${TMPDIR:-/tmp}/l40sbench-test-runs-XXXXXX")"
    trap 'rm -rf "$runs"' EXIT
    export L40SBENCH_TEST_RUNS="$runs"
    # A worker that dies (the kernel's OOM killer, 2026-12-07) ends the run at once: a replaced worker once left
    # the controller waiting without a summary.
    "$venv/bin/python" -m pytest --ignore=tests/benchmarks -m "($tier) and not serial" -n 4 --dist loadfile \
      --no-loadscope-reorder --max-worker-restart 0
    # Every serial test is a long one (tests/conftest.py refuses any other): the merge tier has no serial part,
    # and skipping its empty session saves the 9 s pytest takes to collect and deselect the suite.
    if [ "$tier" != "not long" ]; then
      "$venv/bin/python" -m pytest --ignore=tests/benchmarks -m "($tier) and serial"
    fi
    exit 0
  fi
  # ./run.sh test --benchmarks [--update-baseline]: the speed benchmarks alone, their table,
  # then the gate's verdicts (tests/benchmarks/gate.py); the JSON stays under results/ci/.
  shift
  gate=()
  if [ "${1:-}" = "--update-baseline" ]; then gate=(--update); shift; fi
  mkdir -p results/ci
  json="results/ci/benchmarks-$(date -u +%Y%m%dT%H%M%SZ).json"
  bench=("$venv/bin/python" -m pytest -p no:cacheprovider --benchmark-enable --benchmark-sort=name
         --benchmark-columns=min,median,mean,stddev,rounds)
  "${bench[@]}" tests/benchmarks --benchmark-json="$json" "$@"
  if [ ${#gate[@]} -eq 0 ]; then
    # A timed figure that failed is measured once more, its benchmark alone; it fails only if both tries do.
    mapfile -t again < <("$venv/bin/python" tests/benchmarks/gate.py --retry-list "$json")
    if [ ${#again[@]} -gt 0 ]; then
      echo "run.sh: measuring once more what the gate would fail: ${again[*]}" >&2
      "${bench[@]}" --benchmark-json="${json%.json}-retry.json" "${again[@]}"
      exec "$venv/bin/python" tests/benchmarks/gate.py "$json" --retry "${json%.json}-retry.json"
    fi
  fi
  exec "$venv/bin/python" tests/benchmarks/gate.py "${gate[@]}" "$json"
fi
exec "$venv/bin/l40sbench" "$@"
