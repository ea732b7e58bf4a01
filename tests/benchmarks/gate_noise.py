"""docs/performance-log.md, "The CI speed gate": how far the gated figures move between CI-style runs.

Runs the benchmark suite (`pytest tests/benchmarks`, as `./run.sh test
--benchmarks` does) RUNS times under the given environment, keeps each JSON,
and prints per figure the value of every run, its spread, and each value as a
multiple of the committed baseline, then the gate's verdict on every run.

Usage:
  .venv/bin/python tests/benchmarks/gate_noise.py --runs 5 --label default
  .venv/bin/python tests/benchmarks/gate_noise.py --runs 2 --label avx2 --env ONEDNN_MAX_CPU_ISA=AVX2
  .venv/bin/python tests/benchmarks/gate_noise.py --runs 1 --label avx2-slow --env ONEDNN_MAX_CPU_ISA=AVX2 \
      --env L40SBENCH_BENCH_SLOWDOWN=1.5
  .venv/bin/python tests/benchmarks/gate.py --update results/ci/noise-default-*.json   # a baseline from such runs
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks import gate  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--label", default="default", help="names the JSON files results/ci/noise-LABEL-N.json")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--analyse-only", action="store_true", help="read the JSON files of earlier runs, run nothing")
    args = parser.parse_args()
    env = dict(os.environ, **dict(item.split("=", 1) for item in args.env))
    out = Path("results/ci")
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for index in range(1, args.runs + 1):
        path = out / f"noise-{args.label}-{index}.json"
        if args.analyse_only:
            runs.append(json.loads(path.read_text()))
            continue
        command = [sys.executable, "-m", "pytest", "tests/benchmarks", "-q", "-p", "no:cacheprovider",
                   "--benchmark-enable", f"--benchmark-json={path}"]
        print(f"run {index}/{args.runs} ({' '.join(args.env) or 'default environment'}) ...", file=sys.stderr, flush=True)
        if subprocess.run(command, env=env, stdout=subprocess.DEVNULL).returncode != 0:
            print(f"benchmark run {index} failed", file=sys.stderr)
            return 1
        runs.append(json.loads(path.read_text()))
    baseline = json.loads(gate.BASELINE.read_text()) if gate.BASELINE.is_file() else {"figures": {}}
    per_run = [gate.gated_figures(results) for results in runs]
    print(f"| figure ({args.label}: {' '.join(args.env) or 'default'}) | " + " | ".join(
        f"run {i}" for i in range(1, len(runs) + 1)) + " | max / min | x baseline (min..max) |")
    print("|---" * (len(runs) + 3) + "|")
    for name in sorted(per_run[0]):
        values = [figures[name]["value"] for figures in per_run]
        known = baseline["figures"].get(name)
        times = f"{min(values) / known:.2f}..{max(values) / known:.2f}" if known else "-"
        print(f"| {name} | " + " | ".join(f"{v:.4g}" for v in values) + f" | {max(values) / min(values):.3f} | {times} |")
    conv_rates = [statistics.median(gate.calibration_rates(results)) for results in runs]
    print(f"\n{runs[0]['machine_info'].get('cpu', {}).get('brand_raw', '?')}; calibration convolution per run "
          f"(median over the benchmarks): {', '.join(f'{rate:.1f}' for rate in conv_rates)} GFLOP/s")
    for index, results in enumerate(runs, start=1):
        failed = [v.name for v in gate.verdicts(results, baseline) if not v.ok]
        print(f"run {index}: gate {'FAILS on ' + ', '.join(failed) if failed else 'passes'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
