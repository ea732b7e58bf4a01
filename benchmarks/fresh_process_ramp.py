"""How long a fresh process's float32 matmul runs below the machine's speed: why the guard's start burst follows
a warm-up (peak.burst.START_WARM_SECONDS).

Starts `processes` fresh interpreters one after another. Each loads TensorFlow, builds the guard's 1024 x 1024
float32 matmul, makes one warm call (as every burst does) and then calls it back to back for `seconds`,
reading its rate in 50 ms samples. A sample under 0.7x the process's own steady rate (the median of its last
second) is slow; the table gives each process's last slow sample's time, and what the guard's start burst
would read there (the best of its six samples spread over 0.7 s) with and without the warm-up. The steady
rates are the calibration. Behind docs/PERFORMANCE.md, "The stability guard". Run it with nothing else on
the machine.

Usage:
  .venv/bin/python benchmarks/fresh_process_ramp.py --processes 12 [--idle 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SAMPLE_S = 0.05
SLOW = 0.7

CHILD = """
import json, time
from l40sbench.backends import load
from l40sbench.peak.measure import matmul_flop
kernels = load("tensorflow")
with kernels.precision_mode("CPU", "float32"):
    call = kernels.matmul("float32")(1024)
    call()
    start, rates = time.perf_counter(), []
    while time.perf_counter() - start < {seconds}:
        began, calls = time.perf_counter(), 0
        while time.perf_counter() - began < {sample}:
            call()
            calls += 1
        rates.append(matmul_flop(1024) * calls / (time.perf_counter() - began) / 1e9)
print(json.dumps(rates))
"""


def burst_at(rates: list[float], start_s: float) -> float:
    """What the guard's CPU burst (peak.burst.CPU_BURST: six samples of 30 ms, 0.1 s apart) starting at `start_s`
    would keep: the best of the 50 ms samples it overlaps."""
    from l40sbench.peak.burst import CPU_BURST

    spacing = CPU_BURST["sample_seconds"] + CPU_BURST["gap_seconds"]
    picked = [rates[min(len(rates) - 1, int((start_s + spacing * i) / SAMPLE_S))] for i in range(CPU_BURST["samples"])]
    return max(picked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=3.0, help="back-to-back calls per process")
    parser.add_argument("--warm", type=float, default=1.5, help="the start burst's warm-up to judge")
    parser.add_argument("--idle", type=float, default=0.0, help="seconds the machine idles before each process")
    args = parser.parse_args()

    from l40sbench.peak.burst import START_WARM_SECONDS

    print(f"{'process':>7} {'steady GFLOP/s':>14} {'last slow sample':>16} {'cold burst':>10} "
          f"{'burst after ' + format(args.warm, 'g') + ' s':>18}")
    cold_slow = warm_slow = 0
    steady_rates = []
    for index in range(args.processes):
        time.sleep(args.idle)
        code = CHILD.format(seconds=args.seconds, sample=SAMPLE_S)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={"TF_CPP_MIN_LOG_LEVEL": "3", **os.environ})
        rates = json.loads(done.stdout.strip().splitlines()[-1])
        steady = statistics.median(rates[-int(1 / SAMPLE_S):])
        steady_rates.append(steady)
        slow = [i * SAMPLE_S for i, rate in enumerate(rates) if rate < SLOW * steady]
        cold, warm = burst_at(rates, 0.0), burst_at(rates, args.warm)
        cold_slow += cold < SLOW * steady
        warm_slow += warm < SLOW * steady
        print(f"{index + 1:>7} {steady:>14.0f} {(f'{slow[-1]:.2f} s' if slow else '-'):>16} {cold:>10.0f} "
              f"{warm:>18.0f}")
    print(f"calibration: steady float32 matmul {min(steady_rates):.0f}-{max(steady_rates):.0f} GFLOP/s")
    print(f"a start burst under {SLOW}x the steady rate: {cold_slow} of {args.processes} without a warm-up, "
          f"{warm_slow} of {args.processes} after {args.warm:g} s (the guard's START_WARM_SECONDS: "
          f"{START_WARM_SECONDS:g} s)")


if __name__ == "__main__":
    main()
