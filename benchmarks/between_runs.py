"""How much two back-to-back runs of one command differ: the noise between runs that no run's own samples show.

Runs `l40sbench classify` (the stability tests' command, tests/test_stability_e2e.py, unless other flags
follow `--`) N times one after the other, then `compare` on each consecutive pair at the default tolerance.
Prints per run: the per-image mean and median, the guard's bursts and verdict, the run's float32 matmul
peak (calibration); per pair: new / baseline of the mean and the median with their 95 % intervals and
compare's verdict. Behind docs/PERFORMANCE.md, "Two runs of one command". Run it with nothing else on the
machine.

Usage:
  .venv/bin/python benchmarks/between_runs.py --runs 6
  .venv/bin/python benchmarks/between_runs.py --runs 4 -- --base vgg19 --limit 8 --epochs 2 --weights none
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT = ["--base", "vgg19", "--limit", "24", "--batch-size", "4", "--epochs", "2", "--weights", "none",
           "--image-size", "96"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("flags", nargs="*", help="classify flags in place of the default command (after --)")
    args = parser.parse_args(argv)
    flags = args.flags or DEFAULT
    root = Path(tempfile.mkdtemp(prefix="between-runs-"))
    folders = []
    for i in range(args.runs):
        out = root / f"run{i + 1}"
        subprocess.run([sys.executable, "-m", "l40sbench", "classify", *flags, "--output-dir", str(out)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        record = json.loads((out / "result.json").read_text())
        inference, stability = record["inference"], record["stability"]
        bursts = ", ".join(f"{b['gflops']:.0f}" for b in stability["speed"]["bursts"])
        print(f"run {i + 1}: mean {inference['mean_ms']:.2f} ms, median {inference['p50_ms']:.2f} ms "
              f"(n {inference['images_timed']}); bursts {bursts} GFLOP/s; {stability['verdict']}; "
              f"peak {record['env']['peak']['matmul']['float32']['gflops']:.0f} GFLOP/s", flush=True)
        folders.append(out)
    for i, (base, new) in enumerate(zip(folders, folders[1:])):
        result = subprocess.run([sys.executable, "-m", "l40sbench", "compare", str(base), str(new)],
                                capture_output=True, text=True)
        for line in result.stdout.splitlines():
            if "| inference ms/image" in line or "| p50 ms" in line:
                cells = [c.strip() for c in line.split("|")]
                print(f"runs {i + 1}->{i + 2}: {cells[1]}: new/baseline {cells[4]} ({cells[5]}): {cells[6][:40]}")
        print(f"runs {i + 1}->{i + 2}: compare exit {result.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
