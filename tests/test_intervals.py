"""core.intervals: the percentile definition, the intervals and their seeding, on known samples."""

import numpy as np
import pytest

from l40sbench.core.intervals import (
    MIN_SAMPLES,
    interval,
    percentile,
    spread_text,
)
from l40sbench.core.ratios import ratio_test, too_few


def test_percentile_is_loadgens_index_rule():
    samples = list(range(1, 11))  # 1..10
    assert percentile(samples, 0.5) == 6  # index floor(10 x 0.5) = 5
    assert percentile(samples, 0.9) == 10  # index 9
    assert percentile(samples, 0.99) == 10  # index floor(9.9) = 9: the top sample
    assert percentile(samples, 0.0) == 1
    with pytest.raises(ValueError, match="fraction"):
        percentile(samples, 1.0)


def test_interval_of_a_known_sample():
    rng = np.random.default_rng(7)
    samples = rng.normal(100.0, 5.0, 200)
    got = interval(samples)
    assert got.n == 200
    assert got.std == pytest.approx(float(np.std(samples, ddof=1)))
    low, high = got.mean_ci95
    assert low < got.mean < high
    # the bootstrap's interval is close to the normal theory's 1.96 standard errors
    assert (high - low) / 2 == pytest.approx(1.96 * got.std / np.sqrt(200), rel=0.15)
    assert got.median_ci95[0] < got.median < got.median_ci95[1]
    assert interval(samples) == got  # seeded: the same samples give the same interval


def test_too_few_samples_give_no_interval():
    got = interval([1.0, 2.0])
    assert got.n == 2 and got.mean_ci95 is None and str(MIN_SAMPLES) in got.method
    assert interval([5.0]).std is None
    assert interval([]).mean is None
    assert spread_text(interval([1.0, 2.0]).to_dict(), " s") == "1.500 s (n 2, no interval)"


def test_spread_text_shows_the_half_width():
    text = spread_text(interval([9.0, 10.0, 11.0, 10.0, 10.0]).to_dict(), " s", digits=1)
    assert text.startswith("10.0 s ± ") and text.endswith("% (n 5)")


def test_the_ratio_test_brackets_a_known_ratio():
    rng = np.random.default_rng(3)
    base = rng.normal(10.0, 0.5, 50)
    found = ratio_test(base, base * 2.0)
    assert found.low < 2.0 < found.high and found.high - found.low < 0.2
    assert ratio_test(base, base[:2]) is None
    found = ratio_test(base, rng.normal(10.0, 0.5, 50))
    assert found.low < 1.0 < found.high
    assert ratio_test([2.0] * 5, [3.0] * 5).p_within(1.4) == 0.0  # no spread: exact


def ar1(rng, n: int, rho: float, mean: float = 10.0, sd: float = 0.5) -> np.ndarray:
    """A stationary AR(1) series: each reading rho of the last plus fresh noise (a drifting latency)."""
    x = np.empty(n)
    x[0] = rng.normal(0, sd)
    for i, noise in enumerate(rng.normal(0, sd * np.sqrt(1 - rho ** 2), n - 1), start=1):
        x[i] = rho * x[i - 1] + noise
    return mean + x


@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_serial_samples_of_equal_means_are_called_worse_about_as_often_as_the_one_sided_2_5_percent(statistic):
    """AR(1) at rho 0.7, n 100: resampled as independent, a 95 % test called 1 in 5 equal pairs worse."""
    worse = sum(ratio_test(*(ar1(rng, 100, 0.7) for _ in range(2)), statistic).low > 1.0
                for rng in (np.random.default_rng(seed) for seed in range(200)))
    assert worse <= 10  # 5 %: twice the nominal 2.5 %, a margin for 200 pairs


def test_a_p99_is_judged_only_with_enough_samples_beyond_it():
    rng = np.random.default_rng(0)
    assert too_few(rng.normal(10, 1, 300), "p99").startswith("a p99 of 300 effective samples (judged from 500")
    assert too_few(rng.normal(10, 1, 600), "p99") == ""
    assert too_few(ar1(rng, 600, 0.7), "p99") != ""  # serial: fewer effective samples
    assert too_few([1.0, 2.0], "mean") == "n 2" and too_few([1.0], "median") == "one measurement"


@pytest.mark.parametrize("n", [3, 9])
def test_few_samples_get_students_t_not_a_bootstrap_too_narrow_for_them(n):
    """At n = 3 a percentile bootstrap spans about +-1 s.d.; Student's t spans +-2.48 s.d. (t = 4.30 over sqrt 3),
    and at n = 9 +-0.77 s.d. (t = 2.31 over 3)."""
    from scipy.stats import t

    samples = np.random.default_rng(n).normal(10.0, 1.0, n)
    got = interval(samples)
    half = (got.mean_ci95[1] - got.mean_ci95[0]) / 2
    assert half == pytest.approx(t.ppf(0.975, n - 1) * got.std / np.sqrt(n), rel=1e-9)
    assert got.method.startswith("Student's t for the mean, order statistics for the median")
    assert got.median_ci95[0] <= got.median <= got.median_ci95[1]
    if n == 3:  # no order-statistic interval reaches 95 % at n 3: the extremes, with the coverage they give
        assert got.median_ci95 == (min(samples), max(samples)) and "(75.0 % coverage)" in got.method


def test_a_serially_correlated_series_gets_an_interval_that_covers_its_mean():
    """An AR(1) series (rho 0.7, n 100) as drifting latencies are: resampled as independent samples, 61.5 % of
    200 seeded percentile-bootstrap intervals covered the true mean (the claim interval-coverage of
    python -m benchmarks); the effective-n t-interval covers it in at least 90 %."""
    from benchmarks.claims.machine import ar1

    covered = 0
    for seed in range(200):
        got = interval(100.0 + ar1(seed, 100, 0.7))
        assert got.lag1_autocorrelation > 0.3 and "serially correlated" in got.method
        covered += got.mean_ci95[0] <= 100.0 <= got.mean_ci95[1]
    assert covered / 200 >= 0.90
    independent = interval(np.random.default_rng(7).normal(100.0, 5.0, 200))
    assert independent.method.startswith("BCa bootstrap") and abs(independent.lag1_autocorrelation) < 0.14


def test_a_figures_interval_and_compares_ratio_take_the_same_effective_n_from_the_same_samples():
    """One serial-sample rule: interval()'s method names effective_n's size, and ratio_test's degrees of freedom
    for the mean (Welch's, two equal sides) and its log-ratio standard error are those of that size."""
    import math

    from benchmarks.claims.machine import ar1
    from l40sbench.core.intervals import effective_n, serial_r

    series = 100.0 + ar1(3, 100, 0.7)
    r1 = interval(series).lag1_autocorrelation
    r = serial_r(series)
    assert r == pytest.approx(min(r1 + (1 + 4 * r1) / 100, 0.99)) and r > r1  # bias-corrected
    effective = effective_n(series)
    assert effective == pytest.approx(100 * (1 - r) / (1 + r))
    assert f"at the effective n {effective:.1f}" in interval(series).method
    low, high = interval(series).mean_ci95
    test = ratio_test(series, series)
    assert test.degrees == pytest.approx(2 * (effective - 1))  # Welch over two equal sides
    assert test.log_se == pytest.approx(math.sqrt(2) * series.std(ddof=1) / math.sqrt(effective) / series.mean())
    from scipy.stats import t

    assert (high - low) / 2 == pytest.approx(t.ppf(0.975, effective - 1) * series.std(ddof=1) / math.sqrt(effective))
    independent = np.random.default_rng(7).normal(100.0, 5.0, 200)
    assert serial_r(independent) is None and effective_n(independent) == 200
    assert effective_n(series, bias_corrected=False) > effective  # the rule the claim decided against


def test_holms_method_keeps_a_strong_finding_and_drops_the_ones_chance_explains():
    from l40sbench.core.intervals import holm

    # alpha 0.05 over 4: 0.01 <= 0.05/4, 0.015 <= 0.05/3, 0.03 > 0.05/2 stops there
    assert holm([0.03, 0.01, 0.5, 0.015], 0.05) == [False, True, False, True]
    assert holm([0.03, 0.01, 0.5, 0.02], 0.05) == [False, True, False, False]  # 0.02 > 0.05/3: stops
    assert holm([], 0.05) == [] and holm([0.049], 0.05) == [True]


def test_compare_applies_holm_over_every_figure_judged_on_samples():
    """Twenty figures each just WORSE on its own (p 0.01 < 2.5 %) are what chance gives among many; one at
    p 0 is a regression. compare keeps the second and says why it drops the others."""
    from l40sbench.report.compare import FigureRow, _holm

    rows = [FigureRow("row", f"figure {i}", "time", 1.0, 1.2, 1.2, "WORSE: 20.0 % slower", True) for i in range(21)]
    kept = _holm(rows, [(i, 0.01) for i in range(20)] + [(20, 0.0)])
    assert [r.regressed for r in kept] == [False] * 20 + [True]
    assert kept[0].verdict == "within noise after Holm's correction over 21 figures (p 0.0100): 20.0 % slower"
    assert kept[20].verdict.startswith("WORSE")
