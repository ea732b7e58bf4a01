"""report.md and its plots from any mix of results, run folders and references.

Each pipeline's tables in the studies' shapes, one column group per machine so
several machines sit side by side; each machine's environment block; the
PNG plots referenced from the Markdown; cost per N images when offers are
given (or the LeaderGPU study's own when it is an input).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from l40sbench import cost
from l40sbench.core.records import write_atomic
from l40sbench.core.text import markdown_table
from l40sbench.report import beside_mlperf, plots, series
from l40sbench.report.cells import offer_rate
from l40sbench.report.columns import ACCURACY_COLUMNS, INFERENCE_COLUMNS, TRAIN_COLUMNS, input_notes
from l40sbench.report.inputs import Loaded, machine_labels, row_name
from l40sbench.report.scenario_tables import scenario_cells, scenario_title
from l40sbench.report.tables import (
    SCALING_HEADERS,
    environment_block,
    runtime_cells,
    runtime_rows,
    scaling_cells,
)

TASK_TITLES = {"classify": "Classification", "detect": "Object detection"}


def _side_by_side(runs: Sequence[tuple[str, dict]], columns: Sequence[tuple[str, Callable[[dict], str]]]):
    """Rows: bases; for each machine, one column per (name, cell function), headed "name [A]".

    Returns (legend line naming each machine's letter, headers, rows).
    """
    labels = list(dict.fromkeys(label for label, _ in runs))
    letters = {label: chr(ord("A") + i) if i < 26 else str(i + 1) for i, label in enumerate(labels)}
    bases = list(dict.fromkeys(row_name(r) for _, r in runs))
    index = {(label, row_name(r)): r for label, r in runs}
    headers = ["base"] + [f"{name} [{letters[label]}]" for label in labels for name, _ in columns]
    body = [[base] + [cell(index[(label, base)]) if (label, base) in index else "-"
                      for label in labels for _, cell in columns] for base in bases]
    legend = "Machines: " + " · ".join(f"**[{letters[label]}]** {label}" for label in labels)
    return legend, headers, body


def _table(runs, columns) -> list[str]:
    legend, headers, body = _side_by_side(runs, columns)
    return [legend, "", markdown_table(headers, body), ""]


def _task_section(task: str, runs: list[tuple[str, dict]], out: Path) -> list[str]:
    title = TASK_TITLES[task]
    trained = [(label, r) for label, r in runs if r["train"]["epochs"]]  # `infer --model` times a file untrained
    parts = [f"## {title}", "", *_stability_lines(runs), "### Training time", "",
             *(_table(trained, TRAIN_COLUMNS) + input_notes(trained) if trained else
               ["No run here trained: each timed a model file as it was given (`infer --model`).", ""])]
    bars = series.epoch_bars(runs)
    if bars:
        name = f"epoch_times_{task}.png"
        plots.epoch_bars(bars, out / name, f"{title}: time per epoch, first epoch against steady")
        parts += [f"![{title}: time per epoch]({name})", ""]
    parts += ["### Inference (one image at a time, warm-up excluded)", "", *_table(runs, INFERENCE_COLUMNS)]
    times, means = series.latencies(runs)
    if times or means:
        name = f"latency_{task}.png"
        plots.latency_cdf(times, means, out / name, f"{title}: per-image latency distribution")
        parts += [f"![{title}: per-image latency]({name})", ""]
        if means:
            parts += ["Dashed lines: records that published only a mean (no per-image times to draw).", ""]
    if any(r.get("accuracy") for _, r in runs):
        parts += ["### Accuracy on the test split", "", *_table(runs, ACCURACY_COLUMNS[task])]
    parts += _scaling_section(task, runs, out)
    parts += beside_mlperf.section(runs)
    for index, (label, r) in enumerate(runs, start=1):
        parts += _runtime_section(task, index, label, r, out)
        parts += _scenario_section(task, index, label, r, out)
    return parts


def _stability_lines(runs: list[tuple[str, dict]]) -> list[str]:
    """A warning per run the stability guard called unstable, with its reasons (its figures stay in the tables)."""
    from l40sbench.core.stability import unstable

    lines = [f"- **Unstable run** {r['base']} [{label}]: {'; '.join(r['stability']['reasons'])}"
             for label, r in runs if unstable(r)]
    return [*lines, ""] if lines else []


def _scaling_section(task: str, runs: list[tuple[str, dict]], out: Path) -> list[str]:
    """Runs of a --devices list: their scaling table and epoch time against devices with the ideal line."""
    groups = series.scaling_groups(runs)
    if not groups:
        return []
    parts = ["### Scaling over devices", ""]
    for name, records in groups.items():
        parts += [f"{name}: {records[0]['scaling']['held_fixed']}", "",
                  markdown_table(SCALING_HEADERS, scaling_cells(records)), ""]
        parts += sorted({f"- {r['scaling'][key]}" for r in records for key in ("note", "not_computed")
                         if r["scaling"].get(key)}) + [""]
    plot = f"epoch_vs_devices_{task}.png"
    plots.epoch_vs_devices({name: [(r["scaling"]["devices"], r["scaling"]["epoch_seconds"]) for r in records]
                            for name, records in groups.items()}, out / plot,
                           f"{TASK_TITLES[task]}: time per epoch against devices")
    return parts + [f"![{TASK_TITLES[task]}: epoch time against devices]({plot})", ""]


def _scenario_section(task: str, index: int, label: str, record: dict, out: Path) -> list[str]:
    """One run's LoadGen tests: a table per scenario, latency against load (server), rate against batch (offline)."""
    entries = (record.get("inference") or {}).get("scenarios") or ()
    title = f"{record['base']} — {label}"
    parts = []
    for scenario in dict.fromkeys(e["scenario"] for e in entries):
        headers, body, reasons = scenario_cells(record, scenario)
        parts += [f"### {scenario_title(record, scenario)} — {label}", "", markdown_table(headers, body), ""]
        parts += [f"- {reason}" for reason in reasons] + ([""] if reasons else [])
    server = [e for e in entries if e["scenario"] == "server"]
    if server:
        name = f"loadgen_server_{task}_{index}.png"
        plots.latency_vs_load(series.server_latency(server), server[0]["settings"].get("latency_bound_ms"), out / name,
                              f"{title}: LoadGen server latency against offered load")
        parts += [f"![{title}: server latency against load]({name})", ""]
    offline = [e for e in entries if e["scenario"] == "offline" and e.get("samples_per_second")]
    if offline:
        name = f"loadgen_offline_{task}_{index}.png"
        plots.rate_vs_batch(series.offline_rate(offline), out / name, f"{title}: LoadGen offline samples/s against batch")
        parts += [f"![{title}: offline rate against batch]({name})", ""]
    return parts


def _runtime_section(task: str, index: int, label: str, record: dict, out: Path) -> list[str]:
    """One run's inference runtimes: the table, latency bars and the latency distribution per runtime."""
    headers, body, reasons = runtime_cells(record)
    if len(body) < 2:  # tf alone: the inference section above already shows it
        return []
    title = f"{record['base']} — {label}"
    parts = [f"### Inference by runtime: {title}", "",
             "Batch 1, fastest first. The precision column is what each runtime reported it runs, with what it "
             "was asked for where that differs; tf runs the precision the model was trained in. The device "
             "column says where each ran; vs tf is drawn only between rows on one kind of device.", "",
             markdown_table(headers, body), ""]
    parts += [f"- {reason}" for reason in reasons] + ([""] if reasons else [])
    timed = [r for r in runtime_rows(record) if (r.get("inference") or {}).get("times_ms")]
    if timed:
        bars_name, cdf_name = f"runtimes_{task}_{index}.png", f"runtimes_latency_{task}_{index}.png"
        plots.runtime_bars([(r["runtime"], r["inference"]["mean_ms"], r["inference"]["p50_ms"],
                             r["inference"]["p99_ms"], r.get("precision") or "-") for r in timed],
                           out / bars_name, f"{title}: ms per image by runtime")
        plots.latency_cdf([(f"{r['runtime']} ({r.get('precision')})", r["inference"]["times_ms"]) for r in timed], [],
                          out / cdf_name, f"{title}: latency distribution by runtime")
        parts += [f"![{title}: latency by runtime]({bars_name})", "",
                  f"![{title}: latency distribution by runtime]({cdf_name})", ""]
    return parts


def _synthetic_section(runs: list[tuple[str, dict]], out: Path) -> list[str]:
    from l40sbench.synthetic import tables as sweep_tables
    from l40sbench.synthetic.models import MODELS

    parts = ["## Synthetic throughput (images/s)", ""]
    # Side by side: each machine's GPU-count table rows (its per-model batch), one column per machine.
    labels = list(dict.fromkeys(label for label, _ in runs))
    cells, by_batch, by_devices = series.sweep_series(runs)
    order = sweep_tables.ordered([k[0] for k in cells])
    body = [[MODELS.get(m).label if m in MODELS.names() else m, str(b), str(d)] + [per.get(lb, "-") for lb in labels]
            for (m, b, d), per in sorted(cells.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][2], kv[0][1]))]
    parts += ["### Side by side, by device count", "",
              "At each machine's batch per model: the study's batch where it ran at every device count, else the "
              "largest batch that did.", "",
              markdown_table(["model", "batch/device", "devices", *labels], body), "", sweep_tables.FOOTNOTE, ""]
    if by_batch:
        plots.throughput_vs({m: by_batch[m] for m in order if m in by_batch}, out / "throughput_vs_batch.png",
                            x_label="batch size per device (log2)",
                            title="Images/s against batch size per device (training, synthetic data)")
        parts += ["![Images/s against batch size](throughput_vs_batch.png)", ""]
    if any(len(points) > 1 for per in by_devices.values() for points in per.values()):
        plots.throughput_vs({m: by_devices[m] for m in order if m in by_devices}, out / "throughput_vs_devices.png",
                            x_label="devices (log2)", ideal=True,
                            title="Images/s against device count, dashed: ideal linear scaling")
        parts += ["![Images/s against device count](throughput_vs_devices.png)", ""]
    for label, record in runs:
        rows = list(record["rows"])
        parts += [f"### {label}: the study's tables", "", markdown_table(*sweep_tables.device_table(rows)), ""]
        for devices, headers, table in sweep_tables.batch_tables(rows):
            parts += [f"{devices} device(s), images/s by batch size per device:", "", markdown_table(headers, table), ""]
    return parts


def _backend_section(loaded: Sequence[Loaded], out: Path) -> list[str]:
    """Configurations that differ only by Keras backend: a table, and one bar chart per figure."""
    rows = series.backend_rows(loaded)
    if not rows:
        return []
    parts = ["## Keras backends side by side", "",
             "The same configuration on the same machine, one row per backend (steady epoch: epochs 2..N; "
             "per image: the latency probe's mean).", "",
             markdown_table(["configuration", "backend", "figure", "value"],
                            [[c, b, f, f"{v:.4g} {u}"] for c, b, f, v, u in rows]), ""]
    for index, (figure, unit) in enumerate(dict.fromkeys((f, u) for _, _, f, _, u in rows)):
        groups = series.by_backend(rows, figure)
        plot = f"backends_{index}.png"
        plots.backend_bars(groups, out / plot, y_label=f"{figure} ({unit})", title=f"{figure} by Keras backend")
        parts += [f"![{figure} by Keras backend]({plot})", ""]
    return parts


def _cost_section(loaded: Sequence[Loaded], labels: Sequence[str], offers: Sequence[cost.Offer],
                  images: int, out: Path) -> list[str]:
    priced, notes = series.priced(loaded, labels, offers, images)
    if not priced:
        return ["## Cost", "", "No offers given: `report --catalog FILE` prices every images/s figure on the "
                "offers that rent as many devices (see `cost --help`).", ""]
    body = [[row.model, label, row.offer.name, f"{row.images:,}", cost.duration(row.seconds),
             offer_rate(row.offer),
             cost.money(row.cost, row.offer.currency), row.rule] for label, row in priced]
    plots.cost_bars([(row.model, row.offer.name, row.cost, cost.CURRENCY_SIGNS[row.offer.currency])
                     for _, row in priced], images, out / "cost.png")
    return ["## Cost per N images", "", *notes, "",
            markdown_table(["model", "measured on", "offer", "images", "time", "price", "total cost", "priced by"],
                           body), "", "![Cost per N images](cost.png)", ""]


def write_report(loaded: Sequence[Loaded], out: Path, *, offers: Sequence[cost.Offer] = (),
                 images: int = cost.REFERENCE_IMAGES) -> Path:
    """Writes out/report.md and its PNGs; returns the Markdown's path."""
    out.mkdir(parents=True, exist_ok=True)
    labels = machine_labels(loaded)
    parts = ["# l40sbench report", "", "## Inputs", "",
             markdown_table(["machine", "task", "base", "from", "source"],
                            [[label, item.record.get("task"), item.record.get("base"), item.origin,
                              item.record.get("source") or "measured by l40sbench"]
                             for item, label in zip(loaded, labels)]), ""]
    parts += ["## Machines", ""]
    blocks: dict[tuple[str, str], list[str]] = {}  # one block per environment, with the inputs that share it
    for item, label in zip(loaded, labels):
        origins = blocks.setdefault((label, environment_block(item.record.get("env") or {})), [])
        if item.origin not in origins:
            origins.append(item.origin)
    for (label, block), origins in blocks.items():
        parts += [f"**{label}** ({', '.join(origins)})", "", "```", block, "```", ""]
    for task in TASK_TITLES:
        runs = [(label, item.record) for item, label in zip(loaded, labels) if item.record.get("task") == task]
        if runs:
            parts += _task_section(task, runs, out)
    sweeps = [(label, item.record) for item, label in zip(loaded, labels) if item.record.get("task") == "synthetic"]
    if sweeps:
        parts += _synthetic_section(sweeps, out)
    parts += _backend_section(loaded, out)
    parts += _cost_section(loaded, labels, offers, images, out)
    path = out / "report.md"
    write_atomic(path, "\n".join(parts))
    return path
