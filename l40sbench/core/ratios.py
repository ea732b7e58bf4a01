"""The ratio of two sides' statistics (new / baseline) and its one-sided test, for compare: analytic on the log
ratio, each side at its effective sample size (serial samples, as core.intervals judges them), so that serial
latencies and epochs are not taken as independent and Holm's small thresholds are resolved."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from l40sbench.core.intervals import CONFIDENCE, MIN_SAMPLES, STATISTICS, Z95, _check, effective_n

QUANTILES = {"median": 0.5, "p90": 0.9, "p99": 0.99}


@dataclass(frozen=True)
class RatioTest:
    """statistic(new) / statistic(baseline), its 95 % interval, and the one-sided test of it against a bound.

    Analytic, on the log of the ratio: each side's statistic has a standard error from its samples at their
    effective size (core.intervals.effective_n, the rule interval() takes: n (1 - r) / (1 + r) for a
    significant lag-1 autocorrelation r); the mean's from Student's t (Welch's degrees of freedom across the sides), a
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


def _relative_error(values: np.ndarray, statistic: str) -> tuple[float, float, float]:
    """(the statistic, its standard error relative to it, the degrees of freedom) of one side."""
    n, effective = values.size, effective_n(values)
    value = float(STATISTICS[statistic](values, 0))
    if statistic == "mean":
        se = float(values.std(ddof=1)) / math.sqrt(effective)
        return value, se / value, max(effective - 1, 1.0)
    q = QUANTILES[statistic]
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
    effective = effective_n(values)
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
