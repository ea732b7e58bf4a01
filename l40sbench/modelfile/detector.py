"""A detector file: a SavedModel or an ONNX file with the Object Detection API's serving outputs (what Model
Garden, the TF2 Object Detection API and `detect` itself export), and the class map from its ids to the data's.

Its boxes are [ymin, xmin, ymax, xmax]: in the resized image's pixels where the outputs carry Model Garden's
`image_info` (its scale), else normalised to the image (the Object Detection API's), scaled by each image's own
size. Its class ids are the data's classes in name order from 1 (as `detect` numbers them), unless a label map
(--label-map: the Object Detection API's label_map.pbtxt, or JSON {"id": "name"}) names them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from l40sbench.errors import UserError, said
from l40sbench.runtimes.responses import SCALE, data_classes, scale_yx  # noqa: F401  (a detector's outputs read)

OUTPUTS = ("detection_boxes", "detection_classes", "detection_scores", "num_detections")
ITEM = re.compile(r"item\s*\{(.*?)\}", re.S)
BY_NAME = "the model's class ids are the data's classes in name order from 1, as detect numbers them"


def is_detector(outputs) -> bool:
    """Whether a model's output names hold the Object Detection API's serving outputs."""
    return set(OUTPUTS) <= set(outputs)


def read_label_map(path: Path) -> dict[int, str]:
    """{class id: name} of a label map file.

    Raises:
      UserError: no file, or it does not parse (no item with an integer id and a name).
    """
    if not path.is_file():
        raise UserError(f"--label-map: no file at {path}")
    text = path.read_text(errors="replace")
    try:
        if path.suffix.lower() == ".json":
            names = {int(key): str(value) for key, value in json.loads(text).items()}
        else:
            names = {}
            for body in ITEM.findall(text):
                ids = re.search(r"\bid\s*:\s*(\d+)", body)
                name = re.search(r"\bname\s*:\s*[\"']([^\"']*)[\"']", body)
                if ids is None or name is None:
                    raise ValueError(f"an item without an integer id and a quoted name: {body.strip()[:80]!r}")
                names[int(ids.group(1))] = name.group(1)
    except (ValueError, AttributeError) as exc:
        raise UserError(f"--label-map {path} does not parse: {said(exc)}") from None
    if not names:
        raise UserError(f"--label-map {path} does not parse: no item {{ id: N name: '...' }} in it")
    return names


def class_ids(label_map: dict[int, str] | None, classes: tuple[str, ...]) -> np.ndarray | None:
    """The data's id (1-based, 0: none of the data's classes) of each model class id; None: the same ids.

    Raises:
      UserError: a label map naming none of the data's classes (every detection would be dropped).
    """
    if label_map is None:
        return None
    table = np.zeros(max(label_map) + 1, np.int64)
    for model_id, name in label_map.items():
        table[model_id] = classes.index(name) + 1 if name in classes else 0
    if not table.any():
        raise UserError(f"--label-map names none of the data's classes ({', '.join(classes)})")
    return table


def facts(label_map: Path | None, table: np.ndarray | None, classes: tuple[str, ...], read: str | None = None) -> dict:
    """The record's word on how the model's classes were read: --label-map, else `read` (where the file names them,
    or its ids count from 0), else by name order."""
    if label_map is None and read is None:
        return {"class_ids": BY_NAME}
    return {"class_ids": f"--label-map {label_map}" if label_map is not None else read,
            "mapped": {str(i): classes[v - 1] for i, v in enumerate(table) if v}}
