"""How many GPUs each Keras backend sees, and where none, why, in the backend's or its loader's words: what
backends.gpu_gate puts in its one line (asked in a child, backends.probe, so the framework loads there only).
"""

from __future__ import annotations

from l40sbench.backends.gpu_gate import View, first_line, first_missing

# The CUDA libraries TensorFlow's GPU support loads at its start, in its order (a missing one: no GPU, said at
# WARNING only).
CUDA_LIBRARIES = ("libcuda.so.1", "libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12", "libcufft.so.11",
                  "libcusparse.so.12", "libcusolver.so.11", "libcudnn.so.9")


def tensorflow_view() -> View:
    """How many GPUs TensorFlow sees, and where none, why: its error, a CPU-only build, or the first CUDA
    library it could not load."""
    import tensorflow as tf

    build = tf.sysconfig.get_build_info()
    built = ", cuDNN ".join(str(v) for v in (build.get("cuda_version"), build.get("cudnn_version")) if v) or None
    try:
        gpus = tf.config.list_physical_devices("GPU")
    except Exception as exc:  # a driver it cannot start (CUDA_ERROR_*): its words are the reason
        return View(0, first_line(exc), built)
    if gpus:
        return View(len(gpus), None, built)
    if not build.get("is_cuda_build"):
        return View(0, "this TensorFlow is a CPU-only build", built)
    missing = first_missing(CUDA_LIBRARIES)
    return View(0, f"it could not load {missing}" if missing else
                "its CUDA libraries load, yet it found no GPU it can use (TF_CPP_MIN_LOG_LEVEL=0 shows its log)", built)


def jax_view() -> View:
    """How many GPUs jax sees, and where none, why: no CUDA plugin (jaxlib alone is a CPU build), or the
    plugin's own error."""
    import importlib.util
    import logging

    failures = []  # a CUDA plugin that fails to start says why only in jax's log (ERROR, with its exception)

    class Keep(logging.Handler):
        def emit(self, record):
            if record.exc_info and record.exc_info[1] is not None:
                failures.append(first_line(record.exc_info[1]))

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
        return View(len(gpus), None, built)
    if not plugins:
        return View(0, "jaxlib is its CPU build: jax's CUDA plugin (jax-cuda12-plugin) is not installed")
    if failures:
        return View(0, f"its CUDA plugin failed to start: {failures[-1]}", built)
    try:
        return View(len(jax.devices("cuda")), None, built)
    except RuntimeError as exc:
        return View(0, first_line(exc), built)


def torch_view() -> View:
    """How many GPUs torch sees, and where none, why: a CPU-only build, or its CUDA start's error."""
    import torch

    if torch.cuda.is_available():
        return View(torch.cuda.device_count(), None, torch.version.cuda)
    if torch.version.cuda is None:
        return View(0, "this torch is a CPU-only build")
    try:
        torch.cuda.init()
    except Exception as exc:
        return View(0, first_line(exc), torch.version.cuda)
    return View(0, "torch found no GPU it can use", torch.version.cuda)


VIEWS = {"tensorflow": tensorflow_view, "jax": jax_view, "torch": torch_view}
