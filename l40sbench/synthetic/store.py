"""A sweep's files: rows.jsonl, one row a line, flushed and synced the moment the row exists; sweep.json,
the settings and the peaks measured at the start; and the result files a finished sweep leaves."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from l40sbench.core.migrate import upgrade_state
from l40sbench.core.records import to_json, write_atomic
from l40sbench.core.results import Row
from l40sbench.core.text import Log
from l40sbench.errors import UserError

ROWS_FILE = "rows.jsonl"
SWEEP_FILE = "sweep.json"



def load_rows(output_dir: Path) -> list[Row]:
    """Rows written so far; a line cut short by a kill mid-write is skipped."""
    path = output_dir / ROWS_FILE
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(Row.from_dict(json.loads(line)))
            except (ValueError, TypeError):
                continue
    return rows


def cut_torn_line(output_dir: Path, log: Log) -> None:
    """Cuts a last line a kill left without its newline, so the next row starts a line of its own."""
    path = output_dir / ROWS_FILE
    if not path.exists():
        return
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return
    keep = data.rfind(b"\n") + 1
    with open(path, "r+b") as handle:
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    log(f"{path}: cut a torn last line ({len(data) - keep} bytes, a row cut short by a kill); "
        "that configuration runs again")


def append_row(output_dir: Path, row: Row) -> None:
    with open(output_dir / ROWS_FILE, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row.to_dict(), sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_state(output_dir: Path) -> dict:
    """sweep.json of an earlier sweep: its settings, environment and peaks."""
    try:
        state = upgrade_state(json.loads((output_dir / SWEEP_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot resume {output_dir}: no readable {SWEEP_FILE} ({exc})") from None
    if not isinstance(state, dict) or not {"config", "env"} <= state.keys():
        raise UserError(f"cannot resume {output_dir}: its {SWEEP_FILE} is not a sweep's")
    return state


def write_outputs(output_dir: Path, result, environment: Callable[[dict], str]) -> Path:
    """result.json, tables.md (opening with environment(the record's env)) and the tables as CSV; returns
    the JSON path."""
    from l40sbench.synthetic import tables

    record = result.to_dict()
    json_path = output_dir / "result.json"
    write_atomic(json_path, to_json(record))
    write_atomic(output_dir / "tables.md", tables.markdown(record, environment(record["env"])))
    for name, text in tables.csv_files(record).items():
        write_atomic(output_dir / name, text)
    return json_path
