"""classify on every Keras backend side by side (docs/performance-log.md, "Keras backends side by side").

For each base, in rounds: `l40sbench classify` on tensorflow, then on jax (and torch with --torch), each in
its own process, the same flags (random weights: speed does not depend on them), and one peak per backend
kept for all the runs (L40SBENCH_PEAK_FILE) so every record carries the same calibration. The table: the
steady epoch (epochs 2..N) and the probe's mean ms per image on each backend, and their ratio to
tensorflow, the median over rounds. The float32 matmul peak each backend measured is printed beside them.

Usage: .venv/bin/python benchmarks/backends.py --out results/backends [--bases vgg19,xception,inceptionv3]
       [--image-size 96] [--epochs 3] [--limit 64] [--rounds 2] [--torch]
Nothing else may run on the machine meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(backend: str, base: str, args, out: Path, peak_file: Path) -> dict:
    folder = out / f"{base}-{backend}-{len(list(out.glob(f'{base}-{backend}-*')))}"
    command = [sys.executable, "-m", "l40sbench", "classify", "--backend", backend, "--base", base,
               "--epochs", str(args.epochs), "--image-size", str(args.image_size), "--limit", str(args.limit),
               "--weights", "none", "--output-dir", str(folder)]
    env = {**os.environ, "L40SBENCH_PEAK_FILE": str(peak_file)}
    subprocess.run(command, check=True, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record = json.loads((folder / "result.json").read_text())
    return {"steady_epoch_s": record["train"]["steady_epoch_seconds"], "ms_per_image": record["inference"]["mean_ms"],
            "peak_fp32_gflops": record["env"]["peak"]["matmul"]["float32"]["gflops"],
            "compile": record["devices"]["compile"], "backend_version": record["env"]["backend_version"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--bases", default="vgg19,xception,inceptionv3")
    parser.add_argument("--image-size", type=int, default=96)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--torch", action="store_true", help="torch too (l40sbench[torch] installed)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    backends = ("tensorflow", "jax") + (("torch",) if args.torch else ())
    results: dict = {}
    for base in args.bases.split(","):
        for round_ in range(args.rounds):
            for backend in backends:
                figures = run(backend, base, args, args.out, args.out / "peak.json")
                results.setdefault(base, {}).setdefault(backend, []).append(figures)
                print(f"{base} round {round_ + 1} {backend}: {figures['steady_epoch_s']:.3f} s/epoch, "
                      f"{figures['ms_per_image']:.2f} ms/image", flush=True)
    print(f"\nclassify --image-size {args.image_size} --epochs {args.epochs} --limit {args.limit} --weights none, "
          f"median of {args.rounds} round(s)")
    print("| base | backend | steady epoch s | ratio to tf | ms/image | ratio to tf | fp32 matmul peak GFLOP/s |")
    print("|---|---|---|---|---|---|---|")
    summary = {}
    for base, per in results.items():
        tf_epoch = statistics.median(r["steady_epoch_s"] for r in per["tensorflow"])
        tf_ms = statistics.median(r["ms_per_image"] for r in per["tensorflow"])
        for backend, rows in per.items():
            epoch = statistics.median(r["steady_epoch_s"] for r in rows)
            ms = statistics.median(r["ms_per_image"] for r in rows)
            peak = statistics.median(r["peak_fp32_gflops"] for r in rows)
            summary.setdefault(base, {})[backend] = {"steady_epoch_s": epoch, "ms_per_image": ms,
                                                     "epoch_over_tf": epoch / tf_epoch, "ms_over_tf": ms / tf_ms,
                                                     "peak_fp32_gflops": peak, "compile": rows[0]["compile"]}
            print(f"| {base} | {backend} | {epoch:.3f} | {epoch / tf_epoch:.2f} | {ms:.2f} | {ms / tf_ms:.2f} | "
                  f"{peak:.1f} |")
    (args.out / "backends.json").write_text(json.dumps({"args": vars(args) | {"out": str(args.out)},
                                                        "summary": summary, "runs": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
