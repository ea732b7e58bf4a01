"""Your own detector: `infer --model` of a SavedModel or an ONNX file with the Object Detection API's serving
outputs, timed untrained on a VOC set and scored by COCO mAP, its classes named by a label map."""

import json

import pytest

from tests.conftest import assert_audits_pass, assert_one_line_exit_2, cli_in_process, export_dir
from tests.test_infer_model import infer_record

STANDIN = ("--limit", "12")  # 12 test images of detect's stand-in
# The detector's own class ids, in another order than the data's (apple, banana, orange by name): RGB of each
# fruit as the stand-in draws it.
COLOURS = {1: ("orange", (250, 140, 20)), 2: ("apple", (200, 30, 40)), 3: ("banana", (235, 215, 40))}
LABEL_MAP = "".join(f"item {{\n  id: {i}\n  name: '{name}'\n}}\n" for i, (name, _) in COLOURS.items())


@pytest.fixture(scope="module")
def colour_detector(tmp_path_factory):
    """A real if simple detector, exported as the Object Detection API exports: per class, the box around the
    pixels near its colour, normalised to the image ([ymin, xmin, ymax, xmax] in 0-1), scored 0.9 where found."""
    import tensorflow as tf

    class ColourDetector(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, None, None, 3], tf.uint8, name="input_tensor")])
        def serve(self, input_tensor):
            image = tf.cast(input_tensor[0], tf.float32)
            h, w = tf.shape(image)[0], tf.shape(image)[1]
            boxes, scores = [], []
            for _, colour in COLOURS.values():
                near = tf.reduce_max(tf.abs(image - tf.constant(colour, tf.float32)), axis=-1) < 60
                rows, cols = tf.reduce_any(near, axis=1), tf.reduce_any(near, axis=0)
                edges = [tf.reduce_min(tf.where(rows, tf.range(h), h)), tf.reduce_min(tf.where(cols, tf.range(w), w)),
                         tf.reduce_max(tf.where(rows, tf.range(h), -1)) + 1,
                         tf.reduce_max(tf.where(cols, tf.range(w), -1)) + 1]
                sides = tf.cast(tf.stack([h, w, h, w]), tf.float32)
                found = tf.cast(tf.reduce_any(rows), tf.float32)
                boxes.append(found * tf.cast(tf.stack(edges), tf.float32) / sides)
                scores.append(0.9 * found)
            return {"detection_boxes": tf.stack(boxes)[None], "detection_scores": tf.stack(scores)[None],
                    "detection_classes": tf.constant([list(COLOURS)], tf.float32),
                    "num_detections": tf.constant([len(COLOURS)], tf.float32)}

    folder = tmp_path_factory.mktemp("detector")
    module = ColourDetector()
    tf.saved_model.save(module, str(folder / "colours"), signatures={"serving_default": module.serve})
    (folder / "labels.pbtxt").write_text(LABEL_MAP)
    return folder


def test_a_detector_savedmodel_and_its_onnx_export_are_scored_alike_by_its_label_map(colour_detector, tmp_path):
    labels = colour_detector / "labels.pbtxt"
    record = infer_record(colour_detector / "colours", tmp_path / "sm", *STANDIN, "--label-map", labels,
                    "--runtimes", "onnxruntime")
    assert record["task"] == "detect" and record["train"]["epochs"] == 0 and record["dataset"]["test_images"] == 12
    assert record["model"]["mapped"] == {"1": "orange", "2": "apple", "3": "banana"}
    rows = {row["runtime"]: row for row in record["inference"]["runtimes"]}
    assert rows["tf"]["accuracy"]["map_50"] > 0.15  # normalised boxes scaled by each image's own size
    assert record["accuracy"]["map_50_95"] == rows["tf"]["accuracy"]["map_50_95"]
    onnx = rows["onnxruntime"]
    assert onnx["status"] == "ok" and onnx["accuracy"]["matched_share"] == 1.0
    assert onnx["accuracy"]["map_50_95"] == pytest.approx(rows["tf"]["accuracy"]["map_50_95"], abs=0.01)
    # the ONNX file that row timed (tf2onnx's), given as a model of its own: the same mAP
    again = infer_record(onnx["artifact"], tmp_path / "onnx", *STANDIN, "--label-map", labels, "--runtimes", "onnxruntime",
                   "--scenario", "single-stream", "--duration", "0.5", "--min-queries", "10", "--mode", "accuracy")
    assert again["task"] == "detect" and again["notes"]["reference_runtime"] == "onnxruntime"
    assert again["accuracy"]["map_50_95"] == pytest.approx(record["accuracy"]["map_50_95"], abs=0.01)
    # LoadGen's accuracy log, scored by the same label map and boxes, gives the probe's mAP
    (test,) = again["inference"]["scenarios"]
    assert test["runtime"] == "onnxruntime" and test["accuracy"]["matches_probe"]
    # without the label map its ids are read as the data's in name order: the classes mismatch, the score drops
    unnamed = infer_record(colour_detector / "colours", tmp_path / "unnamed", *STANDIN, "--runtimes", "tf")
    assert unnamed["accuracy"]["map_50"] < record["accuracy"]["map_50"]
    assert "in name order from 1" in unnamed["model"]["class_ids"]


@pytest.mark.long
@pytest.mark.serial
def test_every_audit_passes_on_a_detector(colour_detector, tmp_path):
    """`--audit all` on the colour detector (onnxruntime, tf2onnx's export), single-stream and offline, its library at
    256 px: every test PASSes (5 turns of 2 s tests; or fails on speed alone as a shared host makes it:
    assert_audits_pass) and TEST01's sampled responses, 7 float32 a detection, equal the accuracy run's."""
    result = cli_in_process("infer", "--model", colour_detector / "colours", *STANDIN, "--label-map",
                            colour_detector / "labels.pbtxt", "--runtimes", "onnxruntime", "--image-size", "256",
                            "--audit", "all", "--audit-rounds", "5", "--duration", "2", "--output-dir", tmp_path / "run")
    checked = json.loads((tmp_path / "run" / "result.json").read_text())["inference"]["audits"]
    assert len(checked) == 6
    assert [a["test"] for a in checked if not a["required"]] == ["TEST04", "TEST04"]  # MLPerf exempts detectors
    assert_audits_pass(checked, result.returncode)
    for audit in (a for a in checked if a["test"] == "TEST01"):
        assert all(seen["sampled"] and seen["matched"] == seen["sampled"] for seen in audit["responses"])


@pytest.mark.long
def test_a_detect_runs_own_savedmodel_scores_as_the_run_did(tiny_runs, tmp_path):
    """Model Garden's outputs carry image_info: its boxes are scaled back by it, as `detect` scores them (about
    40 s here; the merge tier times the colour detector's SavedModel and its ONNX export)."""
    run = json.loads((tiny_runs["ssd_resnet50_fpn"] / "result.json").read_text())
    record = infer_record(export_dir(tiny_runs["ssd_resnet50_fpn"]), tmp_path / "own", "--limit",
                    str(run["config"]["limit"]), "--runtimes", "tf")
    assert record["task"] == "detect" and record["model"]["classes"] == run["model"]["classes"]
    assert record["accuracy"]["detections"] == run["accuracy"]["detections"]
    assert record["accuracy"]["map_50_95"] == pytest.approx(run["accuracy"]["map_50_95"], abs=0.01)


@pytest.mark.long
@pytest.mark.serial
def test_a_detect_runs_onnx_export_scores_as_the_run_did(tiny_runs, tmp_path):
    """tf2onnx's export of the run's SavedModel (about 70 s here) given as a model of its own; alone, as tf2onnx takes
    6.4 GB on this detector (the kernel's OOM killer stopped it beside three other tests)."""
    from l40sbench.runtimes.export import saved_model_to_onnx

    run = json.loads((tiny_runs["ssd_resnet50_fpn"] / "result.json").read_text())
    exported = saved_model_to_onnx(export_dir(tiny_runs["ssd_resnet50_fpn"]), "fp32", tmp_path, "serving_default")
    record = infer_record(exported.path, tmp_path / "onnx", "--limit", str(run["config"]["limit"]))
    assert record["accuracy"]["detections"] == run["accuracy"]["detections"]
    assert record["accuracy"]["map_50_95"] == pytest.approx(run["accuracy"]["map_50_95"], abs=0.01)


def test_bad_detector_inputs_are_one_line_and_exit_2(colour_detector, tmp_path):
    import tensorflow as tf

    class TwoOutputs(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, None, None, 3], tf.uint8)])
        def serve(self, images):
            pixels = tf.cast(images, tf.float32)
            return {"mean": tf.reduce_mean(pixels, axis=[1, 2]), "peak": tf.reduce_max(pixels, axis=[1, 2])}

    module = TwoOutputs()
    tf.saved_model.save(module, str(tmp_path / "two"), signatures={"serving_default": module.serve})
    (tmp_path / "broken.pbtxt").write_text("item { name: 'apple' }\n")
    (tmp_path / "other.pbtxt").write_text("item { id: 1 name: 'pear' }\n")
    detector = colour_detector / "colours"
    cases = [
        ((tmp_path / "two",), "one output, or a detector's (detection_boxes"),
        ((detector, "--label-map", tmp_path / "broken.pbtxt"), "does not parse: an item without an integer id"),
        ((detector, "--label-map", tmp_path / "missing.pbtxt"), "--label-map: no file at"),
        ((detector, "--label-map", tmp_path / "other.pbtxt", *STANDIN), "names none of the data's classes"),
        ((detector, "--preprocess", "tf"), "--preprocess is not for a detector file"),
        ((detector, "--image-size", "100"), "image_size must be a multiple of 32"),  # LoadGen's library size
        ((detector, "--scenario", "offline", "--max-batch-size", "2"), "--max-batch-size must be 1"),
    ]
    for args, fragment in cases:
        assert_one_line_exit_2(cli_in_process("infer", "--model", *args, "--output-dir", tmp_path / "out"), fragment)
    assert not (tmp_path / "out" / "result.json").exists()
