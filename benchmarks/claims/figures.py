"""What the claims share: a figure with its n and 95 % interval (the record contract's), A and B timed in turns,
a command timed in fresh processes."""

from __future__ import annotations

import statistics
import subprocess
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


def fresh_process(command: list[str], rounds: int, timeout_s: float = 600.0) -> list[float]:
    """Wall seconds of `command` in a fresh process, `rounds` times.

    Raises:
      RuntimeError: the command failed.
    """
    seconds = []
    for _ in range(rounds):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        seconds.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return seconds
