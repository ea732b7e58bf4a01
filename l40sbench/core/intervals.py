"""The uncertainty of a figure from its samples: n, mean, median, standard deviation, 95 % intervals, and
the one percentile definition every table uses. Pure arithmetic on numbers (SciPy's bootstrap), seeded.

Conventions, the same everywhere in the suite:
- the standard deviation is the sample one (ddof=1);
- a percentile is MLPerf LoadGen's: the sorted samples' element at index floor(n x fraction), so the
  probe's p99 and LoadGen's compare; a p99 of fewer than SMALL_P99 samples is one of the top few samples;
- an interval is SciPy's percentile bootstrap (RESAMPLES resamples, seed SEED), at 95 %, named in METHOD;
  with fewer than MIN_SAMPLES samples there is none (two values have three distinct resamples).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0
MIN_SAMPLES = 3
SMALL_P99 = 100
METHOD = f"percentile bootstrap, {RESAMPLES} resamples, seed {SEED} (scipy.stats.bootstrap)"
PERCENTILE_METHOD = "LoadGen's: sorted samples at index floor(n x fraction)"


def percentile(samples: Sequence[float], fraction: float) -> float:
    """LoadGen's percentile: the sorted samples' element at index floor(n x fraction), 0 <= fraction < 1.

    >>> percentile([4.0, 1.0, 3.0, 2.0], 0.5)
    3.0
    """
    if not 0 <= fraction < 1:
        raise ValueError(f"fraction must be in [0, 1). Received: fraction={fraction}")
    ordered = sorted(float(v) for v in samples)
    if not ordered:
        raise ValueError("percentile of no samples")
    return ordered[min(len(ordered) - 1, math.floor(len(ordered) * fraction))]


def _percentile_along(values: np.ndarray, fraction: float, axis: int) -> np.ndarray:
    """percentile() over one axis of an array (the bootstrap's resamples)."""
    n = values.shape[axis]
    return np.take(np.sort(values, axis=axis), min(n - 1, math.floor(n * fraction)), axis=axis)


STATISTICS: dict[str, Callable[[np.ndarray, int], np.ndarray]] = {
    "mean": lambda v, axis: np.mean(v, axis=axis),
    "median": lambda v, axis: _percentile_along(v, 0.5, axis),
    "p90": lambda v, axis: _percentile_along(v, 0.9, axis),
    "p99": lambda v, axis: _percentile_along(v, 0.99, axis),
}


@dataclass(frozen=True)
class Interval:
    """A figure's samples summarised; the intervals are (low, high) at 95 %, None with too few samples."""

    n: int
    mean: float | None
    median: float | None
    std: float | None
    mean_ci95: tuple[float, float] | None
    median_ci95: tuple[float, float] | None
    method: str

    @property
    def half_width_percent(self) -> float | None:
        """Half the mean's interval as a percentage of the mean: the "± x %" tables print."""
        return half_width_percent(self.to_dict())

    def to_dict(self) -> dict:
        return asdict(self)


def half_width_percent(block: dict | None) -> float | None:
    """Half the mean's 95 % interval as a percentage of the mean, of an interval block as a record holds it."""
    if not block or block.get("mean_ci95") is None or not block.get("mean"):
        return None
    low, high = block["mean_ci95"]
    return 100.0 * (high - low) / 2 / abs(block["mean"])


def _check(samples: Sequence[float]) -> np.ndarray:
    values = np.asarray(samples, dtype=np.float64)
    if values.ndim != 1 or not np.all(np.isfinite(values)):
        raise ValueError(f"samples must be a flat list of finite numbers. Received: {list(samples)!r}")
    return values


def interval(samples: Sequence[float]) -> Interval:
    """n, mean, median, std (ddof=1) and the 95 % intervals of the mean and the median.

    >>> interval([2.0, 2.0, 2.0]).mean_ci95
    (2.0, 2.0)
    """
    values = _check(samples)
    n = int(values.size)
    if n == 0:
        return Interval(0, None, None, None, None, None, "no samples")
    mean, median = float(values.mean()), percentile(values, 0.5)
    std = float(values.std(ddof=1)) if n > 1 else None
    if n < MIN_SAMPLES:
        return Interval(n, mean, median, std, None, None, f"no interval: fewer than {MIN_SAMPLES} samples")
    if np.ptp(values) == 0:
        return Interval(n, mean, median, std, (mean, mean), (median, median), METHOD)
    low, high = _bootstrap((values,), lambda v, axis: np.stack([STATISTICS["mean"](v, axis),
                                                                 STATISTICS["median"](v, axis)]))
    return Interval(n, mean, median, std, (float(low[0]), float(high[0])), (float(low[1]), float(high[1])), METHOD)


def describe(samples: Sequence[float]) -> dict:
    """interval(samples) as a record holds it, beside the figure it qualifies."""
    return interval(samples).to_dict()


def ratio_interval(baseline: Sequence[float], new: Sequence[float],
                   statistic: str = "mean") -> tuple[float, float] | None:
    """The 95 % interval of statistic(new) / statistic(baseline), each side resampled on its own; None
    where either side has fewer than MIN_SAMPLES samples or the baseline's statistic is not positive."""
    base, other = _check(baseline), _check(new)
    if base.size < MIN_SAMPLES or other.size < MIN_SAMPLES:
        return None
    stat = STATISTICS[statistic]
    if stat(base, 0) <= 0:
        return None
    if np.ptp(base) == 0 and np.ptp(other) == 0:
        ratio = float(stat(other, 0) / stat(base, 0))
        return ratio, ratio
    low, high = _bootstrap((base, other), lambda b, o, axis: stat(o, axis) / stat(b, axis))
    return float(low), float(high)


def _bootstrap(data: tuple, statistic) -> tuple:
    from scipy.stats import bootstrap

    result = bootstrap(data, statistic, n_resamples=RESAMPLES, confidence_level=CONFIDENCE, method="percentile",
                       vectorized=True, paired=False, rng=np.random.default_rng(SEED))
    return result.confidence_interval.low, result.confidence_interval.high


def spread_text(values: dict | None, unit: str = "", digits: int = 3) -> str:
    """"96.1 s ± 4.2 % (n 9)" from a record's interval block; "-" without one."""
    if not values or values.get("mean") is None:
        return "-"
    shown = f"{values['mean']:.{digits}f}{unit}"
    half = half_width_percent(values)
    return f"{shown} ± {half:.1f} % (n {values['n']})" if half is not None else f"{shown} (n {values['n']}, no interval)"
