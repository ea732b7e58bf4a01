"""One command of the suite in a fresh interpreter, as a user runs it, timed from the call to its exit (the
interpreter's start and imports included): what the start-up and refusal benchmarks time."""

from __future__ import annotations

import subprocess
import sys
import time


def timed_cli(argv: list[str], **run) -> tuple[float, subprocess.CompletedProcess]:
    """(seconds, the finished process) of `python -m l40sbench ARGV`, its output captured as text; `run` goes to
    subprocess.run (cwd, env, timeout, check)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "l40sbench", *argv], capture_output=True, text=True, **run)
    return time.perf_counter() - started, done
