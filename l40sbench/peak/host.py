"""The host CPU's own float32 matmul peak, for a run on a GPU that also times runtimes on the CPU: compare judges
those rows by the CPU's evidence, never by the GPU's (report.comparable). NumPy's float32 matmul, the same way
on every host, its samples kept (they confirm a change of CPU as a GPU run's guard bursts confirm its GPU's)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from statistics import median

SIZE, SAMPLES, SAMPLE_SECONDS = 1024, 6, 0.1
KERNEL = f"NumPy float32 {SIZE}x{SIZE} matmul, {SAMPLES} samples of about {SAMPLE_SECONDS:g} s, the best as the peak"


def cpu_peak(device: str | None, clock: Callable[[], float] = time.perf_counter) -> dict:
    """env.cpu_peak: the CPU's float32 matmul rate (GFLOP/s), each sample and when it was measured."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (rng.random((SIZE, SIZE), dtype=np.float32) for _ in range(2))
    started = clock()
    a @ b
    calls = max(1, int(SAMPLE_SECONDS / max(clock() - started, 1e-6)))
    rates = []
    for _ in range(SAMPLES):
        started = clock()
        for _ in range(calls):
            a @ b
        rates.append(2 * SIZE ** 3 * calls / max(clock() - started, 1e-9) / 1e9)
    return {"device_kind": "CPU", "device": device, "kernel": KERNEL,
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "matmul": {"float32": {"precision": "float32", "gflops": max(rates), "median_gflops": median(rates),
                                   "samples_gflops": rates}}}


def matmul_gflops() -> float:
    """The CPU's float32 matmul rate alone (GFLOP/s, cpu_peak's best sample): the calibration printed beside a
    figure timed on the host (benchmarks/, the GPU run's peer table)."""
    return cpu_peak(None)["matmul"]["float32"]["gflops"]


def with_cpu_peak(env: dict, devices: Iterable[str]) -> dict:
    """`env` with its CPU's peak where the run's peak is a GPU's and a row ran on the CPU (`devices`: each row's
    device); unchanged otherwise, or where it already holds one."""
    if (env.get("peak") or {}).get("device_kind") != "GPU" or "CPU" not in set(devices) or env.get("cpu_peak"):
        return env
    return {**env, "cpu_peak": cpu_peak(env.get("cpu"))}
