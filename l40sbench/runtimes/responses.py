"""What the SUT hands LoadGen for each sample, in MLPerf's own response formats, and LoadGen's accuracy log read back.

MLPerf requires the real answer in both modes: LoadGen logs every response in accuracy mode, and a sample of
them in performance mode when an audit asks (TEST01 compares the two). The formats are those MLPerf's reference
scripts read from mlperf_log_accuracy.json:

- class (accuracy-imagenet.py): the predicted class, one float32 (4 bytes).
- coco (accuracy-coco.py): each kept detection as 7 float32 (28 bytes each): the sample's index in the library,
  ymin, xmin, ymax, xmax normalised by the image's height and width, score, class id; no detection: 0 bytes.
- raw: a model whose outputs are not the data's classes (a feature map, one score per image): every output
  value as float32, in output-name order; MLPerf has no format for it.

Beside the logs, the library's map in MLPerf's forms (`write_library_map`): val_map.txt for a classifier (one
"file label" line per sample, in library order), COCO annotations for a detector (images in library order), so
that MLPerf's scripts score the suite's accuracy log themselves.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ACCURACY_LOG = "mlperf_log_accuracy.json"
VAL_MAP = "val_map.txt"
COCO_ANNOTATIONS = Path("coco") / "annotations" / "instances_val2017.json"  # where accuracy-coco.py looks
FORMATS = ("class", "coco", "raw")
COCO_FIELDS = 7
SCALE = "image_info"  # Model Garden's [original size, resized size, scale, offset] per image
Respond = Callable[[object, int, int], bytes]  # (a call's outputs, position in its batch, library index)


@dataclass(frozen=True)
class ResponseFormat:
    """How one workload's outputs become LoadGen responses; sent to the LoadGen child as a dict.

    Attributes:
      kind: class, coco or raw.
      classes: class: how many classes the classifier's output holds (which output, where there are several).
      score_threshold: coco: detections below it are not answered (the suite scores none below it either).
      sizes: coco: each library sample's (height, width) as fed to the model: its boxes in that image's pixels (a
        normalised box times it, or Model Garden's image_info scale undone) are divided by it. A library image is
        the original resized without keeping its aspect, so a box normalised to it is normalised to the original
        too, and accuracy-coco.py scales it back by the original's size in the annotations.
      table: coco: a detector file's class ids as the data's (modelfile.detector.class_ids), or None.
    """

    kind: str
    classes: int | None = None
    score_threshold: float | None = None
    sizes: tuple | None = None
    table: tuple | None = None

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: dict) -> ResponseFormat:
        return cls(**{key: tuple(map(tuple, value)) if key == "sizes" and value else
                      (tuple(value) if isinstance(value, list) else value) for key, value in data.items()})


@dataclass(frozen=True)
class Answers:
    """A workload's LoadGen responses: their format, the suite's score of a log of them (each sample's bytes in
    library order -> the accuracy figures the probe's outputs got), and what the library's map is made of."""

    form: ResponseFormat
    score: Callable[[list[bytes]], dict]
    labels: np.ndarray | None = None
    ground_truth: dict | None = None

    def write_map(self, folder: Path) -> Path | None:
        return write_library_map(folder, self.form, labels=self.labels, ground_truth=self.ground_truth)


def _named(outputs) -> dict:
    return outputs if isinstance(outputs, dict) else {"output": outputs}


def classifier_output(outputs, classes: int | None) -> np.ndarray:
    """The one output, or the one (batch, classes) output among several."""
    named = _named(outputs)
    if len(named) == 1:
        return np.asarray(next(iter(named.values())))
    shaped = [np.asarray(v) for v in named.values() if np.ndim(v) == 2 and np.shape(v)[1] == classes]
    if len(shaped) != 1:
        raise ValueError(f"{len(named)} outputs, {len(shaped)} of {classes} classes: which is the classifier's is "
                         "not known")
    return shaped[0]


def encoder(form: ResponseFormat) -> Respond:
    """respond(a call's outputs, position in the batch, the sample's library index) -> the response bytes."""
    if form.kind == "class":
        return lambda outputs, position, index: np.float32(
            np.argmax(classifier_output(outputs, form.classes)[position])).tobytes()
    if form.kind == "raw":
        return lambda outputs, position, index: b"".join(
            np.asarray(value[position], np.float32).tobytes() for _, value in sorted(_named(outputs).items()))
    if form.kind == "coco":
        return lambda outputs, position, index: coco_response(outputs, position, index, form)
    raise ValueError(f"unknown response format {form.kind}: one of {', '.join(FORMATS)}")


def coco_response(outputs: dict, position: int, index: int, form: ResponseFormat) -> bytes:
    """One image's kept detections as accuracy-coco.py reads them (an image with none: 0 bytes)."""
    table = None if form.table is None else np.asarray(form.table)
    outputs = data_classes(outputs, table)
    count = int(np.asarray(outputs["num_detections"][position]).reshape(-1)[0])
    boxes = np.asarray(outputs["detection_boxes"][position][:count], np.float64)
    scores = np.asarray(outputs["detection_scores"][position][:count], np.float64)
    labels = np.asarray(outputs["detection_classes"][position][:count]).astype(np.int64)
    height, width = form.sizes[index]
    scale_y, scale_x = scale_yx(outputs, position, (height, width))
    rows = [(index, y0 / scale_y / height, x0 / scale_x / width, y1 / scale_y / height, x1 / scale_x / width, s, c)
            for (y0, x0, y1, x1), s, c in zip(boxes, scores, labels) if s >= form.score_threshold and c >= 1]
    return np.asarray(rows, np.float32).reshape(-1, COCO_FIELDS).tobytes()


def data_classes(outputs: dict, table: np.ndarray | None) -> dict:
    """The outputs with their class ids as the data's (a model id beyond the map: 0, dropped)."""
    if table is None:
        return outputs
    ids = np.asarray(outputs["detection_classes"]).astype(np.int64)
    return {**outputs, "detection_classes": np.where(ids < len(table), table[np.clip(ids, 0, len(table) - 1)], 0)}


def scale_yx(outputs: dict, index: int, size_hw: tuple[int, int]) -> tuple[float, float]:
    """What image `index`'s boxes are divided by to be in its own pixels: Model Garden's scale, else 1/size
    (normalised boxes)."""
    if SCALE in outputs:
        return tuple(np.asarray(outputs[SCALE][index][2]).tolist())
    return 1.0 / size_hw[0], 1.0 / size_hw[1]


def classes_of(samples: list[bytes]) -> np.ndarray:
    """class responses in library order -> each sample's predicted class."""
    return np.array([int(np.frombuffer(data, np.float32)[0]) for data in samples])


def raw_of(samples: list[bytes], shape: tuple) -> np.ndarray:
    """raw responses of a one-output model -> its outputs stacked, each of `shape` (one sample's)."""
    return np.stack([np.frombuffer(data, np.float32).reshape(shape) for data in samples])


def coco_detections_of(samples: list[bytes], images: list[dict]) -> list[dict]:
    """coco responses in library order -> COCO results, boxes scaled back by each image's size as accuracy-coco.py
    does (`images`: the ground truth's images, in library order)."""
    detections = []
    for index, data in enumerate(samples):
        image = images[index]
        for _, y0, x0, y1, x1, score, label in np.frombuffer(data, np.float32).reshape(-1, COCO_FIELDS):
            y0, y1 = y0 * image["height"], y1 * image["height"]
            x0, x1 = x0 * image["width"], x1 * image["width"]
            detections.append({"image_id": image["id"], "category_id": int(label), "score": float(score),
                               "bbox": [float(x0), float(y0), float(x1 - x0), float(y1 - y0)]})
    return detections


def read_accuracy_log(path: Path) -> tuple[list[bytes], int]:
    """LoadGen's accuracy log as each sample's response bytes in library order; and how many entries it held
    (every sample once, or the log is not a whole accuracy run).

    Raises:
      ValueError: a sample missing or logged twice.
    """
    entries = json.loads(path.read_text())
    by_index = {}
    for entry in entries:
        if entry["qsl_idx"] in by_index:
            raise ValueError(f"sample {entry['qsl_idx']} answered twice in {path.name}")
        by_index[entry["qsl_idx"]] = bytes.fromhex(entry["data"])
    missing = sorted(set(range(len(by_index))) - set(by_index))
    if missing or not by_index:
        raise ValueError(f"{path.name} lacks samples {missing[:5] or 'all'}")
    return [by_index[i] for i in range(len(by_index))], len(entries)


def write_library_map(folder: Path, form: ResponseFormat, *, labels=None, ground_truth: dict | None = None) -> Path | None:
    """The query sample library's map in MLPerf's form beside the logs: val_map.txt (a sample's name and label; the
    suite holds decoded images, so the name is the sample's index) or COCO annotations; None for raw responses."""
    from l40sbench.core.records import to_json, write_atomic

    if form.kind == "class" and labels is not None:
        path = folder / VAL_MAP
        write_atomic(path, "".join(f"sample-{i:05d} {int(label)}\n" for i, label in enumerate(labels)))
        return path
    if form.kind == "coco" and ground_truth is not None:
        path = folder / COCO_ANNOTATIONS
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, to_json({**ground_truth, "info": {}, "licenses": []}))
        return path
    return None
