"""The sweep: one child process per configuration, rows streamed to disk as they finish.

A configuration that runs out of memory, crashes or outlives --timeout ends
its own child only; its row says so and the sweep goes on. rows.jsonl gets
each row the moment it exists (one line, flushed and synced), so a sweep that
is interrupted or killed loses nothing finished, and --resume runs only the
configurations rows.jsonl lacks. sweep.json keeps the settings and the
peaks measured at the start, so a resumed sweep is the same sweep.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from l40sbench.core.env import gpu_models
from l40sbench.core.records import to_json, write_atomic
from l40sbench.core.results import Row, SweepResult
from l40sbench.core.text import Log
from l40sbench.core.timing import Stopwatch
from l40sbench.core.utilisation import peak_for, peak_over_devices, utilisation
from l40sbench.errors import UserError
from l40sbench.synthetic.children import child_fingerprint, measure_peak, run_job
from l40sbench.synthetic.config import SweepConfig
from l40sbench.synthetic.maxbatch import find_max_batches
from l40sbench.synthetic.store import ROWS_FILE, SWEEP_FILE, append_row, cut_torn_line, load_rows, read_state

FIND_MAX_BATCH_NEEDS_A_CAP = ("--find-max-batch needs --memory-limit on a machine without a GPU "
                              "(else it doubles the batch until the whole machine runs out of memory)")


def nvidia_gpu_present() -> bool:
    """Whether the CUDA driver shows this process a GPU after CUDA_VISIBLE_DEVICES (no framework needed)."""
    from l40sbench.backends import cuda_driver

    return bool(cuda_driver.devices())


def with_utilisation(row: Row, state: dict) -> Row:
    """Achieved FLOP/s over the peak of the row's precision: per device on a GPU, the whole CPU for
    logical CPU devices."""
    if row.status != "ok" or row.achieved_tflops is None:
        return row
    name, per_device = peak_for(state.get("peak"), row.precision)
    if per_device is None:
        return row
    peak_gflops = peak_over_devices(per_device, row.device_kind, row.devices)
    return dataclasses.replace(row, utilisation=utilisation(row.achieved_tflops * 1e3, peak_gflops),
                               utilisation_peak=name)


def with_scaling(rows: list[Row]) -> list[Row]:
    """Fills scaling_efficiency from the 1-device row of the same model and per-device batch."""
    single = {(r.model, r.per_device_batch): r.images_per_second
              for r in rows if r.devices == 1 and r.status == "ok"}
    out = []
    for row in rows:
        base = single.get((row.model, row.per_device_batch))
        if row.status == "ok" and base:
            row = dataclasses.replace(row, scaling_efficiency=row.images_per_second / (row.devices * base))
        out.append(row)
    return out


def _format_eta(seconds: float) -> str:
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{rest:02d}" if minutes >= 60 else f"{minutes}:{rest:02d}"


def describe(row: Row) -> str:
    where = f"{row.model} batch {row.per_device_batch} x {row.devices} {row.device_kind}"
    if row.status == "ok":
        return f"{where}: {row.images_per_second:.2f} images/s (+/- {row.images_per_second_stderr:.2f})"
    return f"{where}: {row.status} ({row.error})"








def _gpus(state: dict) -> int:
    """GPUs the peak's child saw; 0 means the sweep runs on the CPU."""
    return len(gpu_models(state["env"]))


def check_against_machine(config: SweepConfig, state: dict) -> None:
    """What only the measured machine can tell: enough GPUs, devices a CPU can split, and a cap for
    --find-max-batch on the CPU."""
    available = _gpus(state)
    gpu = available > 0
    if gpu and config.settings.memory_limit_gb and config.settings.backend != "tensorflow":
        raise UserError(f"--memory-limit on a GPU is TensorFlow's logical-device limit; {config.settings.backend} "
                        "has none here: run without it, or with --backend tensorflow")
    if gpu and max(config.devices) > available:
        raise UserError(f"--devices asks for {max(config.devices)} GPUs; this machine shows {available}")
    if not gpu:
        check_cpu_devices(config, state["env"].get("cpu_count") or 1)


def check_cpu_devices(config: SweepConfig, cores: int) -> None:
    """What a machine without a GPU cannot run: known from the core count alone, so said before the peak too."""
    if config.worker_hosts and max(config.devices) > 1:
        raise UserError("--worker-hosts with --devices above 1 needs GPUs: a worker without one runs its "
                        "collectives on one CPU device, so it cannot split the CPU into several")
    if max(config.devices) > cores:
        raise UserError(f"--devices {max(config.devices)} is more logical devices than this CPU has cores "
                        f"({cores}); each device needs at least one core")
    if config.find_max_batch and not config.settings.memory_limit_gb:
        raise UserError(FIND_MAX_BATCH_NEEDS_A_CAP)




def machine_kind(env: dict) -> tuple:
    """What makes two machines the same kind for one sweep: CPU model and cores, GPU models."""
    return env.get("cpu"), env.get("cpu_count"), tuple(gpu_models(env))


def _describe_kind(kind: tuple) -> str:
    cpu, cores, gpus = kind
    return f"{cpu} ({cores} cores)" + (f", {len(gpus)}x {gpus[0]}" if gpus else ", no GPU")


def prepare(config: SweepConfig, log: Log, resume: bool) -> dict:
    """sweep.json's state: written anew at the start, read back on --resume (on the same kind of machine)."""
    if resume:
        state = read_state(config.output_dir)
        here = machine_kind(child_fingerprint(config))
        first = machine_kind(state["env"])
        if here != first:
            raise UserError(f"cannot resume {config.output_dir} here: its rows were measured on "
                            f"{_describe_kind(first)}, this machine is {_describe_kind(here)}")
        return state
    if (config.output_dir / ROWS_FILE).exists():  # never mix two sweeps' rows, never drop measured ones
        raise UserError(f"{config.output_dir} already holds a sweep ({ROWS_FILE}); finish it with "
                        f"--resume {config.output_dir}, or choose another --output-dir")
    if not nvidia_gpu_present():  # what a CPU cannot run is known without measuring: say it before the peak
        check_cpu_devices(config, os.cpu_count() or 1)
    state = {"config": config.to_dict(), **measure_peak(config, log)}
    check_against_machine(config, state)
    if config.is_chief:
        write_atomic(config.output_dir / SWEEP_FILE, to_json(state))
    return state


def run_sweep(config: SweepConfig, *, log: Log, resume: bool = False,
              on_result: Callable[[SweepResult], None] = lambda result: None) -> SweepResult:
    """Runs every configuration rows.jsonl lacks; on_result gets the record whenever it is written."""
    state = prepare(config, log, resume)
    gpu = _gpus(state) > 0
    if resume:
        cut_torn_line(config.output_dir, log)
    rows = load_rows(config.output_dir) if resume else []
    done = {row.key for row in rows}
    # --find-max-batch searches instead of timing the plan.
    jobs = [] if config.find_max_batch else [job for job in config.plan() if job.key not in done]
    if resume:
        log(f"resuming {config.output_dir}: {len(done)} configuration(s) done, {len(jobs)} to run")
    gflops = {row.model: row.gflops_per_image for row in rows if row.gflops_per_image}

    clock = Stopwatch()
    clock.start()
    try:
        for index, job in enumerate(jobs, start=1):
            job = dataclasses.replace(job, gflops_per_image=gflops.get(job.model))
            row = with_utilisation(run_job(job, config, gpu), state)
            if row.gflops_per_image:
                gflops[row.model] = row.gflops_per_image
            rows.append(row)
            if config.is_chief:
                append_row(config.output_dir, row)
            elapsed = clock.elapsed()
            eta = elapsed / index * (len(jobs) - index)
            log(f"[{index}/{len(jobs)}] {describe(row)}  elapsed {_format_eta(elapsed)}, ETA {_format_eta(eta)}")
        max_batch = find_max_batches(config, gpu, log) if config.find_max_batch else ()
    except KeyboardInterrupt:
        if config.is_chief:
            on_result(build_result(config, state, rows, False))
        raise
    result = build_result(config, state, rows, True, max_batch)
    if config.is_chief:
        on_result(result)
    return result


def build_result(config: SweepConfig, state: dict, rows: list[Row], complete: bool,
                 max_batch: tuple = ()) -> SweepResult:
    order = {job.key: i for i, job in enumerate(config.plan())}
    rows = sorted(with_scaling(rows), key=lambda r: order.get(r.key, len(order)))
    return SweepResult(
        complete=complete, config=config.to_dict(), env=state["env"],
        rows=tuple(r.to_dict() for r in rows), max_batch=tuple(max_batch),
        notes={"scaling": "weak: the batch per device stays fixed as devices are added",
               "train_flops_per_image": "3 x forward (forward, then gradients for activations and weights)",
               "device_kind": "GPU" if _gpus(state) else
               "CPU: N devices are N logical devices of one CPU (tf.config logical devices)"},
        stability=sweep_stability(rows),
    )


def sweep_stability(rows) -> dict:
    """The sweep's stability block under the limits of the rows' kind of device: the bursts of every row in
    their order, each row's timed steps, each row whose device slowed down while its steps were timed, and
    each row that had a neighbour."""
    from l40sbench.core.stability import verdict
    from l40sbench.core.telemetry import neighbour_reasons, throttle_reasons

    def label(row) -> str:
        return f"{row.model} b{row.per_device_batch} x{row.devices} steps"

    bursts = [b for r in rows for b in r.bursts]
    steps = {label(r): (list(r.step_ms), " ms") for r in rows if r.step_ms}
    throttled = {label(r): (r.telemetry.get("phases") or {}).get("steps") or {} for r in rows}
    neighbours = {label(r): ((r.telemetry or {}).get("neighbours") or {}).get("steps") or {} for r in rows}
    kinds = {r.device_kind for r in rows if r.status == "ok"}
    return verdict(bursts, steps, throttle_reasons(throttled) + neighbour_reasons(neighbours),
                   kind="GPU" if "GPU" in kinds else "CPU")






