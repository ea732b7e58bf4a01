"""What each report section draws, from the records: pure functions from records to the series a plot
takes or the rows a table takes; report.document writes them."""

from __future__ import annotations

from collections.abc import Sequence

from l40sbench import cost
from l40sbench.report.inputs import Loaded, backend, machine
from l40sbench.report.tables import wall_epoch_seconds

Runs = Sequence[tuple[str, dict]]  # (machine label, record)


def epoch_bars(runs: Runs) -> list[tuple]:
    """(base, machine, first epoch s, steady epoch s, wall s / epoch) of every run that trained."""
    return [(r["base"], label, r["train"]["first_epoch_seconds"], r["train"]["steady_epoch_seconds"],
             wall_epoch_seconds(r["train"]))
            for label, r in runs if r["train"].get("epochs")]


def latencies(runs: Runs) -> tuple[list[tuple[str, list]], list[tuple[str, float]]]:
    """Per-image times of the runs that kept them, and the mean of those that published only a mean."""
    times = [(f"{r['base']} — {label}", r["inference"]["times_ms"]) for label, r in runs
             if (r.get("inference") or {}).get("times_ms")]
    means = [(f"{r['base']} — {label}", r["inference"]["mean_ms"]) for label, r in runs
             if not (r.get("inference") or {}).get("times_ms") and (r.get("inference") or {}).get("mean_ms")]
    return times, means


def scaling_groups(runs: Runs) -> dict[str, list[dict]]:
    """The records of each --devices list (base and machine) that ran more than one count."""
    groups: dict[str, list[dict]] = {}
    for label, r in runs:
        if r.get("scaling"):
            groups.setdefault(f"{r['base']} — {label}", []).append(r)
    return {name: records for name, records in groups.items() if len(records) > 1}


def server_latency(server: list[dict]) -> dict[str, list[tuple]]:
    """(offered samples/s, p50 ms, p99 ms) per runtime and batch, over the server tests and their search steps."""
    curves: dict[str, list] = {}
    for e in server:
        points = curves.setdefault(f"{e['runtime']} b{e['settings'].get('batch', 1)}", [])
        latency = e.get("latency_ms") or {}
        if e.get("scheduled_samples_per_second") and latency.get("p99") is not None:
            points.append((e["scheduled_samples_per_second"], latency.get("p50"), latency["p99"]))
        points += [(step["qps"], step["p50_ms"], step["p99_ms"]) for step in (e.get("search") or {}).get("steps", ())
                   if step.get("p99_ms") is not None]
    return curves


def offline_rate(offline: list[dict]) -> dict[str, list[tuple]]:
    """(batch, samples/s) per runtime and worker count, over the offline tests."""
    curves: dict[str, list] = {}
    for e in offline:
        workers = e["settings"].get("workers", 1)
        curves.setdefault(f"{e['runtime']}" + (f" x{workers} workers" if workers > 1 else ""), []).append(
            (e["settings"].get("batch", 1), e["samples_per_second"]))
    return curves


def sweep_series(runs: Runs) -> tuple[dict, dict, dict]:
    """The sweeps side by side: (cells by (model, batch, devices) then machine, at each machine's batch per
    model; images/s against batch per model and machine, at its smallest device count; images/s against
    devices per model and machine, at its batch per model)."""
    from l40sbench.synthetic import tables as sweep_tables

    cells: dict[tuple, dict[str, str]] = {}
    by_batch: dict[str, dict[str, list]] = {}
    by_devices: dict[str, dict[str, list]] = {}
    for label, record in runs:
        rows = [r for r in record["rows"] if r.get("mode", "train") == "train"] or list(record["rows"])
        chosen = {m: sweep_tables.device_batch([r for r in rows if r["model"] == m]) for m in {r["model"] for r in rows}}
        for r in rows:
            at_study_batch = r["per_device_batch"] == chosen[r["model"]]
            if at_study_batch:
                cells.setdefault((r["model"], r["per_device_batch"], r["devices"]), {})[label] = sweep_tables.cell(r)
            if r["status"] != "ok":
                continue
            if at_study_batch:
                by_devices.setdefault(r["model"], {}).setdefault(label, []).append((r["devices"], r["images_per_second"]))
            smallest = min(x["devices"] for x in rows if x["model"] == r["model"])
            if r["devices"] == smallest:
                by_batch.setdefault(r["model"], {}).setdefault(f"{label} ({smallest} dev.)", []).append(
                    (r["per_device_batch"], r["images_per_second"]))
    return cells, by_batch, by_devices


def backend_rows(loaded: Sequence[Loaded]) -> list[tuple[str, str, str, float, str]]:
    """(configuration, backend, figure name, value, unit) for every configuration measured on several backends of
    one machine: classify and detect by steady epoch and per-image time, a sweep's rows by images/s."""
    points: dict[tuple, dict[str, list]] = {}
    for item in loaded:
        record, name = item.record, backend(item.record)
        if name is None:
            continue
        config = record.get("config") or {}
        if record.get("task") == "synthetic":
            for row in record.get("rows", ()):
                if row.get("images_per_second"):
                    label = f"{row['model']} b{row['per_device_batch']} x{row['devices']} {row['precision']}"
                    points.setdefault((machine(record), "synthetic", label), {})[name] = [
                        ("images/s", row["images_per_second"], "images/s")]
            continue
        label = f"{record.get('base')} {config.get('image_size')}px b{config.get('batch_size')} {config.get('precision')}"
        figures = [("steady epoch", (record.get("train") or {}).get("steady_epoch_seconds"), "s"),
                   ("per image", (record.get("inference") or {}).get("mean_ms"), "ms")]
        points.setdefault((machine(record), record.get("task"), label), {})[name] = [f for f in figures if f[1]]
    return [(f"{task} {label}", name, figure, value, unit) for (_, task, label), per in points.items() if len(per) > 1
            for name, figures in sorted(per.items()) for figure, value, unit in figures]


def by_backend(rows: list[tuple], figure: str) -> dict[str, dict[str, float]]:
    """One figure of backend_rows: its value per configuration, then backend."""
    groups: dict[str, dict[str, float]] = {}
    for configuration, name, other, value, _ in rows:
        if other == figure:
            groups.setdefault(configuration, {})[name] = value
    return groups


def priced(loaded: Sequence[Loaded], labels: Sequence[str], offers: Sequence[cost.Offer],
           images: int) -> tuple[list[tuple[str, cost.Priced]], list[str]]:
    """Every images/s figure priced on the offers that rent as many devices (and the LeaderGPU study's own
    table, repriced, when it is an input), with the notes that say how."""
    rows: list[tuple[str, cost.Priced]] = []
    notes = []
    if any(item.origin == "leadergpu-2017" for item in loaded):
        rows += [("LeaderGPU study (repriced from its own figures)", row) for row, _, _ in cost.reference_rows()]
        notes.append("The LeaderGPU study's cost table is repriced from its 8-GPU throughputs and prices "
                     f"({cost.REFERENCE_IMAGES:,} images).")
    for item, label in zip(loaded, labels):
        for figure in cost.throughputs(item.record):
            for offer in offers:
                if offer.rents(label, figure.devices):
                    rows.append((label, cost.price(figure.label, images, figure.images_per_second, offer)))
    return rows, notes
