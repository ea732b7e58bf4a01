"""Generate a stand-in data set once, atomically, keyed by what made it."""

from __future__ import annotations

import fcntl
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

_MARKER = "standin.json"


def _made_from(root: Path, recipe: dict) -> bool:
    marker = root / _MARKER
    return marker.is_file() and json.loads(marker.read_text()) == recipe


def generate_once(root: Path, recipe: dict, write: Callable[[Path], None]) -> Path:
    """Runs write(tmp) into a temp folder and renames it to root, unless root
    already holds a set made from the same recipe (generator version, seed, counts).

    Several processes asking at once (runs started together on a fresh checkout) take turns on a lock
    beside root: one generates, the others find the set made; none replaces a set another is reading.
    """
    if _made_from(root, recipe):
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _made_from(root, recipe):
            return root
        tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{root.name}."))
        try:
            write(tmp)
            (tmp / _MARKER).write_text(json.dumps(recipe))
            if root.exists():
                shutil.rmtree(root)
            tmp.rename(root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return root


def ensure_splits(root: Path, version: int, counts: dict, seed: int, write_split: Callable[[Path, dict, int], None],
                  folders: dict[str, str] | None = None) -> Path:
    """A stand-in of one folder per split, generated once under root by generator `version`:
    write_split(folder, that split's counts, seed) for each split of `counts` (train with `seed`, the others
    with seed + 1), in `folders[split]` (default: the split's name). Returns root."""

    def write(folder: Path) -> None:
        for split, split_counts in counts.items():
            write_split(folder / (folders or {}).get(split, split), split_counts, seed + (0 if split == "train" else 1))

    return generate_once(root, {"generator_version": version, "seed": seed, "counts": counts}, write)
