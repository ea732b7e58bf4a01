"""A YOLO export's letterbox, decode and NMS against worked numbers, and the detector formats told apart by a file's
outputs and Ultralytics' metadata (runtimes.yolo, modelfile.detector_formats); no Ultralytics or torch."""

import numpy as np
import pytest

from l40sbench.errors import UserError
from l40sbench.modelfile import detector_formats as formats
from l40sbench.runtimes import yolo


@pytest.mark.parametrize(("height", "width", "resized", "top", "bottom", "left"), [
    (480, 640, (240, 320), 40, 40, 0),  # 0.5: 240 rows, 80 to pad, 40 each side
    (332, 500, (213, 320), 53, 54, 0),  # ceil(332 x 0.64) = 213: 107 to pad, round(53.4) above, round(53.6) below
    (100, 200, (160, 320), 80, 80, 0),  # grown 1.6x (INTER_LINEAR)
    (640, 427, (320, 214), 0, 0, 53),  # portrait: ceil(427 x 0.5) = 214, 106 to pad left and right
])
def test_letterbox_pads_as_ultralytics_splits_it(height, width, resized, top, bottom, left):
    image = np.full((height, width, 3), 7, np.uint8)
    fed, where = yolo.letterbox(image, 320)
    assert fed.shape == (320, 320, 3) and fed.dtype == np.uint8
    rows = np.flatnonzero((fed != yolo.PAD_VALUE).any(axis=(1, 2)))
    columns = np.flatnonzero((fed != yolo.PAD_VALUE).any(axis=(0, 2)))
    assert (rows[0], 320 - 1 - rows[-1], columns[0]) == (top, bottom, left)
    assert (len(rows), len(columns)) == resized
    assert (where.top, where.left, where.height, where.width) == (top, left, height, width)
    assert where.gain == pytest.approx(resized[0] / height)


def test_boxes_go_back_to_the_original_and_are_clipped():
    _, where = yolo.letterbox(np.zeros((480, 640, 3), np.uint8), 320)  # gain 0.5, 40 rows above
    fed = np.array([[50, 65, 150, 165], [-10, 30, 330, 400]], np.float32)  # the second past the image's edges
    np.testing.assert_allclose(where.to_original(fed), [[100, 50, 300, 250], [0, 0, 640, 480]])


def test_nms_drops_a_box_above_the_iou_and_keeps_the_best_first():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30]], np.float32)  # IoU(0, 1) = 81/119 = 0.68
    scores = np.array([0.9, 0.8, 0.95], np.float32)
    assert yolo.nms(boxes, scores, 0.7).tolist() == [2, 0, 1]
    assert yolo.nms(boxes, scores, 0.6).tolist() == [2, 0]
    assert yolo.nms(np.zeros((0, 4)), np.zeros(0), 0.7).tolist() == []


def raw_head() -> np.ndarray:
    """(1, 4 + 2 classes, 3 anchors): centre x, centre y, width, height, then a score per class."""
    anchors = [(5, 5, 10, 10, 0.9, 0.002), (6, 6, 10, 10, 0.8, 0.0), (25, 25, 10, 10, 0.0005, 0.95)]
    return np.array(anchors, np.float32).T[None]


def test_raw_head_decodes_every_class_above_conf_and_suppresses_within_a_class():
    found = yolo.decode_raw(raw_head(), conf=0.001, iou=0.7)
    # Every (anchor, class) pair above 0.001, best first; anchor 0's class 1 (0.002) is not suppressed by its
    # class 0 (another class), anchors 0 and 1 (IoU 0.68) both stay at 0.7.
    np.testing.assert_allclose(found.scores, [0.95, 0.9, 0.8, 0.002], rtol=1e-6)
    assert found.classes.tolist() == [1, 0, 0, 1]
    np.testing.assert_allclose(found.boxes, [[20, 20, 30, 30], [0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10]])
    assert yolo.decode_raw(raw_head(), conf=0.001, iou=0.5).scores.tolist() == pytest.approx([0.95, 0.9, 0.002])
    assert len(yolo.decode_raw(raw_head(), max_det=2)) == 2
    best_only = yolo.decode_raw(raw_head(), multi_label=False)
    assert best_only.classes.tolist() == [1, 0, 0]
    assert len(yolo.decode_raw(raw_head(), conf=0.99)) == 0


def test_end_to_end_head_keeps_rows_above_conf_in_order():
    head = np.array([[[1, 2, 3, 4, 0.9, 2], [0, 0, 1, 1, 0.0005, 0], [5, 6, 7, 8, 0.5, 1]]], np.float32)
    found = yolo.decode_end2end(head, conf=0.001)
    assert found.classes.tolist() == [2, 1]
    np.testing.assert_allclose(found.boxes, [[1, 2, 3, 4], [5, 6, 7, 8]])


def test_a_torchvision_triple_is_kept_best_first():
    found = yolo.decode_triple(np.array([[0, 0, 1, 1], [2, 2, 3, 3]]), np.array([3, 1]), np.array([0.2, 0.7]))
    assert found.classes.tolist() == [1, 3] and found.scores.tolist() == pytest.approx([0.7, 0.2])


def test_serving_outputs_are_normalised_to_each_image():
    found = [yolo.Detections(np.array([[10, 20, 110, 60]], np.float32), np.array([0.9], np.float32), np.array([1])),
             yolo.Detections(np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64))]
    outputs = yolo.serving_outputs(found, [(200, 400), (50, 50)], slots=5)
    assert outputs["detection_boxes"].shape == (2, 5, 4)
    np.testing.assert_allclose(outputs["detection_boxes"][0, 0], [0.1, 0.025, 0.3, 0.275])
    assert outputs["num_detections"].tolist() == [1, 0] and outputs["detection_classes"][0, 0] == 1


METADATA = {"author": "Ultralytics", "task": "detect", "names": "{0: 'apple', 1: 'banana'}", "imgsz": "[320, 320]",
            "stride": "32", "end2end": "False"}


def test_ultralytics_metadata_is_read():
    facts = formats.ultralytics(METADATA, "--model m.onnx")
    assert facts == formats.Ultralytics("detect", {0: "apple", 1: "banana"}, 320, False)
    assert formats.ultralytics({"producer": "pytorch"}, "--model m.onnx") is None


@pytest.mark.parametrize(("key", "value", "fragment"), [
    ("names", "{0: apple", "`names` does not parse"),
    ("names", "[1, 2]", "`names` is not {id: 'name', ...}"),
    ("imgsz", "[320, 640]", "exported at imgsz 320x640"),
    ("imgsz", "big", "`imgsz` does not parse"),
])
def test_metadata_that_does_not_parse_is_one_line(key, value, fragment):
    with pytest.raises(UserError, match=fragment.replace("[", r"\[").replace("{", r"\{").replace("(", r"\(")):
        formats.ultralytics({**METADATA, key: value}, "--model m.onnx")


def outputs(*shapes, names=None) -> list:
    return [formats.Output(name, tuple(dims)) for name, dims in zip(names or [f"output{i}" for i in range(len(shapes))],
                                                                     shapes, strict=True)]


def test_formats_are_told_apart_by_the_file():
    facts = formats.ultralytics(METADATA, "m")
    assert formats.decide(outputs((1, 6, 2100)), facts, None, "m") == "yolo"
    end2end = formats.ultralytics({**METADATA, "end2end": "True"}, "m")
    assert formats.decide(outputs((1, 300, 6)), end2end, None, "m") == "yolo-end2end"
    # `yolo export nms=True` of a YOLO11 (Ultralytics 8.4.190): end2end False in the metadata, nms True in its args
    exported = formats.ultralytics({**METADATA, "args": "{'data': None, 'batch': 1, 'nms': True, 'dynamic': False}"},
                                   "m")
    assert exported.end2end is True and formats.decide(outputs((1, 300, 6)), exported, None, "m") == "yolo-end2end"
    assert formats.ultralytics({**METADATA, "args": "{'nms': None"}, "m").end2end is False  # args unreadable
    triple = outputs(("n", 4), ("n",), ("n",), names=["boxes", "labels", "scores"])
    assert formats.decide(triple, None, None, "m") == "torchvision"
    assert formats.decide(outputs((1, 5, 300)), None, None, "m") is None  # without metadata: a raw output
    assert formats.decide(outputs((1, 5, 300)), None, "yolo", "m") == "yolo"  # ... unless --detector-format says
    assert formats.decide(outputs(("batch", 1000)), None, None, "m") is None  # a classifier
    od = outputs(*[(1, 100)] * 4, names=["detection_boxes", "detection_classes", "detection_scores", "num_detections"])
    assert formats.decide(od, None, None, "m") == "od-api"
    assert formats.decide(outputs((1, 1000)), formats.ultralytics({**METADATA, "task": "classify"}, "m"), None,
                          "m") is None


@pytest.mark.parametrize(("shapes", "metadata", "asked", "fragment"), [
    ([(1, 116, 2100), (1, 32, 80, 80)], {"task": "segment"}, None, "an Ultralytics segmentation export"),
    ([(1, 56, 2100)], {"task": "pose"}, None, "an Ultralytics pose export"),
    ([(1, 1000)], None, "yolo", "--detector-format yolo: m's outputs are output0 (1, 1000)"),
    ([(1, 0, 6)], {"end2end": "True"}, None, "an end-to-end head of no rows"),
    ([(1, 9, 2100)], {}, None, "its head holds 5 class scores and its `names` 2 classes"),
    ([(1, 2100)], {}, None, "an Ultralytics detect export whose outputs are output0 (1, 2100)"),
    ([(1, 6, 2100)], None, "ssd", "--detector-format ssd: one of od-api, yolo, yolo-end2end, torchvision"),
])
def test_a_file_the_suite_cannot_take_is_one_line(shapes, metadata, asked, fragment):
    facts = None if metadata is None else formats.ultralytics({**METADATA, **metadata}, "m")
    with pytest.raises(UserError) as raised:
        formats.decide(outputs(*shapes), facts, asked, "m")
    assert fragment in str(raised.value) and "\n" not in str(raised.value)
