"""MLPerf Inference v6.0's YOLO11 rows for the L40S as a result record: what ships as mlperf_v60_yolo.json.

Since v6.0 (2026) MLPerf's detection benchmark is YOLO11 (the edge suite's `yolo-95` and `yolo-99`: 95 % and
99 % of YOLO11l's 53.4 mAP). The one L40S system published is Dell's PowerEdge XE7745 (8x L40S, closed
division, edge, February 2026). The figures below are transcribed from its LoadGen logs in MLCommons' v6.0
results (closed/Dell/results/XE7745_L40Sx8: yolo-99/*/performance/run_1/mlperf_log_summary.txt, the same runs
as yolo-95's detail logs; yolo-95/offline/accuracy/accuracy.txt), in LoadGen's units (ns), and read as the
suite reads its own logs' figures. `DIFFERENCES` says what such a row measures that an l40sbench row does
not: the report prints them beside every YOLO row it sets next to these.
"""

from __future__ import annotations

from dataclasses import asdict

from l40sbench.core.results import DatasetInfo, InferenceResult, RunResult, ScenarioResult, TrainResult

SOURCE = ("MLPerf Inference v6.0, closed, edge: Dell PowerEdge XE7745 (8x L40S, TensorRT), "
          "MLCommons' v6.0 results, closed/Dell/results/XE7745_L40Sx8 (yolo-95, yolo-99)")
MACHINE = "Dell XE7745, 8x NVIDIA L40S (MLPerf Inference v6.0)"
SYSTEM = {"os": "Ubuntu 24.04", "cpu": "2x AMD EPYC 9655 (96 cores each)", "framework": "TensorRT 10.14, CUDA 12.9",
          "software": "TensorRT 10.14, CUDA 12.9, cuDNN 9.17, driver 575.57.08", "loadgen": "6.0.10",
          "test_date": "2026-02-11", "sut": "PySUT (LoadGen's Python bindings)", "tgp": "L40S TGP 350 W"}
BENCHMARK = {"model": "YOLO11l (Ultralytics)", "imgsz": 640, "conf": 0.001,
             "data": "COCO 2017 val, MLCommons' licence-safe subset: 1525 images, 80 classes",
             "targets_map": {"yolo-95": 50.73, "yolo-99": 52.866}}

# LoadGen's summaries, scenario by scenario: (result, samples/s or None, latency ns by percentile,
# early-stopping estimates ns, queries, samples per query). Offline's latencies (its one query's) are left out.
LOGS = {
    "single-stream": ("VALID", 152.47, {"p50": 6434902, "p90": 7122225, "p95": 7238293, "p99": 7452413,
                                        "p99.9": 7605001, "mean": 6553372, "min": 5593288, "max": 1986713426},
                      {"p90": 7124808, "p99": 7532263}, 91486, 1),
    "multi-stream": ("VALID", None, {"p50": 52509891, "p90": 53864161, "p99": 54641256, "p99.9": 56503446,
                                     "mean": 52553829, "min": 49350810, "max": 1280003055},
                     {"p99": 54674812}, 11417, 8),
    "offline": ("VALID", 153.544, {}, {}, 1, 1980000),
}
ACCURACY = {"map_50_95": 0.531, "map_50": 0.697, "images": 1525,
            "how": "MLCommons' accuracy script (pycocotools) on the accuracy run's log: mAP=53.116%"}
DIFFERENCES = (
    ("model", "YOLO11l at 640 px (25.3 M parameters)"),
    ("data", "COCO 2017 val, 1525 images of 80 classes; 64 of them loaded for the timed runs"),
    ("harness", "a Python SUT calling Ultralytics' predict on each sample's file: the JPEG read, decoded and "
                "letterboxed inside each query, one sample at a time in every scenario (its offline 153.5 "
                "samples/s is its single-stream 152.5 queries/s: one of the 8 GPUs worked)"),
    ("precision", "a TensorRT 10.14 engine; the logs do not state its precision"),
    ("devices", "8x L40S in the system, figures for the whole system"),
)


def _ms(ns: int | None) -> float | None:
    return None if ns is None else round(ns * 1e-6, 6)


def _entry(scenario: str) -> dict:
    result, rate, latency, estimates, queries, per_query = LOGS[scenario]
    headline = {"single-stream": ("90.0th percentile latency (ms)", latency.get("p90")),
                "multi-stream": ("99.0th percentile latency (ms)", latency.get("p99"))}.get(scenario)
    entry = ScenarioResult(
        runtime="TensorRT 10.14", scenario=scenario, result=result,
        settings={"batch": 1, "workers": 1, **({"samples_per_query": per_query} if scenario == "multi-stream" else {})},
        samples_per_second=rate, latency_ms={k: _ms(v) for k, v in latency.items()},
        headline=None if headline is None else {"name": headline[0], "ms": _ms(headline[1])},
        early_stopping={"met": True, "estimates_ms": {k: _ms(v) for k, v in estimates.items()}},
        queries=queries, samples_per_query=per_query, loadgen_version=SYSTEM["loadgen"])
    return asdict(entry)


def records() -> list[dict]:
    """One record: the system's three scenarios, its accuracy run's mAP, and what differs from a suite row."""
    single = LOGS["single-stream"]
    latency = {k: _ms(v) for k, v in single[2].items()}
    run = RunResult(
        task="detect", base="yolo11l", complete=True,
        config={"epochs": 0, "batch_size": 1, "image_size": BENCHMARK["imgsz"], "precision": None},
        env={"devices": [{"type": "GPU", "name": f"GPU:{i}", "model": "NVIDIA L40S"} for i in range(8)],
             "os": SYSTEM["os"], "cpu": SYSTEM["cpu"], "cpu_count": 384, "python": None, "keras": None,
             "tensorflow": None, "cuda": "12.9", "cudnn": "9.17", "suite_commit": None, "calibration": None,
             "timestamp_utc": SYSTEM["test_date"], "framework": SYSTEM["framework"]},
        dataset=DatasetInfo(BENCHMARK["data"], 0, ACCURACY["images"], {}),
        train=TrainResult(epochs=0, batch_size=1, epoch_seconds=(), total_seconds=0.0, first_epoch_seconds=None,
                          steady_epoch_seconds=None),
        weights="YOLO11l, Ultralytics' COCO weights (MLCommons' copy)",
        model={"detector_format": "yolo", "decoding": {"format": "yolo", "imgsz": BENCHMARK["imgsz"],
                                                       "conf": BENCHMARK["conf"], "iou": 0.7, "max_det": 300}},
        inference=InferenceResult(
            batch_size=1, warmup_excluded=0, images_timed=single[4], mean_ms=latency["mean"],
            images_per_second=single[1], p50_ms=latency["p50"], p90_ms=latency["p90"], p99_ms=latency["p99"],
            min_ms=latency["min"], max_ms=latency["max"], std_ms=None, percentiles="LoadGen's single-stream",
            scenarios=tuple(_entry(s) for s in LOGS)),
        accuracy={"map_50_95": ACCURACY["map_50_95"], "map_50": ACCURACY["map_50"], "how": ACCURACY["how"]},
        notes={"mlperf": {"version": "v6.0", "benchmarks": BENCHMARK, "system": SYSTEM,
                          "differences": dict(DIFFERENCES)}},
    )
    return [{**run.to_dict(), "machine": MACHINE, "source": SOURCE}]
