"""Claims on measuring the machine and the figures: what the peak and an interval cost, and how often the
interval covers."""

from __future__ import annotations

import os

from benchmarks.claims.figures import figure
from l40sbench.core.timing import time_calls
from l40sbench.peak.cache import PEAK_FILE_VARIABLE


def interval_cost(sizes: dict) -> dict:
    """core.intervals.interval on lognormal samples of a probe's size (139) and a LoadGen test's (1000)."""
    import numpy as np

    from l40sbench.core.intervals import interval

    rng = np.random.default_rng(0)
    out = {}
    for n in (139, 1000):
        samples = list(rng.lognormal(0.0, 0.1, n))
        interval(samples)  # SciPy's first call imports and warms what every later one reuses
        out[f"n{n}"] = figure(time_calls(lambda _, samples=samples: interval(samples), range(sizes["repeats"])), "s")
    return out


def peak_cost(sizes: dict) -> dict:
    """l40sbench.peak.measure.measure_env timed, never read from a kept peak."""
    os.environ.pop(PEAK_FILE_VARIABLE, None)
    import tensorflow as tf

    from l40sbench.peak.measure import measure_env

    tf.constant(0.0).numpy()  # the runtime started, as in a run
    peaks: list = []
    seconds = time_calls(lambda _: peaks.append(measure_env()), range(sizes["repeats"]))
    return {"seconds": figure(seconds, "s"),
            "float32": figure([peak["matmul"]["float32"]["gflops"] for peak in peaks], "GFLOP/s")}


def ar1(seed: int, n: int, rho: float):
    """An AR(1) series of mean 0 (each sample rho times the last plus unit noise), stationary from its start."""
    import numpy as np

    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, 1.0, n)
    series = np.empty(n)
    series[0] = noise[0] / np.sqrt(1 - rho ** 2)
    for i in range(1, n):
        series[i] = rho * series[i - 1] + noise[i]
    return series


def interval_coverage(sizes: dict) -> dict:
    """How often a 95 % interval of the mean covers the true mean (0) of AR(1) series in seeded trials at each
    r: core.intervals' with serial samples' r corrected for its bias (`suite_rN`, the suite's rule) and as
    estimated (`estimated_rN`, the rule it decided against), and SciPy's percentile bootstrap on the samples
    as independent (`independent_rN`). Arithmetic, not a timing."""
    import numpy as np
    from scipy.stats import bootstrap

    from l40sbench.core.intervals import RESAMPLES, interval

    hits: dict = {}
    for rho in sizes["rhos"]:
        tag = f"r{round(10 * rho)}"
        for seed in range(sizes["trials"]):
            series = ar1(seed, sizes["n"], rho)
            naive = bootstrap((series,), np.mean, n_resamples=RESAMPLES, method="percentile",
                              rng=np.random.default_rng(0)).confidence_interval
            hits.setdefault(f"independent_{tag}", []).append(float(naive.low <= 0.0 <= naive.high))
            for name, corrected in (("suite", True), ("estimated", False)):
                low, high = interval(series, bias_corrected=corrected).mean_ci95
                hits.setdefault(f"{name}_{tag}", []).append(float(low <= 0.0 <= high))
    return {name: figure(values, "x", "mean") for name, values in hits.items()}
