"""What the stability guard's burst costs, and how far apart its readings fall on a quiet and on a busy machine.

Measures `rounds` triples of bursts (the guard's three moments of a run: start, after training, end) back to
back on TensorFlow's CPU, then the same with `busy` processes spinning on the cores for the later two
bursts of each triple (the noisy example). Prints, per case, each burst's seconds and the triples'
max/min rate ratio, with the full peak's float32 matmul rate measured in the same run for calibration.
Behind docs/PERFORMANCE.md, "The stability guard". Run it with nothing else on the machine.

Usage:
  .venv/bin/python benchmarks/stability_guard.py --rounds 10 --busy 2
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time


def _spin(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--busy", type=int, default=2, help="spinning processes in the busy case")
    args = parser.parse_args()

    from l40sbench.backends import load
    from l40sbench.peak.burst import Guard
    from l40sbench.peak.measure import measure

    sync = load("tensorflow").sync()
    peak = measure(sync)
    float32 = next(p.gflops for p in peak.matmul if p.precision == "float32")
    print(f"calibration: float32 matmul peak {float32:.1f} GFLOP/s (best of its sweep)")
    guard = Guard("tensorflow", sync)
    guard.check("warm")
    for case in ("quiet", "busy"):
        ratios, seconds = [], []
        for _ in range(args.rounds):
            rates = [guard.check("start").gflops]
            stop = multiprocessing.Event()
            spinners = [multiprocessing.Process(target=_spin, args=(stop,)) for _ in range(args.busy if case == "busy" else 0)]
            for p in spinners:
                p.start()
            time.sleep(0.2 if spinners else 0)
            for moment in ("after training", "end"):
                measured = guard.check(moment)
                rates.append(measured.gflops)
                seconds.append(measured.seconds)
            stop.set()
            for p in spinners:
                p.join()
            ratios.append(max(rates) / min(rates))
        print(f"{case}: burst seconds median {statistics.median(seconds):.3f} (max {max(seconds):.3f}); "
              f"triple max/min ratio median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, "
              f"max {max(ratios):.3f} over {args.rounds} triples")


if __name__ == "__main__":
    main()
