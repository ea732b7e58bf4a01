"""What the GPU check costs a command, and what keeping its answer saves, with the stand-in CUDA driver
(tests/standin/libcuda.c), the host's matmul rate measured before and after, written as one record:

    .venv/bin/python benchmarks/gpu_check_cost.py [--rounds 5] [--output benchmarks/results/gpu_check_cost.json]

Figures (seconds, each a median over --rounds, with the rounds kept):
- run_sh_query: run.sh's one driver query (cuda_driver.py as a file, --count), a fresh interpreter;
- driver_view: the gate's driver query (a child, `python -m l40sbench.backends.cuda_driver`), from this process;
- probe_tensorflow / probe_jax: one backend check in its child (the framework's import and its view), what a
  GPU command pays where no answer is kept;
- kept_answer: the gate's ask() reading a kept good answer instead (the framework then imported once, by
  the command itself);
- stuck_driver: a driver that never answers, until the gate gives up (the limit, 10 s; one round).
Needs a C compiler for the stand-in. Nothing else may run meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.gpu_refusal import standin_driver  # noqa: E402
from l40sbench.peak.host import matmul_gflops as host_matmul_gflops  # noqa: E402


def _seconds(call, rounds: int) -> dict:
    each = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        each.append(time.perf_counter() - started)
    return {"median_s": statistics.median(each), "rounds_s": each, "n": rounds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs of each figure (default: 5)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "gpu_check_cost.json")
    args = parser.parse_args()
    from l40sbench.backends import cuda_driver, gpu_gate
    from l40sbench.core.env import fingerprint

    with tempfile.TemporaryDirectory() as work:
        driver = standin_driver(Path(work))
        if driver is None:
            print("gpu_check_cost: no C compiler for the stand-in driver", file=sys.stderr)
            return 2
        env = {"L40SBENCH_CUDA_DRIVER": str(driver), "TF_CPP_MIN_LOG_LEVEL": "2"}
        before = host_matmul_gflops()
        figures = {}
        with mock.patch.dict(os.environ, env):
            script = [sys.executable, str(REPO / "l40sbench/backends/cuda_driver.py"), "--count"]
            figures["run_sh_query"] = _seconds(lambda: subprocess.run(script, check=True, capture_output=True),
                                               args.rounds)

            def view():
                cuda_driver.forget()
                assert cuda_driver.view().devices, "the stand-in shows no GPU"

            figures["driver_view"] = _seconds(view, args.rounds)
            for backend in ("tensorflow", "jax"):
                figures[f"probe_{backend}"] = _seconds(
                    lambda b=backend: gpu_gate.answer(b, gpu_gate.start_probe(b)), args.rounds)
            shown = cuda_driver.view()
            with mock.patch.object(sys, "prefix", work):  # a kept answer, as a good GPU check leaves it
                key = gpu_gate._check_key("tensorflow", shown)
                (Path(work) / gpu_gate.CHECK_FILE).write_text(json.dumps(
                    {key: {"version": "kept", "view": gpu_gate.View(1, None, "12.5.1").to_dict()}}))
                figures["kept_answer"] = _seconds(lambda: gpu_gate.ask("tensorflow", shown), args.rounds)
        with mock.patch.dict(os.environ, {**env, "STANDIN_HANG": "1"}):
            cuda_driver.forget()
            figures["stuck_driver"] = _seconds(lambda: cuda_driver.view(), 1)
            cuda_driver.forget()
        after = host_matmul_gflops()
    record = {"benchmark": "gpu_check_cost", "command": "benchmarks/gpu_check_cost.py --rounds " + str(args.rounds),
              "env": fingerprint(), "calibration": {"numpy_float32_1024_matmul_gflops": {"before": before,
                                                                                       "after": after}},
              "figures": figures}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    for name, figure in figures.items():
        print(f"{name:18} {figure['median_s']:8.3f} s  (n={figure['n']})")
    print(f"host: NumPy float32 1024 matmul {before:.0f} GFLOP/s before, {after:.0f} after; record: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
