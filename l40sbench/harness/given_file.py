"""What `infer --model` shares across the kinds of file it times (harness.given_classifier, harness.given_detector):
the prepared file the runner times (harness.infer_model), the reference's probe in this process, the batch check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from l40sbench.core.results import DatasetInfo, InferenceResult, RuntimeResult
from l40sbench.core.text import Log
from l40sbench.errors import UserError
from l40sbench.modelfile.files import ModelFile

ONNX_REFERENCE = "onnxruntime"
NO_TRAINING = "infer --model: the file timed as it is, nothing trained"
NO_FLOPS_ONNX = "none: the suite counts FLOPs on TensorFlow graphs, not ONNX files"


@dataclass(frozen=True)
class Prepared:
    """A file ready to time: the run's config (with what was fed), the data's facts, the record's model facts,
    and its reference: (sync, log) -> (reference row, workload, accuracy, note); its utilisation: (peak, the
    reference's inference, device kind) -> the record's block."""

    task: str
    config: object
    dataset: DatasetInfo
    model: dict
    reference: Callable
    utilisation: Callable


def probe(runtime: str, path: Path, label: str, exporter: str, images: list, warmup: int, sync, log: Log,
          decoding: dict | None = None):
    """A registry runtime's loader in this process as the reference (onnxruntime for an ONNX file, TensorFlow's
    SavedModel loader for a detector's): (its row named `label`, without scores; its stacked outputs by name).
    `decoding`: a detector file's host stages around each call (runtimes.staged), each stage's mean in the row."""
    from l40sbench.core.env import host_threads as threads
    from l40sbench.core.timing import probe_latency
    from l40sbench.runtimes.child import stack_outputs
    from l40sbench.runtimes.export import size_mb
    from l40sbench.runtimes.registry import load
    from l40sbench.runtimes.staged import Decoding, StageClock, staged

    loaded = load(runtime, path, "fp32", threads(), "fp32")
    clock = StageClock()
    if decoding is not None:
        loaded = staged(loaded, Decoding.from_dict(decoding), clock)
    outputs: list = []

    def predict(image):
        try:
            outputs.append(loaded.call(image))
        except Exception as exc:  # the file cannot answer this image: said in one line, as the runtime said it
            said = " ".join(str(exc).split())
            raise UserError(f"{label} failed on test image {len(outputs) + 1} of {len(images)} "
                            f"({'x'.join(str(d) for d in image.shape[1:3])}): {type(exc).__name__}: "
                            f"{said[-300:]}") from None
        return outputs[-1]

    log(f"{label} (reference): {len(images)} test images one at a time, first {warmup} excluded ...")
    stats = probe_latency(predict, images, warmup=warmup, sync=sync)
    if not outputs:
        raise UserError("the test split is empty: nothing to time")
    row = RuntimeResult(runtime=label, status="ok", version=loaded.version, exporter=exporter, artifact=str(path),
                        size_mb=size_mb(path), precision_requested="fp32", precision=loaded.precision,
                        threads=loaded.threads, settings=loaded.settings,
                        inference=InferenceResult.from_stats(stats, warmup=warmup, batch_size=1,
                                                             stages_mean_ms=clock.means_ms(warmup)),
                        device=loaded.device)
    return row, stack_outputs(outputs)


def check_batches(given: ModelFile, load) -> None:
    """Raises UserError where the file is fixed at a batch the probe (one image) or LoadGen's --max-batch-size
    cannot keep to: before anything is timed."""
    given.refuse_batch(1, "infer times one image at a time in its latency probe, a batch of")
    if load is not None:
        given.refuse_batch(max(load.batches), "--max-batch-size")
        if given.detector_format not in (None, "od-api") and max(load.batches) > 1:
            raise UserError(f"--max-batch-size {max(load.batches)}: a {given.detector_format} file is served one "
                            "image a call (its letterbox, decode and NMS are per image), as Ultralytics serves it: "
                            "leave --max-batch-size at 1")
