"""Times a run's input pipeline alone and its training step alone, after its epochs, and judges what bounds it
(core.bound): the record's `bound` block.

The input alone: the run's own pipeline, built afresh, one epoch read untimed (the first epoch's tracing), then
whole epochs (at least MIN_BATCHES batches) without the model, each epoch's start included as the run pays it;
at the run's threads and, where the suite sets its threads, at one thread and at all of the host's (the sizing
line). The step alone: the run's own compiled step on one batch already placed, WARM_STEPS untimed, then up to
an epoch's steps, each synchronised, stopping once they take STEP_SHARE of a steady epoch's time. The trained weights are put back after, so the
probe and the saved model are the training's.
"""
from __future__ import annotations

from l40sbench.core import bound
from l40sbench.core.intervals import describe
from l40sbench.core.task import BoundParts
from l40sbench.core.text import Log
from l40sbench.core.timing import Stopwatch, Sync

MIN_BATCHES = 4
WARM_STEPS = 2
# The step alone stops after this share of a steady epoch's time (MIN_BATCHES steps at least): a detector's
# epoch on a CPU is a few steps of a minute or more, and an epoch of them would double a one-epoch run.
STEP_SHARE = 0.25


def not_measured(why: str) -> dict:
    return {"measured": False, "why": why}


def steady_rate(train: dict, images_per_epoch: int, global_batch: int) -> tuple[float, str] | None:
    """The run's steady images/s and where it comes from: the steady epochs' mean; in a one-epoch run whose
    steps were timed, the median step after the first; else None."""
    if train.get("steady_epoch_seconds"):
        return images_per_epoch / train["steady_epoch_seconds"], "the steady epochs (2..N)"
    steps = list(train.get("first_epoch_step_seconds") or ())[1:]
    if steps:
        median = sorted(steps)[len(steps) // 2]
        return global_batch / median, "the first epoch's steps after its first (one epoch ran)"
    return None


def input_pass(parts: BoundParts, threads: int | None, count: int) -> tuple[float, dict, tuple[int, object]]:
    """(images/s over whole epochs of the pipeline, at least `count` batches, each epoch's start included as the
    run pays it every epoch; the per-batch images/s interval; a first (images, batch) for the step alone).
    A first epoch is read untimed, its first batch kept: the first epoch's tracing is not an epoch's cost."""
    epochs = parts.batches(threads)
    warm = next(epochs)
    first = next(warm)
    for _ in warm:  # the epoch read to its end, untimed, so the next starts as a run's next epoch does
        pass
    watch = Stopwatch()
    seconds: list[float] = []
    images: list[int] = []
    while len(seconds) < count:
        watch.start()
        for n, _batch in next(epochs):
            seconds.append(watch.elapsed())
            images.append(n)
            watch.start()
    return sum(images) / sum(seconds), describe([n / t for n, t in zip(images, seconds)]), first


def step_pass(parts: BoundParts, batch, count: int, budget_s: float, sync: Sync) -> tuple[float, dict]:
    """(images/s of the steps on one placed batch, each synchronised; the per-step images/s interval): `count`
    steps, or fewer (MIN_BATCHES at least) once they have taken `budget_s`."""
    n, placed = batch[0], parts.place(batch[1])
    for _ in range(WARM_STEPS):
        sync(parts.step(placed))
    watch, seconds = Stopwatch(), []
    while len(seconds) < count and (len(seconds) < MIN_BATCHES or sum(seconds) < budget_s):
        sync()
        watch.start()
        sync(parts.step(placed))
        sync()
        seconds.append(watch.elapsed())
    return n * len(seconds) / sum(seconds), describe([n / t for t in seconds])


def measure(parts: BoundParts, train: dict, images_per_epoch: int, global_batch: int, shared_cores: bool,
            host_threads: int, sync: Sync, log: Log) -> dict:
    """The `bound` block: the three rates with their intervals, the verdict, the sizing and what it cost."""
    steady = steady_rate(train, images_per_epoch, global_batch)
    if steady is None:
        return not_measured("no epoch was timed")
    total = Stopwatch()
    total.start()
    count = max(parts.batches_per_epoch, MIN_BATCHES)
    log(f"bound: the input pipeline alone ({parts.input_path}), {count} batches"
        + (f" at {', '.join(map(str, dict.fromkeys((parts.threads, 1, host_threads))))} thread(s)"
           if parts.threads is not None else "")
        + (", then the training step alone ..." if parts.step is not None else
           f" (the step is not timed alone: {parts.step_why}) ..."))
    try:
        rate, interval, first = input_pass(parts, None, count)  # the run's own pipeline, as it ran
        by_threads = {}
        if parts.threads is not None:
            by_threads[parts.threads] = rate
            for threads in (1, host_threads):
                if threads not in by_threads:
                    by_threads[threads] = input_pass(parts, threads, count)[0]
        budget = STEP_SHARE * images_per_epoch / steady[0]  # a share of a steady epoch's time
        step_rate, step_interval = (step_pass(parts, first, count, budget, sync) if parts.step is not None
                                    else (None, {}))
    finally:
        parts.restore()
    if step_rate is not None:
        judged = bound.verdict(rate, step_rate, steady[0], shared_cores)
        step_from = "timed alone"
    else:
        judged = bound.verdict_without_step(rate, steady[0], shared_cores)
        step_rate = bound.inferred_step(rate, steady[0], shared_cores)
        step_from = f"inferred from the input alone and the steady rate ({parts.step_why})"
    per_core = by_threads.get(1)
    all_threads = by_threads.get(host_threads, rate)
    block = {
        "measured": True, "input_path": parts.input_path, "input_threads": parts.threads,
        "host_threads": host_threads, "input_images_per_second": rate, "step_images_per_second": step_rate,
        "steady_images_per_second": steady[0], "step_from": step_from,
        "input_interval": interval, "step_interval": step_interval, "steady_from": steady[1],
        "input_images_per_second_by_threads": {str(k): v for k, v in sorted(by_threads.items())},
        "batches_timed": interval["n"], "steps_timed": step_interval.get("n", 0),
        **judged,
        # a run that went at its input's rate: its step is at least the steady rate
        "sizing": bound.sizing(per_core, all_threads, host_threads, step_rate or steady[0]),
        "rule": bound.RULE,
    }
    block["seconds"] = total.elapsed()
    block["steady_epochs_of_time"] = block["seconds"] * steady[0] / images_per_epoch  # what --no-bound saves
    return block
