"""`infer --model` of a YOLO export, an end-to-end head and a torchvision-style triple, built with onnx.helper (no
Ultralytics, no torch): each answers known boxes for a VOC set of one image, so the letterbox, the decode, NMS, the
boxes' way back and the classes from the file's own names are checked together by pycocotools' mAP of 1."""

import json

import numpy as np
import pytest

from tests.conftest import assert_one_line_exit_2, cli_in_process, run_cli

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

NAMES = {0: "apple", 1: "banana", 2: "orange"}  # the model's, from 0; the data's are apple and banana only
OBJECTS = [("apple", (30, 40, 130, 160)), ("banana", (150, 20, 280, 190))]  # x0, y0, x1, y1 in a 300 x 200 image
IMGSZ = 320


def voc_set(folder):
    """A VOC folder whose test split is three copies of one 300 x 200 image with OBJECTS (its train split too)."""
    import cv2

    image = np.full((200, 300, 3), 128, np.uint8)
    objects = "".join(f"<object><name>{name}</name><difficult>0</difficult><bndbox><xmin>{x0}</xmin><ymin>{y0}"
                      f"</ymin><xmax>{x1}</xmax><ymax>{y1}</ymax></bndbox></object>" for name, (x0, y0, x1, y1) in OBJECTS)
    for split in ("train", "test"):
        (folder / split).mkdir(parents=True)
        for index in range(1, 4):  # three of the same: the first is the warm-up
            cv2.imwrite(str(folder / split / f"fruit_{index}.jpg"), image)
            (folder / split / f"fruit_{index}.xml").write_text(
                f"<annotation><filename>fruit_{index}.jpg</filename><size><width>300</width><height>200</height>"
                f"<depth>3</depth></size>{objects}</annotation>")
    return folder


def letterboxed_objects() -> list:
    """OBJECTS in the letterboxed input's pixels: 300 x 200 grows 320/300 to 320 x 214 (ceil), 53 rows above."""
    gain, top = 214 / 200, 53
    return [(name, (x0 * gain, y0 * gain + top, x1 * gain, y1 * gain + top)) for name, (x0, y0, x1, y1) in OBJECTS]


def save_model(path, output, inputs_shape, metadata=None, opset=17):
    """An ONNX file answering `output` (a constant, by name) whatever its image, the image still read by the graph
    (its mean times 0 added), with Ultralytics-shaped metadata."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, outputs, constants = [helper.make_node("ReduceMean", ["images"], ["mean"], keepdims=0)], [], []
    for name, value in output.items():
        value = np.asarray(value)
        constants.append(numpy_helper.from_array(value, f"{name}_value"))
        if value.dtype == np.float32:
            nodes.append(helper.make_node("Mul", ["mean", "zero"], [f"{name}_nothing"]))
            nodes.append(helper.make_node("Add", [f"{name}_value", f"{name}_nothing"], [name]))
        else:
            nodes.append(helper.make_node("Identity", [f"{name}_value"], [name]))
        outputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype),
                                                     list(value.shape)))
    constants.append(numpy_helper.from_array(np.float32(0), "zero"))
    graph = helper.make_graph(nodes, "head", [helper.make_tensor_value_info("images", TensorProto.FLOAT, inputs_shape)],
                              outputs, initializer=constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    for key, value in (metadata or {}).items():
        model.metadata_props.add(key=key, value=value)
    onnx.save(model, str(path))
    return path


def ultralytics_metadata(**changed) -> dict:
    return {"author": "Ultralytics", "task": "detect", "names": repr(NAMES), "imgsz": f"[{IMGSZ}, {IMGSZ}]",
            "stride": "32", "batch": "1", "end2end": "False", **changed}


def raw_head() -> np.ndarray:
    """(1, 4 + 3, anchors): each object's anchor twice (the second a little off and lower, for NMS to drop), one for
    orange (a class the data lacks), one below conf."""
    anchors = []
    for name, (x0, y0, x1, y1) in letterboxed_objects():
        scores = [0.9 if NAMES[c] == name else 0.0 for c in NAMES]
        box = [(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0]
        anchors += [box + scores, [box[0] + 2, box[1] + 1, box[2], box[3]] + [s * 0.8 for s in scores]]
    anchors += [[60, 60, 20, 20, 0, 0, 0.5], [200, 100, 30, 30, 0.0005, 0.0002, 0.0001]]
    return np.array(anchors, np.float32).T[None]


def end2end_head() -> np.ndarray:
    rows = [[*box, 0.9, [c for c in NAMES if NAMES[c] == name][0]] for name, box in letterboxed_objects()]
    return np.array(rows + [[0, 0, 0, 0, 0.0, 0]] * 3, np.float32)[None]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return voc_set(tmp_path_factory.mktemp("voc") / "fruits")


def run_infer(model, out, *flags) -> tuple:
    result = cli_in_process("infer", "--model", model, *flags, "--output-dir", out)
    assert result.returncode == 0, result.stderr
    return result, json.loads((out / "result.json").read_text())


def test_a_yolo_raw_head_is_letterboxed_decoded_and_scored_by_its_own_names(data, tmp_path):
    model = save_model(tmp_path / "yolo11n.onnx", {"output0": raw_head()}, [1, 3, IMGSZ, IMGSZ], ultralytics_metadata())
    result, record = run_infer(model, tmp_path / "run", "--data", data, "--runtimes", "openvino")
    assert record["model"]["detector_format"] == "yolo"
    assert record["model"]["decoding"] == {"format": "yolo", "imgsz": IMGSZ, "conf": 0.001, "iou": 0.7, "max_det": 300}
    assert record["model"]["class_ids"] == "the file's own names (Ultralytics' metadata)"
    assert record["accuracy"]["map_50_95"] == pytest.approx(1.0)
    assert "the model does not know" not in result.stderr  # orange is the model's, not the data's
    rows = {row["runtime"]: row for row in record["inference"]["runtimes"]}
    assert rows["openvino"]["status"] == "ok", rows["openvino"]
    assert rows["openvino"]["accuracy"]["map_50_95"] == pytest.approx(1.0)
    for row in rows.values():
        stages = row["inference"]["stages_mean_ms"]
        assert set(stages) == {"preprocess", "inference", "postprocess"} and all(v > 0 for v in stages.values())
        assert row["settings"]["detector_format"] == "yolo" and "letterbox to 320" in row["settings"]["preprocess"]
    assert "a call's stages (mean ms an image, warm-up excluded): preprocess" in result.stdout
    assert f"./run.sh report {tmp_path / 'run'} mlperf-v6.0" in result.stdout


def test_nms_at_a_lower_iou_and_a_higher_conf_change_what_is_kept(data, tmp_path):
    model = save_model(tmp_path / "yolo.onnx", {"output0": raw_head()}, [1, 3, IMGSZ, IMGSZ], ultralytics_metadata())
    _, record = run_infer(model, tmp_path / "run", "--data", data, "--runtimes", "tf", "--nms-iou", "0.5",
                          "--score-threshold", "0.95")
    assert record["model"]["decoding"]["iou"] == 0.5 and record["model"]["decoding"]["conf"] == 0.95
    assert record["accuracy"]["map_50_95"] == pytest.approx(0.0)  # nothing scores above 0.95


def test_an_end_to_end_head_and_a_torchvision_triple_run_the_same_way(data, tmp_path):
    end2end = save_model(tmp_path / "yolo26n.onnx", {"output0": end2end_head()}, [1, 3, IMGSZ, IMGSZ],
                         ultralytics_metadata(end2end="True"))
    _, record = run_infer(end2end, tmp_path / "e2e", "--data", data, "--runtimes", "tf")
    assert record["model"]["detector_format"] == "yolo-end2end"
    assert record["accuracy"]["map_50_95"] == pytest.approx(1.0)
    # torchvision: boxes in the image's own pixels, labels from 1 in the data's name order (apple 1, banana 2)
    triple = {"boxes": np.array([box for _, box in OBJECTS], np.float32), "labels": np.array([1, 2], np.int64),
              "scores": np.array([0.8, 0.7], np.float32)}
    torchvision = save_model(tmp_path / "fasterrcnn.onnx", triple, [3, "height", "width"])
    _, record = run_infer(torchvision, tmp_path / "tv", "--data", data, "--runtimes", "openvino")
    assert record["model"]["detector_format"] == "torchvision"
    assert record["accuracy"]["map_50_95"] == pytest.approx(1.0)
    assert {row["runtime"]: row["status"] for row in record["inference"]["runtimes"]}["openvino"] == "ok"


def test_a_dataset_class_the_model_does_not_know_is_said_and_scored_as_missed(data, tmp_path):
    names = repr({0: "apple", 1: "cherry", 2: "orange"})
    model = save_model(tmp_path / "yolo.onnx", {"output0": raw_head()}, [1, 3, IMGSZ, IMGSZ],
                       ultralytics_metadata(names=names))
    result, record = run_infer(model, tmp_path / "run", "--data", data, "--runtimes", "tf")
    assert "the model does not know banana" in result.stderr
    assert record["accuracy"]["per_class_ap_50"]["banana"] == pytest.approx(0.0)
    assert record["accuracy"]["per_class_ap_50"]["apple"] == pytest.approx(1.0)


def fails_unless_square(path):
    """The file with each image added to its transpose before the rest: onnxruntime fails on an image that is not
    square (as a torchvision export fails on an image of no proposals), every image of the set here."""
    from onnx import helper

    model = onnx.load(str(path))
    model.graph.node[0].input[0] = "square"  # the ReduceMean that reads the image
    model.graph.node.insert(0, helper.make_node("Add", ["images", "transposed"], ["square"]))
    model.graph.node.insert(0, helper.make_node("Transpose", ["images"], ["transposed"], perm=[0, 2, 1]))
    onnx.save(model, str(path))
    return path


def test_files_the_suite_cannot_take_as_detectors_are_one_line(data, tmp_path):
    head = [1, 3, IMGSZ, IMGSZ]
    cases = [
        (save_model(tmp_path / "seg.onnx", {"output0": np.zeros((1, 39, 10), np.float32)}, head,
                    ultralytics_metadata(task="segment")), (), "an Ultralytics segmentation export (task: segment)"),
        (save_model(tmp_path / "pose.onnx", {"output0": np.zeros((1, 56, 10), np.float32)}, head,
                    ultralytics_metadata(task="pose")), (), "an Ultralytics pose export"),
        (save_model(tmp_path / "names.onnx", {"output0": raw_head()}, head, ultralytics_metadata(names="{0: apple")),
         (), "`names` does not parse"),
        (save_model(tmp_path / "empty.onnx", {"output0": np.zeros((1, 0, 6), np.float32)}, head,
                    ultralytics_metadata(end2end="True")), (), "an end-to-end head of no rows"),
        (save_model(tmp_path / "classifier.onnx", {"logits": np.zeros((1, 10), np.float32)}, head),
         ("--detector-format", "yolo"), "--detector-format yolo: --model"),
        (save_model(tmp_path / "uint8.onnx", {"output0": raw_head()}, head, ultralytics_metadata()),
         ("--layout", "nchw"), "--layout is not for a detector file"),
        (save_model(tmp_path / "e2e.onnx", {"output0": end2end_head()}, head, ultralytics_metadata(end2end="True")),
         ("--nms-iou", "0.5"), "--nms-iou is for a YOLO raw head"),
        (save_model(tmp_path / "iou.onnx", {"output0": raw_head()}, head, ultralytics_metadata()),
         ("--nms-iou", "1.5"), "--nms-iou 1.5: an IoU in (0, 1]"),
        (save_model(tmp_path / "batch.onnx", {"output0": raw_head()}, ["batch", 3, IMGSZ, IMGSZ], ultralytics_metadata()),
         ("--scenario", "offline", "--max-batch-size", "4"), "a yolo file is served one image a call"),
        (fails_unless_square(save_model(tmp_path / "tv.onnx", {"boxes": np.zeros((1, 4), np.float32),
                                                                "labels": np.ones(1, np.int64),
                                                                "scores": np.ones(1, np.float32)}, [3, "h", "w"])),
         (), "onnxruntime failed on test image 1 of 3 (200x300): Fail: "),
    ]
    for model, flags, fragment in cases:
        assert_one_line_exit_2(cli_in_process("infer", "--model", model, "--data", data, *flags, "--output-dir",
                                              tmp_path / "out"), fragment)
    assert not (tmp_path / "out" / "result.json").exists()


@pytest.mark.long
def test_loadgen_times_a_yolo_file_with_its_stages_in_the_sut(data, tmp_path):
    """LoadGen's SUT calls the whole way (letterbox, model, decode and NMS) on its library, and its accuracy log,
    scored as MLPerf's accuracy-coco.py scores it, is what the library's pass answered alone."""
    pytest.importorskip("mlperf_loadgen")
    model = save_model(tmp_path / "yolo.onnx", {"output0": raw_head()}, [1, 3, IMGSZ, IMGSZ], ultralytics_metadata())
    _, record = run_infer(model, tmp_path / "run", "--data", data, "--runtimes", "openvino", "--scenario",
                          "single-stream", "--duration", "0.5", "--min-queries", "10", "--mode", "accuracy")
    (test,) = record["inference"]["scenarios"]
    assert test["sut"]["samples_answered"] == 3 and test["sut"]["failed_calls"] == 0
    assert test["library"]["size_hw"] == [200, 300] and "its own size" in test["library"]["made"]  # not squashed
    assert test["runtime"] == "openvino" and test["accuracy"]["matches_probe"], test["accuracy"]
    report = cli_in_process("report", tmp_path / "run", "mlperf-v6.0", "--output-dir", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    assert "### Beside MLPerf Inference v6.0's YOLO rows" in text and "What differs between" in text


@pytest.mark.long  # 40 s here; the merge tier checks the plan's step and the table's rows (tests/test_study.py)
def test_a_study_sets_a_yolo_files_step_beside_mlperfs_yolo_row(data, tmp_path):
    """`study l40s --quick --model FILE`: the file's infer step runs (LoadGen's single-stream and offline, 2 s each),
    its rows stand beside MLPerf v6.0's YOLO11l row in the study's table, and the study's report folder holds the
    beside-MLPerf section with what differs."""
    pytest.importorskip("mlperf_loadgen")
    model = save_model(tmp_path / "yolo11n.onnx", {"output0": raw_head()}, [1, 3, IMGSZ, IMGSZ], ultralytics_metadata())
    root = tmp_path / "study"
    result = run_cli("study", "l40s", "--quick", "--only", "infer-yolo11n", "--model", model, "--data-detect", data,
                     "--output-dir", root)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"l40sbench infer --model {model} --scenario single-stream,offline --limit 8 --duration 2" in result.stdout
    table = [row.split("|")[1:-1] for row in result.stdout.splitlines() if row.startswith("| infer-yolo11n ")]
    by_figure = {cells[1].strip(): [c.strip() for c in cells] for cells in table}
    for runtime in ("onnxruntime", "openvino"):  # every runtime that loads the file, each beside MLPerf's row
        single = by_figure[f"single-stream p90 ms ({runtime} fp32; LoadGen's early-stopping estimate)"]
        offline = by_figure[f"offline samples/s ({runtime} fp32)"]
        assert single[3] == "7.125" and offline[3] == "153.5"
        assert float(single[4].rstrip("x")) == pytest.approx(float(single[2]) / 7.124808, abs=0.01)
        assert float(offline[4].rstrip("x")) == pytest.approx(float(offline[2]) / 153.544, abs=0.01)
    assert by_figure["mAP@[.5:.95] (this run's test images; MLPerf's on COCO: no ratio)"][2:5] == ["1.000", "0.531", "-"]
    assert "infer-* rows of a YOLO export: the study column is MLPerf Inference v6.0's YOLO11l row" in result.stdout
    text = (root / "report" / "report.md").read_text()
    assert "### Beside MLPerf Inference v6.0's YOLO rows" in text and "What differs between yolo11n" in text
