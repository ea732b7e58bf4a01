"""One quiet and one noisy run of the same command, their stability verdicts, and what the guard cost each.

Runs `l40sbench classify` (the tests' tiny vgg19 at 96 px unless other flags follow `--`) twice as a user
does: once on a quiet machine, once with `--busy` processes spinning on the cores from the end of the first
epoch to the end of the run. Prints for each: the verdict line, the guard's bursts (moment, GFLOP/s, seconds)
and their total cost against the run's wall time, and the run's own peak (calibration). Behind
docs/PERFORMANCE.md, "The stability guard". Run it with nothing else on the machine.

Usage:
  .venv/bin/python benchmarks/stability_examples.py --busy 2
  .venv/bin/python benchmarks/stability_examples.py -- --base xception --epochs 10
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT = ["--base", "vgg19", "--image-size", "96", "--limit", "8", "--batch-size", "4", "--epochs", "3",
           "--weights", "none"]


def run(flags: list[str], out: Path, busy: int) -> tuple[dict, float]:
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "l40sbench", "classify", *flags, "--output-dir", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    spinners = []
    for line in process.stderr:
        if busy and not spinners and re.match(r"epoch 1/\d+:", line):
            spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    process.wait()
    for spinner in spinners:
        spinner.kill()
    return json.loads((out / "result.json").read_text()), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2)
    parser.add_argument("flags", nargs="*", help="classify flags after --")
    args = parser.parse_args()
    flags = args.flags or DEFAULT

    from l40sbench.core.stability import line
    from l40sbench.core.utilisation import rates

    with tempfile.TemporaryDirectory() as scratch:
        for name, busy in (("quiet", 0), ("noisy", args.busy)):
            record, wall = run(flags, Path(scratch) / name, busy)
            bursts = record["stability"]["speed"]["bursts"]
            cost = sum(b["seconds"] for b in bursts)
            print(f"## {name} ({busy} spinning processes)" if busy else f"## {name}")
            print(f"calibration: float32 matmul peak {rates(record['env'])[0]:.1f} GFLOP/s")
            print(line(record["stability"]))
            print("bursts: " + ", ".join(f"{b['moment']} {b['gflops']:.0f} GFLOP/s in {b['seconds']:.2f} s"
                                         for b in bursts))
            print(f"guard cost: {cost:.2f} s of a {wall:.1f} s run ({100 * cost / wall:.1f} %)")
            print()


if __name__ == "__main__":
    main()
