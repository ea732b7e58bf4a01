"""What the CI gate needs from a benchmark beyond pytest-benchmark's own timing.

Each gated benchmark times the product's path with `benchmark.pedantic` and,
before every round and outside that clock, the reference it is compared with
(a bare loop, a decode, the calibration convolution): the two sides take turns,
so drift on this shared host falls on both. The figure that results goes into
`benchmark.extra_info["gates"]`, where tests/benchmarks/gate.py reads it from the
JSON that `--benchmark-json` writes.

Three kinds of figure:
- a ratio with fixed bounds ("max", "min"), true on any machine (probe / bare loop);
- a normalised time (the product's time over a reference timed in the same
  rounds) that tests/benchmarks/gate.py compares with tests/benchmarks/baseline.json;
- an exact structural figure (parameters, forward FLOPs of every registered
  model: test_structure_bench.py) that must equal its baseline.

L40SBENCH_BENCH_SLOWDOWN=F (default 1) makes every product-side call F times
slower, by sleeping (F - 1) times its own duration after it: how the gate was
shown to catch a 1.5x slowdown (docs/performance-log.md, "The CI speed gate").
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

import pytest

SLOWDOWN = float(os.environ.get("L40SBENCH_BENCH_SLOWDOWN", "1"))
# Bound of the same-run ratios (probe / bare loop, cache feed / memory feed, serving / model):
# 5 runs here spread up to 1.064, and a 1.5x slowdown of the product side must fail.
RATIO_BOUND = 1.20


def slowed(fn: Callable) -> Callable:
    """fn itself, or fn made SLOWDOWN times slower."""
    if SLOWDOWN == 1:
        return fn

    def slower(*args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        time.sleep((SLOWDOWN - 1) * (time.perf_counter() - start))
        return out

    return slower


class References:
    """Reference calls timed once each before every benchmark round (pedantic's setup hook).

    The setup also runs before the warm-up rounds; those samples are dropped.
    """

    def __init__(self, warmup_rounds: int, **calls: Callable[[], object]):
        self.warmup_rounds = warmup_rounds
        self.calls = calls
        self.seconds: dict[str, list[float]] = {name: [] for name in calls}

    def __call__(self) -> None:
        for name, call in self.calls.items():
            start = time.perf_counter()
            call()
            self.seconds[name].append(time.perf_counter() - start)

    def median(self, name: str) -> float:
        return statistics.median(self.seconds[name][self.warmup_rounds:])

    def ratio(self, benchmark, name: str) -> float:
        """The median over the timed rounds of the product's time over reference `name`'s just before it.

        A pair shares the host's state of the moment, so a slow spell on a shared machine moves both sides of
        a ratio together, where a ratio of two medians taken over the whole run can catch it on one side.
        """
        product = benchmark.stats.stats.data
        reference = self.seconds[name][self.warmup_rounds:]
        assert len(product) == len(reference), (len(product), len(reference))
        return statistics.median(p / r for p, r in zip(product, reference))


def run_pedantic(benchmark, target: Callable, references: References, rounds: int, args=()):
    """benchmark.pedantic over `target` with the references interleaved. Disabled (a plain test run:
    one call, no figures) where benchmark.disabled; the gated figure is then references.ratio(...)."""
    benchmark.pedantic(slowed(target), args=args, setup=references, rounds=rounds,
                       warmup_rounds=references.warmup_rounds)
    if not benchmark.disabled and "conv" in references.calls:  # the machine's rate beside the figure
        from l40sbench.peak.measure import CONV_FLOP

        benchmark.extra_info["calibration_conv_gflops"] = CONV_FLOP / references.median("conv") / 1e9


def record_gate(benchmark, name: str, value: float, *, what: str, maximum: float | None = None,
                minimum: float | None = None, baseline: bool = False, exact: bool = False) -> None:
    """Adds one gated figure to the benchmark's extra_info.

    maximum / minimum: fixed bounds of a same-run ratio; baseline: compared with its figure in
    tests/benchmarks/baseline.json within the gate's threshold both ways; exact: a structural figure
    that must equal its baseline.
    """
    benchmark.extra_info.setdefault("gates", {})[name] = {
        "value": value, "what": what, "max": maximum, "min": minimum, "baseline": baseline, "exact": exact,
    }


def gate_probe_over_bare_loop(benchmark, call: Callable, images, name: str, what: str) -> None:
    """Times the latency probe over `images` (the first is its warm-up) against a bare loop of the same
    call over the timed ones, in turn, and gates the per-image ratio within RATIO_BOUND either way."""
    from l40sbench.core.timing import probe_latency

    def bare_loop():
        for image in images[1:]:
            call(image)

    references = References(warmup_rounds=2, bare_loop=bare_loop)
    run_pedantic(benchmark, lambda: probe_latency(call, images), references, rounds=15)
    if not benchmark.disabled:
        # The probe makes one call more than the bare loop (its warm-up): compare per timed image.
        timed = len(images) - 1
        ratio = references.ratio(benchmark, "bare_loop") * timed / len(images)
        record_gate(benchmark, name, ratio, maximum=RATIO_BOUND, minimum=1 / RATIO_BOUND, what=what)


@pytest.fixture(scope="session")
def conv_kernel():
    """The peak measurement's 3x3 convolution (l40sbench.peak), compiled once, its output read on the host."""
    from l40sbench import backends
    from l40sbench.peak import measure as peak

    conv = backends.load("tensorflow").conv(peak.CONV_SHAPE, peak.CONV_FILTERS)
    conv()
    return lambda: conv().numpy()
