"""--find-max-batch: for each model and device count, the largest per-device batch that runs, found by
doubling from the smallest --batch-sizes entry and then bisecting (a probe runs a configuration's child for
a couple of steps)."""

from __future__ import annotations

from collections.abc import Callable

from l40sbench.core.text import Log
from l40sbench.synthetic.children import run_job
from l40sbench.synthetic.config import SweepConfig

MAX_BATCH_LIMIT = 1 << 16  # --find-max-batch stops doubling here
PROBE_WARMUP, PROBE_STEPS = 1, 2  # a --find-max-batch probe only needs to survive its steps



def find_max_batches(config: SweepConfig, gpu: bool, log: Log) -> tuple[dict, ...]:
    """For each model and device count, the largest per-device batch that runs, by doubling then bisection."""
    found = []
    for devices in config.devices:
        for model in config.models:
            probes: dict[int, str] = {}

            def fits(batch: int, model=model, devices=devices, probes=probes) -> bool:
                job = config.job(model, batch, devices, warmup_steps=PROBE_WARMUP, steps=PROBE_STEPS)
                row = run_job(job, config, gpu)
                probes[batch] = row.status
                log(f"  max batch {model} x {devices}: batch {batch} {row.status}")
                if row.status not in ("ok", "oom"):
                    raise RuntimeError(f"{model} batch {batch}: {row.status} ({row.error})")
                return row.status == "ok"

            try:
                largest = bisect_largest(fits, min(config.batch_sizes))
                error = None
            except RuntimeError as exc:
                largest, error = None, str(exc)
            found.append({"model": model, "devices": devices, "max_per_device_batch": largest,
                          "memory_limit_gb": config.settings.memory_limit_gb, "error": error,
                          "probes": {str(b): s for b, s in sorted(probes.items())}})
            log(f"max batch {model} x {devices}: {largest if largest else error or 'none fits'}")
    return tuple(found)


def bisect_largest(fits: Callable[[int], bool], start: int) -> int | None:
    """Largest n with fits(n), assuming fits is monotone: doubles from start, halves if start fails."""
    if fits(start):
        low, high = start, None
        while high is None:
            if low * 2 > MAX_BATCH_LIMIT:
                return low
            if fits(low * 2):
                low *= 2
            else:
                high = low * 2
    else:
        high, low = start, None
        while low is None:
            if high == 1:
                return None
            if fits(high // 2):
                low = high // 2
            else:
                high //= 2
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low
