"""The uncertainty of a figure from its samples: n, mean, median, standard deviation, 95 % intervals, and
the one percentile definition every table uses. Pure arithmetic on numbers (SciPy's bootstrap), seeded.

Conventions, the same everywhere in the suite:
- the standard deviation is the sample one (ddof=1);
- a percentile is MLPerf LoadGen's: the sorted samples' element at index floor(n x fraction), so the
  probe's p99 and LoadGen's compare; a p99 of fewer than SMALL_P99 samples is one of the top few samples;
- an interval is at 95 %, its method named per figure (`method`), chosen by the samples:
  - fewer than MIN_SAMPLES: none (two values have three distinct resamples);
  - fewer than SMALL_N (a budget-cut run's 1-9 steady epochs): Student's t for the mean, the binomial
    order-statistic interval for the median (a percentile bootstrap there is about +-1 s.d. at n = 3,
    against t's +-2.48, and still about 20 % too narrow at n = 9);
  - serial samples whose lag-1 autocorrelation r1 is significant (above Z95 / sqrt(n): latencies, steps and
    epochs drift): Student's t at the effective sample size n (1 - r) / (1 + r) with the standard error
    inflated by sqrt((1 + r) / (1 - r)) (an AR(1) series' variance) for the mean, and the order-statistic
    interval at that effective n for the median, since resampling them as independent makes the interval
    too narrow. r is r1 corrected for its own bias, about -(1 + 4 r) / n (Kendall): the interval-coverage
    claim measures both rules on AR(1) series at r 0.3, 0.5, 0.7 and 0.9 (n 100), and the corrected one
    covers nearer 95 % at each. `effective_n` is the one rule; compare's ratios (core.ratios) take it too;
  - otherwise SciPy's bias-corrected and accelerated bootstrap (RESAMPLES resamples, seed SEED); above
    BCA_MAX_N samples the percentile bootstrap (BCa's jackknife holds n x n values, and its correction
    fades as n grows).
  Every interval block records the lag-1 autocorrelation it judged by.
- a ratio of two sides' statistics (compare) is core.ratios.ratio_test's: analytic on the log ratio, each
  side at its effective sample size, so serial samples and Holm's small thresholds are both held.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

CONFIDENCE = 0.95
Z95 = 1.959963984540054  # the standard normal's 97.5th percentile
RESAMPLES = 2000
SEED = 0
MIN_SAMPLES = 3
SMALL_P99 = 100
METHOD = f"BCa bootstrap, {RESAMPLES} resamples, seed {SEED} (scipy.stats.bootstrap)"
SMALL_N = 10
BCA_MAX_N = 2000
PERCENTILE_BOOTSTRAP = f"percentile bootstrap, {RESAMPLES} resamples, seed {SEED} (scipy.stats.bootstrap)"
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
    lag1_autocorrelation: float | None = None

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


def lag1_autocorrelation(values: np.ndarray) -> float | None:
    """The samples' lag-1 autocorrelation in their order (None below MIN_SAMPLES or without spread)."""
    if values.size < MIN_SAMPLES:
        return None
    centred = values - values.mean()
    denominator = float(np.sum(centred ** 2))
    return float(np.sum(centred[:-1] * centred[1:]) / denominator) if denominator > 0 else None


def serial_r(values: np.ndarray, bias_corrected: bool = True) -> float | None:
    """The lag-1 autocorrelation the samples' effective size is taken at: their r1 where it is significant
    (n >= SMALL_N and Z95 / sqrt(n) < r1 < 1), corrected for its bias unless `bias_corrected` is False (the
    interval-coverage claim measures both); None where the samples are taken as independent."""
    n, r1 = values.size, lag1_autocorrelation(values)
    if n < SMALL_N or r1 is None or not Z95 / math.sqrt(n) < r1 < 1:
        return None
    return min(r1 + (1 + 4 * r1) / n, 0.99) if bias_corrected else r1


def effective_n(values: np.ndarray, bias_corrected: bool = True) -> float:
    """The samples' effective size: n (1 - r) / (1 + r) at serial_r's r, n where they are independent."""
    r = serial_r(values, bias_corrected)
    return values.size * (1 - r) / (1 + r) if r is not None else float(values.size)


def _t_interval(values: np.ndarray, effective: float) -> tuple[float, float]:
    """Student's t interval of the mean at the effective sample size: the standard error is sqrt(var / effective)
    (an AR(1) series' variance of the mean where effective < n), effective - 1 degrees of freedom."""
    from scipy.stats import t

    degrees = max(effective - 1, 1.0)
    half = float(t.ppf(0.5 + CONFIDENCE / 2, degrees) * values.std(ddof=1) / math.sqrt(effective))
    return float(values.mean()) - half, float(values.mean()) + half


def _order_interval(values: np.ndarray, effective_n: float) -> tuple[tuple[float, float], float]:
    """The median's distribution-free interval: the sorted samples at the binomial ranks k and n - k + 1 of
    `effective_n` independent samples (mapped onto the n sorted ones), the widest k that covers 95 %
    (the extremes where none does), with the coverage it reaches."""
    from scipy.stats import binom

    ordered = np.sort(values)
    m = max(int(math.floor(effective_n)), 1)
    k, coverage = 1, 1 - 2 * float(binom.cdf(0, m, 0.5))
    while k + 1 <= m // 2 and 1 - 2 * float(binom.cdf(k, m, 0.5)) >= CONFIDENCE:
        k += 1
        coverage = 1 - 2 * float(binom.cdf(k - 1, m, 0.5))
    low = ordered[min(len(ordered) - 1, int(round((k - 1) * (len(ordered) - 1) / max(m - 1, 1))))]
    high = ordered[max(0, len(ordered) - 1 - int(round((k - 1) * (len(ordered) - 1) / max(m - 1, 1))))]
    return (float(low), float(high)), coverage


def interval(samples: Sequence[float], bias_corrected: bool = True) -> Interval:
    """n, mean, median, std (ddof=1) and the 95 % intervals of the mean and the median, by the method the
    samples call for (the module's conventions), named in `method`. `bias_corrected` False: serial samples'
    r as estimated (the interval-coverage claim's other rule).

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
        return Interval(n, mean, median, std, (mean, mean), (median, median), "no spread: every sample equal")
    r1 = lag1_autocorrelation(values)
    if n < SMALL_N:
        median_ci, coverage = _order_interval(values, n)
        return Interval(n, mean, median, std, _t_interval(values, n), median_ci,
                        f"Student's t for the mean, order statistics for the median ({100 * coverage:.1f} % "
                        f"coverage), as n < {SMALL_N}", r1)
    r = serial_r(values, bias_corrected)
    if r is not None:
        effective = n * (1 - r) / (1 + r)
        median_ci, coverage = _order_interval(values, effective)
        return Interval(n, mean, median, std, _t_interval(values, effective), median_ci,
                        f"Student's t and order statistics ({100 * coverage:.1f} % coverage) at the effective n "
                        f"{effective:.1f}: the samples are serially correlated (lag-1 autocorrelation {r1:.2f}, "
                        f"{r:.2f} {'corrected for its bias' if bias_corrected else 'as estimated'})", r1)
    bca = n <= BCA_MAX_N
    low, high = _bootstrap((values,), lambda v, axis: np.stack([STATISTICS["mean"](v, axis),
                                                                 STATISTICS["median"](v, axis)]),
                           method="BCa" if bca else "percentile")
    return Interval(n, mean, median, std, (float(low[0]), float(high[0])), (float(low[1]), float(high[1])),
                    METHOD if bca else PERCENTILE_BOOTSTRAP, r1)


def describe(samples: Sequence[float]) -> dict:
    """interval(samples) as a record holds it, beside the figure it qualifies."""
    return interval(samples).to_dict()


def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down rejections at family-wise level `alpha`, in the p-values' own order."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for rank, index in enumerate(order):
        if p_values[index] > alpha / (len(p_values) - rank):
            break
        rejected[index] = True
    return rejected


def _bootstrap(data: tuple, statistic, method: str = "percentile") -> tuple:
    """SciPy's bootstrap interval; BCa falls back to the percentile one where its correction is undefined
    (samples with few distinct values)."""
    import warnings

    from scipy.stats import bootstrap

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BCa's degenerate-data warning: the NaN check below decides
        result = bootstrap(data, statistic, n_resamples=RESAMPLES, confidence_level=CONFIDENCE, method=method,
                           vectorized=True, paired=False, rng=np.random.default_rng(SEED))
    low, high = result.confidence_interval.low, result.confidence_interval.high
    if method != "percentile" and not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        return _bootstrap(data, statistic)
    return low, high


def spread_text(values: dict | None, unit: str = "", digits: int = 3) -> str:
    """"96.1 s ± 4.2 % (n 9)" from a record's interval block; "-" without one."""
    if not values or values.get("mean") is None:
        return "-"
    shown = f"{values['mean']:.{digits}f}{unit}"
    half = half_width_percent(values)
    return f"{shown} ± {half:.1f} % (n {values['n']})" if half is not None else f"{shown} (n {values['n']}, no interval)"
