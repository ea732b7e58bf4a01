"""pycocotools evaluation on hand-made detections: perfect, empty, and half right."""

from pathlib import Path

import numpy as np
import pytest

from l40sbench.data.voc import VocImage, VocObject
from l40sbench.detect.evaluate import coco_ground_truth, evaluate, to_coco_detections

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


def test_serving_boxes_are_rescaled_per_axis_and_thresholded():
    boxes = np.array([[20.0, 10.0, 100.0, 60.0], [0, 0, 5, 5]])  # [ymin, xmin, ymax, xmax] in the resized frame
    out = to_coco_detections(7, boxes, np.array([2, 1]), np.array([0.8, 0.01]), scale_yx=(2.0, 4.0),
                             score_threshold=0.05)
    assert out == [{"image_id": 7, "category_id": 2, "score": 0.8, "bbox": [2.5, 10.0, 12.5, 40.0]}]


def _box(image_id, category_id, score, xywh):
    return {"image_id": image_id, "category_id": category_id, "score": score, "bbox": list(xywh)}


def test_map_worked_out_by_hand_where_the_iou_thresholds_matter():
    """Apple (2 objects): a false positive scored 0.9 ranks above an exact hit (0.8) and a box at
    IoU 0.625 (0.7); banana: one exact hit; orange: no ground truth, one false positive.

    COCO's AP is the mean, over 101 recall points, of the precision envelope.
    Apple at IoU .50-.60 (the 0.625 box counts): precision 0, 1/2, 2/3 at recall 0, 1/2, 1;
    the envelope is 2/3 everywhere, AP 2/3. At IoU .65-.95 it does not count: recall stops at
    1/2 with envelope 1/2, so the 51 points 0.00..0.50 give 1/2 and the other 50 give 0:
    AP 25.5/101. Banana: 1 at every threshold. Orange has no ground truth: left out of
    the means (pycocotools marks it -1), None per class.
    """
    detections = [
        _box(2, 1, 0.9, (80, 80, 30, 30)),  # apple where image 2 has none
        _box(1, 1, 0.8, (10, 10, 50, 40)),  # apple of image 1, exact
        _box(2, 1, 0.7, (0, 0, 40, 25)),  # apple of image 2 (40x40): IoU 1000/1600 = 0.625
        _box(1, 2, 0.6, (100, 20, 80, 70)),  # banana, exact
        _box(2, 3, 0.95, (50, 50, 20, 20)),  # an orange, of which there are none
    ]
    result = evaluate(coco_ground_truth(GT, CLASSES), detections)
    apple_50, apple_high = 2 / 3, 25.5 / 101
    assert result["per_class_ap_50"] == {"apple": pytest.approx(apple_50), "banana": pytest.approx(1.0),
                                         "orange": None}
    assert result["map_50"] == pytest.approx((apple_50 + 1.0) / 2)  # 0.8333
    apple_50_95 = (3 * apple_50 + 7 * apple_high) / 10  # thresholds .50 .55 .60 count the 0.625 box
    assert result["map_50_95"] == pytest.approx((apple_50_95 + 1.0) / 2)  # 0.6884
    assert result["detections"] == 5
