"""docs/PERFORMANCE.md section 1: the article's classification protocol, one base after another.

Runs `l40sbench classify --base B --epochs 10 --batch-size 16` for each base
(the CLI, exactly as a user runs it), then prints one Markdown row per base
from its result.json, the calibration of that same run beside the times.
Run it with nothing else on the machine.

Usage: .venv/bin/python benchmarks/classify_protocol.py [--bases xception,inceptionv3,vgg19] [--out results/perf/section1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from l40sbench.report.tables import format_duration


def row(result: dict) -> str:
    train, inference, cal = result["train"], result["inference"], result["env"]["calibration"]
    epochs = train["epoch_seconds"]
    per_epoch = train["total_seconds"] / train["epochs"]
    return " | ".join([
        "", result["base"], str(result["config"]["image_size"]), format_duration(train["total_seconds"]),
        format_duration(per_epoch), format_duration(train["first_epoch_seconds"]),
        format_duration(train["steady_epoch_seconds"]),
        f"{min(epochs):.1f} / {statistics.median(epochs):.1f} / {max(epochs):.1f} s",
        f"{inference['mean_ms']:.3f}", f"{inference['images_per_second']:.3f}",
        f"{inference['p50_ms']:.1f} / {inference['p90_ms']:.1f} / {inference['p99_ms']:.1f}",
        f"{result['accuracy']['test_accuracy']:.3f}",
        f"{cal['matmul_gflops']:.1f} / {cal['conv_gflops']:.1f}", "",
    ]).strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bases", default="xception,inceptionv3,vgg19")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("results/perf/section1"))
    args = parser.parse_args()
    results = []
    for base in args.bases.split(","):
        out = args.out / base
        command = [sys.executable, "-m", "l40sbench", "classify", "--base", base, "--epochs", str(args.epochs),
                   "--batch-size", "16", "--output-dir", str(out)]
        print("$", " ".join(command[2:]), file=sys.stderr, flush=True)
        if subprocess.run(command).returncode != 0:
            return 1
        results.append(json.loads((out / "result.json").read_text()))
    print("| base | input | total training | time per epoch | first epoch | steady (2..N) | epoch min / median / max "
          "| mean ms/image | images/s | p50 / p90 / p99 ms | test acc. | calibration matmul / conv GFLOP/s |")
    print("|---" * 13 + "|")
    for result in results:
        print(row(result))
    env = results[0]["env"]
    print(f"\n{env['cpu']} ({env['cpu_count']} cores), TensorFlow {env['tensorflow']}, Keras {env['keras']}, "
          f"suite {env['suite_commit']}, {results[0]['env']['timestamp_utc']} to {results[-1]['env']['timestamp_utc']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
