"""The model file given (--model): read by its kind's reader, without TensorFlow."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from l40sbench.errors import UserError
from l40sbench.modelfile import files


def check(path: Path, layout: str | None = None) -> files.ModelFile:
    """The file's kind and what it takes, read without TensorFlow (a SavedModel's input is read when it loads).

    Args:
      layout: --layout, where an ONNX file leaves its channels' place open.

    Raises:
      UserError: see files.kind_of, files.keras_file_facts and onnx_file.inspect.
    """
    kind = files.kind_of(path)
    if kind == "onnx":
        from l40sbench.modelfile import onnx_file

        return onnx_file.inspect(path, layout)
    if layout not in (None, "nhwc"):
        raise UserError(f"--layout {layout}: a {'Keras file' if kind == 'keras' else 'SavedModel'} takes "
                        "(batch, height, width, 3); --layout is for an ONNX file")
    if kind == "keras":
        return files.keras_file_facts(path)
    return files.ModelFile(path, kind, None)


def with_task(given: files.ModelFile) -> files.ModelFile:
    """A SavedModel's task from its serving_default signature's outputs (a detector's, or one output), read from
    saved_model.pb by TensorFlow's own proto (imports TensorFlow: call it after the GPU gate).

    Raises:
      UserError: no serving_default signature.
    """
    if given.kind != "savedmodel":
        return given
    from tensorflow.core.protobuf import saved_model_pb2

    from l40sbench.modelfile import detector

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((given.path / "saved_model.pb").read_bytes())
    signatures = [graph.signature_def for graph in saved.meta_graphs if "serving_default" in graph.signature_def]
    if not signatures:
        raise UserError(f"--model {given.path}: no serving_default signature in it")
    outputs = signatures[0]["serving_default"].outputs
    return dataclasses.replace(given, task="detect") if detector.is_detector(outputs) else given
