"""How often a 95 % interval of the mean covers the true mean of a serially correlated series: an AR(1)
series (rho, n) in `trials` seeded trials, by the percentile bootstrap that treats the samples as independent
and by core.intervals' choice. Behind docs/trust.md's figures on serial samples (no timing: arithmetic only).

Usage:
  .venv/bin/python benchmarks/intervals_coverage.py --rho 0.7 --n 100 --trials 200
"""

from __future__ import annotations

import argparse

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rho", type=float, default=0.7)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args()

    from scipy.stats import bootstrap

    from l40sbench.core.intervals import RESAMPLES, interval

    covered = {"percentile bootstrap (independent samples)": 0, "core.intervals": 0}
    for seed in range(args.trials):
        rng = np.random.default_rng(seed)
        noise = rng.normal(0.0, 1.0, args.n)
        series = np.empty(args.n)
        series[0] = noise[0] / np.sqrt(1 - args.rho ** 2)
        for i in range(1, args.n):
            series[i] = args.rho * series[i - 1] + noise[i]
        naive = bootstrap((series,), np.mean, n_resamples=RESAMPLES, method="percentile",
                          rng=np.random.default_rng(0)).confidence_interval
        covered["percentile bootstrap (independent samples)"] += naive.low <= 0.0 <= naive.high
        low, high = interval(series).mean_ci95
        covered["core.intervals"] += low <= 0.0 <= high
    for name, hits in covered.items():
        print(f"AR(1) rho {args.rho} n {args.n}: {name} covered the true mean in {100 * hits / args.trials:.1f} % "
              f"of {args.trials} trials")


if __name__ == "__main__":
    main()
