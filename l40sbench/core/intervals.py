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
  - serial samples whose lag-1 autocorrelation r is significant (above 1.96 / sqrt(n): latencies, steps and
    epochs drift): Student's t at the effective sample size n (1 - r) / (1 + r) with the standard error
    inflated by sqrt((1 + r) / (1 - r)) (an AR(1) series' variance) for the mean, and the order-statistic
    interval at that effective n for the median, since resampling them as independent makes the interval
    too narrow (an AR(1) series at r = 0.7 and n = 100: 61.5 % of percentile-bootstrap intervals covered the
    true mean in 200 seeded trials, 94 % of these);
  - otherwise SciPy's bias-corrected and accelerated bootstrap (RESAMPLES resamples, seed SEED); above
    BCA_MAX_N samples the percentile bootstrap (BCa's jackknife holds n x n values, and its correction
    fades as n grows).
  Every interval block records the lag-1 autocorrelation it judged by.
- a ratio of two sides' statistics (compare) is ratio_test's: analytic on the log ratio, each side at its
  effective sample size, so serial samples and Holm's small thresholds are both held.
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


def _t_interval(values: np.ndarray, r1: float = 0.0) -> tuple[float, float]:
    """Student's t interval of the mean; with a lag-1 autocorrelation r1, at the effective sample size
    n (1 - r1) / (1 + r1) and with the standard error inflated by sqrt((1 + r1) / (1 - r1))."""
    from scipy.stats import t

    n, inflation = values.size, (1 + r1) / (1 - r1)
    degrees = max(n / inflation - 1, 1.0)
    half = float(t.ppf(0.5 + CONFIDENCE / 2, degrees) * values.std(ddof=1) * math.sqrt(inflation / n))
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


def interval(samples: Sequence[float]) -> Interval:
    """n, mean, median, std (ddof=1) and the 95 % intervals of the mean and the median, by the method the
    samples call for (the module's conventions), named in `method`.

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
        return Interval(n, mean, median, std, _t_interval(values), median_ci,
                        f"Student's t for the mean, order statistics for the median ({100 * coverage:.1f} % "
                        f"coverage), as n < {SMALL_N}", r1)
    if r1 is not None and 1.96 / math.sqrt(n) < r1 < 1:
        effective = n * (1 - r1) / (1 + r1)
        median_ci, coverage = _order_interval(values, effective)
        return Interval(n, mean, median, std, _t_interval(values, r1), median_ci,
                        f"Student's t and order statistics ({100 * coverage:.1f} % coverage) at the effective n "
                        f"{effective:.1f}: the samples are serially correlated (lag-1 autocorrelation {r1:.2f})", r1)
    bca = n <= BCA_MAX_N
    low, high = _bootstrap((values,), lambda v, axis: np.stack([STATISTICS["mean"](v, axis),
                                                                 STATISTICS["median"](v, axis)]),
                           method="BCa" if bca else "percentile")
    return Interval(n, mean, median, std, (float(low[0]), float(high[0])), (float(low[1]), float(high[1])),
                    METHOD if bca else PERCENTILE_BOOTSTRAP, r1)


def describe(samples: Sequence[float]) -> dict:
    """interval(samples) as a record holds it, beside the figure it qualifies."""
    return interval(samples).to_dict()


QUANTILES = {"median": 0.5, "p90": 0.9, "p99": 0.99}
Z95 = 1.959963984540054


@dataclass(frozen=True)
class RatioTest:
    """statistic(new) / statistic(baseline), its 95 % interval, and the one-sided test of it against a bound.

    Analytic, on the log of the ratio: each side's statistic has a standard error from its samples at their
    effective size (serial samples, as interval() judges them: n (1 - r) / (1 + r) for a significant lag-1
    autocorrelation r); the mean's from Student's t (Welch's degrees of freedom across the sides), a
    percentile's from the order statistics around it (the binomial ranks at the effective n). The two relative
    errors add in quadrature (the delta method). p-values are exact functions of the samples, so Holm's
    thresholds over any number of figures are resolved (a bootstrap's p-values step by 1 / resamples)."""

    ratio: float
    low: float
    high: float
    log_se: float
    degrees: float
    method: str

    def p_within(self, bound: float) -> float:
        """The one-sided p-value of "the ratio lies beyond `bound`": P(ratio <= bound) under the estimate."""
        from scipy.stats import t

        if self.log_se == 0:
            return 1.0 if self.ratio <= bound else 0.0
        return float(t.cdf((math.log(bound) - math.log(self.ratio)) / self.log_se, self.degrees))


def _serial_inflation(values: np.ndarray) -> float:
    """(1 + r) / (1 - r) for a lag-1 autocorrelation r that interval() would call significant, else 1."""
    r1 = lag1_autocorrelation(values)
    n = values.size
    if not (n >= SMALL_N and r1 is not None and 1.96 / math.sqrt(n) < r1 < 1):
        return 1.0
    r = min(r1 + (1 + 4 * r1) / n, 0.99)  # the estimate's own bias, about -(1 + 4 r) / n (Kendall)
    return (1 + r) / (1 - r)


def _relative_error(values: np.ndarray, statistic: str) -> tuple[float, float, float]:
    """(the statistic, its standard error relative to it, the degrees of freedom) of one side."""
    n, inflation = values.size, _serial_inflation(values)
    value = float(STATISTICS[statistic](values, 0))
    if statistic == "mean":
        se = float(values.std(ddof=1)) * math.sqrt(inflation / n)
        return value, se / value, max(n / inflation - 1, 1.0)
    q, effective = QUANTILES[statistic], n / inflation
    half = Z95 * math.sqrt(effective * q * (1 - q))
    ordered = np.sort(values)

    def at(rank: float) -> float:  # a rank among `effective` samples, mapped onto the n sorted ones
        return float(ordered[min(n - 1, max(0, int(round(rank * n / effective))))])

    se = (at(effective * q + half) - at(effective * q - half)) / (2 * Z95)
    return value, se / value, math.inf


TAIL_SAMPLES = 5  # a tail percentile is judged only with this many effective samples beyond it


def too_few(samples: Sequence[float], statistic: str) -> str:
    """Why ratio_test's interval of `statistic` would not hold for these samples ("" where it holds): fewer than
    MIN_SAMPLES, or for a tail percentile (p90, p99) fewer than TAIL_SAMPLES effective samples beyond it (its
    order statistics then fall off the end of the sample: a p99 of 100 independent samples called 25 % of
    equal pairs worse)."""
    values = _check(samples)
    if values.size < MIN_SAMPLES:
        return "one measurement" if values.size == 1 else f"n {values.size}"
    q = QUANTILES.get(statistic)
    if q is None or q == 0.5:  # the mean and the median hold from MIN_SAMPLES (Student's t, binomial ranks)
        return ""
    effective = values.size / _serial_inflation(values)
    needed = math.ceil(TAIL_SAMPLES / (1 - q))
    return "" if effective >= needed else (
        f"a {statistic} of {effective:.0f} effective samples (judged from {needed}: {TAIL_SAMPLES} beyond it)")


def ratio_test(baseline: Sequence[float], new: Sequence[float], statistic: str = "mean") -> RatioTest | None:
    """RatioTest of statistic(new) / statistic(baseline); None where either side has fewer than MIN_SAMPLES
    samples or a statistic is not positive."""
    from scipy.stats import t

    base, other = _check(baseline), _check(new)
    if base.size < MIN_SAMPLES or other.size < MIN_SAMPLES:
        return None
    (b, b_rel, b_df), (n, n_rel, n_df) = _relative_error(base, statistic), _relative_error(other, statistic)
    if b <= 0 or n <= 0:
        return None
    ratio = n / b
    variance = b_rel ** 2 + n_rel ** 2
    if variance == 0:
        return RatioTest(ratio, ratio, ratio, 0.0, math.inf, "no spread: every sample equal")
    degrees = variance ** 2 / (b_rel ** 4 / b_df + n_rel ** 4 / n_df) if math.isfinite(b_df + n_df) else math.inf
    half = float(t.ppf(0.5 + CONFIDENCE / 2, degrees)) * math.sqrt(variance)
    return RatioTest(ratio, ratio * math.exp(-half), ratio * math.exp(half), math.sqrt(variance), degrees,
                     f"log-ratio, {'Welch t' if statistic == 'mean' else 'order statistics'} at each side's "
                     "effective sample size")


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
