"""Result files: sorted JSON with a schema version, and a one-row CSV.

Writes are atomic (temp file in the same folder, then rename), so a reader
or a crash never sees half a file.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

SCHEMA = "l40sbench.result/1"


def _jsonable(value: Any) -> Any:
    # JSON has no NaN/Infinity; a missing measurement is null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str) -> None:
    """Writes `text` to a temporary file beside `path`, then renames it over `path`, so a reader never sees
    half a file. The file gets the mode any new file gets here (mkstemp's own is 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def to_json(record: dict | list) -> str:
    return json.dumps(_jsonable(record), indent=2, sort_keys=True, allow_nan=False) + "\n"


def flatten(record: dict, prefix: str = "") -> dict:
    """Nested dict -> {"a.b": value}; lists are kept as JSON text."""
    flat = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            flat[name] = json.dumps(_jsonable(value), sort_keys=True)  # as result.json writes them
        else:
            flat[name] = _jsonable(value)
    return flat


def to_csv(record: dict) -> str:
    row = flatten(record)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=sorted(row), lineterminator="\n")
    writer.writeheader()
    writer.writerow(row)
    return out.getvalue()


def write_result(output_dir: Path, record: dict) -> Path:
    """Writes result.json and result.csv; returns the JSON path."""
    json_path = output_dir / "result.json"
    write_atomic(json_path, to_json(record))
    write_atomic(output_dir / "result.csv", to_csv(record))
    return json_path
