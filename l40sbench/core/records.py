"""Result files: sorted JSON with a schema version, and a one-row CSV.

Writes are atomic (temp file in the same folder, then rename), so a reader
or a crash never sees half a file; `written_whole` does the same for what a
library writes (a model file, a SavedModel folder, a plot).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
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


FULL = (errno.ENOSPC, errno.EDQUOT)  # a full disk, a full quota


def disk_full(exc: BaseException) -> bool:
    """Whether an exception (or one it was raised from or during) is a full disk or quota."""
    return any(isinstance(e, OSError) and e.errno in FULL for e in _chain(exc))


def full_disk_line(exc: BaseException, folder: Path | None) -> str:
    """One line for a full disk: the file it stopped at, that nothing half-written is left, and what the folder's
    record keeps (read back from disk: the last record written whole)."""
    named = _filename(exc)
    where = f"{_final_name(Path(named))} was not written" if named else "a file was not written"
    kept = "nothing was written before it"
    if folder is not None:
        try:
            record = json.loads((folder / "result.json").read_text())
            train = record.get("train") or {}
            kept = (f"{folder / 'result.json'} ({train.get('epochs', 0)} finished epoch(s), complete: "
                    f"{str(bool(record.get('complete'))).lower()})" if train else f"{folder / 'result.json'}")
        except (OSError, ValueError):
            pass
    return f"the disk is full: {where}, and nothing half-written is left; kept: {kept}. Free space and run again"


def _filename(exc: BaseException) -> str | None:
    """The file an OSError in the exception's chain names, None where none does (one raised at a close)."""
    return next((e.filename for e in _chain(exc) if isinstance(e, OSError) and e.filename), None)


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__


def _final_name(path: Path) -> Path:
    """The file a temporary stood for: .model.partial.keras -> model.keras, .result.json.x1y2.tmp -> result.json."""
    name = path.name
    if name.startswith(".") and ".partial" in name:
        name = name[1:].replace(".partial", "", 1)
    elif name.startswith(".") and name.endswith(".tmp"):
        name = name[1:].rsplit(".", 2)[0]
    return path.with_name(name)


def _name_the_file(exc: BaseException, path: Path) -> None:
    """A full disk's error raised where a file is closed names none: it gets the file it stood for."""
    if disk_full(exc) and _filename(exc) is None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from exc


def remove(path: Path) -> None:
    """A file or a folder gone, whichever it is (nothing where there is none)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def written_whole(path: Path) -> Iterator[Path]:
    """A path beside `path` (a file or a folder, its suffix kept: Keras wants .keras) for a library to write; renamed
    over `path` once written, removed where the writing fails. An earlier `path` goes first: a model beside a
    record must be that record's, whole, or absent, never half of one a later `infer` would read."""
    partial = path.with_name(f".{path.stem}.partial{path.suffix}")
    remove(path)
    remove(partial)
    try:
        yield partial
        os.replace(partial, path)
    except BaseException as exc:
        remove(partial)
        _name_the_file(exc, path)
        raise


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
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        _name_the_file(exc, path)
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
