"""The measurement: each precision's matmul swept over sizes, the 3x3 conv, and env.peak of a record."""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from l40sbench.core.timing import Clock, Sync, no_sync, time_batches
from l40sbench.peak.cache import PEAK_FILE_VARIABLE, kept_or_measured, peak_file
from l40sbench.peak.cpu import Theoretical, cpu_facts, read_text, theoretical_cpu_peak

CPU_SIZES = (512, 1024, 2048, 4096)
GPU_SIZES = (4096, 8192, 16384)
SAMPLES = 3
# How long one sample runs. A GPU holds a boost clock for tens of milliseconds before its power limit pulls it
# down: a 50 ms sample can catch a rate that sustained work never sees, so a GPU's sample lasts half a second.
SAMPLE_SECONDS = {"CPU": 0.1, "GPU": 0.5}
CONV_SHAPE = (8, 56, 56, 64)  # NHWC input; 3x3 kernel, 64 filters, stride 1, SAME: a ResNet stage-2 layer
CONV_FILTERS = 64
CONV_FLOP = 2 * CONV_SHAPE[0] * CONV_SHAPE[1] * CONV_SHAPE[2] * CONV_SHAPE[3] * CONV_FILTERS * 9


def matmul_flop(n: int) -> int:
    """Floating-point operations of one [n, n] x [n, n] matmul (a multiply-add is two)."""
    return 2 * n**3


@dataclass(frozen=True)
class KernelPeak:
    """The best rate one precision's matmul reached, and at which size.

    Attributes:
      precision: float32, tf32, bfloat16 or float16.
      gflops: the best sample at the best size (10^9 float ops per second).
      median_gflops: the median sample at that size: how noisy the machine was.
      matmul_n: the size that gave the best rate.
      calls_per_sample: back-to-back calls between the two syncs of a sample.
      samples: samples at the best size (two rounds).
      gflops_by_size: the best rate at each size tried.
    """

    precision: str
    gflops: float
    median_gflops: float
    matmul_n: int
    calls_per_sample: int
    samples: int
    gflops_by_size: dict




@dataclass(frozen=True)
class Peak:
    device_kind: str  # "CPU" or "GPU"
    device: str
    matmul: tuple[KernelPeak, ...]
    conv_float32_gflops: float
    conv_float32_median_gflops: float
    theoretical: Theoretical

    def to_dict(self) -> dict:
        """env.peak in a result: matmul peaks keyed by precision, and measured / theoretical."""
        float32 = next(p.gflops for p in self.matmul if p.precision == "float32")
        theory = self.theoretical.float32_gflops
        return {
            "device_kind": self.device_kind, "device": self.device,
            "matmul": {p.precision: asdict(p) for p in self.matmul},
            "conv_float32_gflops": self.conv_float32_gflops,
            "conv_float32_median_gflops": self.conv_float32_median_gflops,
            "theoretical_float32_gflops": theory, "theoretical_basis": self.theoretical.basis,
            "float32_measured_over_theoretical": float32 / theory if theory else None,
        }


def sweep_sizes(make_call: Callable[[int], Callable[[], object]], sizes, precision: str, *,
                device_kind: str = "CPU", samples: int = SAMPLES, clock: Clock = time.perf_counter,
                sync: Sync = no_sync) -> KernelPeak:
    """The best matmul rate over every size; make_call(n) returns one compiled [n, n] matmul.

    At each size: one untimed call (tracing), one timed call that sets how many
    calls fill a sample, then `samples` batches of back-to-back calls. Every size
    is measured (a slow moment of a shared host must not end the sweep early),
    then the best size gets a second round of samples, so one slow moment there
    does not set the peak either.
    """
    by_size: dict[str, float] = {}
    best: tuple[float, list[float], int, int, Callable] | None = None  # (rate, samples, n, calls, call)
    for n in sizes:
        call = make_call(n)
        calls = _calls_per_sample(call, device_kind, clock, sync)
        rates = _rates(call, matmul_flop(n), calls, samples, clock, sync)
        by_size[str(n)] = max(rates)
        if best is None or max(rates) > best[0]:
            best = (max(rates), rates, n, calls, call)
    _, rates, n, calls, call = best
    rates = rates + _rates(call, matmul_flop(n), calls, samples, clock, sync)
    by_size[str(n)] = max(rates)
    return KernelPeak(precision, max(rates), statistics.median(rates), n, calls, 2 * samples, by_size)


def _calls_per_sample(call, device_kind: str, clock: Clock, sync: Sync) -> int:
    """One untimed call (tracing), then one timed call: how many calls fill SAMPLE_SECONDS."""
    call()
    (one,) = time_batches(call, 1, 1, clock=clock, sync=sync)
    return max(1, round(SAMPLE_SECONDS[device_kind] / one)) if one > 0 else 1


def _rates(call, flop: int, calls: int, samples: int, clock: Clock, sync: Sync) -> list[float]:
    """GFLOP/s of each of `samples` batches of `calls` back-to-back calls."""
    return [flop * calls / seconds / 1e9 for seconds in time_batches(call, calls, samples, clock=clock, sync=sync)]


def precisions(device_kind: str, cpu_flags: set[str]) -> tuple[str, ...]:
    """The precisions this device computes natively (float32 always)."""
    if device_kind == "GPU":
        return ("float32", "tf32", "bfloat16", "float16")
    if {"avx512_bf16", "amx_bf16"} & cpu_flags:
        return ("float32", "bfloat16")
    return ("float32",)


def _conv_rates(kernels, sync: Sync, device_kind: str) -> tuple[float, float]:
    conv = kernels.conv(CONV_SHAPE, CONV_FILTERS)
    clock = time.perf_counter
    rates = _rates(conv, CONV_FLOP, _calls_per_sample(conv, device_kind, clock, sync), SAMPLES, clock, sync)
    return max(rates), statistics.median(rates)


def measure(sync: Sync | None = None, backend: str = "tensorflow") -> Peak:
    """Measures every precision's matmul peak and the conv rate on the backend's default device.

    A few seconds on two CPU cores. On a GPU, float32 is measured with TF32
    execution off and tf32 with it on (the backend's precision_mode). `sync`: the
    clock's wait for the device, the backend's own by default (jax dispatches
    asynchronously even on the CPU: without its sync the timed loop never fills).
    """
    from l40sbench.backends import load

    kernels = load(backend)
    sync = kernels.sync() if sync is None else sync
    first = kernels.devices()[0]
    kind, device = first.kind, first.model
    cpuinfo = read_text("/proc/cpuinfo")
    flags = cpu_facts(cpuinfo).get("flags", set())
    peaks = []
    for precision in precisions(kind, flags):
        with kernels.precision_mode(kind, precision):
            peaks.append(sweep_sizes(kernels.matmul(precision), GPU_SIZES if kind == "GPU" else CPU_SIZES, precision,
                                     device_kind=kind, sync=sync))
    with kernels.precision_mode(kind, "float32"):  # the conv's peak is float32's: TF32 off on a GPU
        conv_best, conv_median = _conv_rates(kernels, sync, kind)
    theoretical = theoretical_cpu_peak(cpuinfo) if kind == "CPU" else Theoretical(
        None, "unknown: no theoretical figure for GPUs is kept")
    return Peak(kind, device, tuple(peaks), conv_best, conv_median, theoretical)


@contextlib.contextmanager
def clocks_while_measured(used):
    """The clocks, temperature, power and throttle reasons of the devices `used` while the peak is measured,
    where they report them (NVML on a GPU, cpufreq on a CPU): `seen["summary"]` after the block, else None."""
    from l40sbench.backends.telemetry import source
    from l40sbench.core.telemetry import Sampler, phase_summary

    reader, _ = source(used)
    seen: dict = {"summary": None}
    if reader is None:
        yield seen
        return
    sampler = Sampler(reader)
    sampler.start()
    try:
        yield seen
    finally:
        seen["summary"] = phase_summary(sampler.stop(), None)


def measure_env(sync: Sync | None = None, log: Callable[[str], None] = lambda _: None,
                backend: str = "tensorflow") -> dict:
    """env.peak of a result record: the peaks, measured on `backend`, and what they ran with.

    Measured now, unless $L40SBENCH_PEAK_FILE names a peak already measured on this device with the same
    settings (see kept_or_measured; on a GPU its driver, power limit and application clocks too); `source`
    says which. Each backend keeps its own file: a peak taken
    with TensorFlow's kernels is not jax's. The tensorflow one is the file named, another backend's sits
    beside it (peak.json, peak.jax.json).
    """
    from l40sbench.backends import load
    from l40sbench.backends.telemetry import facts as power_facts

    used = load(backend).devices()[:1]
    kind, device = used[0].kind, used[0].model
    power = power_facts(used)  # a GPU's driver, power limit and application clocks: a peak under others is not this one
    context = {"device_kind": kind, "device": device, "host": platform.node(), "backend": backend,
               **load(backend).peak_context(kind), **({"device_power": power} if power else {})}
    path = os.environ.get(PEAK_FILE_VARIABLE)

    def measure_now() -> dict:
        log(f"measuring this device's peak on {backend} (matmul per precision, 3x3 conv) ...")
        with clocks_while_measured(used) as seen:
            measured = measure(sync, backend).to_dict()
        return {**measured, **context, **({"telemetry": seen["summary"]} if seen["summary"] else {})}

    return kept_or_measured(peak_file(Path(path), backend) if path else None, context, measure_now)

