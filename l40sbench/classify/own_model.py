"""A user's own Keras model (a .keras file) as the base classify fine-tunes.

The file is checked before anything heavy is imported: a .keras file is a zip whose config.json names its
input, so a file that is not a Keras model, or whose input is not one RGB image, is refused in one line at
once. Its identity (path, size, SHA-256) goes in the record.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

from l40sbench.classify.bases import BaseSpec
from l40sbench.errors import UserError

ANY_SIZE = (224, 32)  # (default, smallest) for a model that takes any image size: ImageNet's, keras.applications'


def _input_shapes(config: dict) -> list:
    """The input shapes a saved model's config declares (its InputLayers', else its build config's)."""
    layers = (config.get("config") or {}).get("layers") or []
    shapes = [(layer.get("config") or {}).get("batch_shape") or (layer.get("config") or {}).get("batch_input_shape")
              for layer in layers if layer.get("class_name") == "InputLayer"]
    shapes = [s for s in shapes if s is not None]
    if not shapes and (config.get("build_config") or {}).get("input_shape"):
        shapes = [config["build_config"]["input_shape"]]
    return shapes


def image_input(path: Path) -> tuple[int | None, int | None]:
    """(height, width) of the one RGB image the model at `path` takes (None where any size goes).

    Raises:
      UserError: the file is missing, is not a Keras model file, or its input is not one RGB image.
    """
    if not path.is_file():
        raise UserError(f"--model: no file at {path}")
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise UserError(f"--model {path} is not a Keras model file (.keras, a zip holding config.json): "
                        f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    shapes = _input_shapes(config)
    if len(shapes) != 1:
        raise UserError(f"--model {path}: the suite takes a model with one image input; this one declares "
                        f"{len(shapes)} inputs")
    shape = list(shapes[0])
    if len(shape) != 4 or shape[-1] != 3:
        raise UserError(f"--model {path}: its input is not an RGB image (batch, height, width, 3): it takes "
                        f"{tuple(shape)}")
    if shape[1] is not None and shape[2] is not None and shape[1] != shape[2]:
        raise UserError(f"--model {path}: the suite feeds square images; the model takes {shape[1]}x{shape[2]}")
    return shape[1], shape[2]


def spec(path: Path) -> BaseSpec:
    """The file as a base: named for its file, its input size its default (and smallest, where fixed), no
    preprocess_input of keras.applications (the model gets float32 pixels 0-255; its own layers do the rest)."""
    height, _ = image_input(path)
    default, smallest = (height, height) if height else ANY_SIZE
    return BaseSpec(path.stem, "", "", default, smallest, path=str(path))


def facts(path: Path) -> dict:
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


def load(path: Path):
    """The model in the file, without its training configuration.

    Raises:
      UserError: Keras cannot load it (a custom layer it does not know, a damaged weights file).
    """
    import keras

    try:
        return keras.saving.load_model(path, compile=False)
    except Exception as exc:  # Keras raises TypeError, ValueError, OSError or its own errors for a bad file
        raise UserError(f"--model {path}: Keras cannot load it: {str(exc).splitlines()[0][:300]}") from None
