"""`python -m l40sbench.backends.probe NAME`: the devices Keras backend NAME would compute on, its version and
what it makes of the GPUs (backends.gpu_gate.View), as one JSON line: how many it sees, and where none, why (its
own words or the library its loader could not load); on each GPU it sees, a context made and a small
computation run with the backend itself, so a board that is busy, full, in exclusive mode or in a bad state is
found here, before a run, not mid-measurement.

A child process per backend: each framework claims its devices when imported (jax and TensorFlow are told not
to reserve most of the memory here), and `env` asks all of them side by side without loading any itself.
"""

from __future__ import annotations

import json
import os
import sys

from l40sbench.backends import load
from l40sbench.backends.gpu_gate import View
from l40sbench.errors import named

# The CUDA libraries TensorFlow's GPU support loads at its start, in its order (a missing one: no GPU, said at
# WARNING only).
CUDA_LIBRARIES = ("libcuda.so.1", "libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12", "libcufft.so.11",
                  "libcusparse.so.12", "libcusolver.so.11", "libcudnn.so.9")
SIDE = 64  # the check's matrices: a context, a kernel and a copy back, nothing the board's memory notices


def first_missing(libraries) -> str | None:
    """The first of `libraries` that cannot be loaded, where a framework looks: the NVIDIA wheels' folders
    (site-packages/nvidia/*/lib, what tensorflow[and-cuda] and jax[cuda12] install), then the loader's path."""
    import ctypes
    from pathlib import Path

    wheels = [folder for entry in sys.path if entry for folder in Path(entry).glob("nvidia/*/lib")]
    for name in libraries:
        if any((folder / name).exists() for folder in wheels):
            continue
        try:
            ctypes.CDLL(name)
        except OSError:
            return name
    return None


def each_board(count: int, compute) -> tuple[int, tuple[dict, ...]]:
    """compute(k) on each of `count` GPUs: (how many computed, the boards that failed with what they said)."""
    failed = []
    for k in range(count):
        try:
            compute(k)
        except Exception as exc:  # CUDA_ERROR_DEVICE_UNAVAILABLE, out of memory, ...: the board's answer
            failed.append({"index": k, "said": named(exc)})
    return count - len(failed), tuple(failed)


def tensorflow_view() -> View:
    """How many GPUs TensorFlow computes on, and where none, why: its error, a CPU-only build, or the first
    CUDA library it could not load."""
    import tensorflow as tf

    build = tf.sysconfig.get_build_info()
    built = ", cuDNN ".join(str(v) for v in (build.get("cuda_version"), build.get("cudnn_version")) if v) or None
    try:
        gpus = tf.config.list_physical_devices("GPU")
    except Exception as exc:  # a driver it cannot start (CUDA_ERROR_*): its words are the reason
        return View(0, named(exc), built)
    if gpus:
        def compute(k):
            with tf.device(f"/GPU:{k}"):
                x = tf.ones((SIDE, SIDE))
                float(tf.reduce_sum(tf.matmul(x, x)))

        usable, failed = each_board(len(gpus), compute)
        return View(usable, failed[0]["said"] if not usable else None, built, failed)
    if not build.get("is_cuda_build"):
        return View(0, "this TensorFlow is a CPU-only build", built)
    missing = first_missing(CUDA_LIBRARIES)
    return View(0, f"it could not load {missing}" if missing else
                "its CUDA libraries load, yet it found no GPU it can use (TF_CPP_MIN_LOG_LEVEL=0 shows its log)", built)


def jax_view() -> View:
    """How many GPUs jax computes on, and where none, why: no CUDA plugin (jaxlib alone is a CPU build), or
    the plugin's own error."""
    import importlib.util
    import logging

    failures = []  # a CUDA plugin that fails to start says why only in jax's log (ERROR, with its exception)

    class Keep(logging.Handler):
        def emit(self, record):
            if record.exc_info and record.exc_info[1] is not None:
                failures.append(named(record.exc_info[1]))

    logger = logging.getLogger("jax._src.xla_bridge")
    logger.addHandler(keep := Keep())
    try:
        import jax

        gpus = [d for d in jax.devices() if d.platform in ("gpu", "cuda", "rocm")]
    finally:
        logger.removeHandler(keep)
    plugins = [name for name in ("jax_cuda12_plugin", "jax_cuda13_plugin") if importlib.util.find_spec(name)]
    built = plugins[0].split("_")[1].removeprefix("cuda") if plugins else None
    if gpus:
        def compute(k):
            import jax.numpy as jnp

            x = jax.device_put(jnp.ones((SIDE, SIDE)), gpus[k])
            float((x @ x).sum())

        usable, failed = each_board(len(gpus), compute)
        return View(usable, failed[0]["said"] if not usable else None, built, failed)
    if not plugins:
        return View(0, "jaxlib is its CPU build: jax's CUDA plugin (jax-cuda12-plugin) is not installed")
    if failures:
        return View(0, f"its CUDA plugin failed to start: {failures[-1]}", built)
    try:
        return View(len(jax.devices("cuda")), None, built)
    except RuntimeError as exc:
        return View(0, named(exc), built)


def torch_view() -> View:
    """How many GPUs torch computes on, and where none, why: a CPU-only build, or its CUDA start's error."""
    import torch

    if torch.cuda.is_available():
        def compute(k):
            x = torch.ones((SIDE, SIDE), device=f"cuda:{k}")
            float((x @ x).sum())

        usable, failed = each_board(torch.cuda.device_count(), compute)
        return View(usable, failed[0]["said"] if not usable else None, torch.version.cuda, failed)
    if torch.version.cuda is None:
        return View(0, "this torch is a CPU-only build")
    try:
        torch.cuda.init()
    except Exception as exc:
        return View(0, named(exc), torch.version.cuda)
    return View(0, "torch found no GPU it can use", torch.version.cuda)


VIEWS = {"tensorflow": tensorflow_view, "jax": jax_view, "torch": torch_view}


def main(name: str) -> int:
    # the check computes a little: neither framework may take most of a board another process may be using
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    module = load(name)
    view = VIEWS[name]()
    try:
        devices = [d.to_dict() for d in module.devices()]
    except Exception as exc:  # a framework that cannot start: the view carries why, once
        devices, view = [], view if view.said else View(0, named(exc), view.built_for)
    print(json.dumps({"version": module.version(), "view": view.to_dict(), "devices": devices}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
