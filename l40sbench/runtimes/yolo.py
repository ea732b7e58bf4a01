"""An Ultralytics YOLO export's input and output, as Ultralytics' own validation (`yolo val`) makes and reads them.

- Input: the image letterboxed to the file's square `imgsz`: its long side resized to imgsz (INTER_AREA when
  shrinking, INTER_LINEAR when growing, as Ultralytics' dataset loads a validation image), then padded with 114
  on both sides to imgsz x imgsz (the padding split as Ultralytics splits it); RGB, 0-1 (the /255 goes in the
  fed file as a scaling, modelfile.scaling's `unit`). Boxes go back by the same gain and padding, clipped to the
  original image.
- Raw head (1, 4 + classes, anchors): each anchor's centre x, centre y, width, height in input pixels, then one
  score per class. Decoded as Ultralytics' non_max_suppression does for validation: every (anchor, class) pair
  whose score passes `conf` (multi-label), at most 30000 by score into a class-aware NMS (boxes offset by class x
  7680), IoU above `iou` suppressed, the best `max_det` kept.
- End-to-end head (1, K, 6): x1, y1, x2, y2 in input pixels, score, class; NMS already inside: rows above `conf`
  kept in order, at most `max_det`.
- torchvision-style outputs (boxes x1, y1, x2, y2 in the image's own pixels, labels, scores): kept as given.

NumPy and OpenCV only: nothing of Ultralytics or torch is imported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

PAD_VALUE = 114  # Ultralytics' letterbox grey
CONF = 0.001  # Ultralytics' validation defaults (its `conf` and `iou` for `yolo val`)
IOU = 0.7
MAX_DET = 300
MAX_NMS = 30000  # at most this many (anchor, class) pairs go into NMS, the best by score
MAX_WH = 7680  # the class offset that keeps NMS within a class


@dataclass(frozen=True)
class Letterbox:
    """Where an original image went in the letterboxed input: input = original x gain + (left, top)."""

    gain: float
    left: int
    top: int
    height: int  # the original's
    width: int

    def to_original(self, boxes: np.ndarray) -> np.ndarray:
        """x1, y1, x2, y2 in the input's pixels -> in the original's, clipped to it."""
        boxes = np.asarray(boxes, np.float64).reshape(-1, 4).copy()
        boxes[:, [0, 2]] = ((boxes[:, [0, 2]] - self.left) / self.gain).clip(0, self.width)
        boxes[:, [1, 3]] = ((boxes[:, [1, 3]] - self.top) / self.gain).clip(0, self.height)
        return boxes


def letterbox(rgb: np.ndarray, size: int) -> tuple[np.ndarray, Letterbox]:
    """An HxWx3 uint8 image -> (size x size x 3 uint8 input, where the original went).

    The long side becomes `size` (the short one ceil'd, at most size), then the rest is padded; the gain back is
    the height's, as Ultralytics' ratio_pad holds it.
    """
    import cv2

    height, width = rgb.shape[:2]
    ratio = size / max(height, width)
    resized = rgb
    if ratio != 1:
        shape = (min(math.ceil(width * ratio), size), min(math.ceil(height * ratio), size))
        resized = cv2.resize(rgb, shape, interpolation=cv2.INTER_LINEAR if ratio > 1 else cv2.INTER_AREA)
    new_h, new_w = resized.shape[:2]
    dh, dw = (size - new_h) / 2, (size - new_w) / 2
    top, bottom = round(dh - 0.1), round(dh + 0.1)
    left, right = round(dw - 0.1), round(dw + 0.1)
    padded = cv2.copyMakeBorder(resized, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(PAD_VALUE,) * 3)
    return padded, Letterbox(new_h / height, left, top, height, width)


def xywh_to_xyxy(boxes: np.ndarray) -> np.ndarray:
    centre, half = boxes[:, :2], boxes[:, 2:4] / 2
    return np.concatenate([centre - half, centre + half], axis=1)


def nms(boxes: np.ndarray, scores: np.ndarray, iou: float) -> np.ndarray:
    """Greedy NMS as torchvision.ops.nms: the indices kept, best score first; a box whose IoU with a kept one is
    above `iou` is dropped."""
    boxes = np.asarray(boxes, np.float64)
    x1, y1, x2, y2 = boxes.T
    areas = (x2 - x1) * (y2 - y1)
    order = np.argsort(-np.asarray(scores), kind="stable")
    keep = []
    while order.size:
        best, rest = order[0], order[1:]
        keep.append(best)
        width = (np.minimum(x2[best], x2[rest]) - np.maximum(x1[best], x1[rest])).clip(0)
        height = (np.minimum(y2[best], y2[rest]) - np.maximum(y1[best], y1[rest])).clip(0)
        inter = width * height
        with np.errstate(invalid="ignore", divide="ignore"):
            overlap = inter / (areas[best] + areas[rest] - inter)
        order = rest[~(overlap > iou)]
    return np.asarray(keep, np.int64)


@dataclass(frozen=True)
class Detections:
    """One image's detections: x1, y1, x2, y2 (the input's pixels, or the original's once mapped back), score,
    the model's class id (0-based for Ultralytics' files)."""

    boxes: np.ndarray
    scores: np.ndarray
    classes: np.ndarray

    def __len__(self) -> int:
        return len(self.scores)


def _kept(boxes, scores, classes, rows) -> Detections:
    return Detections(np.asarray(boxes, np.float32)[rows].reshape(-1, 4), np.asarray(scores, np.float32)[rows],
                      np.asarray(classes, np.int64)[rows])


def decode_raw(head: np.ndarray, conf: float = CONF, iou: float = IOU, max_det: int = MAX_DET,
               multi_label: bool = True) -> Detections:
    """One image's raw head (4 + classes, anchors) -> its detections after class-aware NMS."""
    head = np.asarray(head, np.float32)
    if head.ndim == 3:  # (1, 4 + classes, anchors)
        (head,) = head
    scores = head[4:].T  # (anchors, classes)
    candidates = scores.max(axis=1) > conf if scores.size else np.zeros(head.shape[1], bool)
    boxes, scores = xywh_to_xyxy(head[:4].T[candidates]), scores[candidates]
    if multi_label and scores.shape[1] > 1:
        anchor, label = np.nonzero(scores > conf)
        boxes, score = boxes[anchor], scores[anchor, label]
    else:
        label = scores.argmax(axis=1) if len(scores) else np.zeros(0, np.int64)
        score = scores[np.arange(len(scores)), label]
        passed = score > conf
        boxes, score, label = boxes[passed], score[passed], label[passed]
    if len(score) > MAX_NMS:
        best = np.argsort(-score, kind="stable")[:MAX_NMS]
        boxes, score, label = boxes[best], score[best], label[best]
    keep = nms(boxes + label[:, None] * MAX_WH, score, iou)[:max_det]
    return _kept(boxes, score, label, keep)


def decode_end2end(head: np.ndarray, conf: float = CONF, max_det: int = MAX_DET) -> Detections:
    """One image's end-to-end head (K, 6: x1, y1, x2, y2, score, class) -> the rows above `conf`, in order."""
    head = np.asarray(head, np.float32).reshape(-1, 6)
    rows = np.flatnonzero(head[:, 4] > conf)[:max_det]
    return _kept(head[:, :4], head[:, 4], head[:, 5].round(), rows)


def decode_triple(boxes: np.ndarray, labels: np.ndarray, scores: np.ndarray, conf: float = CONF,
                  max_det: int = MAX_DET) -> Detections:
    """torchvision-style outputs (boxes x1, y1, x2, y2; labels; scores) -> those above `conf`, best first."""
    scores = np.asarray(scores, np.float32).reshape(-1)
    rows = np.argsort(-scores, kind="stable")
    rows = rows[scores[rows] > conf][:max_det]
    return _kept(np.asarray(boxes).reshape(-1, 4), scores, np.asarray(labels).reshape(-1), rows)


def serving_outputs(found: list[Detections], sizes: list[tuple[int, int]], slots: int = MAX_DET) -> dict:
    """Detections in the original images' pixels -> the Object Detection API's serving outputs (boxes [ymin, xmin,
    ymax, xmax] normalised by each image's (height, width), `slots` per image, zero past num_detections; classes as
    the model's ids), the form every scorer and LoadGen response of the suite reads."""
    count = len(found)
    boxes, classes = np.zeros((count, slots, 4), np.float32), np.zeros((count, slots), np.float32)
    scores, numbers = np.zeros((count, slots), np.float32), np.zeros(count, np.float32)
    for i, (detections, (height, width)) in enumerate(zip(found, sizes, strict=True)):
        n = min(len(detections), slots)
        x1, y1, x2, y2 = detections.boxes[:n].T
        boxes[i, :n] = np.stack([y1 / height, x1 / width, y2 / height, x2 / width], axis=1)
        classes[i, :n], scores[i, :n], numbers[i] = detections.classes[:n], detections.scores[:n], n
    return {"detection_boxes": boxes, "detection_classes": classes, "detection_scores": scores,
            "num_detections": numbers}
