"""Where generated data and caches live (never inside git's view)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]  # the checkout (or the installed package's parent)


def datasets_dir() -> Path:
    """datasets/ of the checkout (git ignores its generated parts), else ~/.cache."""
    if env := os.environ.get("L40SBENCH_DATASETS"):
        return Path(env)
    if (REPO / "pyproject.toml").is_file():
        return REPO / "datasets"
    return Path.home() / ".cache" / "l40sbench" / "datasets"


def cache_dir() -> Path:
    """Decoded-image cache, keyed by content hash."""
    if env := os.environ.get("L40SBENCH_CACHE"):
        return Path(env)
    return Path.home() / ".cache" / "l40sbench" / "decoded"
