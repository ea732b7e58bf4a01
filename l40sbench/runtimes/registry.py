"""The inference runtimes: one registry entry each, naming the package that brings it, its loader
(runtimes.forward), its exporter from a Keras model and its converter from a SavedModel (runtimes.export).
Adding a runtime is its entry here and the functions it names.

Listing runtimes imports none of them (the loaders and exporters import their library when called);
`missing()` only asks whether the import would resolve.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from l40sbench.core.registry import Registry
from l40sbench.errors import UserError
from l40sbench.runtimes import export, forward

PRECISIONS = ("fp32", "bf16", "fp16", "int8")
REFERENCE = "tf"  # the run's own in-process path: the figures every other runtime is checked against


@dataclass(frozen=True)
class RuntimeSpec:
    """A runtime and the packages it needs (import names, with the pip name to tell a user).

    Attributes:
      precisions: the --runtime-precision values the runtime can be told to run in.
      load: (path, precision, threads, file_precision, xla=) -> forward.LoadedModel.
      from_keras: (model, precision, out_dir) -> export.Artifact; None for tf, which runs the model in memory.
      from_saved_model: (saved_model, precision, out_dir, signature) -> export.Artifact; None for tf.
    """

    name: str
    description: str
    imports: tuple[str, ...]
    packages: tuple[str, ...]
    precisions: tuple[str, ...]
    load: Callable[..., forward.LoadedModel]
    from_keras: Callable[..., export.Artifact] | None = None
    from_saved_model: Callable[..., export.Artifact] | None = None

    def missing(self) -> tuple[str, ...]:
        """pip names of the packages that are not installed."""
        return tuple(package for module, package in zip(self.imports, self.packages, strict=True)
                     if importlib.util.find_spec(module) is None)


RUNTIMES: Registry[RuntimeSpec] = Registry("runtime")

for _spec in (
    RuntimeSpec("tf", "TensorFlow in the training process (tf.function), what the studies timed",
                ("tensorflow",), ("tensorflow",), (), forward.load_tf),
    RuntimeSpec("savedmodel", "the exported TF SavedModel reloaded in a fresh process",
                ("tensorflow",), ("tensorflow",), ("fp32",), forward.load_savedmodel,
                export.keras_to_saved_model, export.saved_model_as_is),
    RuntimeSpec("onnxruntime", "ONNX Runtime, CPU execution provider (exported through tf2onnx)",
                ("onnxruntime", "tf2onnx"), ("onnxruntime", "tf2onnx"), ("fp32",), forward.load_onnxruntime,
                export.keras_to_onnx, export.saved_model_to_onnx),
    RuntimeSpec("openvino", "OpenVINO on the CPU, latency hint, inference precision set explicitly",
                ("openvino",), ("openvino",), ("fp32", "bf16", "fp16"), forward.load_openvino,
                export.keras_to_openvino, export.saved_model_to_openvino),
    RuntimeSpec("litert", "LiteRT (TensorFlow Lite) with XNNPACK",
                ("ai_edge_litert",), ("ai-edge-litert",), ("fp32", "fp16", "int8"), forward.load_litert,
                export.keras_to_litert, export.saved_model_to_litert),
):
    RUNTIMES.register(_spec.name, _spec)

ORDER = ("tf", "savedmodel", "onnxruntime", "openvino", "litert")


def resolve(names: tuple[str, ...]) -> tuple[str, ...]:
    """The runtimes a --runtimes list asks for, tf first; "all" is every installed runtime.

    Raises:
      UserError: an unknown runtime name (before any work).
    """
    if "all" in names:
        if len(names) > 1:
            raise UserError("--runtimes all stands alone")
        return tuple(name for name in ORDER if not RUNTIMES.get(name).missing())
    for name in names:
        RUNTIMES.get(name)
    return (REFERENCE,) + tuple(name for name in ORDER if name in names and name != REFERENCE)


def load(runtime: str, path: Path, precision: str, threads: int, file_precision: str,
         xla: bool = False) -> forward.LoadedModel:
    """The model at `path` ready to call on `runtime` (its entry's loader)."""
    return RUNTIMES.get(runtime).load(Path(path), precision, threads, file_precision, xla=xla)


def export_keras(model, runtime: str, precision: str, out_dir: Path) -> export.Artifact:
    """A Keras model in `runtime`'s format under out_dir, with Keras' own exporter."""
    spec = RUNTIMES.get(runtime)
    if spec.from_keras is None:
        raise ValueError(f"no export for runtime {runtime!r}")
    Path(out_dir).mkdir(parents=True, exist_ok=True)  # the runtime's folder: its timing child writes there too
    return spec.from_keras(model, precision, Path(out_dir))


def convert_saved_model(saved_model: Path, runtime: str, precision: str, out_dir: Path,
                        signature: str = "serving_default") -> export.Artifact:
    """A SavedModel's `signature` in `runtime`'s format under out_dir, with that runtime's converter."""
    spec = RUNTIMES.get(runtime)
    if spec.from_saved_model is None:
        raise ValueError(f"no conversion for runtime {runtime!r}")
    Path(out_dir).mkdir(parents=True, exist_ok=True)  # the runtime's folder: its timing child writes there too
    return spec.from_saved_model(Path(saved_model), precision, Path(out_dir), signature)
