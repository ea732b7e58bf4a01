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
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from l40sbench.core import child
from l40sbench.core.env import gpu_models
from l40sbench.core.records import SCHEMA, to_json, write_atomic
from l40sbench.core.utilisation import peak_for, utilisation
from l40sbench.errors import UserError
from l40sbench.synthetic.config import SweepConfig
from l40sbench.synthetic.job import Job, Row, failed_row
from l40sbench.synthetic.worker import ROW_MARKER

ROWS_FILE = "rows.jsonl"
SWEEP_FILE = "sweep.json"
MAX_BATCH_LIMIT = 1 << 16  # --find-max-batch stops doubling here
PROBE_WARMUP, PROBE_STEPS = 1, 2  # a --find-max-batch probe only needs to survive its steps

Log = Callable[[str], None]
FIND_MAX_BATCH_NEEDS_A_CAP = ("--find-max-batch needs --memory-limit on a machine without a GPU "
                              "(else it doubles the batch until the whole machine runs out of memory)")


def nvidia_gpu_present() -> bool:
    """Whether the NVIDIA driver lists a GPU that CUDA_VISIBLE_DEVICES leaves visible (no TensorFlow needed)."""
    gpus = Path("/proc/driver/nvidia/gpus")
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES") in ("", "-1")
    return not hidden and gpus.is_dir() and any(gpus.iterdir())


@dataclass(frozen=True)
class SweepResult:
    """result.json of a sweep: the record family's fields plus `rows` (and `max_batch` with --find-max-batch)."""

    complete: bool
    config: dict
    env: dict
    rows: tuple[dict, ...]
    max_batch: tuple[dict, ...] = ()
    notes: dict = field(default_factory=dict)
    task: str = "synthetic"
    base: str = "sweep"

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, **dataclasses.asdict(self)}


def load_rows(output_dir: Path) -> list[Row]:
    """Rows written so far; a line cut short by a kill mid-write is skipped."""
    path = output_dir / ROWS_FILE
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(Row.from_dict(json.loads(line)))
            except (ValueError, TypeError):
                continue
    return rows


def cut_torn_line(output_dir: Path, log: Log) -> None:
    """Cuts a last line a kill left without its newline, so the next row starts a line of its own."""
    path = output_dir / ROWS_FILE
    if not path.exists():
        return
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return
    keep = data.rfind(b"\n") + 1
    with open(path, "r+b") as handle:
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    log(f"{path}: cut a torn last line ({len(data) - keep} bytes, a row cut short by a kill); "
        "that configuration runs again")


def append_row(output_dir: Path, row: Row) -> None:
    with open(output_dir / ROWS_FILE, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row.to_dict(), sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def child_env(config: SweepConfig) -> dict:
    """A child's environment: its Keras backend, jax's host devices for the largest count, the cluster."""
    backend = config.settings.backend
    env = {**os.environ, "KERAS_BACKEND": backend}
    if backend == "jax":
        from l40sbench.backends.jax import host_devices_env

        env = host_devices_env(max(config.devices), env)
    if config.worker_hosts:
        from l40sbench.backends.tf_device import cluster_env

        env["TF_CONFIG"] = cluster_env(config.worker_hosts, config.task_index)
    return env


def _child_result(outcome: child.Outcome) -> dict | None:
    lines = [line for line in outcome.stdout.splitlines() if line.startswith(ROW_MARKER)]
    return json.loads(lines[-1][len(ROW_MARKER):]) if lines else None


def _crash_line(outcome: child.Outcome) -> str:
    """The first line of the error a child died of: its last 'SomethingError: ...' line, else its exit."""
    error = child.error_line(outcome)
    if error:
        return error
    code = outcome.returncode
    return f"child exited with {'signal ' + str(-code) if code and code < 0 else 'code ' + str(code)}"


def run_job(job: Job, config: SweepConfig, gpu: bool) -> Row:
    """Runs one configuration in a child and turns however it ended into a row."""
    command = [sys.executable, "-m", "l40sbench.synthetic.worker", json.dumps(job.to_dict())]
    # On a GPU the cap is the child's logical-device memory limit; on the CPU the child's resident set.
    cap_mb = None if gpu or not job.settings.memory_limit_gb else job.settings.memory_limit_gb * 1024
    outcome = child.run(command, timeout_s=config.timeout_s, memory_limit_mb=cap_mb, env=child_env(config))
    kind = "GPU" if gpu else "CPU"
    workers = max(len(config.worker_hosts), 1)
    extra = {"memory_cap": outcome.enforcement, "child_peak_rss_mb": round(outcome.peak_rss_mb, 1)}
    values = _child_result(outcome)
    if values and (outcome.over_memory or outcome.timed_out):
        # The row was measured and printed; the child only failed to exit in time (teardown).
        extra["after_its_row"] = "passed the memory cap" if outcome.over_memory else "passed --timeout"
        return dataclasses.replace(Row.from_dict(values), extra={**values.get("extra", {}), **extra})
    if outcome.over_memory:
        row = failed_row(job, "oom", f"resident memory passed the {job.settings.memory_limit_gb:g} GB cap "
                                     f"(--memory-limit, enforced by {outcome.enforcement})",
                         device_kind=kind, workers=workers, seconds=outcome.seconds)
    elif outcome.timed_out:
        row = failed_row(job, "timeout", f"no result within {config.timeout_s:g} s (--timeout)",
                         device_kind=kind, workers=workers, seconds=outcome.seconds)
    else:
        row = Row.from_dict(values) if values else failed_row(
            job, "error", _crash_line(outcome), device_kind=kind, workers=workers, seconds=outcome.seconds)
    return dataclasses.replace(row, extra={**row.extra, **extra})


def with_utilisation(row: Row, state: dict) -> Row:
    """Achieved FLOP/s over the peak of the row's precision: per device on a GPU, the whole CPU for
    logical CPU devices. A sweep begun before peaks were measured divides by its calibration matmul."""
    if row.status != "ok" or row.achieved_tflops is None:
        return row
    name, per_device = peak_for(state.get("peak"), row.precision)
    if per_device is None and (state.get("calibration") or {}).get("matmul_gflops"):
        name, per_device = "float32 (calibration matmul of an older sweep)", state["calibration"]["matmul_gflops"]
    if per_device is None:
        return row
    peak_gflops = per_device * (row.devices if row.device_kind == "GPU" else 1)
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


def _worker_child(flag: str, what: str, env: dict) -> dict:
    """The result a worker child prints for `flag` (--calibrate, --fingerprint); RuntimeError naming `what`."""
    outcome = child.run([sys.executable, "-m", "l40sbench.synthetic.worker", flag], timeout_s=600, env=env,
                        memory_limit_mb=None)
    result = _child_result(outcome)
    if result is None:
        raise RuntimeError(f"{what} failed: {_crash_line(outcome)}")
    return result


def calibrate(config: SweepConfig, log: Log) -> dict:
    """The device's peaks and the environment, measured in a child at the start of the sweep."""
    log(f"measuring this device's peak on {config.settings.backend}: matmul per precision and a 3x3 convolution ...")
    return _worker_child("--calibrate", "calibration", child_env(config))


def _child_fingerprint(config: SweepConfig) -> dict:
    """This machine's environment block as a sweep's child sees it (the backend's devices included)."""
    return _worker_child("--fingerprint", "reading the environment", child_env(config))["env"]


def _gpus(state: dict) -> int:
    """GPUs the calibration child saw; 0 means the sweep runs on the CPU."""
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
    if not gpu and config.worker_hosts and max(config.devices) > 1:
        raise UserError("--worker-hosts with --devices above 1 needs GPUs: a worker without one runs its "
                        "collectives on one CPU device, so it cannot split the CPU into several")
    cores = state["env"].get("cpu_count") or 1
    if not gpu and max(config.devices) > cores:
        raise UserError(f"--devices {max(config.devices)} is more logical devices than this CPU has cores "
                        f"({cores}); each device needs at least one core")
    if config.find_max_batch and not gpu and not config.settings.memory_limit_gb:
        raise UserError(FIND_MAX_BATCH_NEEDS_A_CAP)


def read_state(output_dir: Path) -> dict:
    """sweep.json of an earlier sweep: its settings, environment and peaks."""
    try:
        state = json.loads((output_dir / SWEEP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot resume {output_dir}: no readable {SWEEP_FILE} ({exc})") from None
    if not isinstance(state, dict) or not {"config", "env"} <= state.keys():
        raise UserError(f"cannot resume {output_dir}: its {SWEEP_FILE} is not a sweep's")
    return state


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
        here = machine_kind(_child_fingerprint(config))
        first = machine_kind(state["env"])
        if here != first:
            raise UserError(f"cannot resume {config.output_dir} here: its rows were measured on "
                            f"{_describe_kind(first)}, this machine is {_describe_kind(here)}")
        return state
    if (config.output_dir / ROWS_FILE).exists():  # never mix two sweeps' rows, never drop measured ones
        raise UserError(f"{config.output_dir} already holds a sweep ({ROWS_FILE}); finish it with "
                        f"--resume {config.output_dir}, or choose another --output-dir")
    if config.find_max_batch and not config.settings.memory_limit_gb and not nvidia_gpu_present():
        raise UserError(FIND_MAX_BATCH_NEEDS_A_CAP)  # known without measuring: say it before the peak
    state = {"config": config.to_dict(), **calibrate(config, log)}
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

    started = time.perf_counter()
    try:
        for index, job in enumerate(jobs, start=1):
            job = dataclasses.replace(job, gflops_per_image=gflops.get(job.model))
            row = with_utilisation(run_job(job, config, gpu), state)
            if row.gflops_per_image:
                gflops[row.model] = row.gflops_per_image
            rows.append(row)
            if config.is_chief:
                append_row(config.output_dir, row)
            elapsed = time.perf_counter() - started
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
    )


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
                largest = _bisect_largest(fits, min(config.batch_sizes))
                error = None
            except RuntimeError as exc:
                largest, error = None, str(exc)
            found.append({"model": model, "devices": devices, "max_per_device_batch": largest,
                          "memory_limit_gb": config.settings.memory_limit_gb, "error": error,
                          "probes": {str(b): s for b, s in sorted(probes.items())}})
            log(f"max batch {model} x {devices}: {largest if largest else error or 'none fits'}")
    return tuple(found)


def _bisect_largest(fits: Callable[[int], bool], start: int) -> int | None:
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


def write_outputs(output_dir: Path, result: SweepResult, environment: Callable[[dict], str]) -> Path:
    """result.json, tables.md (opening with environment(the record's env)) and the tables as CSV; returns
    the JSON path."""
    from l40sbench.synthetic import tables

    record = result.to_dict()
    json_path = output_dir / "result.json"
    write_atomic(json_path, to_json(record))
    write_atomic(output_dir / "tables.md", tables.markdown(record, environment(record["env"])))
    for name, text in tables.csv_files(record).items():
        write_atomic(output_dir / name, text)
    return json_path
