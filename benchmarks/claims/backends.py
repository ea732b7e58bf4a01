"""Claims on the Keras backends: jax's step and probe against bare jax.jit, classify on jax beside TensorFlow,
XLA's CPU flags."""

from __future__ import annotations

import importlib.util
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.claims.figures import REPO, figure, in_child, records, suite


def jax_step(sizes: dict) -> dict:
    """The CI gate's child (tests/benchmarks/jax_step_child.py): the sweep's jax step against a bare jax.jit step
    written there from the model's stateless_call, in turns; then the probe against a bare jitted loop (lenet,
    24 images, 25 rounds)."""
    os.environ["KERAS_BACKEND"] = "jax"
    spec = importlib.util.spec_from_file_location("jax_step_child", REPO / "tests/benchmarks/jax_step_child.py")
    child = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(child)
    got = child.main(sizes["model"], sizes["batch"], sizes["rounds"])
    return {"step": figure(got["ratios"], "x"), "probe": figure(got["probe_ratios"], "x"),
            "probe_ms": figure([got["probe_median_ms"]], "ms")}


def backends(sizes: dict) -> dict:
    """`classify --backend tensorflow` then `--backend jax`, each a fresh process, in rounds: the steady epoch and
    the probe's mean per image from each record."""
    flags = ["--base", sizes["base"], "--image-size", str(sizes["image_size"]), "--epochs", str(sizes["epochs"]),
             "--limit", str(sizes["limit"]), "--weights", "none"]
    got: dict = {"tensorflow": [], "jax": []}
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(sizes["rounds"]):
            for backend in got:
                folder = Path(work) / f"{backend}-{round_}"
                suite(["classify", "--backend", backend, *flags, "--output-dir", str(folder)])
                (record,) = records(folder)
                got[backend].append((record["train"]["steady_epoch_seconds"], record["inference"]["mean_ms"]))
    pairs = list(zip(got["tensorflow"], got["jax"], strict=True))
    return {"epoch": figure([j[0] / t[0] for t, j in pairs], "x"), "image": figure([j[1] / t[1] for t, j in pairs],
                                                                                   "x"),
            "tf_epoch": figure([t[0] for t, _ in pairs], "s"), "tf_ms": figure([t[1] for t, _ in pairs], "ms")}


XLA_SETTINGS = {
    "default": "",
    "xnnpack": "--xla_cpu_use_xnnpack=true",
    "greedy": "--xla_cpu_use_xnnpack=true --xla_cpu_experimental_xnn_graph_fusion_mode=XNN_GRAPH_FUSION_MODE_GREEDY",
}


def xla_forward(size: int, calls: int) -> dict:
    """In a child (KERAS_BACKEND=jax, XLA_FLAGS set): the probe's forward of one image and a batch-16 forward of
    the model classify trains, each call waited for, `calls` times each after one untimed."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from l40sbench.backends import jax as ops
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.classify.task import compiled_model

    model, _ = compiled_model(ClassifyConfig(base="vgg19", image_size=size, weights="none", backend="jax"), size, 2,
                              lambda _: None)
    wait = ops.sync()

    def times(call) -> list[float]:  # each call's result waited for (jax dispatches asynchronously)
        jax.block_until_ready(call()), wait()
        out = []
        for _ in range(calls):
            started = time.perf_counter()
            jax.block_until_ready(call())
            wait()
            out.append(time.perf_counter() - started)
        return out

    image = np.random.default_rng(0).integers(0, 256, (size, size, 3), dtype=np.uint8)
    forward = ops.forward(model, size, False)
    batch = jnp.asarray(np.random.default_rng(1).random((16, size, size, 3), dtype=np.float32) * 255)
    trainable, non_trainable = ops.variable_values(model)
    bulk = ops.stateless_forward(model)
    return {"probe": times(lambda: forward(image)), "batch16": times(lambda: bulk(trainable, non_trainable, batch))}


def xla_flags(sizes: dict) -> dict:
    """vgg19 as classify builds it on jax, in a fresh process per XLA_FLAGS setting, the settings in turns."""
    got: dict = {name: {"probe": [], "batch16": [], "medians": []} for name in XLA_SETTINGS}
    for _ in range(sizes["rounds"]):
        for name, flags in XLA_SETTINGS.items():
            one = in_child("benchmarks.claims.backends:xla_forward", sizes["size"], sizes["calls"],
                           env={"KERAS_BACKEND": "jax", "XLA_FLAGS": flags})
            got[name]["probe"] += one["probe"]
            got[name]["batch16"] += one["batch16"]
            got[name]["medians"].append(statistics.median(one["probe"]))
    ratios = [x / d for x, d in zip(got["xnnpack"]["medians"], got["default"]["medians"], strict=True)]
    return {"xnnpack_ratio": figure(ratios, "x"),
            **{name: figure(got[name]["probe"], "s") for name in XLA_SETTINGS},
            **{f"{name}_batch16": figure(got[name]["batch16"], "s") for name in XLA_SETTINGS}}
