"""The measured peaks, and how close classify and a sweep row run to them: docs/performance-log.md, "The measured peak".

Runs, one after another (nothing else may run on the machine meanwhile):
  1. `python -m l40sbench.peak` --repeats times: each precision's best and median
     matmul rate, the conv rate, and the theoretical figure where one is known;
  2. `l40sbench classify --base xception --epochs 2` (the stand-in, native 299 px);
  3. `l40sbench synthetic --models resnet50 --batch-sizes 32` (training), and the
     same in inference mode;
and prints Markdown tables of the peaks and of each run's utilisation, read
from the runs' own result.json (each run measured its own peak at its start).

Usage:
  .venv/bin/python benchmarks/utilisation.py --out results/utilisation [--repeats 3] [--steps 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _run(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=HERE, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def peak_rows(repeats: int) -> list[str]:
    rows = ["| run | float32 best / median GFLOP/s (n) | bfloat16 best / median GFLOP/s (n) | 3x3 conv float32 best / "
            "median | theoretical float32 |", "|---|---|---|---|---|"]
    for index in range(1, repeats + 1):
        peak = json.loads(_run("-m", "l40sbench.peak"))
        cells = []
        for precision in ("float32", "bfloat16"):
            p = peak["matmul"].get(precision)
            cells.append(f"{p['gflops']:.1f} / {p['median_gflops']:.1f} ({p['matmul_n']})" if p else "-")
        theory = peak["theoretical_float32_gflops"]
        cells.append(f"{peak['conv_float32_gflops']:.1f} / {peak['conv_float32_median_gflops']:.1f}")
        cells.append(f"{theory:.0f}" if theory else peak["theoretical_basis"])
        rows.append(f"| {index} | " + " | ".join(cells) + " |")
    return rows


def run_rows(out: Path, steps: int) -> list[str]:
    classify = out / "classify_xception"
    _run("-m", "l40sbench", "classify", "--base", "xception", "--epochs", "2", "--output-dir", str(classify))
    sweeps = {mode: out / f"sweep_resnet50_{mode}" for mode in ("train", "inference")}
    for mode, folder in sweeps.items():
        _run("-m", "l40sbench", "synthetic", "--models", "resnet50", "--batch-sizes", "32", "--mode", mode,
             "--warmup-steps", "2", "--steps", str(steps), "--output-dir", str(folder))
    rows = ["| run | peak used (GFLOP/s) | forward GFLOP/image | training: achieved GFLOP/s, utilisation | "
            "inference: achieved GFLOP/s, utilisation |", "|---|---|---|---|---|"]
    record = json.loads((classify / "result.json").read_text())
    u = record["utilisation"]
    rows.append(f"| classify xception 299 px, 2 epochs, batch 16, base frozen | {u['peak']} ({u['peak_gflops']:.1f}) | "
                f"{u['forward_gflops_per_image']:.2f} | {u['train_achieved_gflops']:.1f}, "
                f"**{100 * u['train']:.1f} %** ({u['train_flops_per_image'].split(' (')[0]}) | "
                f"{u['inference_achieved_gflops']:.1f}, **{100 * u['inference']:.1f} %** |")
    for mode, folder in sweeps.items():
        (row,) = json.loads((folder / "result.json").read_text())["rows"]
        peak = json.loads((folder / "result.json").read_text())["env"]["peak"]["matmul"]["float32"]["gflops"]
        achieved = f"{row['achieved_tflops'] * 1e3:.1f}, **{100 * row['utilisation']:.1f} %**"
        cells = (achieved, "-") if mode == "train" else ("-", achieved)
        rows.append(f"| sweep resnet50 224 px, batch 32, {steps} steps ({mode}) | {row['utilisation_peak']} "
                    f"({peak:.1f}) | {row['gflops_per_image']:.2f} | {cells[0]} | {cells[1]} |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    print("\n".join(peak_rows(args.repeats)), flush=True)
    print()
    print("\n".join(run_rows(args.out, args.steps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
