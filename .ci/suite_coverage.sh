#!/usr/bin/env bash
# Line coverage of l40sbench/ by a tier of the test suite, by module, child processes included (coverage's
# `patch = subprocess`): what docs/PERFORMANCE.md, "The test suite's time", quotes for the merge tier.
#
#   .ci/suite_coverage.sh [OUT.txt]          # the merge tier (what CI runs)
#   FULL=1 .ci/suite_coverage.sh [OUT.txt]   # both tiers
#   MISSING=1 ...                                   # with the line numbers not run, module by module
#
# Installs pyproject.toml's [coverage] extra into .venv first (not part of CI's install). Nothing else may run
# meanwhile if its time is to be quoted too.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
out="${1:-$repo/results/coverage.txt}"
./run.sh --version >/dev/null  # the venv, installed as run.sh installs it
.venv/bin/python -m uv pip install --quiet --python .venv/bin/python -e ".[coverage]" 2>/dev/null ||
  .venv/bin/python -m pip install --quiet -e ".[coverage]"
work="$(mktemp -d "${TMPDIR:-/tmp}/l40sbench-coverage-XXXXXX")"
trap 'rm -rf "$work"' EXIT
printf '[run]\nsource = l40sbench\nparallel = true\ndata_file = %s/.coverage\npatch = subprocess\n' "$work" > "$work/rc"
export COVERAGE_RCFILE="$work/rc" L40SBENCH_TEST_RUNS="$work/runs" TF_CPP_MIN_LOG_LEVEL=2
mkdir -p "$work/runs" "$(dirname "$out")"
tier="not long"
if [ -n "${FULL:-}" ]; then tier="long or not long"; fi
cov=(--cov=l40sbench --cov-config="$work/rc" --cov-append --cov-report= -p no:cacheprovider)
.venv/bin/python -m pytest --ignore=tests/benchmarks -m "($tier) and not serial" -n 4 --dist loadfile \
  --no-loadscope-reorder "${cov[@]}"
.venv/bin/python -m pytest --ignore=tests/benchmarks -m "($tier) and serial" "${cov[@]}" || [ $? -eq 5 ]
.venv/bin/python -m coverage combine --rcfile="$work/rc" >/dev/null 2>&1 || true
.venv/bin/python -m coverage report --rcfile="$work/rc" ${MISSING:+--show-missing} > "$out"
tail -n 1 "$out"
echo "suite_coverage: by module in $out" >&2
