"""Claims on what measuring the machine and the figures costs: the peak, an interval."""

from __future__ import annotations

import os

from benchmarks.claims import claim
from benchmarks.claims.figures import figure
from l40sbench.core.timing import time_calls


def _interval_text(f: dict) -> str:
    return (f"{1000 * f['n139']['value']:.1f} ms for 139 samples, {1000 * f['n1000']['value']:.0f} ms for 1000 "
            f"(medians of {f['n139']['n']})")


@claim("interval-cost", "intervals", "a BCa interval costs little", "Figures that hold on every device",
       _interval_text, "n139", sizes={"repeats": 20}, quick={"repeats": 2})
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


def _peak_text(f: dict) -> str:
    return (f"{f['seconds']['value']:.1f} s a measurement (n {f['seconds']['n']}); it found float32 "
            f"{f['float32']['value']:.0f} GFLOP/s")


@claim("peak-cost", "peak", "the peak costs a run seconds: measured in a fresh process, TensorFlow already started",
       "The measured peak", _peak_text, "seconds", sizes={"repeats": 3}, quick={"repeats": 1})
def peak_cost(sizes: dict) -> dict:
    """l40sbench.peak.measure.measure_env timed, never read from a kept peak."""
    os.environ.pop("L40SBENCH_PEAK_FILE", None)
    import tensorflow as tf

    from l40sbench.peak.measure import measure_env

    tf.constant(0.0).numpy()  # the runtime started, as in a run
    peaks: list = []
    seconds = time_calls(lambda _: peaks.append(measure_env()), range(sizes["repeats"]))
    return {"seconds": figure(seconds, "s"),
            "float32": figure([peak["matmul"]["float32"]["gflops"] for peak in peaks], "GFLOP/s")}
