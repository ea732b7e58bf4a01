"""Generate a stand-in data set once, atomically, keyed by what made it."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable

_MARKER = "standin.json"


def generate_once(root: Path, recipe: dict, write: Callable[[Path], None]) -> Path:
    """Runs write(tmp) into a temp folder and renames it to root, unless root
    already holds a set made from the same recipe (generator version, seed, counts).
    """
    marker = root / _MARKER
    if marker.is_file() and json.loads(marker.read_text()) == recipe:
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
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
