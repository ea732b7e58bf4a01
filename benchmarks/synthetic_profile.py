"""Where a synthetic training step's time goes on the CPU: oneDNN primitives by kind, and the rest.

Behind docs/performance-log.md, "Synthetic sweeps" (utilisation). Runs the sweep's own
child worker for one configuration with ONEDNN_VERBOSE=1, sums the execution
time oneDNN reports for each primitive kind, direction and implementation
(convolution forward / backward-data / backward-weights, reorders, ...) over
the warm-up and timed steps, and prints each as a share of that total. The
times do not add up to the step: TensorFlow runs independent ops side by side
on the two cores (inter-op parallelism), so op wall times overlap, and the
first step pays for creating each primitive. The shares say which kernels the
step spends its time in; benchmarks/synthetic_vs_fit.py measures the step.

Usage:
  .venv/bin/python benchmarks/synthetic_profile.py --model resnet50 --batch 32 --steps 3
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

from l40sbench.core import child
from l40sbench.synthetic.job import Job, StepSettings
from l40sbench.synthetic.worker import ROW_MARKER


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--mode", default="train", choices=("train", "inference"))
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    job = Job(args.model, args.batch, 1, StepSettings(mode=args.mode, warmup_steps=1, steps=args.steps))
    outcome = child.run([sys.executable, "-m", "l40sbench.synthetic.worker", json.dumps(job.to_dict())],
                        timeout_s=3600, memory_limit_mb=None, env={**os.environ, "ONEDNN_VERBOSE": "1"})
    rows = [line for line in outcome.stdout.splitlines() if line.startswith(ROW_MARKER)]
    row = json.loads(rows[-1][len(ROW_MARKER):])
    if row["status"] != "ok":
        raise SystemExit(f"{row['status']}: {row['error']}")
    by_kind: dict = collections.defaultdict(float)
    for line in outcome.stdout.splitlines() + outcome.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 6 and fields[0] == "onednn_verbose" and "exec" in fields[:4]:
            at = fields.index("exec")
            kind, implementation, direction = fields[at + 2], fields[at + 3], fields[at + 4]
            try:
                by_kind[(kind, direction, implementation)] += float(fields[-1])
            except ValueError:
                continue
    total_ms = sum(by_kind.values())
    print(f"{args.model} batch {args.batch} {args.mode}: {row['images_per_second']:.2f} images/s with verbose logging "
          f"(step {row['step_ms_mean']:.0f} ms); oneDNN execution over {1 + args.steps} steps: {total_ms / 1e3:.1f} s")
    print("| primitive | direction | implementation | share of oneDNN time |")
    print("|---|---|---|---|")
    for (kind, direction, implementation), ms in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        if ms >= 0.005 * total_ms:
            print(f"| {kind} | {direction} | {implementation} | {100 * ms / total_ms:.1f} % |")
    directions: dict = collections.defaultdict(float)
    for (kind, direction, _), ms in by_kind.items():
        directions[f"{kind} {direction}"] += ms
    print("\nby direction: " + ", ".join(f"{name} {100 * ms / total_ms:.1f} %"
                                        for name, ms in sorted(directions.items(), key=lambda kv: -kv[1])
                                        if ms >= 0.005 * total_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
