"""The model file given (--model): read by its kind's reader, without TensorFlow."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from l40sbench.errors import UserError
from l40sbench.modelfile import files


def check(path: Path, layout: str | None = None, detector_format: str | None = None) -> files.ModelFile:
    """The file's kind and what it takes, read without TensorFlow (a SavedModel's input is read when it loads).

    Args:
      layout: --layout, where an ONNX file leaves its channels' place open.
      detector_format: --detector-format, over the guess from an ONNX file (a SavedModel is od-api or none).

    Raises:
      UserError: see files.kind_of, files.keras_file_facts and onnx_file.inspect.
    """
    kind = files.kind_of(path)
    if kind == "onnx":
        from l40sbench.modelfile import onnx_file

        return onnx_file.inspect(path, layout, detector_format)
    if detector_format not in (None, "od-api"):
        raise UserError(f"--detector-format {detector_format}: a {'Keras file' if kind == 'keras' else 'SavedModel'} "
                        "is read as the Object Detection API's (od-api) or as a classifier; the other formats are "
                        "ONNX exports")
    if layout not in (None, "nhwc"):
        raise UserError(f"--layout {layout}: a {'Keras file' if kind == 'keras' else 'SavedModel'} takes "
                        "(batch, height, width, 3); --layout is for an ONNX file")
    if kind == "keras":
        return files.keras_file_facts(path)
    return files.ModelFile(path, kind, None)


FLOATS = ("DT_FLOAT", "DT_HALF", "DT_BFLOAT16", "DT_DOUBLE")


def with_task(given: files.ModelFile) -> files.ModelFile:
    """A SavedModel's facts, all in one reading of saved_model.pb by TensorFlow's own proto (imports TensorFlow:
    call it after the GPU gate): from its serving_default signature, its task (a detector's outputs, or one
    output) and, for a model of one output, its one image input's size and fixed batch, and whether it takes
    uint8 (then it scales its own pixels). Any other kind is returned as check() read it.

    Raises:
      UserError: no serving_default signature; not one input, or an input neither uint8 nor a float type.
    """
    if given.kind != "savedmodel":
        return given
    from tensorflow.core.framework import types_pb2
    from tensorflow.core.protobuf import saved_model_pb2

    from l40sbench.modelfile import detector

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((given.path / "saved_model.pb").read_bytes())
    signatures = [graph.signature_def for graph in saved.meta_graphs if "serving_default" in graph.signature_def]
    if not signatures:
        raise UserError(f"--model {given.path}: no serving_default signature in it")
    signature = signatures[0]["serving_default"]
    if detector.is_detector(signature.outputs):
        return dataclasses.replace(given, task="detect", detector_format="od-api")  # each image at its own size
    inputs = list(signature.inputs.values())
    if len(inputs) != 1:
        raise UserError(f"--model {given.path}: the suite takes a model of one image input; its signature takes "
                        f"{len(inputs)}")
    dtype = types_pb2.DataType.Name(inputs[0].dtype)
    if dtype not in (*FLOATS, "DT_UINT8"):
        raise UserError(f"--model {given.path}: its signature takes {dtype.removeprefix('DT_').lower()}; the suite "
                        "feeds pixels as uint8 or a float type")
    shape = [d.size if d.size >= 0 else None for d in inputs[0].tensor_shape.dim]  # none at all: an unknown rank
    return dataclasses.replace(given, size=files.square_image(shape, f"--model {given.path}"), batch=shape[0],
                               own_scaling=files.UINT8 if dtype == "DT_UINT8" else None)
