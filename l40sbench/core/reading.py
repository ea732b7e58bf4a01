"""Reading result files: every record brought to today's shape (core.migrate), then checked against the
schema (core.schema), so no reader meets an older or a malformed record."""

from __future__ import annotations

import json
from pathlib import Path

from l40sbench.core.migrate import upgrade
from l40sbench.core.schema import check_record
from l40sbench.errors import UserError


def _is_record(value) -> bool:
    return isinstance(value, dict) and str(value.get("schema", "")).startswith("l40sbench.result/")


def read_result_file(path: Path) -> list[dict]:
    """The record(s) in one JSON file, each brought to today's shape (core.migrate) and checked against the schema.

    Raises:
      UserError: unreadable, not JSON, or not l40sbench results.
    """
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read result {path}: {getattr(exc, 'strerror', None) or exc}") from None
    records = value if isinstance(value, list) else [value]
    if not records or not all(_is_record(r) for r in records):
        raise UserError(f"{path} is not an l40sbench result (no l40sbench.result schema)")
    records = [upgrade(r) for r in records]
    for index, record in enumerate(records):
        try:
            check_record(record)
        except ValueError as exc:
            where = f" (record {index + 1} of {len(records)})" if len(records) > 1 else ""
            raise UserError(f"{path}{where} is not a valid l40sbench result: {exc}") from None
    return records
