"""This machine's peak: the fastest rate its matmul reaches, per precision, measured in every run
(or once for a series of runs, through $L40SBENCH_PEAK_FILE).

Every utilisation figure is achieved FLOP/s over this peak, and every absolute
time in the suite is read beside it (machines of one kind differ by CPU
generation, so a time alone does not compare). A peak has to saturate the
device, so the measurement:

- sweeps the matmul size (512 to 4096 on a CPU, 4096 to 16384 on a GPU), every
  size, then measures the best size a second time;
- runs K calls back to back between two syncs, with nothing copied to the
  host inside the clock (core.timing.time_batches);
- keeps the best sample as the peak and the median beside it as the noise.

One peak per precision the device has: float32 always; bfloat16 on a CPU with
AVX512-BF16 or AMX, and on GPUs; float16 and TF32 on GPUs. A run is divided by
the peak of the precision it computes in (peak_for). The 3x3 convolution that
the older calibration timed stays as a second figure, and on a CPU whose
clock and core type are known, the theoretical peak (cores x GHz x FLOP per
cycle) is recorded too. The kernels are the run's backend's (l40sbench.backends), imported only when
a measurement runs.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from l40sbench.core.timing import Clock, Sync, no_sync, time_batches

# A peak measured once and kept for a series of runs on one machine (kept_or_measured).
PEAK_FILE_VARIABLE = "L40SBENCH_PEAK_FILE"
SOURCE_MEASURED = "measured in this run"
SOURCE_FILE = "read from"
CPU_SIZES = (512, 1024, 2048, 4096)
GPU_SIZES = (4096, 8192, 16384)
SAMPLES = 3
SAMPLE_SECONDS = {"CPU": 0.1, "GPU": 0.05}
CONV_SHAPE = (8, 56, 56, 64)  # NHWC input; 3x3 kernel, 64 filters, stride 1, SAME: a ResNet stage-2 layer
CONV_FILTERS = 64
CONV_FLOP = 2 * CONV_SHAPE[0] * CONV_SHAPE[1] * CONV_SHAPE[2] * CONV_SHAPE[3] * CONV_FILTERS * 9

# The peak a run's --precision is divided by. float32 on a GPU runs as TF32 where
# TensorFlow's TF32 execution is on (its default on Ampere and later).
RUN_PRECISION_PEAK = {"fp32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}


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
class Theoretical:
    """cores x GHz x FLOP per cycle, or None with the reason in `basis`."""

    float32_gflops: float | None
    basis: str


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


def peak_for(peak: dict | None, run_precision: str) -> tuple[str | None, float | None]:
    """(name of the peak, its GFLOP/s per device) that a run in `run_precision` is divided by.

    float32 on a GPU with TF32 measured is divided by the TF32 peak (TensorFlow's
    default math there). A precision this device has no peak for falls back to
    float32 and says so in the name. (None, None) for a record without env.peak.
    """
    if not peak or not peak.get("matmul"):
        return None, None
    matmul = peak["matmul"]
    wanted = RUN_PRECISION_PEAK.get(run_precision, run_precision)
    if wanted == "float32" and "tf32" in matmul and peak.get("tf32_enabled", True):
        wanted = "tf32"
    if wanted in matmul:
        return wanted, matmul[wanted]["gflops"]
    return f"float32 (no {wanted} peak on this device)", matmul["float32"]["gflops"]


def utilisation(achieved_gflops: float | None, peak_gflops: float | None) -> float | None:
    """achieved / peak as a fraction, None when either is unknown."""
    if not achieved_gflops or not peak_gflops:
        return None
    return achieved_gflops / peak_gflops


def run_utilisation(peak: dict | None, precision: str, forward_gflops: float | None, *,
                    train_flops_per_forward: float, train_convention: str,
                    train_images_per_second: float | None, inference_images_per_second: float | None) -> dict:
    """How close a classify or detect run came to this device's peak, in training and in inference.

    Achieved GFLOP/s = GFLOP per image x images/s: `train_flops_per_forward`
    forward passes per trained image (3 when every layer trains), one per
    inferred image. Both are divided by the peak of the run's precision.
    """
    name, peak_gflops = peak_for(peak, precision)
    train = (forward_gflops * train_flops_per_forward * train_images_per_second
             if forward_gflops and train_images_per_second else None)
    inference = forward_gflops * inference_images_per_second if forward_gflops and inference_images_per_second else None
    return {
        "peak": name, "peak_gflops": peak_gflops, "forward_gflops_per_image": forward_gflops,
        "train_flops_per_image": train_convention, "train_achieved_gflops": train,
        "train": utilisation(train, peak_gflops), "inference_achieved_gflops": inference,
        "inference": utilisation(inference, peak_gflops),
    }


# --- the theoretical CPU peak -------------------------------------------------------------

def cpu_facts(cpuinfo: str) -> dict:
    """vendor, family, model, model name, flags and physical cores of the CPUs /proc/cpuinfo lists."""
    facts: dict = {"cores": set()}
    record: dict = {}
    for line in cpuinfo.splitlines() + [""]:
        if not line.strip():
            if record:
                facts.setdefault("vendor", record.get("vendor_id"))
                facts.setdefault("family", int(record.get("cpu family", -1)))
                facts.setdefault("model", int(record.get("model", -1)))
                facts.setdefault("name", record.get("model name", ""))
                facts.setdefault("flags", set(record.get("flags", "").split()))
                # SMT siblings share a core id: they add no FMA units.
                facts["cores"].add((record.get("physical id"), record.get("core id") or record.get("processor")))
            record = {}
            continue
        key, _, value = line.partition(":")
        record[key.strip()] = value.strip()
    facts["physical_cores"] = len(facts.pop("cores"))
    return facts


def fp32_flop_per_cycle(facts: dict) -> tuple[int | None, str]:
    """float32 FLOP one core does per cycle at most (FMA units x lanes x 2), and the core it assumes."""
    vendor, family, model, flags = facts.get("vendor"), facts.get("family"), facts.get("model"), facts.get("flags", set())
    if vendor == "AuthenticAMD":
        if family == 26:
            return 64, "Zen 5 (two 512-bit FMA pipes)"
        if family == 25:
            zen4 = 0x10 <= model <= 0x1F or 0x60 <= model <= 0x7F or 0xA0 <= model <= 0xAF
            return 32, "Zen 4 (AVX-512 on two 256-bit FMA pipes)" if zen4 else "Zen 3 (two 256-bit FMA pipes)"
        if family == 23:
            return (32, "Zen 2 (two 256-bit FMA pipes)") if model >= 0x30 else (16, "Zen / Zen+ (128-bit FMA pipes)")
    if vendor == "GenuineIntel" and "fma" in flags:
        if "avx512f" in flags:
            return None, "Intel with AVX-512: one or two 512-bit FMA units depending on the SKU"
        return 32, "Intel AVX2 (two 256-bit FMA units)"
    return None, f"no FLOP-per-cycle figure for {vendor} family {family} model {model}"


def max_ghz(facts: dict, cpufreq: Path = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")) -> tuple[float | None, str]:
    """The cores' maximum clock in GHz, from cpufreq, else a '@ N GHz' in the model name."""
    try:
        return int(cpufreq.read_text().strip()) / 1e6, "cpufreq maximum"
    except (OSError, ValueError):
        pass
    match = re.search(r"@\s*([0-9.]+)\s*GHz", facts.get("name", ""))
    if match:
        return float(match.group(1)), "the model name's nominal clock (turbo may run faster)"
    return None, f"no cpufreq and no GHz in the model name {facts.get('name')!r}"


def theoretical_cpu_peak(cpuinfo: str, cpufreq: Path | None = None) -> Theoretical:
    facts = cpu_facts(cpuinfo)
    flop, core = fp32_flop_per_cycle(facts)
    ghz, clock_source = max_ghz(facts) if cpufreq is None else max_ghz(facts, cpufreq)
    cores = facts["physical_cores"]
    if flop is None or ghz is None:
        return Theoretical(None, f"unknown: {core if flop is None else clock_source}")
    return Theoretical(cores * ghz * flop,
                       f"{cores} cores x {ghz:.2f} GHz ({clock_source}) x {flop} FLOP/cycle ({core})")


# --- the measurement, on the run's backend ----------------------------------------------------

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
    kind, device = kernels.device()
    cpuinfo = _read("/proc/cpuinfo")
    flags = cpu_facts(cpuinfo).get("flags", set())
    peaks = []
    for precision in precisions(kind, flags):
        with kernels.precision_mode(kind, precision):
            peaks.append(sweep_sizes(kernels.matmul(precision), GPU_SIZES if kind == "GPU" else CPU_SIZES, precision,
                                     device_kind=kind, sync=sync))
    conv_best, conv_median = _conv_rates(kernels, sync, kind)
    theoretical = theoretical_cpu_peak(cpuinfo) if kind == "CPU" else Theoretical(
        None, "unknown: no theoretical figure for GPUs is kept")
    return Peak(kind, device, tuple(peaks), conv_best, conv_median, theoretical)


def measure_env(sync: Sync | None = None, log: Callable[[str], None] = lambda _: None,
                backend: str = "tensorflow") -> dict:
    """env.peak of a result record: the peaks, measured on `backend`, and what they ran with.

    Measured now, unless $L40SBENCH_PEAK_FILE names a peak already measured on this device with the same
    settings (see kept_or_measured); `source` says which. Each backend keeps its own file: a peak taken
    with TensorFlow's kernels is not jax's. The tensorflow one is the file named, another backend's sits
    beside it (peak.json, peak.jax.json).
    """
    from l40sbench.backends import load

    kind, device = load(backend).device()
    context = {"device_kind": kind, "device": device, "host": platform.node(), "backend": backend,
               **load(backend).peak_context(kind)}
    path = os.environ.get(PEAK_FILE_VARIABLE)

    def measure_now() -> dict:
        log(f"measuring this device's peak on {backend} (matmul per precision, 3x3 conv) ...")
        return {**measure(sync, backend).to_dict(), **context}

    return kept_or_measured(peak_file(Path(path), backend) if path else None, context, measure_now)


def peak_file(path: Path, backend: str) -> Path:
    """Where `backend`'s peak is kept when $L40SBENCH_PEAK_FILE names `path`."""
    return path if backend == "tensorflow" else path.with_name(f"{path.stem}.{backend}{path.suffix}")


def kept_or_measured(path: Path | None, context: dict, measure_now: Callable[[], dict]) -> dict:
    """The peak kept in `path` where it was measured in this `context` (host, device, threads, TF32), else one
    measured now, which is written to `path` if no file is there yet (a series of runs then measures once).

    A file that does not parse, or that another device or setting measured, is left alone and the
    peak is measured. `source` names where the figures come from and `measured_utc` when.
    """
    kept = _read_json(path) if path is not None else None
    if kept is not None:
        kept = {"backend": "tensorflow", **kept}  # kept before the backend was recorded: TensorFlow measured it
    if kept is not None and all(kept.get(key) == value for key, value in context.items()) and "matmul" in kept:
        return {**kept, "source": f"{SOURCE_FILE} {path}"}
    peak = {**measure_now(), "source": SOURCE_MEASURED,
            "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if path is not None and not path.exists():
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps(peak, indent=2, sort_keys=True))
        partial.replace(path)
    return peak


def measured_in_this_run(peak: dict) -> bool:
    """Whether a record's env.peak was measured by its own run (records older than the peak file were)."""
    return peak.get("source", SOURCE_MEASURED) == SOURCE_MEASURED


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def summary(peak: dict | None) -> str:
    """One line for the environment block: each precision's peak, the conv rate, measured / theoretical."""
    if not peak:
        return "-"
    parts = [f"{name} {p['gflops']:.1f}" for name, p in peak["matmul"].items()]
    text = f"matmul {', '.join(parts)} GFLOP/s; 3x3 conv float32 {peak['conv_float32_gflops']:.1f} GFLOP/s"
    ratio = peak.get("float32_measured_over_theoretical")
    if ratio:
        text += f"; float32 {100 * ratio:.0f} % of theoretical {peak['theoretical_float32_gflops']:.0f} GFLOP/s"
    else:
        text += f"; theoretical {peak.get('theoretical_basis') or 'unknown'}"
    if not measured_in_this_run(peak):
        text += f"; {peak['source']} (measured {peak.get('measured_utc', 'at an unknown time')})"
    return text


def rates(env: dict) -> tuple[float | None, float | None]:
    """(float32 matmul GFLOP/s, conv GFLOP/s) of a record: env.peak, or an older record's env.calibration."""
    if env.get("peak"):
        return env["peak"]["matmul"]["float32"]["gflops"], env["peak"]["conv_float32_gflops"]
    old = env.get("calibration") or {}
    return old.get("matmul_gflops"), old.get("conv_gflops")


if __name__ == "__main__":  # python -m l40sbench.peak: this machine's peaks as JSON, on $KERAS_BACKEND's kernels
    from l40sbench.backends import requested, select

    chosen = requested(None)
    select(chosen)
    print(json.dumps(measure_env(backend=chosen), indent=2, sort_keys=True))
