"""Does timing a sweep's steps in windows of K between two syncs change the step figure on this CPU? The same
compiled step of one configuration, timed in turns in one process: every step synced (the old clock) and
windows of K steps (the sweep's clock now), `rounds` rounds of `steps` steps each. Prints each arm's median
step, their ratio and the per-round ratios' spread, with the float32 matmul peak of the same run for
calibration. On a GPU the windows let the host's dispatch overlap the device's work; on a CPU, which
computes as it dispatches, the two should agree. Behind docs/PERFORMANCE.md, "Sweep steps in windows".
Run it with nothing else on the machine.

Usage:
  .venv/bin/python benchmarks/sweep_windows.py --backend jax --model lenet --batch 8 --rounds 10 --steps 50
"""

from __future__ import annotations

import argparse
import os
import statistics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="jax", choices=("jax", "torch"))
    parser.add_argument("--model", default="lenet")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    os.environ["KERAS_BACKEND"] = args.backend

    import keras

    from l40sbench.backends import load
    from l40sbench.core.timing import time_batches, time_calls
    from l40sbench.peak.measure import measure
    from l40sbench.synthetic.job import Job, StepSettings, window_steps
    from l40sbench.synthetic.models import MODELS
    from l40sbench.synthetic.worker import _optimizer

    kernels = load(args.backend)
    sync = kernels.sync()
    peak = measure(sync, args.backend)
    float32 = next(p.gflops for p in peak.matmul if p.precision == "float32")
    job = Job(args.model, args.batch, 1, StepSettings(steps=args.steps, backend=args.backend))
    step, _, _, _ = kernels.sweep_step(MODELS.get(args.model), job, _optimizer("sgd", "fp32"),
                                       keras.losses.sparse_categorical_crossentropy)
    time_calls(lambda _: step(), range(10), sync=sync)
    k = window_steps(args.steps)
    synced, windowed, ratios = [], [], []
    for _ in range(args.rounds):
        each = time_calls(lambda _: step(), range(args.steps), sync=sync)
        windows = [w / k for w in time_batches(step, k, args.steps // k, sync=sync)]
        synced += each
        windowed += windows
        ratios.append(statistics.median(windows) / statistics.median(each))
    a, b = 1000 * statistics.median(synced), 1000 * statistics.median(windowed)
    print(f"calibration: float32 matmul peak {float32:.1f} GFLOP/s ({args.backend})")
    print(f"{args.model} batch {args.batch} on {args.backend}: median step {a:.3f} ms synced every step, {b:.3f} ms "
          f"in windows of {k} (windows / synced {b / a:.4f}); per-round ratios {min(ratios):.4f}-{max(ratios):.4f} "
          f"(median {statistics.median(ratios):.4f}, {args.rounds} rounds of {args.steps} steps)")


if __name__ == "__main__":
    main()
