"""The clocks the pipelines are timed with.

The workload never times itself: a pipeline hands over a callable (or calls
start/stop from a framework callback) and a sync function. `sync()` blocks
until every queued device operation is done; `sync(output)` until a timed
call's output is ready, which a call that returned host values (numpy arrays,
numbers, None) already is: nothing then runs inside the clock after the call.
The clock is read only after a sync, so an asynchronous GPU cannot make a step
look faster than it was.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from l40sbench.core.stats import LatencyStats, summarize

Clock = Callable[[], float]
Sync = Callable[..., None]  # sync() drains all queued work; sync(output) waits until that output is ready


def no_sync(*output: object) -> None:
    """Sync for devices that run synchronously (the CPU)."""


def on_host(output: object) -> bool:
    """True when `output` holds only host values (numpy arrays and scalars, Python numbers and strings,
    None), alone or in lists, tuples and dicts: the call that returned it has waited for its device.

    >>> on_host({"boxes": np.zeros(3), "n": 2}), on_host([np.float32(1), None]), on_host(object())
    (True, True, False)
    """
    if output is None or isinstance(output, (np.ndarray, np.generic, int, float, str, bytes)):
        return True
    if isinstance(output, (list, tuple)):
        return all(on_host(item) for item in output)
    if isinstance(output, dict):
        return all(on_host(item) for item in output.values())
    return False


@dataclass(frozen=True)
class EpochTimes:
    """Training wall times in seconds.

    `first_epoch_seconds` includes tracing and compilation; the steady state is
    the mean of epochs 2..N (None with a single epoch).
    """

    epoch_seconds: tuple[float, ...]
    total_seconds: float
    first_epoch_seconds: float | None
    steady_epoch_seconds: float | None


def epoch_times(epoch_seconds: Sequence[float]) -> EpochTimes:
    """Split per-epoch wall times into total, first and steady state."""
    times = tuple(float(t) for t in epoch_seconds)
    steady = times[1:]
    return EpochTimes(
        epoch_seconds=times,
        total_seconds=sum(times),
        first_epoch_seconds=times[0] if times else None,
        steady_epoch_seconds=sum(steady) / len(steady) if steady else None,
    )


def eta_seconds(epoch_seconds: Sequence[float], remaining_epochs: int) -> float:
    """Time left, predicted from the epochs so far.

    The first epoch carries tracing and compilation; once there is a second,
    the prediction uses only the later ones.
    """
    steady = list(epoch_seconds[1:]) or list(epoch_seconds)
    return remaining_epochs * sum(steady) / len(steady) if steady else 0.0


class EpochClock:
    """Wall clock for training epochs, driven by start()/stop() calls."""

    def __init__(self, clock: Clock = time.perf_counter, sync: Sync = no_sync):
        self._clock = clock
        self._sync = sync
        self._started: float | None = None
        self.epoch_seconds: list[float] = []
        self.windows: list[tuple[float, float]] = []  # each epoch's (start, stop) on the clock: telemetry's cuts

    def start(self) -> None:
        self._sync()
        self._started = self._clock()

    def stop(self) -> float:
        """Ends the running epoch and returns its duration in seconds."""
        if self._started is None:
            raise RuntimeError("EpochClock.stop() called before start()")
        self._sync()
        stopped = self._clock()
        elapsed = stopped - self._started
        self.windows.append((self._started, stopped))
        self._started = None
        self.epoch_seconds.append(elapsed)
        return elapsed

    def summary(self) -> EpochTimes:
        return epoch_times(self.epoch_seconds)


class Stopwatch:
    """Wall seconds since start() on the core's clock, with no device sync: what a rented machine bills."""

    def __init__(self, clock: Clock = time.perf_counter):
        self._clock = clock
        self._started: float | None = None

    def start(self) -> None:
        self._started = self._clock()

    def elapsed(self) -> float:
        if self._started is None:
            raise RuntimeError("Stopwatch.elapsed() called before start()")
        return self._clock() - self._started


def time_calls(
    fn: Callable[[Any], object],
    samples: Iterable[Any],
    *,
    clock: Clock = time.perf_counter,
    sync: Sync = no_sync,
) -> list[float]:
    """Times fn(sample) once per sample; returns the durations in seconds.

    Queued work is drained before each clock starts; after the call, the sync waits on what fn returned
    and no more (fn returns what it computed: host values need no wait). Inside `recorded_calls()`, each
    call's (start, stop, tag) is kept too, for telemetry to cut its phase at the clock's own instants (the
    tag: which of probe_interleaved's calls it was, else None).
    """
    durations = []
    windows, tag = _CALL_WINDOWS.get(), _CALL_TAG.get()
    for sample in samples:
        sync()
        start = clock()
        output = fn(sample)
        sync(output)
        stop = clock()
        durations.append(stop - start)
        if windows is not None:
            windows.append((start, stop, tag))
    return durations


_CALL_WINDOWS: contextvars.ContextVar[list | None] = contextvars.ContextVar("l40sbench_call_windows", default=None)
_CALL_TAG: contextvars.ContextVar[str | None] = contextvars.ContextVar("l40sbench_call_tag", default=None)


@contextlib.contextmanager
def recorded_calls():
    """Yields the list of every (start, stop, tag) that time_calls measures inside the block, in order, on its
    clock."""
    windows: list[tuple[float, float, str | None]] = []
    token = _CALL_WINDOWS.set(windows)
    try:
        yield windows
    finally:
        _CALL_WINDOWS.reset(token)


def time_batches(
    call: Callable[[], object],
    calls: int,
    samples: int,
    *,
    clock: Clock = time.perf_counter,
    sync: Sync = no_sync,
) -> list[float]:
    """Seconds of `samples` batches of `calls` back-to-back calls each.

    One sync drains queued work before each batch starts and one, on the last
    call's output (as the probe waits), ends it; none sits between the calls, and
    nothing call() returns is read, so an asynchronous device stays busy and no
    result crosses to the host inside the clock (how a peak rate is measured
    rather than a launch latency).
    """
    if calls < 1 or samples < 1:
        raise ValueError(f"calls and samples must be >= 1. Received: calls={calls}, samples={samples}")
    durations = []
    for _ in range(samples):
        sync()
        start = clock()
        for _ in range(calls):
            output = call()
        sync(output)
        durations.append(clock() - start)
    return durations


def probe_latency(
    fn: Callable[[Any], object],
    samples: Iterable[Any],
    *,
    warmup: int = 1,
    images_per_call: int = 1,
    clock: Clock = time.perf_counter,
    sync: Sync = no_sync,
) -> LatencyStats:
    """Times fn once per sample and drops the first `warmup` calls.

    With the article's 140 test images and warmup=1, 139 calls are timed.
    The warm-up calls run through fn exactly like the others, so tracing and
    first-call allocation land in them and not in the statistics.
    """
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0. Received: warmup={warmup}")
    durations = time_calls(fn, samples, clock=clock, sync=sync)
    return summarize(durations[warmup:], images_per_call=images_per_call)


def probe_interleaved(
    fns: Mapping[str, Callable[[Any], object]],
    samples: Iterable[Any],
    *,
    warmup: int = 1,
    clock: Clock = time.perf_counter,
    sync: Sync = no_sync,
    progress: Callable[[int, float], None] = lambda done, seconds: None,
) -> dict[str, LatencyStats]:
    """Times every fn on each sample in turn; the first `warmup` samples are excluded for each.

    Taking the calls in rotation, not one probe after another, lets drift on a
    shared host fall on all of them alike, so their ratios mean something.
    progress(samples done, seconds they took) runs after each sample, outside the clocks.
    """
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0. Received: warmup={warmup}")
    durations: dict[str, list[float]] = {name: [] for name in fns}
    elapsed = 0.0
    for done, sample in enumerate(samples, start=1):
        for name, fn in fns.items():
            token = _CALL_TAG.set(name)
            try:
                (seconds,) = time_calls(fn, (sample,), clock=clock, sync=sync)
            finally:
                _CALL_TAG.reset(token)
            durations[name].append(seconds)
            elapsed += seconds
        progress(done, elapsed)
    return {name: summarize(times[warmup:]) for name, times in durations.items()}
