"""The LeaderGPU study's table shapes from sweep rows, as Markdown and CSV.

Two shapes, as the study prints them: images/s for device counts x models (one
batch per model: the study's per-GPU batch where the sweep ran it), and for
each device count, batch size x model in groups of six. "-*" marks a
configuration that ran out of memory, exactly where the study prints it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from l40sbench.core.intervals import spread_text
from l40sbench.core.text import markdown_table
from l40sbench.synthetic.models import MODELS, STUDY_DEVICE_TABLE, STUDY_ORDER

OOM = "-*"
NOT_RUN = "-"
MARKS = {"oom": OOM, "error": "err", "timeout": "t/o"}
FOOTNOTE = ("-* : out of memory at this batch size (the study's mark); err: the configuration failed; "
            "t/o: it passed --timeout; - : not run.")
GROUP = 6  # models per batch-size table, as the study splits its twelve


def cell(row: dict | None) -> str:
    if row is None:
        return NOT_RUN
    if row["status"] == "ok":
        return f"{row['images_per_second']:.2f}"
    return MARKS.get(row["status"], row["status"])


def ordered(models: Sequence[str]) -> list[str]:
    """The study's column order: its five-model table first, then the rest of its twelve."""
    rank = {name: i for i, name in reversed(list(enumerate(STUDY_DEVICE_TABLE + STUDY_ORDER)))}  # first place wins
    return sorted(dict.fromkeys(models), key=lambda m: rank.get(m, len(rank)))


def _index(rows: Sequence[dict]) -> dict:
    return {(r["model"], r["per_device_batch"], r["devices"]): r for r in rows}


def device_batch(model_rows: Sequence[dict]) -> int:
    """The batch of one model's column in every device-count table (this one and the report's).

    The study's per-device batch if it ran (ok) at every device count, else the
    largest batch that did, else the study's if it was swept, else the largest swept.
    """
    counts = {r["devices"] for r in model_rows}
    batches = sorted({r["per_device_batch"] for r in model_rows})
    everywhere = [b for b in batches
                  if {r["devices"] for r in model_rows if r["per_device_batch"] == b and r["status"] == "ok"} == counts]
    return _preferred(model_rows[0]["model"], everywhere or batches)


def _preferred(model: str, batches: Sequence[int]) -> int:
    study = MODELS.get(model).study_batch
    return study if study in batches else max(batches)


def device_table(rows: Sequence[dict]) -> tuple[list[str], list[list[str]]]:
    """Devices x models at one per-device batch per model (the study's 'GPUs' table)."""
    models = ordered([r["model"] for r in rows])
    devices = sorted({r["devices"] for r in rows})
    index = _index(rows)
    batches = {m: device_batch([r for r in rows if r["model"] == m]) for m in models}
    headers = ["devices"] + [f"{MODELS.get(m).label} (batch {batches[m]})" for m in models]
    body = [[str(d)] + [cell(index.get((m, batches[m], d))) for m in models] for d in devices]
    return headers, body


def batch_tables(rows: Sequence[dict]) -> list[tuple[int, list[str], list[list[str]]]]:
    """For each device count, batch size x models in groups of six (the study's 'Autres résultats')."""
    index = _index(rows)
    models = [m for m in STUDY_ORDER if any(r["model"] == m for r in rows)]
    models += [m for m in ordered([r["model"] for r in rows]) if m not in models]
    batches = sorted({r["per_device_batch"] for r in rows})
    tables = []
    for devices in sorted({r["devices"] for r in rows}):
        for start in range(0, len(models), GROUP):
            group = models[start:start + GROUP]
            body = [[str(b)] + [cell(index.get((m, b, devices))) for m in group] for b in batches]
            tables.append((devices, ["batch size"] + group, body))
    return tables


def _number(value, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


ROW_COLUMNS = ("model", "devices", "device kind", "batch/device", "total batch", "images/s", "+/- (s.e.)",
               "step jitter %", "step ms (95 % interval)", "scaling eff.", "GFLOP/image", "TFLOP/s", "utilisation %", "of peak", "peak memory MB",
               "status")


def rows_table(rows: Sequence[dict]) -> tuple[tuple[str, ...], list[list[str]]]:
    """Every configuration with its figures (what the study's tables leave out)."""
    body = []
    for r in rows:
        utilisation = None if r.get("utilisation") is None else 100 * r["utilisation"]
        body.append([r["model"], str(r["devices"]), r["device_kind"], str(r["per_device_batch"]),
                     str(r["total_batch"]), _number(r.get("images_per_second"), 2),
                     _number(r.get("images_per_second_stderr"), 2), _number(r.get("step_jitter_percent"), 1),
                     spread_text(r.get("step_ms_interval"), " ms", 2), _number(r.get("scaling_efficiency"), 3), _number(r.get("gflops_per_image"), 3),
                     _number(r.get("achieved_tflops"), 4), _number(utilisation, 1), r.get("utilisation_peak") or "-",
                     _number(r.get("peak_memory_mb"), 0), r["status"] if r["status"] == "ok" else
                     f"{r['status']}: {r.get('error') or ''}"])
    return ROW_COLUMNS, body


def options_table(config: dict, rows: Sequence[dict] = ()) -> tuple[list[str], list[list[str]]]:
    """The study's 'Options' table: batch size per device (the device-count table's) and optimisation, per model."""
    models = ordered(config["models"])

    def batch(model: str) -> int:
        mine = [r for r in rows if r["model"] == model]
        return device_batch(mine) if mine else _preferred(model, config["batch_sizes"])

    return (["Options"] + [MODELS.get(m).label for m in models],
            [["Batch size per device"] + [str(batch(m)) for m in models],
             ["Optimizer"] + [config["settings"]["optimizer"]] * len(models),
             ["Mode / precision"] + [f"{config['settings']['mode']} / {config['settings']['precision']}"] * len(models)])


def max_batch_table(found: Sequence[dict]) -> tuple[list[str], list[list[str]]]:
    body = [[f["model"], str(f["devices"]), str(f["max_per_device_batch"] or f["error"] or "none fits"),
             ", ".join(f"{b}:{s}" for b, s in f["probes"].items())] for f in found]
    return ["model", "devices", "largest batch/device", "probes (batch:status)"], body


def markdown(result: dict, environment: str) -> str:
    """tables.md: the environment block, the options, the study's two shapes, then every row."""
    rows = list(result["rows"])
    parts = [f"# Synthetic {result['config']['settings']['mode']} throughput (images/s)", "", "```", environment, "```", "",
             markdown_table(*options_table(result["config"], rows)), ""]
    if rows:
        parts += ["## Images/s by device count", "", markdown_table(*device_table(rows)), ""]
        for devices, headers, body in batch_tables(rows):
            parts += [f"## {devices} device(s): images/s by batch size per device", "", markdown_table(headers, body), ""]
        parts += [FOOTNOTE, "", "## Every configuration", "", markdown_table(*rows_table(rows)), ""]
    if result.get("max_batch"):
        parts += ["## Largest batch per device that fits", "", markdown_table(*max_batch_table(result["max_batch"])), ""]
    if not result["complete"]:
        parts += ["**Incomplete sweep** (interrupted): `--resume` runs the configurations still missing.", ""]
    return "\n".join(parts)


def to_csv(headers: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(body)
    return out.getvalue()


def csv_files(result: dict) -> dict[str, str]:
    """File name -> CSV text for each table."""
    rows = list(result["rows"])
    if not rows:
        return {}
    files = {"table_devices.csv": to_csv(*device_table(rows)), "rows.csv": to_csv(*rows_table(rows))}
    for devices, headers, body in batch_tables(rows):
        name = f"table_batch_{devices}dev.csv"
        if name in files:  # a second group of six for the same device count: append its columns' table
            files[name] += "\n" + to_csv(headers, body)
        else:
            files[name] = to_csv(headers, body)
    return files
