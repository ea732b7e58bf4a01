"""The report's columns, by task section: each a (header, cell of a record) pair, and the notes the training
table needs beside it (which input path each figure used, and what bounds it)."""

from __future__ import annotations

from collections.abc import Sequence

from l40sbench.core.bound import short as bound_by
from l40sbench.core.text import format_duration
from l40sbench.report import tables
from l40sbench.report.cells import input_path
from l40sbench.report.inputs import precision
from l40sbench.report.tables import (
    CLOCK_PER_EPOCH,
    WALL_PER_EPOCH,
    WALL_TOTAL,
    clock_epoch_seconds,
    p99,
    spread,
    wall_epoch_seconds,
)


def _ms(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _utilisation(record: dict, part: str) -> str:
    """'54.5 % of float32' for a run that recorded its utilisation, '-' for one that did not."""
    u = record.get("utilisation") or {}
    return "-" if u.get(part) is None else f"{100 * u[part]:.1f} % of {u['peak']}"


TRAIN_COLUMNS = (
    ("input", input_path),
    ("bound by", lambda r: bound_by(r.get("bound"))),
    ("input px", lambda r: str((r.get("config") or {}).get("image_size") or "-")),
    ("precision", lambda r: precision(r) or "-"),
    ("epochs", lambda r: str(r["train"]["epochs"])),
    (WALL_TOTAL, lambda r: format_duration(r["train"].get("wall_seconds"))),
    (WALL_PER_EPOCH, lambda r: format_duration(wall_epoch_seconds(r["train"]))),
    (CLOCK_PER_EPOCH, lambda r: format_duration(clock_epoch_seconds(r["train"]))),
    ("first", lambda r: format_duration(r["train"]["first_epoch_seconds"])),
    ("steady (2..N)", lambda r: format_duration(r["train"]["steady_epoch_seconds"])),
    ("steady ± 95 %", lambda r: spread(r["train"].get("steady_epoch_interval"))),
    ("utilisation", lambda r: _utilisation(r, "train")),
    ("test scoring (apart)", lambda r: format_duration(tables.scoring_seconds(r["train"]))),
    ("to first step", lambda r: format_duration(tables.first_step_seconds(r))),
)
INFERENCE_COLUMNS = (
    ("images", lambda r: str((r.get("inference") or {}).get("images_timed", "-"))),
    ("mean ms", lambda r: _ms((r.get("inference") or {}).get("mean_ms"))),
    ("± 95 %", lambda r: spread((r.get("inference") or {}).get("interval_ms"))),
    ("images/s", lambda r: _ms((r.get("inference") or {}).get("images_per_second"))),
    ("p50 ms", lambda r: _ms((r.get("inference") or {}).get("p50_ms"))),
    ("p99 ms", lambda r: p99(r.get("inference") or {})),
    ("utilisation", lambda r: _utilisation(r, "inference")),
)
ACCURACY_COLUMNS = {
    "classify": (("test accuracy", lambda r: _ms((r.get("accuracy") or {}).get("test_accuracy"))),),
    "detect": (("mAP@[.5:.95]", lambda r: _ms((r.get("accuracy") or {}).get("map_50_95"))),
               ("mAP@.5", lambda r: _ms((r.get("accuracy") or {}).get("map_50")))),
}




def input_notes(runs: Sequence[tuple[str, dict]]) -> list[str]:
    """Under the training table: where a study's row and a run's sit side by side, that the study did not state
    its input path and which one each run used; each input-bound run's sizing, and that a faster device would
    not train it faster."""
    notes = []
    studies = {r["base"] for _, r in runs if r.get("source")}
    for label, r in runs:
        if r.get("source"):
            continue
        if r["base"] in studies:
            notes.append(f"- {r['base']} [{label}]: trained through the {input_path(r)} input; the study beside it "
                         f"did not state its input path, so the two may measure different input paths")
        block = r.get("bound") or {}
        if bound_by(block) == "input":
            notes.append(f"- {r['base']} [{label}] is bound by its input, not its device: a faster GPU would not "
                         f"train it faster ({block['sizing']['line']})")
    return [*notes, ""] if notes else []
