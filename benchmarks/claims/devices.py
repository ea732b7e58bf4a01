"""Claims on devices: a GPU the backend cannot use, with the stand-in CUDA driver (tests/standin/libcuda.c: one
NVIDIA L40S that no framework can use), how fast each command refuses it and what the GPU check costs; training
on 2 logical CPU devices, and scoring between epochs under a strategy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

from benchmarks.claims.figures import figure, in_child, keras_clock, records, suite, timed_rounds
from l40sbench.core.timing import time_calls
from l40sbench.paths import REPO

COMMANDS = {
    "classify_tensorflow": ["classify", "--base", "vgg19", "--epochs", "1", "--limit", "8", "--image-size", "32"],
    "classify_jax": ["classify", "--backend", "jax", "--base", "vgg19", "--epochs", "1", "--limit", "8",
                     "--image-size", "32"],
    "detect": ["detect", "--base", "ssd_resnet50_fpn", "--epochs", "1", "--limit", "4", "--image-size", "128"],
    "synthetic": ["synthetic", "--models", "lenet", "--batch-sizes", "4", "--steps", "2"],
    "infer": ["infer", "no-such-run"],
    "study_plan": ["study", "l40s", "--plan"],
    "env_peak": ["env", "--peak"],
}


def standin_driver(folder: Path) -> Path:
    """The stand-in CUDA driver built into `folder`.

    Raises:
      RuntimeError: no C compiler.
    """
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError("no C compiler for the stand-in CUDA driver")
    driver = folder / "libcuda-standin.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(driver), str(REPO / "tests/standin/libcuda.c")],
                   check=True)
    return driver


def gpu_refusal(sizes: dict) -> dict:
    """Each command that computes, in a fresh interpreter as a user runs it, against the stand-in's L40S.

    Raises:
      AssertionError: a command that did not refuse in one line with exit 2, or left a folder.
    """
    out = {}
    with tempfile.TemporaryDirectory() as work:
        env = {**os.environ, "L40SBENCH_CUDA_DRIVER": str(standin_driver(Path(work))), "TF_CPP_MIN_LOG_LEVEL": "2"}
        env.pop("L40SBENCH_DEVICE_CHOICE", None)
        folder = Path(work) / "out"

        def refused(done, name):
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and lines and "error:" in lines[-1], (name, done.stderr[-500:])
            assert not folder.exists(), f"{name} left {folder}"

        for name, argv in COMMANDS.items():
            flags = ["--output-dir", str(folder)] if argv[0] in ("classify", "detect", "synthetic") else []
            walls, _ = timed_rounds([*argv, *flags], sizes["rounds"], lambda done, name=name: refused(done, name),
                                    cwd=work, env=env, timeout=300)
            out[name] = figure(walls, "s")
    return out


def gpu_check_cost(sizes: dict) -> dict:
    """run.sh's driver query (a fresh interpreter); the gate's driver query (a child); one backend check in its
    child (the framework's import and its view: what a GPU command pays where no answer is kept); the gate
    reading a kept answer instead; a driver that never answers, until the gate gives up (one round)."""
    from l40sbench.backends import cuda_driver, gpu_gate

    def seconds(call, rounds: int) -> dict:
        return figure(time_calls(lambda _: call(), range(rounds)), "s")

    rounds, out = sizes["rounds"], {}
    with tempfile.TemporaryDirectory() as work:
        env = {"L40SBENCH_CUDA_DRIVER": str(standin_driver(Path(work))), "TF_CPP_MIN_LOG_LEVEL": "2"}
        with mock.patch.dict(os.environ, env):
            script = [sys.executable, str(REPO / "l40sbench/backends/cuda_driver.py"), "--count"]
            out["run_sh_query"] = seconds(lambda: subprocess.run(script, check=True, capture_output=True), rounds)

            def view():
                cuda_driver.forget()
                assert cuda_driver.view().devices, "the stand-in shows no GPU"

            out["driver_view"] = seconds(view, rounds)
            for backend in ("tensorflow", "jax"):
                out[f"probe_{backend}"] = seconds(lambda b=backend: gpu_gate.answer(b, gpu_gate.start_probe(b)),
                                                  rounds)
            shown = cuda_driver.view()
            with mock.patch.object(sys, "prefix", work):  # a kept answer, as a good GPU check leaves it
                key = gpu_gate._check_key("tensorflow", shown)
                (Path(work) / gpu_gate.CHECK_FILE).write_text(json.dumps(
                    {key: {"version": "kept", "view": gpu_gate.View(1, None, "12.5.1").to_dict()}}))
                out["kept_answer"] = seconds(lambda: gpu_gate.ask("tensorflow", shown), rounds)
        with mock.patch.dict(os.environ, {**env, "STANDIN_HANG": "1"}):
            cuda_driver.forget()
            out["stuck_driver"] = seconds(cuda_driver.view, 1)
            cuda_driver.forget()
    return out


SCORING_MODES = ("none", "evaluate", "plain")


def epochs_scored(mode: str, images: int, size: int, epochs: int) -> list[float]:
    """In a child: vgg19 built and compiled as classify builds it, under MirroredStrategy over 2 logical CPU
    devices, `fit` at a global batch of 32, each epoch timed by a callback; between epochs nothing (none), Keras'
    evaluate on 32 images (evaluate), or a plain compiled forward of them on the primary device (plain)."""
    import numpy as np
    import tensorflow as tf

    from l40sbench.backends.tf_device import place
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.classify.task import compiled_model

    placement = place(2, 2)
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 255, (images, size, size, 3), dtype=np.uint8), rng.integers(0, 2, images)
    model, _ = compiled_model(ClassifyConfig(base="vgg19", image_size=size, weights="none", seed=0), size, 2,
                              lambda _: None, placement)
    forward = tf.function(lambda batch: model(batch, training=False))
    seconds: list[float] = []

    def between() -> None:
        if mode == "evaluate":
            model.evaluate(x[:32], y[:32], batch_size=16, verbose=0)
        elif mode == "plain":
            for i in range(0, 32, 16):
                forward(tf.convert_to_tensor(x[i:i + 16])).numpy()

    model.fit(x, y, batch_size=32, epochs=epochs, verbose=0, shuffle=True,
              callbacks=[keras_clock("epoch", seconds, between)])
    return seconds


def scoring_under_strategy(sizes: dict) -> dict:
    """Each mode in a process of its own (logical devices are set before TensorFlow starts), the modes in turns,
    `rounds` times; epochs 2..N kept."""
    got: dict = {mode: [] for mode in SCORING_MODES}
    for _ in range(sizes["rounds"]):
        for mode in SCORING_MODES:
            got[mode] += in_child("benchmarks.claims.devices:epochs_scored", mode, sizes["images"], sizes["size"],
                                  sizes["epochs"])[1:]
    return {**{mode: figure(got[mode], "s") for mode in SCORING_MODES},
            "evaluate_slowest": figure([max(got["evaluate"])], "s"), "epochs": figure([sizes["epochs"]], "epochs")}


TWO_DEVICES = {  # each task's run; its --limit and --image-size are the claim's sizes (claims.toml)
    "classify": ["classify", "--base", "vgg19", "--epochs", "2", "--weights", "none"],
    "detect": ["detect", "--base", "ssd_resnet50_fpn", "--epochs", "2", "--batch-size", "4"],  # random weights
}


def two_devices(sizes: dict) -> dict:
    """`classify` and `detect` with `--devices 1,2` as a user runs them (fp32, random weights), `rounds` times:
    each run's efficiency from its records' scaling blocks, and how far the replicas' weights ended apart."""
    from l40sbench.core.scaling import scaling

    out: dict = {"classify": [], "detect": [], "replica_gap": []}
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(sizes["rounds"]):
            for task, argv in TWO_DEVICES.items():
                folder = Path(work) / f"{task}-{round_}"
                limit, size = sizes[task]
                suite([*argv, "--limit", str(limit), "--image-size", str(size), "--devices", "1,2",
                       "--output-dir", str(folder)])
                runs = records(folder)
                (two,) = [block for block in scaling(runs) if block["devices"] == 2]
                out[task].append(two["efficiency"])
                out["replica_gap"] += [r["devices"].get("replica_weight_max_difference") or 0.0 for r in runs]
    return {name: figure(values, "x") for name, values in out.items()}
