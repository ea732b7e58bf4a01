"""YOLO rows beside MLPerf Inference's (the `mlperf-v6.0` reference): each run's LoadGen figures in MLPerf's
own terms next to the published system's, then what differs between the two, named per row.

MLPerf's terms: single-stream's figure is LoadGen's early-stopping estimate of the p90 latency, multi-stream's
the estimate of a query's p99 (8 samples a query), offline's the samples per second. A row of this suite that
ran none of a scenario shows '-' there: `infer --scenario single-stream,offline` runs them.
"""

from __future__ import annotations

from collections.abc import Sequence

from l40sbench.modelfile.detector_formats import YOLO_FORMATS
from l40sbench.report.cells import number

HEADERS = ("machine", "model", "input px", "runtime", "device", "single-stream p90 ms", "offline samples/s",
           "multi-stream p99 ms (a query)", "mAP@[.5:.95]", "test images")
HARNESS = ("l40sbench's SUT: the test images decoded into memory before the test (LoadGen's sample library), "
           "letterbox, model, decode and NMS inside each query")


def is_mlperf(record: dict) -> bool:
    return "mlperf" in (record.get("notes") or {})


def is_yolo(record: dict) -> bool:
    return (record.get("model") or {}).get("detector_format") in YOLO_FORMATS and not is_mlperf(record)


def _estimate(entry: dict, percentile: str) -> float | None:
    estimates = (entry.get("early_stopping") or {}).get("estimates_ms") or {}
    return estimates.get(percentile, (entry.get("latency_ms") or {}).get(percentile))


def figures(entries: Sequence[dict]) -> tuple:
    """(single-stream p90 ms, offline samples/s, multi-stream p99 ms) of one runtime's entries: the best of
    each where several ran (batches, workers)."""
    def of(scenario):
        return [e for e in entries if e["scenario"] == scenario and e.get("mode", "performance") == "performance"]
    single = [v for v in (_estimate(e, "p90") for e in of("single-stream")) if v is not None]
    offline = [e["samples_per_second"] for e in of("offline") if e.get("samples_per_second")]
    multi = [v for v in (_estimate(e, "p99") for e in of("multi-stream")) if v is not None]
    return min(single, default=None), max(offline, default=None), min(multi, default=None)


def _device(record: dict, runtime: str) -> str:
    """Where a runtime ran, as its runtime row says; else the record's GPUs; else the CPU."""
    for row in (record.get("inference") or {}).get("runtimes") or ():
        if row.get("runtime") == runtime and row.get("device"):
            return row["device"]
    gpus = [d.get("model") or d.get("name") for d in (record.get("env") or {}).get("devices") or ()
            if d.get("type") == "GPU"]
    return f"{len(gpus)}x {gpus[0]}" if gpus else "CPU"


def _size(record: dict) -> str:
    return str(((record.get("model") or {}).get("decoding") or {}).get("imgsz")
               or (record.get("config") or {}).get("image_size") or "-")


def by_runtime(record: dict) -> dict[str, tuple[str | None, list[dict]]]:
    """A record's LoadGen entries per runtime, in the order they ran, each with the precision that ran (None where
    no entry names one)."""
    grouped: dict[str, list[dict]] = {}
    for entry in (record.get("inference") or {}).get("scenarios") or ():
        grouped.setdefault(entry["runtime"], []).append(entry)
    return {runtime: (next((e.get("precision") for e in entries if e.get("precision")), None), entries)
            for runtime, entries in grouped.items()}


def rows(runs: Sequence[tuple[str, dict]]) -> list[list[str]]:
    """One row per (run, runtime) of each YOLO run and of MLPerf's record, MLPerf's last."""
    out = []
    for label, record in sorted(((lb, r) for lb, r in runs if is_yolo(r) or is_mlperf(r)),
                                key=lambda item: is_mlperf(item[1])):
        accuracy = (record.get("accuracy") or {}).get("map_50_95")
        images = (record.get("dataset") or {}).get("test_images")
        for runtime, (precision, mine) in (by_runtime(record) or {"-": (None, [])}).items():
            single, offline, multi = figures(mine)
            out.append([label, record.get("base", "-"), _size(record),
                        f"{runtime} ({precision})" if precision else runtime,
                        _device(record, runtime),
                        number(single), number(offline), number(multi), number(accuracy), str(images or "-")])
    return out


def differences(record: dict, mlperf: dict) -> list[str]:
    """What a YOLO run measures that MLPerf's row does not: model and size, data, harness, precision, devices."""
    theirs = mlperf["notes"]["mlperf"]["differences"]
    dataset = record.get("dataset") or {}
    classes = sorted({c for split in (dataset.get("classes") or {}).values() for c in split})
    precisions = sorted({e.get("precision") for e in (record.get("inference") or {}).get("scenarios") or ()
                         if e.get("precision")})
    devices = sorted({_device(record, e["runtime"]) for e in (record.get("inference") or {}).get("scenarios") or ()})
    mine = {
        "model": f"{record.get('base')} at {_size(record)} px",
        "data": f"{dataset.get('test_images', '-')} test images"
                + (f" of {len(classes)} classes ({', '.join(classes)})" if classes else "")
                + f" ({dataset.get('source', '-')})",
        "harness": HARNESS,
        "precision": ", ".join(precisions) or "as each runtime row says",
        "devices": ", ".join(devices) or _device(record, ""),
    }
    return [f"- {what}: this run {mine[what]}; MLPerf's {theirs[what]}" for what in mine if what in theirs]


def section(runs: Sequence[tuple[str, dict]]) -> list[str]:
    """The report's lines: the table and, per YOLO run, what differs; nothing unless both kinds are inputs."""
    from l40sbench.core.text import markdown_table

    mlperf = next((r for _, r in runs if is_mlperf(r)), None)
    yolo = [(label, r) for label, r in runs if is_yolo(r)]
    if mlperf is None or not yolo:
        return []
    parts = ["### Beside MLPerf Inference v6.0's YOLO rows", "",
             "MLPerf's terms: single-stream's figure is LoadGen's early-stopping p90, multi-stream's the early-"
             "stopping p99 of a query of 8 samples, offline's samples/s; '-' where a run did not test that "
             "scenario (`infer --scenario single-stream,offline,multi-stream`).", "",
             markdown_table(HEADERS, rows(runs)), ""]
    for label, record in yolo:
        parts += [f"What differs between {record.get('base')} [{label}] and MLPerf's row:", "",
                  *differences(record, mlperf), ""]
    return parts
