"""Image decoding by content with OpenCV, shared by both pipelines."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

# Files with other endings (.txt, .xml, .DS_Store, ...) are not images and are
# ignored silently; files with these endings are decoded by content, so PNG
# data in a .jpg file works.
IMAGE_SUFFIXES = frozenset(
    {".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp"}
)


def is_image_name(path: Path) -> bool:
    return not path.name.startswith(".") and path.suffix.lower() in IMAGE_SUFFIXES


def decode_rgb(data: bytes) -> np.ndarray | None:
    """Bytes -> HxWx3 uint8 RGB, or None when the data is not a readable image.

    IMREAD_COLOR turns grayscale, palette, RGBA, 16-bit and CMYK images into
    8-bit 3-channel BGR; OpenCV 5 refuses truncated JPEG and PNG data.
    """
    if not data:
        return None
    try:
        bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    except cv2.error:
        return None
    if bgr is None or bgr.ndim != 3 or bgr.shape[2] != 3 or min(bgr.shape[:2]) < 1:
        return None
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def resize_square(rgb: np.ndarray, size: int) -> np.ndarray:
    """Resize to size x size (aspect not kept, like Keras' image loaders)."""
    shrinking = rgb.shape[0] > size or rgb.shape[1] > size
    interpolation = cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR
    return cv2.resize(rgb, (size, size), interpolation=interpolation)


MODEL_CALL = "model"  # an inference probe's call on a decoded, resized image: the record's inference figure
FILE_TO_LABEL = "file_to_label"  # the whole way from an image file to a label


def read_image(path, image_size: int) -> np.ndarray:
    """An image file read, decoded by content and resized to image_size square, as the decoded cache holds it;
    ValueError where it no longer reads (the cache read it: a file changed under the run)."""
    rgb = decode_rgb(Path(path).read_bytes())
    if rgb is None:
        raise ValueError(f"unreadable image: {path}")
    return resize_square(rgb, image_size)


def file_stages(paths, image_size: int, call, label) -> dict:
    """The calls that time an image file's way to a label, by index, in the order they run in a rotation: read
    and decode (as the cache decodes), resize, and the whole way (read, decode, resize, `call` on the image,
    `label` of its output) in one call. `call` takes an H x W x 3 uint8 image; `label` its output -> a class."""
    decoded: dict = {}

    def decode(i: int):
        decoded[i] = decode_rgb(Path(paths[i]).read_bytes())
        return decoded[i]

    def resize(i: int):
        return resize_square(decoded.pop(i), image_size)

    def file_to_label(i: int) -> int:
        return label(call(read_image(paths[i], image_size)))

    return {"decode": decode, "resize": resize, FILE_TO_LABEL: file_to_label}
