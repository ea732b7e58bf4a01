"""A generated stand-in for Kaggle's "Cats and Dogs image classification" set.

Same layout, class names and split sizes (train 279 cats / 278 dogs, test
70 / 70), JPEGs of varied sizes and aspect ratios. The classes differ in a way
a network can learn: "cats" are warm-coloured ellipses with two ear
triangles, "dogs" cool-coloured rounded blocks with a darker stripe, over
backgrounds drawn from the same distribution for both. It is not the real
set: it fixes the shape of the work, not its accuracy.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from l40sbench import paths
from l40sbench.data.generated import ensure_splits

GENERATOR_VERSION = 1
COUNTS = {"train": {"cats": 279, "dogs": 278}, "test": {"cats": 70, "dogs": 70}}


def _background(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    corners = rng.integers(40, 216, size=(2, 2, 3)).astype(np.uint8)
    image = cv2.resize(corners, (width, height), interpolation=cv2.INTER_LINEAR)
    noise = rng.normal(0, 12, size=image.shape)
    return np.clip(image + noise, 0, 255).astype(np.uint8)


def _colour(rng: np.random.Generator, hue_low: int, hue_high: int) -> tuple[int, int, int]:
    hsv = np.uint8([[[rng.integers(hue_low, hue_high), rng.integers(120, 255), rng.integers(110, 255)]]])
    b, g, r = cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)[0, 0]
    return int(b), int(g), int(r)


def _draw_cat(image: np.ndarray, rng: np.random.Generator) -> None:
    h, w = image.shape[:2]
    cx, cy = int(rng.integers(w // 4, 3 * w // 4)), int(rng.integers(h // 3, 3 * h // 4))
    rx, ry = int(rng.integers(w // 8, w // 4)), int(rng.integers(h // 8, h // 4))
    colour = _colour(rng, 5, 25)  # orange / ginger hues
    cv2.ellipse(image, (cx, cy), (rx, ry), 0, 0, 360, colour, -1, cv2.LINE_AA)
    for side in (-1, 1):
        ear = np.array([[cx + side * rx // 4, cy - ry + 2], [cx + side * rx, cy - ry // 3],
                        [cx + side * rx * 3 // 4, cy - ry - ry // 2]], np.int32)
        cv2.fillPoly(image, [ear], colour, cv2.LINE_AA)


def _draw_dog(image: np.ndarray, rng: np.random.Generator) -> None:
    h, w = image.shape[:2]
    x0, y0 = int(rng.integers(0, w // 3)), int(rng.integers(0, h // 3))
    x1, y1 = int(rng.integers(x0 + w // 3, w)), int(rng.integers(y0 + h // 3, h))
    colour = _colour(rng, 95, 125)  # blue hues
    cv2.rectangle(image, (x0, y0), (x1, y1), colour, -1, cv2.LINE_AA)
    stripe = tuple(c // 2 for c in colour)
    mid = (y0 + y1) // 2
    cv2.rectangle(image, (x0, mid - (y1 - y0) // 10), (x1, mid + (y1 - y0) // 10), stripe, -1)


def _write_split(folder: Path, counts: dict[str, int], seed: int) -> None:
    for class_index, (name, count) in enumerate(sorted(counts.items())):
        out = folder / name
        out.mkdir(parents=True)
        draw = _draw_cat if name == "cats" else _draw_dog
        for index in range(count):
            rng = np.random.default_rng([seed, class_index, index])
            width = int(rng.integers(180, 500))
            height = int(width * rng.uniform(0.6, 1.4))
            image = _background(rng, height, width)
            draw(image, rng)
            cv2.imwrite(str(out / f"{name[:-1]}_{index + 1:04d}.jpg"), image, [cv2.IMWRITE_JPEG_QUALITY, 90])


def standin_path() -> Path:
    """Where the stand-in is generated: datasets/standin/cats_and_dogs of the checkout (l40sbench.paths)."""
    return paths.datasets_dir() / "standin" / "cats_and_dogs"


def ensure_standin(root: Path, seed: int = 0) -> Path:
    """Generates the set under root once (atomically) and returns its path."""
    return ensure_splits(root, GENERATOR_VERSION, COUNTS, seed, _write_split)
