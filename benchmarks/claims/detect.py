"""Claims on detection: a step and an image at 640 px, the serving signature against the bare model, the second
stage's region count, mixed bfloat16, and how the SavedModel is saved."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.claims.figures import figure, in_child, kept_peak, records, suite

ARTICLE_TRAIN_IMAGES = 240
MODEL_GARDEN_SECOND_STAGE = (1000, 512)  # its COCO config's test proposals and sampled regions per image


def _detect(folder: Path, *flags: str) -> dict:
    suite(["detect", *flags, "--runtimes", "tf", "--output-dir", str(folder)])
    return records(folder)[0]


def at_640(sizes: dict) -> dict:
    """Each detector as a user runs it, `--epochs 2` (epoch 1 holds the tracing, epoch 2 is steady): the steady
    step, the article's epoch projected from it, the probe's mean per image, and serving over the bare model."""
    out: dict = {}
    with tempfile.TemporaryDirectory() as work:
        for base in sizes["bases"]:
            r = _detect(Path(work) / base, "--base", base, "--image-size", str(sizes["size"]), "--limit",
                        str(sizes["limit"]), "--batch-size", str(sizes["batch"]), "--epochs", "2")
            step = r["train"]["epoch_seconds"][1] / r["model"]["steps_per_epoch"]
            out[base] = (step, step * ARTICLE_TRAIN_IMAGES / r["train"]["batch_size"], r["inference"]["times_ms"],
                         r["notes"]["serving_over_model"])
    epochs, serving = [o[1] for o in out.values()], [o[3] for o in out.values()]
    return {**{f"step_{b}": figure([o[0]], "s") for b, o in out.items()},
            **{f"image_{b}": figure([t / 1000 for t in o[2]], "s") for b, o in out.items()},
            "epoch_low": figure([min(epochs)], "s"), "epoch_high": figure([max(epochs)], "s"),
            "serving": figure(serving, "x"), "serving_low": figure([min(serving)], "x"),
            "serving_high": figure([max(serving)], "x"), "labels": {"batch": str(sizes["batch"])}}


def second_stage(proposals: int, regions: int, argv: list[str]) -> int:
    """In a child: the suite's CLI with the two-stage detectors' second stage set to (proposals, regions)."""
    import l40sbench.detect.bases as bases
    from l40sbench.cli import main

    bases.TF1_PROPOSALS, bases.TF1_SECOND_STAGE_BATCH = proposals, regions
    return main(argv)


def regions(sizes: dict) -> dict:
    """faster_rcnn_resnet50 with the suite's second stage and with Model Garden's, set in the child before the
    run, in turns: epoch 2 and the mean per image compared."""
    flags = ["detect", "--base", "faster_rcnn_resnet50", "--image-size", str(sizes["size"]), "--limit",
             str(sizes["limit"]), "--batch-size", "2", "--epochs", "2", "--runtimes", "tf"]
    step, image = [], []
    with tempfile.TemporaryDirectory() as work:
        for pair in range(sizes["pairs"]):
            got = []
            for name, stage in (("tf1", (300, 64)), ("garden", MODEL_GARDEN_SECOND_STAGE)):
                folder = Path(work) / f"{name}-{pair}"
                code = in_child("benchmarks.claims.detect:second_stage", *stage, [*flags, "--output-dir", str(folder)],
                                env=kept_peak())
                assert code == 0, f"detect with the second stage {stage} exited {code}"
                got.append(records(folder)[0])
            tf1, garden = got
            step.append(garden["train"]["epoch_seconds"][1] / tf1["train"]["epoch_seconds"][1])
            image.append(garden["inference"]["mean_ms"] / tf1["inference"]["mean_ms"])
    return {"step": figure(step, "x"), "image": figure(image, "x")}


def precision(sizes: dict) -> dict:
    """faster_rcnn_resnet50 at fp32 and mixed_bfloat16 in turns, as a user runs them."""
    flags = ["--base", "faster_rcnn_resnet50", "--image-size", str(sizes["size"]), "--limit", str(sizes["limit"]),
             "--batch-size", "2", "--epochs", "2"]
    epoch, image = [], []
    with tempfile.TemporaryDirectory() as work:
        for pair in range(sizes["pairs"]):
            fp32, bf16 = (_detect(Path(work) / f"{p}-{pair}", *flags, "--precision", p)
                          for p in ("fp32", "mixed_bfloat16"))
            epoch.append(bf16["train"]["epoch_seconds"][1] / fp32["train"]["epoch_seconds"][1])
            image.append(bf16["inference"]["mean_ms"] / fp32["inference"]["mean_ms"])
    return {"epoch": figure(epoch, "x"), "image": figure(image, "x")}


def both_saves(base: str) -> dict:
    """In a child: the product's detect task (128 px, 2 images, 1 epoch) where the run saves its SavedModel, saved
    both ways in turn (Model Garden's export module whole; the serving signature and its weights alone, as the
    product saves), each timed; both loaded and run on one image: the largest difference of any output."""
    import numpy as np
    import tensorflow as tf

    from l40sbench.detect import garden
    from l40sbench.detect.config import DetectConfig
    from l40sbench.harness.run import run_task

    figures: dict = {}
    real_save, real_serving, module_of = garden.save_serving, garden.serving, []

    def serving(*args):
        made = real_serving(*args)
        module_of[:] = [made[0]]
        return made

    def both_ways(model, signatures, path: Path) -> None:
        module_dir = path.with_name("module")
        started = time.perf_counter()
        tf.saved_model.save(module_of[0], str(module_dir), signatures=signatures)
        figures["module_s"] = time.perf_counter() - started
        started = time.perf_counter()
        real_save(model, signatures, path)
        figures["signature_s"] = time.perf_counter() - started
        image = tf.constant(np.random.default_rng(0).integers(0, 256, (1, 96, 128, 3), dtype=np.uint8))
        a, b = (tf.saved_model.load(str(d)).signatures[garden.SIGNATURE](image) for d in (module_dir, path))
        figures["difference"] = max(float(tf.reduce_max(tf.abs(tf.cast(a[k], tf.float64) - tf.cast(b[k], tf.float64))))
                                    for k in a)

    garden.save_serving, garden.serving = both_ways, serving
    with tempfile.TemporaryDirectory() as work:
        config = DetectConfig(base=base, image_size=128, limit=2, batch_size=2, epochs=1, output_dir=Path(work) / "run",
                              runtimes=("savedmodel",))
        run_task("detect", config, log=lambda line: None, save=lambda record: None)
    return figures


def export(sizes: dict) -> dict:
    """Each detector in a process of its own (both_saves)."""
    got = [in_child("benchmarks.claims.detect:both_saves", base, env=kept_peak()) for base in sizes["bases"]]
    ratios = [g["module_s"] / g["signature_s"] for g in got]
    module, lean = [g["module_s"] for g in got], [g["signature_s"] for g in got]
    return {"ratio": figure(ratios, "x"), "ratio_low": figure([min(ratios)], "x"),
            "ratio_high": figure([max(ratios)], "x"), "module_low": figure([min(module)], "s"),
            "module_high": figure([max(module)], "s"), "signature_low": figure([min(lean)], "s"),
            "signature_high": figure([max(lean)], "s"), "difference": figure([max(g["difference"] for g in got)], "x")}
