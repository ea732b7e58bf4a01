"""Claims on the Keras backends: jax's step and probe against bare jax.jit, classify on jax beside TensorFlow,
XLA's CPU flags."""

from __future__ import annotations

import importlib.util
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.claims import claim
from benchmarks.claims.figures import REPO, figure, in_child, records, suite


def _jax_text(f: dict) -> str:
    return (f"the sweep's step / a bare `jax.jit` step {f['step']['value']:.3f} ({f['step']['n']} pairs); the "
            f"probe / a bare `jax.jit` loop with `block_until_ready` on each output {f['probe']['value']:.3f} "
            f"({f['probe']['n']} rounds; {f['probe_ms']['value']:.3f} ms an image)")


@claim("jax-step", "backends", "on jax, the sweep's step and the latency probe add nothing to a bare `jax.jit`",
       "Keras backends side by side", _jax_text, "step",
       sizes={"model": "googlenet", "batch": 4, "rounds": 15}, quick={"model": "lenet", "batch": 2, "rounds": 3})
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


def _backends_text(f: dict) -> str:
    return (f"jax / tensorflow: steady epoch {f['epoch']['value']:.2f}x, an image {f['image']['value']:.2f}x "
            f"(medians of {f['epoch']['n']} rounds in turns; tensorflow {f['tf_epoch']['value']:.2f} s an epoch, "
            f"{f['tf_ms']['value']:.1f} ms an image)")


@claim("backends", "backends", "classify on jax against TensorFlow, the same command on the same CPU",
       "Keras backends side by side", _backends_text, "epoch",
       sizes={"base": "vgg19", "image_size": 96, "epochs": 3, "limit": 64, "rounds": 3},
       quick={"base": "vgg19", "image_size": 32, "epochs": 2, "limit": 8, "rounds": 1})
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
    import jax.numpy as jnp
    import numpy as np

    from l40sbench.backends import jax as ops
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.classify.task import compiled_model

    model, _ = compiled_model(ClassifyConfig(base="vgg19", image_size=size, weights="none", backend="jax"), size, 2,
                              lambda _: None)
    wait = ops.sync()

    def times(call) -> list[float]:
        call(), wait()
        out = []
        for _ in range(calls):
            started = time.perf_counter()
            call()
            wait()
            out.append(time.perf_counter() - started)
        return out

    image = np.random.default_rng(0).integers(0, 256, (size, size, 3), dtype=np.uint8)
    forward = ops.forward(model, size, False)
    batch = jnp.asarray(np.random.default_rng(1).random((16, size, size, 3), dtype=np.float32) * 255)
    trainable, non_trainable = ops._values(model)
    bulk = ops._stateless_forward(model)
    return {"probe": times(lambda: forward(image)), "batch16": times(lambda: bulk(trainable, non_trainable, batch))}


def _xla_text(f: dict) -> str:
    return (f"the probe's median per image {1000 * f['default']['value']:.1f} ms by default, "
            f"{1000 * f['xnnpack']['value']:.1f} with XNNPACK, {1000 * f['greedy']['value']:.1f} with its greedy "
            f"fusion; XNNPACK / default {f['xnnpack_ratio']['value']:.3f} (median of {f['xnnpack_ratio']['n']} "
            f"rounds in turns); a batch-16 forward {1000 * f['default_batch16']['value']:.1f} against "
            f"{1000 * f['xnnpack_batch16']['value']:.1f} ms")


@claim("xla-flags", "backends", "XLA's XNNPACK flags give jax's CPU forward no settled gain",
       "Keras backends side by side", _xla_text, "xnnpack_ratio", sizes={"size": 96, "calls": 20, "rounds": 3},
       quick={"size": 32, "calls": 2, "rounds": 1})
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
