"""A model file as the suite reads it before loading it: its kind, the one image it takes (size, fixed batch,
layout) and whether its own layers scale that image; and its identity for the record.

A .keras file is a zip whose config.json says all this, read without Keras; an ONNX file's graph is read by
modelfile.onnx_file; a SavedModel's signature is read when TensorFlow loads it (modelfile.keras_file).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

from l40sbench.errors import UserError, said

ANY_SIZE = 224  # the size fed to a model that takes any: ImageNet's
KINDS = {".keras": "keras", ".onnx": "onnx"}
SCALING_LAYERS = ("Rescaling", "Normalization")  # a first layer that says how the model scales its input
LAYOUTS = ("nhwc", "nchw")
UINT8 = "a uint8 input (the model scales its own pixels)"


@dataclass(frozen=True)
class ModelFile:
    """The file and what it takes.

    Attributes:
      kind: "keras", "savedmodel" or "onnx".
      size: the square input it declares (None: any size).
      batch: the batch it is fixed at (None: any).
      layout: "nhwc", or "nchw" (an ONNX file as PyTorch exports it).
      own_scaling: the class of its first layer where that scales its input (Rescaling, Normalization).
      task: "classify" (one output of any shape), or "detect" (a detector: modelfile.detector_formats).
      detector_format: a detector's format (od-api: the Object Detection API's serving outputs, each image fed at
        its own size as uint8; yolo, yolo-end2end: an Ultralytics export, letterboxed to `size`; torchvision).
      class_names: the model's own {class id: name} where the file says it (Ultralytics' `names`).
    """

    path: Path
    kind: str
    size: int | None
    batch: int | None = None
    layout: str = "nhwc"
    own_scaling: str | None = None
    task: str = "classify"
    detector_format: str | None = None
    class_names: dict | None = None

    @property
    def name(self) -> str:
        """The model's name in the record: the file's or folder's, without its suffix."""
        return self.path.resolve().stem

    @property
    def exporter(self) -> str:
        return {"keras": "the .keras file as given", "savedmodel": "the SavedModel as given (keras TFSMLayer)",
                "onnx": "the ONNX file as given"}[self.kind]

    def refuse_batch(self, batch: int, flag: str) -> None:
        """Raises UserError where `flag` asks for a batch the file's fixed batch cannot take."""
        if self.batch is not None and batch != self.batch:
            raise UserError(f"{flag} {batch}: {self.path.name} is fixed at batches of {self.batch} (its input "
                            f"declares it); ask for {self.batch}, or export the model with a free batch dimension")


def kind_of(path: Path) -> str:
    """"keras", "savedmodel" or "onnx", from the path alone.

    Raises:
      UserError: nothing there, or none of the kinds.
    """
    if path.is_dir():
        if (path / "saved_model.pb").is_file():
            return "savedmodel"
        raise UserError(f"--model {path}: a folder without saved_model.pb is not a SavedModel")
    if not path.is_file():
        raise UserError(f"--model: no file or folder at {path}")
    if path.suffix.lower() not in KINDS:
        raise UserError(f"--model {path}: the suite takes a .keras file, a SavedModel folder or an .onnx file")
    return KINDS[path.suffix.lower()]


def keras_config(path: Path) -> dict:
    """A .keras file's config.json.

    Raises:
      UserError: the file is missing or is not a Keras model file.
    """
    if not path.is_file():
        raise UserError(f"--model: no file at {path}")
    try:
        with zipfile.ZipFile(path) as archive:
            return json.loads(archive.read("config.json"))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise UserError(f"--model {path} is not a Keras model file (.keras, a zip holding config.json): "
                        f"{said(exc)}") from None


def keras_file_facts(path: Path) -> ModelFile:
    """What a .keras file takes, from its config.json.

    Raises:
      UserError: see keras_config; its input is not one RGB image.
    """
    config = keras_config(path)
    shapes = _input_shapes(config)
    if len(shapes) != 1:
        raise UserError(f"--model {path}: the suite takes a model with one image input; this one declares "
                        f"{len(shapes)} inputs")
    batch = shapes[0][0] if shapes[0] and isinstance(shapes[0][0], int) else None
    return ModelFile(path, "keras", square_image(shapes[0], f"--model {path}"), batch,
                     own_scaling=_first_scaling_layer(config))


def _input_shapes(config: dict) -> list:
    """The input shapes a saved model's config declares (its InputLayers', else its build config's)."""
    layers = (config.get("config") or {}).get("layers") or []
    shapes = [(layer.get("config") or {}).get("batch_shape") or (layer.get("config") or {}).get("batch_input_shape")
              for layer in layers if layer.get("class_name") == "InputLayer"]
    shapes = [s for s in shapes if s is not None]
    if not shapes and (config.get("build_config") or {}).get("input_shape"):
        shapes = [config["build_config"]["input_shape"]]
    return shapes


def _first_scaling_layer(config: dict) -> str | None:
    """The class of the model's first layer past its input where it scales the input (a nested model's too)."""
    layers = [layer for layer in (config.get("config") or {}).get("layers") or []
              if layer.get("class_name") != "InputLayer"]
    if not layers:
        return None
    first = layers[0]
    if first.get("class_name") in SCALING_LAYERS:
        return first["class_name"]
    return _first_scaling_layer(first) if (first.get("config") or {}).get("layers") else None


def square_image(shape, where: str, channels_first: bool = False) -> int | None:
    """The square size an image input of `shape` declares, (batch, h, w, 3), or with `channels_first` also
    (batch, 3, h, w) as PyTorch's ONNX exports take it; None where any size goes.

    Raises:
      UserError: not one RGB image (in a layout allowed), or not square.
    """
    shape = [d if isinstance(d, int) else None for d in shape]
    nchw = channels_first and len(shape) == 4 and shape[1] == 3 and shape[3] != 3
    if len(shape) != 4 or (shape[3] != 3 and not nchw):
        raise UserError(f"{where}: its input is not an RGB image (batch, height, width, 3"
                        + ("; or batch, 3, height, width" if channels_first else "") + f"): it takes {tuple(shape)}")
    height, width = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
    if height is not None and width is not None and height != width:
        raise UserError(f"{where}: the suite feeds square images; the model takes {height}x{width}")
    return height or width


def identity(path: Path) -> dict:
    """The file's identity for the record; a folder's (a SavedModel) over its files' relative names and bytes,
    in name order."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with open(file, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return {"path": str(path.resolve()), "bytes": sum(f.stat().st_size for f in files), "sha256": digest.hexdigest()}
