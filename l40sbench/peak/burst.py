"""A short burst of the peak's own float32 matmul: the machine's speed now, to hold against its speed at
another moment of the same run (the stability guard, core.stability)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from l40sbench.core.timing import Clock, Sync, no_sync, time_batches
from l40sbench.peak.measure import matmul_flop

BURST_SAMPLES = 6
BURST_SAMPLE_SECONDS = 0.03
# The samples are spread over about 0.7 s: a shared VM here loses one of its two cores for about 0.25 s at a
# time (the host writing back a run's saved model, say) and the best of samples spread wider than that is
# the machine's speed; a load that lasts slows them all.
BURST_GAP_SECONDS = 0.1
BURST_SIZE = {"CPU": 1024, "GPU": 8192}
# On a GPU the gaps would let the boost clock recover between samples, hiding a sustained power or thermal
# slowdown: there the samples run back to back for 0.6 s, long enough for the clock to settle under load
# (NVML refreshes power every 20-100 ms; a board's power controller acts within a few hundred ms).
GPU_BURST = {"samples": 6, "sample_seconds": 0.1, "gap_seconds": 0.0}
CPU_BURST = {"samples": BURST_SAMPLES, "sample_seconds": BURST_SAMPLE_SECONDS, "gap_seconds": BURST_GAP_SECONDS}
# The run's start burst follows the process's single-threaded start (imports, the model's build) where the other
# two follow seconds of work. A fresh process's matmul on these VMs can run at half speed for its first 0.7 s or
# more (the claim fresh-process-ramp; docs/PERFORMANCE.md "The stability guard"): a start burst taken there
# read 82-103 against 185-214 GFLOP/s later in five of seven runs on a CI host. So the start burst
# follows back-to-back calls in samples of WARM_SAMPLE_SECONDS until one reads START_WARM_SHARE of the peak's
# rate at the guard's size (quiet bursts here read 183-210 against its 197: 0.93-1.07), or for START_WARM_SECONDS at most:
# twice the longest slow opening seen here. A machine slow for longer than that is slow, and the verdict says so.
START_WARM_SECONDS = 1.5
START_WARM_SHARE = 0.8
WARM_SAMPLE_SECONDS = 0.05


def warm_target(peak: dict | None, n: int) -> float | None:
    """START_WARM_SHARE of the float32 matmul rate the peak measured at size `n` (else at its best size); None
    without a peak (the warm-up then runs its whole START_WARM_SECONDS)."""
    float32 = ((peak or {}).get("matmul") or {}).get("float32") or {}
    rate = (float32.get("gflops_by_size") or {}).get(str(n)) or float32.get("gflops")
    return START_WARM_SHARE * rate if rate else None


def form(settings: dict, warm_seconds: float = 0.0) -> str:
    """How a burst ran, in words, for the record."""
    spread = (f"{settings['gap_seconds']:g} s apart" if settings["gap_seconds"]
              else "back to back")
    warmed = f", after {warm_seconds:.2f} s of back-to-back calls" if warm_seconds else ""
    return f"{settings['samples']} samples of {1000 * settings['sample_seconds']:.0f} ms, {spread}{warmed}"


@dataclass(frozen=True)
class Burst:
    """One burst: the best GFLOP/s of its samples, all of them, the matmul size and what it cost in wall seconds.

    The best, as the peak takes it: a neighbour's moment on a shared host only slows a sample, so the best is
    the machine's speed now, and a load that lasts (a throttled device, a busy core) slows every sample.
    `seconds` is the burst's wall time, its pauses and warm-up included; the device was busy for a third of
    its samples' time. `warm_seconds`: the back-to-back calls before the samples (0: one warm call only), which
    stopped on reading `warm_target_gflops` where one was given.
    """

    moment: str
    gflops: float
    samples_gflops: tuple[float, ...]
    matmul_n: int
    seconds: float
    form: str = ""
    warm_seconds: float = 0.0
    warm_target_gflops: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _fill(call: Callable[[], object], wanted: float, one: float, clock: Clock, sync: Sync) -> tuple[int, float]:
    """Back-to-back batches of calls, each about a quarter of `wanted`, until they fill it: (calls, seconds).

    A sample is timed to its length rather than to a call count set from one timed call: that one call, slowed
    by a neighbour's moment, would shorten every sample (a GPU burst meant to hold the load for 0.6 s held it
    for 0.35 s on a busy host)."""
    chunk = max(1, round(wanted / 4 / one)) if one > 0 else 1
    calls, seconds = 0, 0.0
    while seconds < wanted or not calls:
        (taken,) = time_batches(call, chunk, 1, clock=clock, sync=sync)
        calls, seconds = calls + chunk, seconds + taken
    return calls, seconds


def _warm(call: Callable[[], object], n: int, one: float, cap: float, target: float | None, clock: Clock,
          sync: Sync) -> float:
    """Back-to-back calls in samples of WARM_SAMPLE_SECONDS until one reads `target` GFLOP/s, or for `cap`
    seconds (all of them without a target): the seconds spent."""
    spent = 0.0
    while spent < cap:
        calls, seconds = _fill(call, WARM_SAMPLE_SECONDS, one, clock, sync)
        spent += seconds
        if target is not None and matmul_flop(n) * calls / seconds / 1e9 >= target:
            break
    return spent


def burst(call: Callable[[], object], n: int, moment: str, *, samples: int = BURST_SAMPLES,
          sample_seconds: float = BURST_SAMPLE_SECONDS, gap_seconds: float = BURST_GAP_SECONDS,
          warm_seconds: float = 0.0, warm_target_gflops: float | None = None, clock: Clock = time.perf_counter,
          sync: Sync = no_sync, sleep: Callable[[float], None] = time.sleep) -> Burst:
    """Times `samples` samples of back-to-back calls of one compiled [n, n] float32 matmul, each at least
    `sample_seconds` long, `gap_seconds` apart, after one warm call, up to `warm_seconds` of back-to-back calls
    (until a sample of them reads `warm_target_gflops`) and one timed call that sizes the batches."""
    started = clock()
    call()
    (one,) = time_batches(call, 1, 1, clock=clock, sync=sync)
    warmed = _warm(call, n, one, warm_seconds, warm_target_gflops, clock, sync) if warm_seconds > 0 else 0.0
    if warmed:
        (one,) = time_batches(call, 1, 1, clock=clock, sync=sync)
    rates = []
    for index in range(samples):
        if index and gap_seconds:
            sleep(gap_seconds)
        calls, seconds = _fill(call, sample_seconds, one, clock, sync)
        rates.append(matmul_flop(n) * calls / seconds / 1e9)
    return Burst(moment, max(rates), tuple(rates), n, clock() - started,
                 form({"samples": samples, "sample_seconds": sample_seconds, "gap_seconds": gap_seconds},
                      warmed), warmed, warm_target_gflops if warm_seconds > 0 else None)


class Guard:
    """The bursts of one run, on the run's backend: `check(moment)` measures one and keeps it. `clock` and
    `sleep` are the bursts' (a fake pair in tests)."""

    def __init__(self, backend: str, sync: Sync, clock: Clock = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep):
        from l40sbench.backends import load

        kernels = load(backend)
        kind = kernels.devices()[0].kind
        self.n = BURST_SIZE.get(kind, BURST_SIZE["CPU"])
        self._kernels, self._kind, self._sync = kernels, kind, sync
        self._clock, self._sleep = clock, sleep
        self.settings = GPU_BURST if kind == "GPU" else CPU_BURST
        self._call: Callable[[], object] | None = None
        self.bursts: list[Burst] = []

    def check(self, moment: str, warm_seconds: float = 0.0, warm_target_gflops: float | None = None) -> Burst:
        """One burst now, after up to `warm_seconds` of back-to-back calls that stop on reading
        `warm_target_gflops` (a run's start: START_WARM_SECONDS and warm_target of its peak)."""
        if self._call is None:
            with self._kernels.precision_mode(self._kind, "float32"):
                self._call = self._kernels.matmul("float32")(self.n)
        with self._kernels.precision_mode(self._kind, "float32"):
            measured = burst(self._call, self.n, moment, sync=self._sync, warm_seconds=warm_seconds,
                             warm_target_gflops=warm_target_gflops, clock=self._clock, sleep=self._sleep,
                             **self.settings)
        self.bursts.append(measured)
        return measured
