"""What the peak measurement costs a run: l40sbench.peak.measure.measure_env timed in a fresh process, twice,
with the float32 and bfloat16 peaks it found beside each time (docs/performance-log.md, "Saving the detection SavedModel").

Usage:
  .venv/bin/python benchmarks/peak_cost.py
"""

import os
import time

os.environ.pop("L40SBENCH_PEAK_FILE", None)  # measure, never read a kept peak

import tensorflow as tf  # noqa: E402  (imported before the clock: every run has imported it by then)

from l40sbench.peak.measure import measure_env  # noqa: E402

tf.constant(0.0).numpy()  # the runtime started, as in a run
for attempt in (1, 2):
    started = time.perf_counter()
    peak = measure_env()
    seconds = time.perf_counter() - started
    matmul = peak["matmul"]
    print(f"measurement {attempt}: {seconds:.1f} s  float32 {matmul['float32']['gflops']:.0f} GFLOP/s, "
          f"bfloat16 {matmul.get('bfloat16', {}).get('gflops', 0):.0f} GFLOP/s")
