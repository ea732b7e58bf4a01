"""One peak for a series of runs: $L40SBENCH_PEAK_FILE names a file that the first run writes and later runs
on the same device with the same settings read."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from l40sbench.core.utilisation import SOURCE_FILE, SOURCE_MEASURED

PEAK_FILE_VARIABLE = "L40SBENCH_PEAK_FILE"


def peak_file(path: Path, backend: str) -> Path:
    """Where `backend`'s peak is kept when $L40SBENCH_PEAK_FILE names `path`."""
    return path if backend == "tensorflow" else path.with_name(f"{path.stem}.{backend}{path.suffix}")


def kept_or_measured(path: Path | None, context: dict, measure_now: Callable[[], dict]) -> dict:
    """The peak kept in `path` where it was measured in this `context` (host, device, threads, TF32), else one
    measured now, which is written to `path` if no file is there yet (a series of runs then measures once).

    A file that does not parse, or that another device or setting measured, is left alone and the
    peak is measured. `source` names where the figures come from and `measured_utc` when.
    """
    kept = _read_json(path) if path is not None else None
    if kept is not None:
        kept = {"backend": "tensorflow", **kept}  # a file that names no backend holds TensorFlow's kernels' peak
    if kept is not None and all(kept.get(key) == value for key, value in context.items()) and "matmul" in kept:
        return {**kept, "source": f"{SOURCE_FILE} {path}"}
    peak = {**measure_now(), "source": SOURCE_MEASURED,
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if path is not None and not path.exists():
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(peak, indent=2, sort_keys=True))
        partial.replace(path)
    return peak


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
