"""The study's verdict: this machine's figures beside the published rows, as ratios, with each figure's
interval and its run's stability, what the study's work would cost here, and the time to first result.

Pure: records in, Markdown rows out. A row whose step failed says why; a run of fewer epochs than the
study's protocol has the protocol's training time projected (projection: the first epoch, which holds the
tracing and compilation, plus N - 1 steady epochs), with the projection's interval, and says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from l40sbench.core.bound import short as bound_by
from l40sbench.core.projection import projection
from l40sbench.report.cells import input_path, number, spread
from l40sbench.report.tables import wall_epoch_seconds
from l40sbench.study.plan import ARTICLE_EPOCHS

HEAD = ("step", "figure", "this machine", "study", "this / study", "interval", "stability", "bound by")


def _ratio(mine: float | None, theirs: float | None) -> str:
    return f"{mine / theirs:.2f}x" if mine and theirs else "-"


def _published(reference: Sequence[dict], record: dict) -> dict | None:
    return next((r for r in reference if r.get("task") == record.get("task") and r.get("base") == record.get("base")),
                None)


def _training_rows(name: str, record: dict, published: dict | None, stability: str) -> list[tuple]:
    epoch, theirs = wall_epoch_seconds(record["train"]), wall_epoch_seconds((published or {}).get("train") or {})
    bound = bound_by(record.get("bound"))
    rows = [(name, f"time per epoch, s ({input_path(record)} input; the study did not state its own)", number(epoch),
             number(theirs), _ratio(epoch, theirs), spread(record["train"].get("steady_epoch_interval")), stability,
             bound)]
    protocol = ARTICLE_EPOCHS[record["task"]]
    projected = projection(record["train"], protocol) if record["train"]["epochs"] != protocol else None
    if projected:
        seconds, ci, how = projected
        study_total = (published or {}).get("train", {}).get("wall_seconds")
        rows.append((name, f"{protocol}-epoch training, s (projected: {how})", number(seconds, 1),
                     number(study_total, 1), _ratio(seconds, study_total),
                     f"{number(ci[0], 1)}-{number(ci[1], 1)}" if ci else "-", stability, bound))
    return rows


def _inference_row(name: str, record: dict, published: dict | None, stability: str) -> tuple:
    inference = record.get("inference") or {}  # none in a run stopped before its probe (cut at the deadline)
    mine, theirs = inference.get("mean_ms"), ((published or {}).get("inference") or {}).get("mean_ms")
    return (name, "inference, ms/image", number(mine), number(theirs), _ratio(mine, theirs),
            spread(inference.get("interval_ms")), stability, "-")


def _model_rows(name: str, record: dict, reference: Sequence[dict], stability: str) -> list[tuple]:
    """A detector file's step (`infer --model`) in MLPerf's terms, per runtime, beside MLPerf Inference v6.0's
    YOLO11 row where the file is a YOLO export (report.beside_mlperf; the report says what differs); its mAP on
    this run's data beside MLPerf's on COCO, no ratio (other images, other classes)."""
    from l40sbench.report import beside_mlperf

    mlperf = next((r for r in reference if beside_mlperf.is_mlperf(r)), None) if beside_mlperf.is_yolo(record) else None
    theirs = beside_mlperf.figures((mlperf or {}).get("inference", {}).get("scenarios") or ())
    ran_on = beside_mlperf.by_runtime(record)
    if not ran_on:
        return [_inference_row(name, record, None, stability)]
    out = []
    for runtime, (precision, entries) in ran_on.items():
        single, offline, _ = beside_mlperf.figures(entries)
        ran = f"{runtime}{f' {precision}' if precision else ''}"
        out += [(name, f"single-stream p90 ms ({ran}; LoadGen's early-stopping estimate)", number(single),
                 number(theirs[0]), _ratio(single, theirs[0]), "-", stability, "-"),
                (name, f"offline samples/s ({ran})", number(offline, 1), number(theirs[1], 1),
                 _ratio(offline, theirs[1]), "-", stability, "-")]
    mine = (record.get("accuracy") or {}).get("map_50_95")
    published = ((mlperf or {}).get("accuracy") or {}).get("map_50_95")
    out.append((name, "mAP@[.5:.95] (this run's test images; MLPerf's on COCO: no ratio)", number(mine),
                number(published), "-", "-", stability, "-"))
    return out


def model_lines(records: Sequence[dict]) -> list[str]:
    """What the study column holds for the steps of detector files (--model), where any ran."""
    from l40sbench.report import beside_mlperf

    given = [r for r in records if given_model(r)]
    if not given:
        return []
    lines = []
    if any(beside_mlperf.is_yolo(r) for r in given):
        lines.append("infer-* rows of a YOLO export: the study column is MLPerf Inference v6.0's YOLO11l row on the "
                     "L40S (reference mlperf-v6.0); what differs (model, image size, data, harness, precision): "
                     "report/report.md, \"Beside MLPerf Inference v6.0's YOLO rows\"")
    if not all(beside_mlperf.is_yolo(r) for r in given):
        lines.append("infer-* rows of another detector format: no published row stands beside them ('-')")
    return [*lines, ""]


def given_model(record: dict) -> bool:
    """A record of `infer --model` (a file of the user's, timed as it is): no training of its own."""
    return "given_model" in (record.get("notes") or {})


def _sweep_rows(name: str, record: dict, reference: Sequence[dict], stability: str) -> list[tuple]:
    """Each row of this machine's sweep beside the first published machine with the same model, batch per
    device and device count (the LeaderGPU tables)."""
    out = []
    for row in record.get("rows", []):
        if row.get("status") != "ok":
            out.append((name, f"{row['model']} batch {row['per_device_batch']} x{row['devices']}", row.get("status"),
                        "-", "-", "-", stability, "-"))
            continue
        match = next(((ref["machine"], r) for ref in reference if ref.get("task") == "synthetic"
                      for r in ref["rows"] if (r["model"], r["per_device_batch"], r["devices"], r["mode"])
                      == (row["model"], row["per_device_batch"], row["devices"], row["mode"])
                      and r.get("images_per_second")), (None, {}))
        theirs = match[1].get("images_per_second")
        out.append((name, f"{row['model']} batch {row['per_device_batch']} x{row['devices']}, images/s",
                    number(row["images_per_second"], 1),
                    f"{number(theirs, 1)} ({match[0]})" if theirs else "-",
                    _ratio(row["images_per_second"], theirs), "-", stability, "-"))
    return out


def rows(steps: Sequence[tuple[str, dict | None, str]], reference: Sequence[dict]) -> list[tuple]:
    """The verdict table's rows from (step name, its record or None, why it has none)."""
    out = []
    for name, record, reason in steps:
        if record is None:
            out.append((name, "-", f"no result: {reason}", "-", "-", "-", "-", "-"))
            continue
        stability = (record.get("stability") or {}).get("verdict", "not checked")
        if record.get("task") == "synthetic":
            out += _sweep_rows(name, record, reference, stability)
            continue
        if given_model(record):
            out += _model_rows(name, record, reference, stability)
            continue
        published = _published(reference, record)
        out += _training_rows(name, record, published, stability)
        out.append(_inference_row(name, record, published, stability))
    return out


def sizing_lines(steps: Sequence[tuple[str, dict | None, str]]) -> list[str]:
    """Each trained step's sizing line; where its input bounds it, that a faster GPU would not train it faster."""
    out = []
    for name, record, _ in steps:
        block = (record or {}).get("bound") or {}
        if block.get("measured"):
            slower = ("; bound by its input: a faster GPU would not train it faster"
                      if bound_by(block) == "input" else "")
            out.append(f"- {name}: {block['sizing']['line']}{slower}")
    return out


def protocol_seconds(record: dict) -> float | None:
    """What the study's protocol takes here: its epochs (this run's where it ran them all, else projected) and
    its test images."""
    train, protocol = record["train"], ARTICLE_EPOCHS[record["task"]]
    epoch = wall_epoch_seconds(train)
    inference = record.get("inference") or {}
    mean_ms, images = inference.get("mean_ms"), inference.get("images_timed") or 0
    projected = projection(train, protocol) if train["epochs"] != protocol else None
    training = projected[0] if projected else (epoch * protocol if epoch else None)
    return training + (mean_ms or 0) * images / 1000 if training else None


def cost_line(records: Sequence[dict], price_per_minute: float | None) -> str:
    seconds = [protocol_seconds(r) for r in records if r.get("task") in ARTICLE_EPOCHS and not given_model(r)]
    known = [s for s in seconds if s]
    if not seconds:
        return ""  # a sweep-only study: its cost is the sweep's table
    if not known:
        return "cost of the study's work here: - (no training step finished)"
    total = sum(known)
    priced = (f" = {price_per_minute * total / 60:.2f} at {price_per_minute:g} a minute" if price_per_minute
              else " (give --price to price it)")
    missing = f"; {len(seconds) - len(known)} step(s) without a figure left out" if len(known) < len(seconds) else ""
    return (f"cost of the study's work here (every model's full protocol at this machine's time per epoch and "
            f"per image): {total / 60:.1f} min{priced}{missing}")


def first_result_line(records: Sequence[dict]) -> str:
    for record in records:
        block = record.get("time_to_first_step") or {}
        if block.get("seconds") is not None:
            parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in (block.get("parts_seconds") or {}).items())
            return f"time to first result: {block['seconds']:.1f} s to the first training step ({parts})"
    return "time to first result: - (no step recorded it)"


COST_HEAD = ("model", "best configuration here", "images/s", "time for 500000 images", "cost")


def sweep_cost_rows(records: Sequence[dict], price_per_minute: float | None) -> list[tuple]:
    """The LeaderGPU study's cost table from this machine's own sweep: per model its fastest configuration,
    the time for the study's 500,000 images at that rate, and its cost at `price_per_minute` (the machine's
    whole price: every device of it)."""
    from l40sbench import cost

    out = []
    for record in records:
        if record.get("task") != "synthetic":
            continue
        best: dict[str, dict] = {}
        for row in record.get("rows", []):
            if row.get("status") == "ok" and row.get("images_per_second"):
                if row["model"] not in best or row["images_per_second"] > best[row["model"]]["images_per_second"]:
                    best[row["model"]] = row
        for model, row in best.items():
            seconds = cost.REFERENCE_IMAGES / row["images_per_second"]
            money = "-"
            if price_per_minute:
                priced = cost.price(model, cost.REFERENCE_IMAGES, row["images_per_second"],
                                    cost.Offer("this machine", max(row["devices"], 1), price_per_minute))
                money = f"{priced.cost:.2f} ({priced.rule})"
            out.append((model, f"batch {row['per_device_batch']} x{row['devices']}", number(row["images_per_second"], 1),
                        cost.duration(seconds), money))
    return out
