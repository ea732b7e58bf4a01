"""What the claims share: a figure with its n and 95 % interval (the record contract's), A and B timed in turns,
a command of the suite timed in fresh interpreters or run for its record, a function called in a fresh interpreter."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from l40sbench.paths import REPO
from l40sbench.peak.cache import PEAK_FILE_VARIABLE


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


MARKER = "BENCHMARKS-FIGURES "
PEAK_VARIABLE = "BENCHMARKS_PEAK_FILE"  # the runner's peak, kept where a suite command reads it


def in_child(function: str, *args, env: dict | None = None, timeout: float = 3600) -> object:
    """What `function` ("module:name") returns for ARGS, called in a fresh interpreter with `env` added: for
    what must be set before a framework starts (KERAS_BACKEND, XLA_FLAGS, logical devices).

    Raises:
      RuntimeError: the child failed (its last line of stderr).
    """
    module, name = function.split(":")
    code = (f"import json, sys; from {module} import {name} as f; "
            f"print({MARKER!r} + json.dumps(f(*json.loads(sys.argv[1]))))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(args)], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
    if done.returncode or not lines:
        raise RuntimeError(f"{function}: {(done.stderr.strip().splitlines() or [f'exit {done.returncode}'])[-1]}")
    return json.loads(lines[-1][len(MARKER):])


def kept_peak() -> dict:
    """The environment that has a suite command read the runner's peak instead of measuring its own."""
    kept = os.environ.get(PEAK_VARIABLE)
    return {PEAK_FILE_VARIABLE: kept} if kept else {}


def suite(argv: list[str], env: dict | None = None, timeout: float = 7200) -> subprocess.CompletedProcess:
    """`python -m l40sbench ARGV` as a user runs it, reading the peak the runner measured (so each record carries
    the run's one peak and no run spends its seconds measuring it again).

    Raises:
      RuntimeError: the command failed (its last line of stderr).
    """
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **kept_peak(), **(env or {})}
    done = subprocess.run([sys.executable, "-m", "l40sbench", *argv], cwd=REPO, capture_output=True, text=True,
                          env=env, timeout=timeout)
    if done.returncode:
        ended = (f"killed by {signal.Signals(-done.returncode).name} (the kernel's OOM killer sends SIGKILL)"
                 if done.returncode < 0 else f"exit {done.returncode}")
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"l40sbench {' '.join(argv)}: {ended}; its last line: {last}")
    return done


def records(folder: Path) -> list[dict]:
    """The record(s) of a run folder's result.json."""
    from l40sbench.core.reading import read_result_file

    return read_result_file(Path(folder) / "result.json")


def spinners(count: int) -> Callable[[], None]:
    """`count` processes spinning on the cores from now (a busy host, on purpose); returns what stops them."""
    started = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]

    def stop() -> None:
        for process in started:
            process.kill()
            process.wait()

    return stop


def run_peak() -> dict:
    """The peak the runner measured for this run (env.peak's block), or one measured now outside the runner."""
    kept = os.environ.get(PEAK_VARIABLE)
    if kept:
        return json.loads(Path(kept).read_text())
    from l40sbench.peak.measure import measure_env

    return measure_env()


def keras_clock(kind: str, seconds: list[float], after: Callable[[], None] | None = None):
    """A Keras callback that appends the seconds of each `kind` ("epoch", "train_batch") to `seconds`, then calls
    `after` (work between epochs, outside the clock)."""
    import keras

    def begin(callback, *_, **__):
        callback.started = time.perf_counter()

    def end(callback, *_, **__):
        seconds.append(time.perf_counter() - callback.started)
        if after is not None:
            after()

    return type("Clock", (keras.callbacks.Callback,), {f"on_{kind}_begin": begin, f"on_{kind}_end": end})()
