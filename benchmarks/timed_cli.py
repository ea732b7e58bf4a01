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


def timed_rounds(argv: list[str], rounds: int, after=lambda done: None, **run) -> tuple[list[float], object]:
    """The seconds of `rounds` timed_cli calls of ARGV, and the last finished process; after(process) runs
    between calls, outside the clock (a check of what the call left)."""
    walls, done = [], None
    for _ in range(rounds):
        seconds, done = timed_cli(argv, **run)
        walls.append(seconds)
        after(done)
    return walls, done
