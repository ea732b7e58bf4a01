"""A generated stand-in for Kaggle's "Fruit Images for Object Detection" set.

Same layout (train_zip/train, test_zip/test, a VOC XML beside each JPEG), the
same image and object counts (train 240 images with 156 apple / 169 banana /
140 orange; test 60 images with 35 / 40 / 42), every image with at least one
fruit and some with several of different classes. Fruits are distinct,
learnable shapes: red discs with a leaf (apple), yellow crescents (banana),
orange dimpled discs (orange).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from l40sbench import paths
from l40sbench.data.generated import ensure_splits

GENERATOR_VERSION = 1
CLASSES = ("apple", "banana", "orange")
COUNTS = {
    "train": {"images": 240, "apple": 156, "banana": 169, "orange": 140},
    "test": {"images": 60, "apple": 35, "banana": 40, "orange": 42},
}
SPLIT_FOLDERS = {"train": "train_zip/train", "test": "test_zip/test"}


def _labels_per_image(rng: np.random.Generator, counts: dict) -> list[list[str]]:
    """Exact object counts spread over the images, each image getting at least one."""
    labels = [name for name in CLASSES for _ in range(counts[name])]
    rng.shuffle(labels)
    images = [[label] for label in labels[: counts["images"]]]
    # Most extra fruits join an image of their own kind, as in the real set;
    # the rest make the mixed images.
    for label in labels[counts["images"]:]:
        same = [i for i, image in enumerate(images) if image[0] == label]
        pool = same if same and rng.random() < 0.85 else range(len(images))
        images[int(rng.choice(pool))].append(label)
    return images


def _draw(image: np.ndarray, label: str, box: tuple[int, int, int, int], rng: np.random.Generator) -> None:
    x0, y0, x1, y1 = box
    cx, cy, rx, ry = (x0 + x1) // 2, (y0 + y1) // 2, (x1 - x0) // 2, (y1 - y0) // 2
    shade = int(rng.integers(-25, 25))
    if label == "apple":
        cv2.ellipse(image, (cx, cy + ry // 10), (rx, ry - ry // 10), 0, 0, 360, (40, 30, 200 + shade // 2), -1, cv2.LINE_AA)
        cv2.ellipse(image, (cx + rx // 4, y0 + ry // 6), (max(rx // 4, 2), max(ry // 8, 1)), -30, 0, 360, (40, 160, 40), -1)
    elif label == "banana":
        cv2.ellipse(image, (cx, y0), (rx, 2 * ry - 2), 0, 20, 160, (40, 215 + shade // 3, 235), max(ry // 2, 3), cv2.LINE_AA)
    else:
        cv2.circle(image, (cx, cy), min(rx, ry), (20, 140 + shade, 250), -1, cv2.LINE_AA)
        for _ in range(12):
            dx, dy = rng.integers(-min(rx, ry) // 2, min(rx, ry) // 2 + 1, size=2)
            cv2.circle(image, (cx + int(dx), cy + int(dy)), 1, (10, 110, 220), -1)


def _place(rng: np.random.Generator, width: int, height: int, taken: list) -> tuple[int, int, int, int]:
    """A box that overlaps the others little (best of a few random tries)."""
    best, best_overlap = None, None
    for _ in range(20):
        side = int(rng.integers(min(width, height) // 6, min(width, height) // 2.5))
        w, h = side, int(side * rng.uniform(0.75, 1.25))
        x0, y0 = int(rng.integers(0, width - w)), int(rng.integers(0, max(height - h, 1)))
        box = (x0, y0, x0 + w, min(y0 + h, height - 1))
        overlap = sum(max(0, min(box[2], t[2]) - max(box[0], t[0])) * max(0, min(box[3], t[3]) - max(box[1], t[1]))
                      for t in taken)
        if best is None or overlap < best_overlap:
            best, best_overlap = box, overlap
        if overlap == 0:
            break
    return best


def _xml(filename: str, width: int, height: int, objects: list[tuple[str, tuple[int, int, int, int]]]) -> str:
    parts = [f"<annotation><folder>images</folder><filename>{filename}</filename>",
             f"<size><width>{width}</width><height>{height}</height><depth>3</depth></size>"]
    for name, (x0, y0, x1, y1) in objects:
        parts.append(
            f"<object><name>{name}</name><pose>Unspecified</pose><truncated>0</truncated><difficult>0</difficult>"
            f"<bndbox><xmin>{x0}</xmin><ymin>{y0}</ymin><xmax>{x1}</xmax><ymax>{y1}</ymax></bndbox></object>"
        )
    return "\n".join(parts) + "\n</annotation>\n"


def _write_split(folder: Path, counts: dict, seed: int) -> None:
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for index, labels in enumerate(_labels_per_image(rng, counts)):
        width = int(rng.integers(240, 640))
        height = int(width * rng.uniform(0.6, 1.3))
        background = rng.integers(90, 230, size=(2, 2, 3)).astype(np.uint8)
        image = cv2.resize(background, (width, height), interpolation=cv2.INTER_LINEAR)
        taken: list = []
        for label in labels:
            taken.append(_place(rng, width, height, taken))
            _draw(image, label, taken[-1], rng)
        stem = labels[0] if len(set(labels)) == 1 else "mixed"
        filename = f"{stem}_{index + 1}.jpg"
        cv2.imwrite(str(folder / filename), image, [cv2.IMWRITE_JPEG_QUALITY, 90])
        (folder / f"{stem}_{index + 1}.xml").write_text(_xml(filename, width, height, list(zip(labels, taken))))


def standin_path() -> Path:
    """Where the stand-in is generated: datasets/standin/fruits of the checkout (l40sbench.paths)."""
    return paths.datasets_dir() / "standin" / "fruits"


def ensure_standin(root: Path, seed: int = 0) -> Path:
    """Generates the fruit stand-in under root once (atomically) and returns its path."""
    return ensure_splits(root, GENERATOR_VERSION, COUNTS, seed, _write_split, SPLIT_FOLDERS)
