import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Decoded-image cache in a temp folder, so tests leave the user's cache alone."""
    os.environ["L40SBENCH_CACHE"] = str(tmp_path_factory.mktemp("decoded"))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def run_cli(*args, timeout=600, **kwargs):
    """The CLI in a fresh interpreter, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "l40sbench", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, cwd=REPO, **kwargs,
    )
