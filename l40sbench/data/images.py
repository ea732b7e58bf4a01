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
