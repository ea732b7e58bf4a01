"""A model file timed as it is, without training (`infer --model`): a Keras file, a SavedModel folder or an
ONNX file.

A Keras file or a SavedModel becomes one Keras model that takes uint8 images and hands the file's model
float32 pixels 0-255 (its own layers do the rest), so tf times it in this process and every other runtime
gets it through Keras' own exporters, as it gets a fine-tuned classifier. An ONNX file goes as it is to the
runtimes that read ONNX (onnxruntime, then the reference, in this process; OpenVINO); nothing converts from
ONNX here, so the others say they cannot load it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from l40sbench.classify import own_model
from l40sbench.errors import UserError

ONNX_READERS = ("onnxruntime", "openvino")
ONNX_PIXELS = ("tensor(uint8)", "tensor(float)", "tensor(float16)")  # what the loaders feed (runtimes.forward)
ANY_SIZE = 224  # the size fed to a model that takes any: ImageNet's
LABELS_UNMATCHED = ("its outputs are {outputs} classes, the data's {classes}: no accuracy against labels, the "
                    "runtimes' agreement only")


@dataclass(frozen=True)
class GivenModel:
    """The file and what it is: kind "keras", "savedmodel" or "onnx"; size, the square input it declares (None:
    any size)."""

    path: Path
    kind: str
    size: int | None

    @property
    def name(self) -> str:
        """The model's name in the record: the file's or folder's, without its suffix."""
        return self.path.resolve().stem

    @property
    def exporter(self) -> str:
        return {"keras": "the .keras file as given", "savedmodel": "the SavedModel as given (keras TFSMLayer)",
                "onnx": "the ONNX file as given"}[self.kind]


def kind_of(path: Path) -> str:
    """"keras", "savedmodel" or "onnx", from the path alone.

    Raises:
      UserError: nothing there, or none of the three.
    """
    if path.is_dir():
        if (path / "saved_model.pb").is_file():
            return "savedmodel"
        raise UserError(f"--model {path}: a folder without saved_model.pb is not a SavedModel")
    if not path.is_file():
        raise UserError(f"--model: no file or folder at {path}")
    kinds = {".keras": "keras", ".onnx": "onnx"}
    if path.suffix.lower() not in kinds:
        raise UserError(f"--model {path}: infer takes a .keras file, a SavedModel folder or an .onnx file")
    return kinds[path.suffix.lower()]


def onnx_input(path: Path) -> int | None:
    """The square size an ONNX file's one image input declares.

    Raises:
      UserError: onnxruntime missing, a file it cannot read, or not one RGB image input.
    """
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None:
        raise UserError("--model FILE.onnx needs onnxruntime: pip install 'l40sbench[runtimes]'")
    import onnxruntime as ort

    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf for a bad file
        raise UserError(f"--model {path}: onnxruntime cannot load it: {str(exc).splitlines()[0][:300]}") from None
    inputs, outputs = session.get_inputs(), session.get_outputs()
    if len(inputs) != 1:
        raise UserError(f"--model {path}: infer takes a model of one image input; this one takes {len(inputs)} "
                        f"({', '.join(i.name for i in inputs)})")
    if inputs[0].type not in ONNX_PIXELS:
        raise UserError(f"--model {path}: its input is {inputs[0].type}; infer feeds pixels as "
                        f"{', '.join(ONNX_PIXELS)}")
    if len(outputs) != 1:
        raise UserError(f"--model {path}: infer scores a model of one output; this one has {len(outputs)}")
    scores(outputs[0].shape, f"--model {path}")
    return own_model.square_image(inputs[0].shape, f"--model {path}", channels_first=True)


def scores(shape, where: str) -> None:
    """Raises UserError unless an output of `shape` is one vector of scores per image (batch, classes)."""
    if len(shape) != 2:
        raise UserError(f"{where}: infer scores an output of (batch, classes); this model's is {tuple(shape)}")


def check(path: Path) -> GivenModel:
    """The file's kind and declared size, read without TensorFlow (a SavedModel's size is read when it loads).

    Raises:
      UserError: see kind_of, onnx_input and own_model.image_input.
    """
    kind = kind_of(path)
    if kind == "keras":
        return GivenModel(path, kind, own_model.image_input(path))
    return GivenModel(path, kind, onnx_input(path) if kind == "onnx" else None)  # a SavedModel's: when it loads


def keras_model(given: GivenModel):
    """A Keras file or a SavedModel as one Keras model: uint8 image in, the model's one output out; the given
    model with its declared size where it is a SavedModel.

    Raises:
      UserError: Keras cannot load it, or it has several outputs.
    """
    import keras

    from l40sbench.backends.layers import Preprocess

    if given.kind == "keras":
        inner, size = own_model.load(given.path), given.size
    else:
        try:
            inner = keras.layers.TFSMLayer(str(given.path), call_endpoint="serving_default")
        except Exception as exc:  # a SavedModel without that signature, or one TensorFlow cannot read
            raise UserError(f"--model {given.path}: cannot load its serving_default signature: "
                            f"{str(exc).splitlines()[0][:300]}") from None
        specs = list(inner.call_endpoint_fn.structured_input_signature[1].values())
        if len(specs) != 1:
            raise UserError(f"--model {given.path}: infer takes a model of one image input; its signature takes "
                            f"{len(specs)}")
        if not (specs[0].dtype.is_floating or specs[0].dtype.name == "uint8"):
            raise UserError(f"--model {given.path}: its signature takes {specs[0].dtype.name}; infer feeds pixels "
                            "as uint8 or a float type")
        size = own_model.square_image(specs[0].shape.as_list(), f"--model {given.path}")
    inputs = keras.Input((size or None, size or None, 3), dtype="uint8", name="image")
    pixels = Preprocess("", name="preprocess")(inputs)  # float32 0-255
    if given.kind == "savedmodel":  # the signature's own type (its own uint8, a float16 model's float16)
        pixels = keras.ops.cast(pixels, specs[0].dtype.name)
    outputs = inner(pixels)
    if isinstance(outputs, dict) and len(outputs) == 1:
        outputs = next(iter(outputs.values()))
    if isinstance(outputs, (list, tuple, dict)):
        raise UserError(f"--model {given.path}: infer scores a model of one output; this one has {len(outputs)}")
    scores(outputs.shape, f"--model {given.path}")
    return keras.Model(inputs, outputs, name=given.name), GivenModel(given.path, given.kind, size)


def labels_for(outputs: np.ndarray, labels: np.ndarray, classes: int) -> tuple[np.ndarray | None, str]:
    """The labels to score against, and why none where the model's outputs are not the data's classes."""
    width = outputs.shape[-1] if outputs.ndim == 2 else None
    if width == classes:
        return labels, ""
    return None, LABELS_UNMATCHED.format(outputs=width if width is not None else f"shape {outputs.shape[1:]}",
                                         classes=classes)


def onnx_export(given: GivenModel):
    """The workload's export for an ONNX file: the file itself to the runtimes that read ONNX."""
    from l40sbench.runtimes.export import Artifact, size_mb

    def export(runtime: str, precision: str, folder: Path) -> Artifact:
        if runtime not in ONNX_READERS:
            raise ValueError(f"{runtime} does not read ONNX, and no converter from ONNX is used here")
        return Artifact(given.path, 0.0, size_mb(given.path), given.exporter, "fp32")

    return export
