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


def image_input(path: Path) -> int | None:
    """The square size of the one RGB image the model at `path` takes (None where any size goes).

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
    return square_image(shapes[0], f"--model {path}")


def square_image(shape, where: str, channels_first: bool = False) -> int | None:
    """The square size an image input of `shape` declares, (batch, h, w, 3), or with `channels_first` also
    (batch, 3, h, w) as PyTorch's ONNX exports take it; None where any size goes.

    Raises:
      UserError: not one RGB image (in a layout allowed), or not square.
    """
    from l40sbench.runtimes.forward import channels_first as is_nchw

    shape = [d if isinstance(d, int) else None for d in shape]
    nchw = channels_first and is_nchw(shape)
    if len(shape) != 4 or (shape[3] != 3 and not nchw):
        raise UserError(f"{where}: its input is not an RGB image (batch, height, width, 3"
                        + ("; or batch, 3, height, width" if channels_first else "") + f"): it takes {tuple(shape)}")
    height, width = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
    if height is not None and width is not None and height != width:
        raise UserError(f"{where}: the suite feeds square images; the model takes {height}x{width}")
    return height or width


def spec(path: Path) -> BaseSpec:
    """The file as a base: named for its file, its input size its default (and smallest, where fixed), no
    preprocess_input of keras.applications (the model gets float32 pixels 0-255; its own layers do the rest)."""
    size = image_input(path)
    default, smallest = (size, size) if size else ANY_SIZE
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
