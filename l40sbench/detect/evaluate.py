"""COCO-style box evaluation of the test split with pycocotools."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence

import numpy as np

from l40sbench.data.voc import VocImage


def coco_ground_truth(annotations: Sequence[VocImage], classes: Sequence[str]) -> dict:
    """The test split as a COCO dataset dict; image ids are 1-based positions."""
    images, objects = [], []
    for image_id, annotation in enumerate(annotations, start=1):
        images.append({"id": image_id, "width": annotation.width, "height": annotation.height,
                       "file_name": annotation.image_path.name})
        for obj in annotation.objects:
            w, h = obj.xmax - obj.xmin, obj.ymax - obj.ymin
            objects.append({"id": len(objects) + 1, "image_id": image_id, "category_id": classes.index(obj.name) + 1,
                            "bbox": [obj.xmin, obj.ymin, w, h], "area": w * h, "iscrowd": 0})
    categories = [{"id": i + 1, "name": name} for i, name in enumerate(classes)]
    return {"images": images, "annotations": objects, "categories": categories}


def evaluate(ground_truth: dict, detections: list[dict]) -> dict:
    """mAP@[.5:.95], mAP@.5 and per-class AP@.5 (None for a class without ground truth).

    Args:
      detections: COCO result dicts {image_id, category_id, bbox [x, y, w, h] in
        original-image pixels, score}.
    """
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    names = {c["id"]: c["name"] for c in ground_truth["categories"]}
    if not detections:
        present = {a["category_id"] for a in ground_truth["annotations"]}
        return {"map_50_95": 0.0, "map_50": 0.0, "detections": 0,
                "per_class_ap_50": {n: (0.0 if i in present else None) for i, n in names.items()}}
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints its progress
        coco = COCO()
        coco.dataset = ground_truth
        coco.createIndex()
        results = coco.loadRes(detections)
        evaluator = COCOeval(coco, results, "bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    # precision: [iou thresholds, recall points, classes, area ranges, max detections]
    precision = evaluator.eval["precision"][0, :, :, 0, -1]
    per_class = {}
    for k, category_id in enumerate(evaluator.params.catIds):
        values = precision[:, k]
        values = values[values > -1]
        per_class[names[category_id]] = float(values.mean()) if values.size else None
    return {
        "map_50_95": max(float(evaluator.stats[0]), 0.0),
        "map_50": max(float(evaluator.stats[1]), 0.0),
        "detections": len(detections),
        "per_class_ap_50": per_class,
    }


def to_coco_detections(image_id: int, boxes_yxyx: np.ndarray, classes: np.ndarray, scores: np.ndarray,
                       scale_yx: tuple[float, float], score_threshold: float) -> list[dict]:
    """Serving outputs (boxes in the resized frame, [ymin, xmin, ymax, xmax]) -> COCO results.

    scale_yx: resized / original size along y and x (Model Garden's image_info[2]); the
    two differ by the rounding of the resized side, and by more for a non-uniform resize.
    """
    scale_y, scale_x = scale_yx
    out = []
    for (y0, x0, y1, x1), label, score in zip(boxes_yxyx, classes, scores):
        if score < score_threshold or label < 1:
            continue
        x0, x1, y0, y1 = x0 / scale_x, x1 / scale_x, y0 / scale_y, y1 / scale_y
        out.append({"image_id": image_id, "category_id": int(label), "score": float(score),
                    "bbox": [float(x0), float(y0), float(x1 - x0), float(y1 - y0)]})
    return out
