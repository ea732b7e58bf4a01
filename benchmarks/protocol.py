"""The article's protocol for several bases, one after another, as a Markdown table with the peak.

Runs `l40sbench TASK --base B [ARGS...]` for each base (the CLI, exactly as a
user runs it), then prints one Markdown row per base from its result.json,
with the peak that same run measured (env.peak) beside the
times. Run it with nothing else on the machine. Behind docs/performance-log.md:
"Classification protocol on the stand-in" and "Detection at the test size, 128 px".

Usage:
  .venv/bin/python benchmarks/protocol.py classify --bases xception,inceptionv3,vgg19 -- --epochs 10
  .venv/bin/python benchmarks/protocol.py detect --bases ssd_resnet50_fpn,faster_rcnn_resnet50 -- --image-size 128 --epochs 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from l40sbench.core.text import format_duration
from l40sbench.core.utilisation import rates

HEADER = ("| base | input | total training | time per epoch | first epoch | steady (2..N) | epoch min / median / max "
          "| mean ms/image | images/s | p50 / p90 / p99 ms | accuracy | float32 matmul peak / conv GFLOP/s |")


def _accuracy(result: dict) -> str:
    accuracy = result["accuracy"]
    if result["task"] == "classify":
        return f"{accuracy['test_accuracy']:.3f}"
    return f"mAP@.5 {accuracy['map_50']:.3f}"


def row(result: dict) -> str:
    """One Markdown row: times, latency, accuracy, and the run's own peak (or an older run's calibration)."""
    train, inference = result["train"], result["inference"]
    matmul, conv = rates(result["env"])
    epochs = train["epoch_seconds"]
    cells = [
        result["base"], str(result["config"]["image_size"]), format_duration(train["total_seconds"]),
        format_duration(train["total_seconds"] / train["epochs"]), format_duration(train["first_epoch_seconds"]),
        format_duration(train["steady_epoch_seconds"]),
        f"{min(epochs):.1f} / {statistics.median(epochs):.1f} / {max(epochs):.1f} s",
        f"{inference['mean_ms']:.3f}", f"{inference['images_per_second']:.3f}",
        f"{inference['p50_ms']:.1f} / {inference['p90_ms']:.1f} / {inference['p99_ms']:.1f}",
        _accuracy(result), f"{matmul:.1f} / {conv:.1f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=("classify", "detect"))
    parser.add_argument("--bases", required=True, help="comma-separated bases, run in this order")
    parser.add_argument("--out", type=Path, default=Path("results/perf"), help="results go to OUT/TASK-BASE/")
    parser.add_argument("cli_args", nargs="*", help="after --: flags passed to every run")
    args = parser.parse_args()
    results = []
    for base in args.bases.split(","):
        out = args.out / f"{args.task}-{base}"
        command = [sys.executable, "-m", "l40sbench", args.task, "--base", base, *args.cli_args,
                   "--output-dir", str(out)]
        print("$ l40sbench", " ".join(command[3:]), file=sys.stderr, flush=True)
        if subprocess.run(command, stdout=subprocess.DEVNULL).returncode != 0:
            return 1
        results.append(json.loads((out / "result.json").read_text()))
    print(HEADER)
    print("|---" * HEADER.count(" | ") + "|---|")
    for result in results:
        print(row(result))
    env = results[0]["env"]
    print(f"\n{env['cpu']} ({env['cpu_count']} cores), TensorFlow {env['tensorflow']}, suite {env['suite_commit']}, "
          f"runs started {results[0]['env']['timestamp_utc']} to {results[-1]['env']['timestamp_utc']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
