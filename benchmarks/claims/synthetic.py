"""Claims on the synthetic sweep and on utilisation: the sweep's step against `model.fit`, 1 -> 2 devices, how close
runs come to the measured peak, and how steady that peak is."""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from benchmarks.claims.figures import figure, in_child, keras_clock, records, suite


def fit_images_per_second(model: str, batch: int, warmup: int, steps: int) -> float:
    """In a child: a plain Keras `model.fit` of the registry model on tensors in memory (SGD), each step timed by a
    callback, the warm-up steps dropped: the sweep's per-step figure without Keras' per-fit set-up."""
    import keras
    import tensorflow as tf

    from l40sbench.synthetic.models import MODELS

    spec = MODELS.get(model)
    network = spec.build()
    network.compile(optimizer=keras.optimizers.SGD(0.005), loss="sparse_categorical_crossentropy")
    x = tf.random.uniform([batch * (warmup + steps), spec.size, spec.size, 3])
    y = tf.random.uniform([batch * (warmup + steps)], maxval=1000, dtype=tf.int32)
    seconds: list[float] = []
    network.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0, callbacks=[keras_clock("train_batch", seconds)])
    return batch * steps / sum(seconds[warmup:])


def _sweep(folder: Path, model: str, batch: int, warmup: int, steps: int, devices: str, mode: str = "train") -> dict:
    """{devices: row} of `synthetic` run as a user runs it."""
    suite(["synthetic", "--models", model, "--batch-sizes", str(batch), "--warmup-steps", str(warmup), "--steps",
           str(steps), "--devices", devices, "--mode", mode, "--output-dir", str(folder)])
    (record,) = records(folder)
    return {row["devices"]: row for row in record["rows"]}


def sweep_vs_fit(sizes: dict) -> dict:
    """The sweep (`synthetic` at 1 and 2 devices, each configuration its own child) and a plain `model.fit` in a
    fresh process, in turns."""
    ratios, efficiency = [], []
    args = (sizes["model"], sizes["batch"], sizes["warmup"], sizes["steps"])
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(sizes["rounds"]):
            rows = _sweep(Path(work) / f"sweep-{round_}", *args, devices="1,2")
            fit = in_child("benchmarks.claims.synthetic:fit_images_per_second", *args)
            ratios.append(rows[1]["images_per_second"] / fit)
            efficiency.append(rows[2]["images_per_second"] / (2 * rows[1]["images_per_second"]))
    return {"ratio": figure(ratios, "x"), "efficiency": figure(efficiency, "x"),
            "labels": {"model": sizes["model"]}}


def utilisation(sizes: dict) -> dict:
    """`classify` and a `synthetic` sweep (train, then inference) as a user runs them, each record's utilisation
    against the run's peak; then the peak measured again in fresh processes (`python -m l40sbench.peak`)."""
    import json
    import subprocess
    import sys

    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "classify"
        suite(["classify", *sizes["classify"], "--output-dir", str(folder)])
        (record,) = records(folder)
        sweeps = {mode: _sweep(Path(work) / mode, sizes["model"], sizes["batch"], 2, sizes["steps"], "1", mode)[1]
                  for mode in ("train", "inference")}
    spread = []
    for _ in range(sizes["peaks"]):
        done = subprocess.run([sys.executable, "-m", "l40sbench.peak"], capture_output=True, text=True, check=True)
        fp32 = json.loads(done.stdout)["matmul"]["float32"]
        spread.append(fp32["gflops"] / fp32["median_gflops"])
    u = record["utilisation"]
    return {"classify_train": figure([u["train"]], "x"), "classify_inference": figure([u["inference"]], "x"),
            "sweep_train": figure([sweeps["train"]["utilisation"]], "x"),
            "sweep_inference": figure([sweeps["inference"]["utilisation"]], "x"),
            "peak_spread": figure(spread, "x"), "labels": {"classify": record["base"], "sweep": sizes["model"]},
            "peak_fp32": figure([record["env"]["peak"]["matmul"]["float32"]["gflops"]], "GFLOP/s"),
            "peak_median": figure([statistics.median(spread)], "x")}


def step_profile(sizes: dict) -> dict:
    """The sweep's own child worker for one configuration with ONEDNN_VERBOSE=1: oneDNN's execution times summed
    per convolution direction and kernel, as shares (op times overlap on two cores, so only shares are given)."""
    import collections
    import json
    import os
    import sys

    from l40sbench.core import child
    from l40sbench.synthetic.job import Job, StepSettings

    job = Job(sizes["model"], sizes["batch"], 1, StepSettings(warmup_steps=1, steps=sizes["steps"]))
    outcome = child.run([sys.executable, "-m", "l40sbench.synthetic.worker", json.dumps(job.to_dict())],
                        timeout_s=3600, memory_limit_mb=None, env={**os.environ, "ONEDNN_VERBOSE": "1"})
    spent: dict = collections.defaultdict(float)
    for line in outcome.stdout.splitlines() + outcome.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 6 and fields[0] == "onednn_verbose" and "exec" in fields[:4]:
            at = fields.index("exec")
            try:
                spent[fields[at + 2], fields[at + 4], fields[at + 3]] += float(fields[-1])
            except ValueError:
                continue
    total = sum(spent.values())
    assert total > 0, f"no oneDNN execution lines: {outcome.stderr[-500:]}"

    def share(direction: str) -> float:
        return sum(ms for (kind, d, _), ms in spent.items() if kind == "convolution" and d == direction) / total

    weights = {impl: ms for (kind, d, impl), ms in spent.items() if kind == "convolution" and d == "backward_weights"}
    return {"backward_weights": figure([share("backward_weights")], "x"),
            "backward_data": figure([share("backward_data")], "x"),
            "forward": figure([share("forward_training")], "x"),
            "labels": {"model": sizes["model"], "weights_kernel": max(weights, key=weights.get) if weights else "-"}}
