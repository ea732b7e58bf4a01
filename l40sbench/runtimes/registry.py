"""The inference runtimes: one registry entry each, naming the package that brings it.

Listing runtimes imports none of them; `installed()` only asks whether the import would resolve.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from l40sbench.core.registry import Registry
from l40sbench.errors import UserError

PRECISIONS = ("fp32", "bf16", "fp16", "int8")
REFERENCE = "tf"  # the run's own in-process path: the figures every other runtime is checked against


@dataclass(frozen=True)
class RuntimeSpec:
    """A runtime and the packages it needs (import names, with the pip name to tell a user).

    Attributes:
      precisions: the --runtime-precision values the runtime can be told to run in.
    """

    name: str
    description: str
    imports: tuple[str, ...]
    packages: tuple[str, ...]
    precisions: tuple[str, ...]

    def missing(self) -> tuple[str, ...]:
        """pip names of the packages that are not installed."""
        return tuple(package for module, package in zip(self.imports, self.packages, strict=True)
                     if importlib.util.find_spec(module) is None)


RUNTIMES: Registry[RuntimeSpec] = Registry("runtime")

for _spec in (
    RuntimeSpec("tf", "TensorFlow in the training process (tf.function), what the studies timed",
                ("tensorflow",), ("tensorflow",), ()),
    RuntimeSpec("savedmodel", "the exported TF SavedModel reloaded in a fresh process",
                ("tensorflow",), ("tensorflow",), ("fp32",)),
    RuntimeSpec("onnxruntime", "ONNX Runtime, CPU execution provider (exported through tf2onnx)",
                ("onnxruntime", "tf2onnx"), ("onnxruntime", "tf2onnx"), ("fp32",)),
    RuntimeSpec("openvino", "OpenVINO on the CPU, latency hint, inference precision set explicitly",
                ("openvino",), ("openvino",), ("fp32", "bf16", "fp16")),
    RuntimeSpec("litert", "LiteRT (TensorFlow Lite) with XNNPACK",
                ("ai_edge_litert",), ("ai-edge-litert",), ("fp32", "fp16", "int8")),
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
