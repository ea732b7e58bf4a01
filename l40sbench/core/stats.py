"""Latency statistics as a pure function of the samples."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from l40sbench.core.intervals import percentile


@dataclass(frozen=True)
class LatencyStats:
    """Summary of per-call latencies; every time is in milliseconds.

    `images_per_second` is 1000 / mean_ms * images_per_call, the article's
    "1秒当たりの平均処理画像数". All fields are None (times_ms empty) when there are no samples. The
    standard deviation and the percentiles follow core.intervals' conventions (ddof=1; LoadGen's percentile).
    """

    count: int
    mean_ms: float | None
    std_ms: float | None
    min_ms: float | None
    max_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    images_per_second: float | None
    times_ms: tuple[float, ...] = ()


def summarize(samples_seconds: Sequence[float], images_per_call: int = 1) -> LatencyStats:
    """Summarize latencies measured in seconds.

    Args:
      samples_seconds: one duration per timed call, warm-up already removed.
      images_per_call: how many images each call processed (the batch size).

    Returns:
      LatencyStats; std is the sample standard deviation (None for one sample), the percentiles
      LoadGen's (core.intervals.percentile); times_ms keeps every sample, for intervals and plots.

    >>> summarize([0.010, 0.020]).mean_ms
    15.0
    """
    if images_per_call < 1:
        raise ValueError(f"images_per_call must be >= 1. Received: images_per_call={images_per_call}")
    ms = np.asarray(samples_seconds, dtype=np.float64) * 1000.0
    if ms.size == 0:
        return LatencyStats(0, None, None, None, None, None, None, None, None)
    if np.any(ms < 0) or not np.all(np.isfinite(ms)):
        raise ValueError(f"latency samples must be finite and >= 0. Received: {ms.tolist()}")
    mean_ms = float(ms.mean())
    p50, p90, p99 = (percentile(ms, fraction) for fraction in (0.5, 0.9, 0.99))
    images_per_second = 1000.0 * images_per_call / mean_ms if mean_ms > 0 else math.inf
    return LatencyStats(
        count=int(ms.size),
        mean_ms=mean_ms,
        std_ms=float(ms.std(ddof=1)) if ms.size > 1 else None,
        min_ms=float(ms.min()),
        max_ms=float(ms.max()),
        p50_ms=p50,
        p90_ms=p90,
        p99_ms=p99,
        images_per_second=images_per_second,
        times_ms=tuple(float(v) for v in ms),
    )


@dataclass(frozen=True)
class StepThroughput:
    """Throughput over equal-sized timed steps.

    `images_per_second` is images_per_step / mean step time (total images over
    total time); its standard error comes from the step times' standard error
    of the mean by the delta method. `step_jitter_percent` is the steps'
    sample standard deviation as a percentage of their mean.
    """

    steps: int
    images_per_step: int
    images_per_second: float | None
    images_per_second_stderr: float | None
    step_ms_mean: float | None
    step_ms_std: float | None
    step_jitter_percent: float | None


def step_throughput(step_seconds: Sequence[float], images_per_step: int) -> StepThroughput:
    """Images/s with its standard error from per-step wall times (warm-up already removed).

    >>> step_throughput([0.5, 0.5], 32).images_per_second
    64.0
    """
    if images_per_step < 1:
        raise ValueError(f"images_per_step must be >= 1. Received: images_per_step={images_per_step}")
    seconds = np.asarray(step_seconds, dtype=np.float64)
    if seconds.size == 0:
        return StepThroughput(0, images_per_step, None, None, None, None, None)
    if np.any(seconds <= 0) or not np.all(np.isfinite(seconds)):
        raise ValueError(f"step times must be finite and > 0. Received: {seconds.tolist()}")
    mean = float(seconds.mean())
    std = float(seconds.std(ddof=1)) if seconds.size > 1 else 0.0
    rate = images_per_step / mean
    return StepThroughput(
        steps=int(seconds.size),
        images_per_step=images_per_step,
        images_per_second=rate,
        images_per_second_stderr=rate * (std / math.sqrt(seconds.size)) / mean,
        step_ms_mean=1000.0 * mean,
        step_ms_std=1000.0 * std,
        step_jitter_percent=100.0 * std / mean,
    )
