"""Detection on this machine, with the peak beside every time: docs/performance-log.md: "Detection at 640 px", "The serving path", "Faster R-CNN: the second stage's region count", "Mixed precision for detection".

Each measurement is the product's own `l40sbench detect` command in a process of its own, one after
the other, nothing else running; every record carries the peak its own run measured (env.peak).

- 640 px ("Detection at 640 px", "The serving path"): each base, `--image-size 640 --limit L --epochs 2`: epoch 1 holds the
  tracing, epoch 2 is steady; the article's 240-image epoch is projected as 15 steady steps. Serving
  over the bare model call and the preprocess share come from the same runs (notes).
- Region count ("Faster R-CNN: the second stage's region count"): faster_rcnn_resnet50 at 128 px, the suite's TF1 second stage (300
  proposals, 64 sampled regions) against Model Garden's (1000, 512), set in the child before the
  run; the two in turn, `--pairs` times, epoch 2 compared.
- Precision ("Mixed precision for detection"): faster_rcnn_resnet50 at 128 px, fp32 and mixed_bfloat16 in turn.

Usage:
  .venv/bin/python benchmarks/detect_sections.py --out results/detect-sections [--skip 640,regions,precision]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from l40sbench.core.utilisation import rates

BASES = ("ssd_resnet50_fpn", "faster_rcnn_resnet50", "faster_rcnn_inception_v2")
ARTICLE_TRAIN_IMAGES = 240
MODEL_GARDEN_SECOND_STAGE = (1000, 512)  # its COCO config's test proposals and sampled regions per image
CHILD = ("import sys; import l40sbench.detect.bases as b; b.TF1_PROPOSALS, b.TF1_SECOND_STAGE_BATCH = {p}, {r}; "
         "from l40sbench.cli import main; sys.exit(main(sys.argv[1:]))")


def detect(out: Path, name: str, *args: str, second_stage: tuple[int, int] | None = None) -> dict:
    folder = out / name
    argv = ["detect", *args, "--out", str(folder), "--runtimes", "tf"]
    command = ([sys.executable, "-c", CHILD.format(p=second_stage[0], r=second_stage[1]), *argv] if second_stage
               else [sys.executable, "-m", "l40sbench", *argv])
    started = time.strftime("%H:%M:%S", time.gmtime())
    print(f"{started} UTC  {name}: {' '.join(argv)}", file=sys.stderr, flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return json.loads((folder / "result.json").read_text())


def _peak(record: dict) -> str:
    matmul, conv = rates(record["env"])
    bf16 = record["env"]["peak"]["matmul"].get("bfloat16", {}).get("gflops")
    return f"{matmul:.0f} / {bf16:.0f}" if bf16 else f"{matmul:.0f} / -"


def at_640(out: Path, limit: int) -> list[str]:
    rows = ["| base | steps/epoch | epoch 1 (tracing) | steady epoch | steady step | projected 240-image epoch "
            "| mean ms/image | p50 / p90 / p99 ms | serving / bare model | preprocess share "
            "| peak fp32 / bf16 GFLOP/s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for base in BASES:
        r = detect(out, f"640-{base}", "--base", base, "--image-size", "640", "--limit", str(limit), "--epochs", "2")
        steps, (first, steady) = r["model"]["steps_per_epoch"], r["train"]["epoch_seconds"]
        step = steady / steps
        i = r["inference"]
        rows.append(f"| {base} | {steps} | {first:.1f} s | {steady:.1f} s | {step:.1f} s "
                    f"| {step * ARTICLE_TRAIN_IMAGES / r['train']['batch_size']:.0f} s | {i['mean_ms']:.1f} "
                    f"| {i['p50_ms']:.1f} / {i['p90_ms']:.1f} / {i['p99_ms']:.1f} "
                    f"| {r['notes']['serving_over_model']:.3f} | {100 * r['notes']['preprocess_share']:.1f} % "
                    f"| {_peak(r)} |")
    return rows


def regions(out: Path, pairs: int, limit: int) -> list[str]:
    common = ("--base", "faster_rcnn_resnet50", "--image-size", "128", "--limit", str(limit), "--epochs", "2")
    rows = ["| pair | TF1 300/64: steady epoch | Model Garden 1000/512: steady epoch | ratio | peak fp32 / bf16 |",
            "|---|---|---|---|---|"]
    for pair in range(1, pairs + 1):
        tf1 = detect(out, f"regions-tf1-{pair}", *common)
        mg = detect(out, f"regions-mg-{pair}", *common, second_stage=MODEL_GARDEN_SECOND_STAGE)
        a, b = tf1["train"]["epoch_seconds"][1], mg["train"]["epoch_seconds"][1]
        rows.append(f"| {pair} | {a:.2f} s | {b:.2f} s | {b / a:.2f}x | {_peak(tf1)} |")
    return rows


def precision(out: Path) -> list[str]:
    common = ("--base", "faster_rcnn_resnet50", "--image-size", "128", "--limit", "4", "--batch-size", "2",
              "--epochs", "2")
    rows = ["| precision | compute / variable dtype | epoch 1 | epoch 2 | epoch 2 vs fp32 | mean ms/image "
            "| final loss | peak fp32 / bf16 |", "|---|---|---|---|---|---|---|---|"]
    base = None
    for name in ("fp32", "mixed_bfloat16"):
        r = detect(out, f"precision-{name}", *common, "--precision", name)
        first, second = r["train"]["epoch_seconds"]
        base = base or second
        rows.append(f"| {name} | {r['model']['compute_dtype']} / {r['model']['variable_dtype']} | {first:.2f} s "
                    f"| {second:.2f} s | {second / base:.2f}x | {r['inference']['mean_ms']:.1f} "
                    f"| {r['train']['loss_per_epoch'][-1]:.3f} | {_peak(r)} |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/detect-sections"))
    parser.add_argument("--limit-640", type=int, default=32, help="images per split at 640 px (default 32: 2 steps)")
    parser.add_argument("--limit-regions", type=int, default=16, help="images per split for the region runs")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--skip", default="", help="comma list of 640, regions, precision")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    sections = {"640": lambda: at_640(args.out, args.limit_640),
                "regions": lambda: regions(args.out, args.pairs, args.limit_regions),
                "precision": lambda: precision(args.out)}
    for name, run in sections.items():
        if name not in skip:
            print(f"\n### {name}\n" + "\n".join(run()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
