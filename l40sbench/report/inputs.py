"""What reports, compare and cost read: result files, run folders and reference names.

A result file holds one record, or a list of them (the shipped references do);
a run folder holds result.json; a reference name (`l40s`, `leadergpu-2017`)
loads the studies' published figures. Every record keeps where it came from.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from l40sbench import reference
from l40sbench.core.env import gpu_models
from l40sbench.core.reading import read_result_file
from l40sbench.errors import UserError


@dataclass(frozen=True)
class Loaded:
    """One result record and what the user named to get it (file, folder or reference)."""

    origin: str
    record: dict


def load(item: str) -> list[Loaded]:
    """A reference name, a run folder (its result.json) or a result file."""
    if item in reference.REFERENCES:
        return [Loaded(item, r) for r in reference.load(item)]
    path = Path(item)
    if path.is_dir():
        if not (path / "result.json").is_file():
            raise UserError(f"{path} holds no result.json (a run folder has one; or name a result file "
                            f"or one of {', '.join(reference.REFERENCES)})")
        path = path / "result.json"
    elif not path.exists():
        raise UserError(f"no such result file or folder: {item} (references: {', '.join(reference.REFERENCES)})")
    return [Loaded(item, r) for r in read_result_file(path)]


def load_all(items: Sequence[str]) -> list[Loaded]:
    return [loaded for item in items for loaded in load(item)]


def read_catalog(path: Path) -> list:
    """The offers of a catalog file, TOML (.toml) or JSON (anything else), as cost.Offer.

    Raises:
      UserError: unreadable, not TOML/JSON, or an offer cost.offers_from refuses.
    """
    import tomllib

    from l40sbench.cost import offers_from

    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except OSError as exc:
        raise UserError(f"cannot read catalog {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError and json.JSONDecodeError are ValueErrors
        raise UserError(f"catalog {path} is not valid {'TOML' if path.suffix == '.toml' else 'JSON'}: {exc}") from None
    try:
        return offers_from(data)
    except ValueError as exc:
        raise UserError(f"catalog {path}: {exc}") from None


def machine(record: dict) -> str:
    """The machine a record was measured on, as legends and column groups name it."""
    if record.get("machine"):
        return record["machine"]
    env = record.get("env") or {}
    gpus = gpu_models(env)
    if gpus:
        return f"{len(gpus)}x {gpus[0]}"
    cpu = env.get("cpu") or "unknown CPU"
    return f"{cpu} ({env.get('cpu_count') or '?'} cores)"


def backend(record: dict) -> str | None:
    """The Keras backend a record computed on: its config's (a sweep's settings'), else its environment's
    (detect's config names none: it runs on TensorFlow); None for a study's reference record (unknown,
    matches any)."""
    if record.get("source"):
        return None
    config = record.get("config") or {}
    return (config.get("backend") or (config.get("settings") or {}).get("backend")
            or (record.get("env") or {}).get("backend"))


def precision(record: dict) -> str | None:
    """The precision a run computed in (its config's, a sweep's settings'); None where the record names none."""
    config = record.get("config") or {}
    return config.get("precision") or (config.get("settings") or {}).get("precision")


def replicas(record: dict) -> int:
    """The devices a run trained on (1 for a record without a devices block)."""
    return (record.get("devices") or {}).get("replicas") or 1


def row_name(record: dict) -> str:
    """The base, and its device count where it trained on several (a --devices list has one record per count):
    the rows of report.md's side-by-side tables."""
    count = replicas(record)
    return record["base"] if count == 1 else f"{record['base']} x{count} devices"


def machine_labels(loaded: Sequence[Loaded]) -> list[str]:
    """One label per record: its machine (and its Keras backend where the records have several), told apart by
    its run when two records share a machine, backend, task, base and device count (the counts of one --devices
    list are rows of one machine)."""
    several = len({backend(item.record) for item in loaded} - {None}) > 1

    def where(record: dict) -> str:
        name = backend(record) if several else None
        return f"{machine(record)} · {name}" if name else machine(record)

    labels = []
    for item in loaded:
        base = where(item.record)
        clash = [o for o in loaded if where(o.record) == base and o.record.get("task") == item.record.get("task")
                 and o.record.get("base") == item.record.get("base") and replicas(o.record) == replicas(item.record)]
        if len(clash) > 1:
            stamp = (item.record.get("env") or {}).get("timestamp_utc") or item.origin
            base = f"{base}, {stamp}"
        labels.append(base)
    return labels
