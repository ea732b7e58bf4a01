"""What the claims share: a figure with its n and 95 % interval (the record contract's), A and B timed in turns,
a command of the suite timed in fresh interpreters."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence


def figure(samples: Sequence[float], unit: str, statistic: str = "median") -> dict:
    """A figure from its samples: the median (or mean), n and the suite's 95 % interval of it (core.intervals)."""
    from l40sbench.core.intervals import describe

    described = describe(list(samples))
    key = "median_ci95" if statistic == "median" else "mean_ci95"
    value = statistics.median(samples) if statistic == "median" else statistics.fmean(samples)
    return {"value": value, "unit": unit, "n": len(samples), "statistic": statistic,
            "interval": list(described.get(key) or (None, None)), "method": described.get("method"),
            "samples": list(samples)}


def turns(a: Callable[[], None], b: Callable[[], None], blocks: int, calls: int,
          around: Callable[[bool], Callable[[], None]] | None = None) -> dict:
    """A and B timed in `blocks` alternating blocks of `calls` calls each (B second in each pair): each arm's
    per-call seconds, and each pair's ratio of block medians (B / A). `around(is_b)` may start something for a
    block and returns what stops it."""
    arms: dict[str, list[float]] = {"a": [], "b": []}
    ratios = []
    for _ in range(blocks):
        medians = {}
        for arm, call in (("a", a), ("b", b)):
            stop = around(arm == "b") if around else None
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                call()
                times.append(time.perf_counter() - started)
            if stop is not None:
                stop()
            arms[arm] += times
            medians[arm] = statistics.median(times)
        ratios.append(medians["b"] / medians["a"])
    return {"a": arms["a"], "b": arms["b"], "ratios": ratios}


def timed_cli(argv: list[str], **run) -> tuple[float, subprocess.CompletedProcess]:
    """(seconds, the finished process) of `python -m l40sbench ARGV` in a fresh interpreter, as a user runs it
    (the interpreter's start and imports included), its output captured as text; `run` goes to subprocess.run
    (cwd, env, timeout, check)."""
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
