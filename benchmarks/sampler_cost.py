"""What the telemetry sampler thread costs a batch-1 latency, measured in one process with the sampler on and
off in turns.

The 10 Hz sampler runs inside the timed process. This times a Keras model's compiled single-image forward (the
latency probe's call) in `blocks` alternating blocks of `calls` calls, the sampler running during every other
block, and prints the median per-call latency of each arm, their ratio, and a bootstrap interval of the ratio
of block medians. The reader is the machine's own (NVML or RAPL) where there is one; elsewhere (as on these
VMs) a stand-in that reads what RAPL's reader reads, sysfs-style files (/proc/stat and the cpufreq files),
so the thread's wake-ups and file reads are the same kind of work. The float32 matmul peak is measured in the
same run for calibration. Behind docs/PERFORMANCE.md, "The telemetry sampler's cost". Run it with nothing else
on the machine.

Usage:
  .venv/bin/python benchmarks/sampler_cost.py --model mobilenetv2 --size 96 --blocks 20 --calls 50
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np


def _stand_in():
    from l40sbench.core.telemetry import Source

    files = [Path("/proc/stat")] + sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"))

    def read() -> dict:
        return {"energy_j": float(sum(len(f.read_bytes()) for f in files if f.exists()))}

    return Source("stand-in (file reads)", read)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenetv2", choices=("mobilenetv2", "vgg19", "xception"))
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()

    import keras

    from l40sbench.backends import load
    from l40sbench.backends.telemetry import source
    from l40sbench.core.intervals import describe
    from l40sbench.core.telemetry import Sampler
    from l40sbench.peak.measure import measure

    kernels = load("tensorflow")
    sync = kernels.sync()
    peak = measure(sync)
    float32 = next(p.gflops for p in peak.matmul if p.precision == "float32")
    builder = {"mobilenetv2": keras.applications.MobileNetV2, "vgg19": keras.applications.VGG19,
               "xception": keras.applications.Xception}[args.model]
    model = builder(weights=None, input_shape=(args.size, args.size, 3))
    forward = kernels.forward(model, args.size, xla=False)
    image = np.random.default_rng(0).integers(0, 255, (args.size, args.size, 3), dtype=np.uint8)
    for _ in range(20):
        forward(image)
    found, why = source(kernels.devices()[:1])
    reader = found or _stand_in()
    print(f"calibration: float32 matmul peak {float32:.1f} GFLOP/s; reader: {reader.name}"
          + (f" (the machine's has none: {why})" if found is None else ""))
    arms: dict[bool, list[float]] = {True: [], False: []}
    block_medians: dict[bool, list[float]] = {True: [], False: []}
    for block in range(2 * args.blocks):
        sampling = block % 2 == 1
        sampler = Sampler(reader) if sampling else None
        if sampler is not None:
            sampler.start()
        times = []
        for _ in range(args.calls):
            start = time.perf_counter()
            forward(image)
            times.append(time.perf_counter() - start)
        if sampler is not None:
            sampler.stop()
        arms[sampling] += times
        block_medians[sampling].append(statistics.median(times))
    on, off = (1000 * statistics.median(arms[k]) for k in (True, False))
    ratios = [a / b for a, b in zip(block_medians[True], block_medians[False])]
    interval = describe(ratios)
    print(f"{args.model} {args.size} px batch 1: median {off:.3f} ms without the sampler, {on:.3f} ms with it "
          f"(ratio {on / off:.4f}); per-block ratio mean {interval['mean']:.4f}, 95 % interval "
          f"{interval['mean_ci95'][0]:.4f}-{interval['mean_ci95'][1]:.4f} (n {len(ratios)} block pairs, "
          f"{args.calls} calls a block)")


if __name__ == "__main__":
    main()
