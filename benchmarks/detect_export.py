"""Saving the detection SavedModel: Model Garden's export module whole against the serving signature and
its weights alone (l40sbench.detect.garden.save_serving): docs/performance-log.md, "Saving the detection SavedModel".

Each base runs the product's own detect task (128 px, 2 images, 1 epoch) in a process of its own; where
the run saves, this script saves both ways in turn, times each, loads both and runs their signatures on
the same image: the largest difference of every output. The peak beside the times is the one the run
itself measured (env.peak).

Usage:
  .venv/bin/python benchmarks/detect_export.py [--bases ssd_resnet50_fpn,faster_rcnn_inception_v2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASES = ("ssd_resnet50_fpn", "faster_rcnn_resnet50", "faster_rcnn_inception_v2")


def child(base: str, out: Path) -> dict:
    import numpy as np
    import tensorflow as tf

    from l40sbench.detect import garden
    from l40sbench.detect.config import DetectConfig
    from l40sbench.detect.garden import SIGNATURE
    from l40sbench.harness.run import run_task

    figures: dict = {"base": base}
    records: list = []

    def both_ways(model, signatures, path: Path) -> None:
        module_dir, lean_dir = path.with_name("module"), path
        started = time.perf_counter()
        tf.saved_model.save(module_of[0], str(module_dir), signatures=signatures)
        figures["module_s"] = time.perf_counter() - started
        started = time.perf_counter()
        real_save(model, signatures, lean_dir)
        figures["signature_s"] = time.perf_counter() - started
        image = tf.constant(np.random.default_rng(0).integers(0, 256, (1, 96, 128, 3), dtype=np.uint8))
        a, b = (tf.saved_model.load(str(d)).signatures[SIGNATURE](image) for d in (module_dir, lean_dir))
        figures["max_abs_diff"] = max(float(tf.reduce_max(tf.abs(tf.cast(a[k], tf.float64) - tf.cast(b[k], tf.float64))))
                                      for k in a)
        figures["mb"] = {d.name: sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) / 1e6
                         for d in (module_dir, lean_dir)}

    real_save, real_serving = garden.save_serving, garden.serving
    module_of: list = []

    def serving(*args):
        made = real_serving(*args)
        module_of[:] = [made[0]]
        return made

    garden.save_serving, garden.serving = both_ways, serving
    config = DetectConfig(base=base, image_size=128, limit=2, batch_size=2, epochs=1, output_dir=out,
                          runtimes=("savedmodel",))
    run_task("detect", config, log=lambda line: None, save=records.append)
    peak = records[-1]["env"]["peak"]["matmul"]
    figures["peak_gflops"] = {p: peak[p]["gflops"] for p in peak}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bases", default=",".join(BASES))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as folder:
            print(json.dumps(child(args.child, Path(folder) / "run")))
        return
    rows = ["| base | module whole, s | signature and weights, s | ratio | largest output difference "
            "| size MB (whole / signature) | peak fp32 / bf16 GFLOP/s |", "|---|---|---|---|---|---|---|"]
    for base in args.bases.split(","):
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC  {base} ...", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, __file__, "--child", base], check=True, capture_output=True, text=True)
        f = json.loads(done.stdout.strip().splitlines()[-1])
        peak = f["peak_gflops"]
        rows.append(f"| {base} | {f['module_s']:.1f} | {f['signature_s']:.1f} | {f['module_s'] / f['signature_s']:.1f}x "
                    f"| {f['max_abs_diff']:.1e} | {f['mb']['module']:.0f} / {f['mb']['saved_model']:.0f} "
                    f"| {peak['float32']:.0f} / {peak.get('bfloat16', 0):.0f} |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
