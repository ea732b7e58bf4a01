"""One row per runtime: export in this process, time in a child, score against tf.

A runtime that is missing, cannot run the precision asked for, fails to export or crashes its child
gets a row saying so; the rows before it and the run's own figures are kept either way.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from l40sbench.core import child
from l40sbench.core.env import host_threads as threads
from l40sbench.core.results import InferenceResult, RuntimeResult
from l40sbench.core.stats import LatencyStats
from l40sbench.core.text import Log
from l40sbench.errors import named, said
from l40sbench.runtimes.child import write_images
from l40sbench.runtimes.export import Artifact
from l40sbench.runtimes.registry import REFERENCE, RUNTIMES
from l40sbench.runtimes.responses import Answers

CHILD_TIMEOUT_S = 1800.0
CPU_REFERENCE = "tf-cpu"  # tf again with the GPUs hidden: on a GPU machine, the CPU rows' reference


@dataclass(frozen=True)
class Workload:
    """What the rows of one run are measured on.

    Attributes:
      images: the test images, decoded, each uint8 [1, H, W, 3], in the tf probe's order.
      export: (runtime, precision, folder) -> the exported Artifact; raises on failure.
      score: a runtime's stacked outputs -> its accuracy dict, agreement with tf included.
      mismatch: (runtime accuracy, tf accuracy) -> True when the runtime is less accurate beyond the bound.
      trained_precision: the run's --precision; a runtime reloading the graph as trained inherits it.
      answers: what LoadGen's responses are (MLPerf's format) and how the suite scores a log of them.
      library: () -> LoadGen's query sample library, where it is not `images` (a detector's: every image at one
        size), made only when LoadGen runs; library_note says how it was made.
      files, image_size: each image's file and the size it is resized to, where each row also times the file's
        way to a label (data.images.file_stages) in the rotation of its probe.
    """

    images: list
    export: Callable[[str, str, Path], Artifact]
    score: Callable[[dict], dict]
    mismatch: Callable[[dict, dict], bool]
    warmup: int
    trained_precision: str
    answers: Answers | None = None
    library: Callable[[], list] | None = None
    library_note: str = "the test images as the runtime rows take them"
    files: tuple[str, ...] = ()  # the images' files, in order, where the task times file to label (classify)
    image_size: int | None = None  # the size a file is resized to on its way to a label
    decoding: dict | None = None  # a detector file's host stages (runtimes.staged.Decoding), in every process


def crash_reason(runtime: str, outcome: child.Outcome, timeout_s: float = CHILD_TIMEOUT_S) -> str:
    """Why a runtime's child ended badly, in one line."""
    if outcome.timed_out:
        return f"the {runtime} child did not finish within {timeout_s:.0f} s"
    if outcome.returncode is not None and outcome.returncode < 0:
        name = signal.Signals(-outcome.returncode).name
        return f"the {runtime} child crashed ({name}) while loading or running the model"
    return child.error_line(outcome) or f"the {runtime} child exited {outcome.returncode}"


def _unsupported(runtime: str, precision: str, trained_precision: str) -> str | None:
    """Why `runtime` cannot be told to run `precision` (None when it can)."""
    spec = RUNTIMES.get(runtime)
    if precision not in spec.precisions:
        return f"{runtime} takes {', '.join(spec.precisions)}, not {precision}"
    if runtime == "savedmodel" and trained_precision != "fp32":
        return f"the SavedModel computes as it was trained ({trained_precision}), not {precision}"
    return None


def measure_one(runtime: str, workload: Workload, precision: str, folder: Path, inputs: Path,
                reference_accuracy: dict, log: Log) -> RuntimeResult:
    """The row of one runtime other than tf."""
    base = {"runtime": runtime, "precision_requested": precision}
    missing = RUNTIMES.get(runtime).missing()
    if missing:
        return RuntimeResult(**base, status="not-installed",
                             reason=f"missing package(s): {', '.join(missing)} (pip install 'l40sbench[runtimes]')")
    why = _unsupported(runtime, precision, workload.trained_precision)
    if why:
        return RuntimeResult(**base, status="unsupported-precision", reason=why)
    log(f"runtime {runtime}: exporting ...")
    try:
        artifact = workload.export(runtime, precision, folder)
    except Exception as exc:  # a converter's error of any kind costs this row only
        return RuntimeResult(**base, status="export-failed", reason=named(exc))
    base.update(exporter=artifact.exporter, artifact=str(artifact.path), export_seconds=artifact.export_seconds,
                size_mb=artifact.size_mb)
    log(f"runtime {runtime}: exported in {artifact.export_seconds:.1f} s ({artifact.size_mb:.1f} MB); timing "
        f"{len(workload.images)} images one at a time in a child process, first {workload.warmup} excluded ...")
    timing, outputs, failure = _time_in_child(runtime, str(artifact.path), artifact.precision, precision,
                                              workload.warmup, folder, inputs, files=workload.files,
                                              image_size=workload.image_size, decoding=workload.decoding)
    if failure:
        return RuntimeResult(**base, status="failed", reason=failure)
    try:
        accuracy = workload.score(outputs)
    except ValueError as exc:  # outputs the task cannot read: this row fails, the run goes on
        return RuntimeResult(**base, status="failed", reason=f"its outputs could not be scored: {said(exc)}")
    status, reason = "ok", ""
    expected = precision if artifact.precision == "fp32" else artifact.precision  # LiteRT's file fixes its own
    if timing["precision"] != expected:
        status, reason = "unsupported-precision", f"asked for {precision}; {runtime} runs {timing['precision']} here"
    if workload.mismatch(accuracy, reference_accuracy):
        status, reason = "accuracy-mismatch", "less accurate than tf beyond the bound"
    effective = timing["precision"]
    if workload.trained_precision != "fp32":  # the exported graph keeps the casts of the policy it was trained in
        effective = f"{effective} (graph trained {workload.trained_precision}, its casts exported)"
    return RuntimeResult(**base, **_timed(timing), status=status, reason=reason, precision=effective,
                         settings=timing["settings"], accuracy=accuracy)


def _time_in_child(runtime: str, artifact: str, file_precision: str, precision: str, warmup: int, folder: Path,
                   inputs: Path, env: dict | None = None, files: tuple[str, ...] = (),
                   image_size: int | None = None, decoding: dict | None = None) -> tuple[dict | None, dict | None, str]:
    """(the child's timing, its outputs, "") for one runtime timed in a child, the timing's `inference` an
    InferenceResult of its stats; (None, None, why) if it failed."""
    folder.mkdir(parents=True, exist_ok=True)
    request = {"runtime": runtime, "artifact": artifact, "file_precision": file_precision, "precision": precision,
               "threads": threads(), "inputs": str(inputs), "outputs": str(folder / "outputs.npz"),
               "result": str(folder / "timing.json"), "warmup": warmup, "files": list(files),
               "image_size": image_size, "decoding": decoding}
    (folder / "request.json").write_text(json.dumps(request, indent=2))
    outcome = child.run([sys.executable, "-m", "l40sbench.runtimes.child", str(folder / "request.json")],
                        timeout_s=CHILD_TIMEOUT_S, memory_limit_mb=None, env=env)
    if outcome.returncode != 0:
        return None, None, crash_reason(runtime, outcome)
    with np.load(folder / "outputs.npz") as archive:
        outputs = {name: archive[name] for name in archive.files}
    timing = json.loads((folder / "timing.json").read_text())
    stats = LatencyStats(**{**timing["stats"], "times_ms": tuple(timing["stats"]["times_ms"])})
    return {**timing, "inference": InferenceResult.from_stats(stats, warmup=warmup, batch_size=1,
                                                              stages_mean_ms=timing.get("stages_mean_ms") or {})}, \
        outputs, ""


def _timed(timing: dict) -> dict:
    """The RuntimeResult fields a child's timing gives every row alike."""
    return {"version": timing["version"], "threads": timing["threads"], "load_seconds": timing["load_seconds"],
            "device": timing.get("device", ""), "inference": timing["inference"]}


def cpu_reference(reference: RuntimeResult, workload: Workload, folder: Path, inputs: Path, log: Log) -> RuntimeResult:
    """tf timed again in a child with every GPU hidden (CUDA_VISIBLE_DEVICES=-1): where tf's own row ran on a
    GPU, the reference of the rows that run on the CPU (a ratio across devices compares devices)."""
    log(f"runtime {CPU_REFERENCE}: tf again in a child with the GPUs hidden, the CPU rows' reference ...")
    base = {"runtime": CPU_REFERENCE, "precision_requested": reference.precision_requested,
            "exporter": reference.exporter, "artifact": reference.artifact, "size_mb": reference.size_mb}
    timing, outputs, failure = _time_in_child(REFERENCE, reference.artifact, reference.precision,
                                              reference.precision_requested, workload.warmup, folder, inputs,
                                              env={**os.environ, "CUDA_VISIBLE_DEVICES": "-1"})
    if failure:
        return RuntimeResult(**base, status="failed", reason=failure)
    return RuntimeResult(**base, **_timed(timing), status="ok", precision=timing["precision"],
                         settings={**timing["settings"], "gpus_hidden": True}, accuracy=workload.score(outputs))


def measure_runtimes(names: tuple[str, ...], workload: Workload, precision: str, out_dir: Path,
                     reference: RuntimeResult, log: Log,
                     on_row: Callable[[tuple[RuntimeResult, ...]], None]) -> tuple[RuntimeResult, ...]:
    """The reference row (and where it ran on a GPU, cpu_reference's), then one row per other runtime in `names`;
    on_row(rows so far) after each."""
    rows = (reference,)
    on_row(rows)
    others = [name for name in names if name not in (REFERENCE, reference.runtime)]
    if not others:
        return rows
    out_dir.mkdir(parents=True, exist_ok=True)
    inputs = out_dir / "inputs.npz"  # decoded once; every child reads the same arrays
    write_images(inputs, workload.images)
    try:
        if reference.device == "GPU":
            rows += (cpu_reference(reference, workload, out_dir / CPU_REFERENCE, inputs, log),)
            on_row(rows)
        for name in others:
            row = measure_one(name, workload, precision, out_dir / name, inputs, reference.accuracy, log)
            log(describe(row, reference_for(row, rows, reference.runtime)))
            rows += (row,)
            on_row(rows)
    finally:
        inputs.unlink(missing_ok=True)
    return rows


def tf_row(inference: InferenceResult, artifact: Path, exporter: str, precision: str, compile_mode: str,
           accuracy: dict) -> RuntimeResult:
    """The reference row: the run's own probe on TensorFlow, in the process that holds the model."""
    import tensorflow as tf

    from l40sbench.runtimes.export import size_mb
    from l40sbench.runtimes.forward import tf_device_kind

    intra = tf.config.threading.get_intra_op_parallelism_threads()  # 0: TensorFlow's default, one per core
    return RuntimeResult(
        runtime=REFERENCE, status="ok", version=tf.__version__, exporter=exporter, artifact=str(artifact),
        size_mb=size_mb(artifact) if artifact.exists() else None, precision_requested=precision,
        precision=precision, threads=intra or threads(),
        settings={"compile": compile_mode, "intra_op_threads": intra}, inference=inference, accuracy=accuracy,
        device=tf_device_kind(),
    )


def reference_for(row, rows, reference: str = REFERENCE):
    """The reference a row's ratio is drawn against: tf's own row (or `reference`'s, onnxruntime's for an ONNX
    file), or tf with the GPUs hidden, whichever ran on the row's kind of device (None where neither did)."""
    def name(r):
        return r["runtime"] if isinstance(r, dict) else r.runtime

    candidates = [r for r in rows if name(r) in (reference, CPU_REFERENCE)]
    return next((r for r in candidates if same_device(row, r)), None)


def same_device(row, reference) -> bool:
    """Whether two rows (RuntimeResult or record dicts) ran on one kind of device: a ratio between a GPU row
    and a CPU row compares devices, not runtimes. Rows that name no device (older records) count as one."""
    def kind(r):
        return r.get("device", "") if isinstance(r, dict) else r.device

    return not kind(row) or not kind(reference) or kind(row) == kind(reference)


def describe(row: RuntimeResult, reference: RuntimeResult | None = None) -> str:
    """One progress line for a finished row."""
    if row.inference is None or row.inference.mean_ms is None:
        return f"runtime {row.runtime}: {row.status}: {row.reason}"
    ratio = ""
    if reference is not None and not same_device(row, reference):
        ratio = f" (on {row.device}, tf on {reference.device}: no ratio across devices)"
    elif reference is not None and reference.inference and reference.inference.mean_ms:
        ratio = f" ({reference.inference.mean_ms / row.inference.mean_ms:.2f}x {reference.runtime})"
    status = row.status if row.status == "ok" else f"{row.status} ({row.reason})"
    return (f"runtime {row.runtime}: {status}, {row.precision}, {row.inference.mean_ms:.2f} ms/image{ratio}, "
            f"{row.threads} threads" + (f", {row.device}" if row.device else ""))
