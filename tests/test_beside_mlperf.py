"""MLPerf Inference v6.0's YOLO11 rows for the L40S, shipped as the `mlperf-v6.0` reference, and the report's table
that sets a YOLO run beside them with what differs."""

from l40sbench import reference
from l40sbench.report import beside_mlperf

# The submission's results table (its summary page), three decimals: offline samples/s, single-stream ms (the
# early-stopping p90), multi-stream ms (the early-stopping p99 of a query); and yolo-95's accuracy run.
PUBLISHED = {"offline": 153.544, "single-stream": 7.125, "multi-stream": 54.675}
PUBLISHED_MAP = 53.116


def _mlperf() -> dict:
    (record,) = reference.load("mlperf-v6.0")
    return record


def test_the_shipped_logs_give_the_published_table():
    record = _mlperf()
    entries = {e["scenario"]: e for e in record["inference"]["scenarios"]}
    assert set(entries) == set(PUBLISHED)
    assert entries["offline"]["samples_per_second"] == PUBLISHED["offline"]
    assert round(entries["single-stream"]["early_stopping"]["estimates_ms"]["p90"], 3) == PUBLISHED["single-stream"]
    assert round(entries["multi-stream"]["early_stopping"]["estimates_ms"]["p99"], 3) == PUBLISHED["multi-stream"]
    assert entries["multi-stream"]["settings"]["samples_per_query"] == 8
    assert round(100 * record["accuracy"]["map_50_95"], 1) == round(PUBLISHED_MAP, 1)
    assert record["env"]["devices"][0]["model"] == "NVIDIA L40S" and len(record["env"]["devices"]) == 8
    # the harness answered one sample at a time: offline's rate is single-stream's queries/s
    assert abs(entries["offline"]["samples_per_second"] / entries["single-stream"]["samples_per_second"] - 1) < 0.01


def _yolo_run(**changed) -> dict:
    """A YOLO run's record as `infer --model` writes it, with LoadGen's single-stream and offline on OpenVINO."""
    scenarios = [
        {"runtime": "openvino", "scenario": "single-stream", "mode": "performance", "precision": "fp32",
         "samples_per_second": 25.0, "latency_ms": {"p90": 41.0}, "early_stopping": {"estimates_ms": {"p90": 42.5}}},
        {"runtime": "openvino", "scenario": "offline", "mode": "performance", "precision": "fp32",
         "samples_per_second": 30.0, "latency_ms": {}},
        {"runtime": "openvino", "scenario": "offline", "mode": "performance", "precision": "fp32",
         "samples_per_second": 33.0, "latency_ms": {}, "settings": {"batch": 4}},
    ]
    record = {"task": "detect", "base": "yolo11n", "model": {"detector_format": "yolo", "decoding": {"imgsz": 320}},
              "dataset": {"test_images": 60, "source": "VOC folder", "classes": {"test": {"apple": 3, "banana": 4}}},
              "accuracy": {"map_50_95": 0.61}, "env": {"devices": [{"type": "CPU", "name": "CPU:0"}]},
              "inference": {"scenarios": scenarios, "runtimes": [{"runtime": "openvino", "device": "CPU"}]}}
    return {**record, **changed}


def test_a_yolo_run_sits_beside_mlperfs_row_in_mlperfs_terms():
    mlperf = _mlperf()
    rows = beside_mlperf.rows([("mlperf", mlperf), ("here", _yolo_run())])
    assert rows[0] == ["here", "yolo11n", "320", "openvino (fp32)", "CPU", "42.500", "33.000", "-", "0.610", "60"]
    assert rows[1][:4] == ["mlperf", "yolo11l", "640", "TensorRT 10.14"]
    assert rows[1][4:8] == ["8x NVIDIA L40S", "7.125", "153.544", "54.675"]
    # GPU-shaped runs: where its runtime row names the device, that; else the record's GPUs (an H100 host, 8 L40S)
    h100 = {"devices": [{"type": "GPU", "name": "GPU:0", "model": "NVIDIA H100 80GB HBM3"}]}
    on_gpu = _yolo_run(env=h100, inference={**_yolo_run()["inference"], "runtimes": [
        {"runtime": "openvino", "device": "GPU:0 (NVIDIA H100 80GB HBM3)"}]})
    assert beside_mlperf.rows([("h100", on_gpu)])[0][4] == "GPU:0 (NVIDIA H100 80GB HBM3)"
    unnamed = _yolo_run(env=h100, inference={**_yolo_run()["inference"], "runtimes": []})
    assert beside_mlperf.rows([("h100", unnamed)])[0][4] == "1x NVIDIA H100 80GB HBM3"
    l40s = {"devices": [{"type": "GPU", "name": f"GPU:{i}", "model": "NVIDIA L40S"} for i in range(8)]}
    assert beside_mlperf.rows([("l40s", _yolo_run(env=l40s, inference={**_yolo_run()["inference"], "runtimes": []}))])[
        0][4] == "8x NVIDIA L40S"


def test_what_differs_is_named_for_each_yolo_run():
    lines = beside_mlperf.section([("here", _yolo_run()), ("mlperf", _mlperf())])
    text = "\n".join(lines)
    assert "### Beside MLPerf Inference v6.0's YOLO rows" in text
    for what in ("model: this run yolo11n at 320 px; MLPerf's YOLO11l at 640 px",
                 "data: this run 60 test images of 2 classes (apple, banana)", "COCO 2017 val, 1525 images",
                 "harness: this run l40sbench's SUT", "one sample at a time in every scenario",
                 "precision: this run fp32; MLPerf's a TensorRT 10.14 engine", "devices: this run CPU; MLPerf's 8x L40S"):
        assert what in text, what
    named = [line.split(":")[0] for line in lines if line.startswith("- ")]
    assert named == ["- model", "- data", "- harness", "- precision", "- devices"]


def test_no_table_without_both_a_yolo_run_and_mlperfs_rows():
    assert beside_mlperf.section([("here", _yolo_run())]) == []
    assert beside_mlperf.section([("mlperf", _mlperf())]) == []
    other = _yolo_run(model={"detector_format": "od-api"})
    assert beside_mlperf.section([("here", other), ("mlperf", _mlperf())]) == []
