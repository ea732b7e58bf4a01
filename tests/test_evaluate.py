"""pycocotools evaluation on hand-made detections: perfect, empty, and half right."""

from pathlib import Path

import numpy as np
import pytest

from l40sbench.detect.evaluate import coco_ground_truth, evaluate, to_coco_detections
from l40sbench.detect.voc import VocImage, VocObject

CLASSES = ("apple", "banana", "orange")
GT = [
    VocImage(Path("a.jpg"), 200, 100, (VocObject("apple", 10, 10, 60, 50), VocObject("banana", 100, 20, 180, 90))),
    VocImage(Path("b.jpg"), 120, 120, (VocObject("apple", 0, 0, 40, 40),)),
]


def _perfect():
    out = []
    for image_id, image in enumerate(GT, start=1):
        for obj in image.objects:
            out.append({"image_id": image_id, "category_id": CLASSES.index(obj.name) + 1, "score": 0.9,
                        "bbox": [obj.xmin, obj.ymin, obj.xmax - obj.xmin, obj.ymax - obj.ymin]})
    return out


def test_perfect_detections_score_one_and_absent_class_is_none():
    result = evaluate(coco_ground_truth(GT, CLASSES), _perfect())
    assert result["map_50_95"] == pytest.approx(1.0) and result["map_50"] == pytest.approx(1.0)
    assert result["per_class_ap_50"] == {"apple": pytest.approx(1.0), "banana": pytest.approx(1.0), "orange": None}


def test_no_detections_score_zero():
    result = evaluate(coco_ground_truth(GT, CLASSES), [])
    assert result["map_50"] == 0.0 and result["per_class_ap_50"]["orange"] is None


def test_wrong_class_halves_the_map():
    detections = _perfect()
    detections[1]["category_id"] = 3  # the banana called an orange
    result = evaluate(coco_ground_truth(GT, CLASSES), detections)
    assert result["per_class_ap_50"]["apple"] == pytest.approx(1.0)
    assert result["per_class_ap_50"]["banana"] == pytest.approx(0.0)
    assert result["map_50"] == pytest.approx(0.5)


def test_serving_boxes_are_rescaled_and_thresholded():
    boxes = np.array([[20.0, 10.0, 100.0, 60.0], [0, 0, 5, 5]])
    out = to_coco_detections(7, boxes, np.array([2, 1]), np.array([0.8, 0.01]), scale=2.0, score_threshold=0.05)
    assert out == [{"image_id": 7, "category_id": 2, "score": 0.8, "bbox": [5.0, 10.0, 25.0, 40.0]}]
