"""One run of any task: check -> place -> data -> model -> env and peak -> timed epochs -> probe ->
utilisation -> export and the other runtimes, saving the record after every step.

Library code: it reports through `log` and `save` and never prints or exits.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from l40sbench.backends.telemetry import source as telemetry_source
from l40sbench.core import env as env_mod
from l40sbench.core import memory
from l40sbench.core.devices import CPU, kind_of
from l40sbench.core.env import host_threads
from l40sbench.core.phases import Phases
from l40sbench.core.results import RunResult, TrainResult
from l40sbench.core.stability import limits_for, verdict
from l40sbench.core.startup import Startup
from l40sbench.core.task import Flops, Probe, Save
from l40sbench.core.telemetry import gaps
from l40sbench.core.text import Log
from l40sbench.core.timing import EpochClock, Stopwatch, recorded_calls
from l40sbench.core.utilisation import run_utilisation
from l40sbench.harness import bound
from l40sbench.harness.epochs import EpochLoop
from l40sbench.harness.tasks import load_task
from l40sbench.peak.burst import START_WARM_SECONDS, Guard, warm_target
from l40sbench.peak.host import with_cpu_peak
from l40sbench.peak.measure import measure_env


def one_device(kernels):
    """Where a run on another backend than tensorflow trains: its first device, no strategy."""
    from l40sbench.backends.placement import Placement

    return Placement(None, tuple(kernels.devices()[:1]), facts={"strategy": f"none (one device; {kernels.NAME})"})


def utilisation(device_peak: dict, precision: str, flops: Flops, train: TrainResult, train_images_per_epoch: int,
                inference_images_per_second: float | None, placement) -> dict:
    """Training and inference FLOP/s over the peak of the run's precision, training's over every device (and
    worker) it trained on."""
    epoch_seconds = train.rate_epoch_seconds
    figures = run_utilisation(
        device_peak, precision, flops.forward_gflops,
        train_gflops_per_image=flops.train_gflops_per_image, train_convention=flops.train_convention,
        train_images_per_second=train_images_per_epoch / epoch_seconds if epoch_seconds else None,
        inference_images_per_second=inference_images_per_second,
        devices=placement.replicas, device_kind=kind_of(placement.used),
    )
    return {"flop_counter": flops.counter, **figures} if flops.counter else figures


def stability(guard: Guard, epoch_seconds, probe: Probe | None, phases: Phases, kind: str, peak: dict) -> dict:
    """The run's stability block under the limits of the device's kind: the guard's bursts so far, the steady
    epochs, the probe's latencies, any phase in which the device slowed down or its clock fell well below the
    clock the peak was measured at, and any neighbour that mattered."""
    samples = {"steady epochs": (list(epoch_seconds[1:]), " s")}
    if probe is not None:
        samples["per-image latency"] = (list(probe.inference.times_ms), " ms")
    reference = (peak.get("telemetry") or {}).get("clock_mhz_median")
    reasons = phases.reasons(reference, limits_for(kind).clock_drop)
    return verdict([b.to_dict() for b in guard.bursts], samples, reasons, kind=kind)


def split_training(phases: Phases, epochs: list[tuple[float, float]], images_per_epoch: int) -> None:
    """Training's energy over the steady epochs alone, at the epoch clock's own instants; the first epoch
    (tracing, compilation) and the time between epochs (test scoring, the record's saves) apart, named."""
    span = phases.span("training")
    if span is None:
        return
    phases.split("training", {
        "training": (epochs[1:], images_per_epoch * len(epochs[1:])),
        "first epoch": (epochs[:1], images_per_epoch if epochs else None),
        "between epochs (scoring, saves)": (gaps(epochs, *span), None),
    })


def split_inference(phases: Phases, calls: list[tuple], probe: Probe, tag: str | None) -> None:
    """Inference's energy over the timed calls alone, at the probe clock's own instants, over the timed images;
    the warm-up calls and the time between calls apart. Left whole where the calls were not recorded as the
    record counts them."""
    span, inference = phases.span("inference"), probe.inference
    timed = [(a, b) for a, b, t in calls if t == tag]
    warm = inference.warmup_excluded
    if span is None or len(timed) * inference.batch_size != inference.images_timed + warm * inference.batch_size:
        return
    phases.split("inference", {
        "inference": (timed[warm:], inference.images_timed),
        "inference warm-up": (timed[:warm], warm * inference.batch_size),
        "inference between timed calls": (gaps(timed, *span), None),
    })


def run_task(name: str, config, *, log: Log, save: Save) -> RunResult:
    """Runs the task's protocol; calls save() after every epoch, after the probe and after each runtime row.

    Raises:
      UserError: bad data, flags or files.
      KeyboardInterrupt: re-raised after the finished epochs were saved.
    """
    from l40sbench import backends
    from l40sbench.backends.tf_device import place_early, place_for
    from l40sbench.runtimes.measure import measure_runtimes
    from l40sbench.runtimes.registry import resolve

    startup = Startup()
    task = load_task(name)
    config = task.check(config)
    if task.keras3:
        backends.select(config.backend)
    kernels = backends.load(config.backend)
    on_tensorflow = config.backend == "tensorflow"
    placement = place_early(config) if on_tensorflow else None
    startup.mark("the backend and placement")
    data = task.load(config, log)
    startup.mark("data")
    placement = placement or (place_for(config) if on_tensorflow else one_device(kernels))
    startup.mark("the backend and placement")
    built = task.build(config, data, placement, placement.record(config.batch_size), log)
    startup.mark("model and weights")
    sync = kernels.sync()
    kind = kind_of(placement.used)
    phases = Phases(telemetry_source(placement.used))
    power = {"device_power": phases.source.facts} if phases.source is not None and phases.source.facts else {}
    env = {**env_mod.fingerprint(backends.facts()), **power,
           "peak": measure_env(sync=sync, log=log, backend=config.backend)}
    guard = Guard(config.backend, sync)
    guard.check("start", START_WARM_SECONDS, warm_target(env["peak"], guard.n))
    startup.mark("env, peak and the stability guard")
    clock = EpochClock(sync=sync)
    wall = Stopwatch()
    wall_seconds: list[float] = []
    bound_block: dict = {}

    def record(complete: bool, probe: Probe | None = None, figures: dict | None = None, rows=None) -> RunResult:
        inference = probe.inference if probe is not None else None
        if rows is not None:
            inference = dataclasses.replace(inference, runtimes=rows)
        return RunResult(
            task=task.name, base=built.base, complete=complete, config=built.config.to_dict(), env=env,
            dataset=data.info,
            train=TrainResult.from_times(clock.summary(), config.batch_size, loop.losses, built.test_metric,
                                         loop.test_metric, wall_seconds=wall_seconds[0] if wall_seconds else None,
                                         wall_seconds_at_epoch=loop.wall_at_epoch,
                                         scoring_seconds_per_epoch=loop.scoring_seconds,
                                         first_epoch_step_seconds=loop.first_epoch_steps),
            weights=built.weights, model=built.model_info, inference=inference,
            accuracy=probe.accuracy if probe is not None else {}, notes=built.notes, utilisation=figures or {},
            devices=built.devices, stability=stability(guard, clock.epoch_seconds, probe, phases, kind, env["peak"]),
            telemetry=phases.record(), time_to_first_step=startup.block,
            memory=memory.block(kernels.peak_memory_mb(kind)), bound=bound_block,
        )

    loop = EpochLoop(built.epochs, clock, wall, log, on_epoch=lambda: save(record(False).to_dict()))
    save(record(False).to_dict())
    log(built.training_line)
    before = [np.array(w) for w in built.model.trainable_weights]
    startup.mark("the record's first save")
    startup.finish(log)
    wall.start()
    try:
        with phases.phase("training") as done:
            try:
                task.train(built, data, loop)
            finally:
                sync()
                done["images"] = built.train_images_per_epoch * len(clock.epoch_seconds)
    except BaseException:
        wall_seconds.append(wall.elapsed())
        save(record(False).to_dict())
        raise
    wall_seconds.append(wall.elapsed())
    guard.check("after training")
    built.devices.update(placement.after_training(built.model.trainable_weights, before))
    task.after_training(built, dataclasses.asdict(record(False).train), log)
    if config.bound:
        with phases.phase("bound"):
            bound_block.update(bound.measure(task.bound_parts(built, data), dataclasses.asdict(record(False).train),
                                             built.train_images_per_epoch, built.devices["global_batch"],
                                             kind == CPU, host_threads(), sync, log))
    else:
        bound_block.update(bound.not_measured("--no-bound"))
    save(record(False).to_dict())

    split_training(phases, clock.windows, built.train_images_per_epoch)
    with phases.phase("inference") as done, recorded_calls() as calls:
        probe = task.probe(built, data, sync, log)
        done["images"] = probe.inference.images_timed + probe.inference.warmup_excluded * probe.inference.batch_size
    split_inference(phases, calls, probe, task.inference_call)
    figures = utilisation(env["peak"], config.precision, task.flops(built, probe), record(False).train,
                          built.train_images_per_epoch, probe.inference.images_per_second, placement)
    save(record(True, probe, figures).to_dict())
    exported = task.export(built, data, probe, log)
    rows = None
    save(record(True, probe, figures).to_dict())  # the notes may name the export
    if exported is not None:
        reference, work = exported
        rows = measure_runtimes(resolve(config.runtimes), work, config.runtime_precision,
                                config.output_dir / "runtimes", reference, log,
                                lambda rows: save(record(True, probe, figures, rows).to_dict()))
        env.update(with_cpu_peak(env, (row.device for row in rows)))  # CPU rows on a GPU run: the CPU's own peak
    guard.check("end")
    result = record(True, probe, figures, rows)
    save(result.to_dict())
    return result
