"""`infer --model PATH`: a model file timed as it is, without training, into a run folder of a classify run's shape.

The data are read as classify reads them (--data, tfds:, or the stand-in) at the model's size; the env and
the peak are measured as for any run, with the stability guard's bursts; the reference is timed in this
process (tf, or onnxruntime for an ONNX file); then the other runtimes and the LoadGen scenarios run as
`infer RUN_DIR` runs them (harness.infer.measure). The record's `train` holds no epoch: nothing was trained.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from l40sbench.classify import given_model
from l40sbench.classify.config import ClassifyConfig
from l40sbench.core.results import DatasetInfo, InferenceResult, RunResult, RuntimeResult, TrainResult
from l40sbench.core.task import Save
from l40sbench.core.text import Log
from l40sbench.errors import UserError

ONNX_REFERENCE = "onnxruntime"
NO_TRAINING = "infer --model: the file timed as it is, nothing trained"


def _size(given: given_model.GivenModel, asked: int | None) -> int:
    """The image size to feed: --image-size where the model takes any, else the model's own.

    Raises:
      UserError: --image-size differs from the size the model declares.
    """
    if given.size is not None and asked is not None and asked != given.size:
        raise UserError(f"--image-size {asked}: {given.path.name} takes {given.size} px images only")
    return given.size or asked or given_model.ANY_SIZE


def _onnx_reference(given: given_model.GivenModel, images: list, warmup: int, sync, log: Log):
    """onnxruntime in this process as the reference of an ONNX file: (its row without scores, its outputs)."""
    import numpy as np

    from l40sbench.core.timing import probe_latency
    from l40sbench.runtimes.export import size_mb
    from l40sbench.runtimes.measure import threads
    from l40sbench.runtimes.registry import load

    loaded = load(ONNX_REFERENCE, given.path, "fp32", threads(), "fp32")
    outputs: list = []

    def predict(image):
        outputs.append(next(iter(loaded.call(image).values())))
        return outputs[-1]

    log(f"{ONNX_REFERENCE} (reference): {len(images)} test images one at a time, first {warmup} excluded ...")
    stats = probe_latency(predict, images, warmup=warmup, sync=sync)
    row = RuntimeResult(runtime=ONNX_REFERENCE, status="ok", version=loaded.version, exporter=given.exporter,
                        artifact=str(given.path), size_mb=size_mb(given.path), precision_requested="fp32",
                        precision=loaded.precision, threads=loaded.threads, settings=loaded.settings,
                        inference=InferenceResult.from_stats(stats, warmup=warmup, batch_size=1), device=loaded.device)
    return row, np.concatenate(outputs)


def _reference(given, model, artifact: Path, test, config: ClassifyConfig, sync, log: Log) -> tuple:
    """(reference row, workload, scores, note): tf on the Keras model in this process, or onnxruntime on the file;
    `artifact` is what a child loads to time tf again (tf with the GPUs hidden, LoadGen's tf tests)."""
    from l40sbench.classify import runtimes as cl_runtimes
    from l40sbench.classify.task import measure_inference
    from l40sbench.runtimes import agreement
    from l40sbench.runtimes.measure import Workload

    if model is not None:
        log(f"tf (reference): {len(test.y['test'])} test images one at a time, first {config.warmup} excluded ...")
        probe = measure_inference(model, test, config, sync)
        if probe.outputs is None:
            raise UserError("the test split is empty: nothing to time")
        outputs, inference = probe.outputs, probe.inference
    else:
        row, outputs = _onnx_reference(given, [image[None] for image in test.x["test"]], config.warmup, sync, log)
        inference = row.inference
    labels, note = given_model.labels_for(outputs, test.y["test"], len(test.classes))
    scores = agreement.classification(outputs, outputs, labels)
    if model is not None:
        reference = cl_runtimes.reference_row(inference, outputs, labels, artifact, "fp32", False, given.exporter)
        return reference, cl_runtimes.workload(model, test.x["test"], labels, outputs, config.warmup, "fp32"), scores, note
    base = cl_runtimes.workload(None, test.x["test"], labels, outputs, config.warmup, "fp32")
    work = Workload(base.images, given_model.onnx_export(given), base.score, base.mismatch, base.warmup, "fp32")
    return dataclasses.replace(row, accuracy=scores), work, scores, note


def _model_facts(given, model, size: int) -> dict:
    from l40sbench.classify import own_model

    return {"name": given.name, "input_size": size, "kind": given.kind, "file": own_model.facts(given.path),
            "parameters": int(model.count_params()) if model is not None else None, "given": NO_TRAINING}


def _utilisation(model, size: int, peak: dict, inference: InferenceResult, kind: str) -> dict:
    """Inference's GFLOP/s over the peak, by the one convention (a TensorFlow graph's count); none for ONNX."""
    from l40sbench.backends import tensorflow as ops
    from l40sbench.core.utilisation import run_utilisation

    if model is None:
        return {"flop_counter": "none: the suite counts FLOPs on TensorFlow graphs, not ONNX files"}
    try:
        forward = ops.forward_gflops(model, size, "uint8")
    except ValueError as exc:
        return {"flop_counter": f"{ops.FLOP_COUNTER}: utilisation unavailable ({exc})"}
    return {"flop_counter": ops.FLOP_COUNTER, **run_utilisation(
        peak, "fp32", forward, train_gflops_per_image=None, train_convention="", train_images_per_second=None,
        inference_images_per_second=inference.images_per_second, devices=1, device_kind=kind)}


def infer_model(given: given_model.GivenModel, config: ClassifyConfig, names: tuple[str, ...], precision: str, *,
                log: Log, save: Save, load=None) -> dict:
    """Times the file on `names` (and under `load`'s LoadGen scenarios) into config.output_dir; saves the record
    after the reference and after each row, and returns it.

    Raises:
      UserError: a file that does not load, data that cannot be read, --image-size against the model's own.
      KeyboardInterrupt: after what was measured was saved.
    """
    from l40sbench import backends
    from l40sbench.backends.tf_device import device_sync, devices
    from l40sbench.classify.task import load_dataset
    from l40sbench.core import env as env_mod
    from l40sbench.core.stability import verdict
    from l40sbench.harness.infer import check_loadgen, measure
    from l40sbench.peak.burst import START_WARM_SECONDS, Guard, warm_target
    from l40sbench.peak.measure import measure_env
    from l40sbench.runtimes.registry import resolve

    runtimes = resolve(names)
    if load is not None:
        check_loadgen()
    backends.select("tensorflow")
    log(f"loading {given.path} ({given.kind}) ...")
    model = None
    if given.kind != "onnx":
        model, given = given_model.keras_model(given)
    size = _size(given, config.image_size)
    config = dataclasses.replace(config, image_size=size)
    images, source = load_dataset(config, size, log)
    artifact = given.path  # a SavedModel's children load it as it is, its signature fed its own type
    if given.kind == "keras":  # the folder holds its model as a classify run's does: `infer RUN_DIR` times it again
        from l40sbench.classify.runtimes import MODEL_FILE

        artifact = Path(config.output_dir) / MODEL_FILE
        model.save(artifact)  # uint8 in: what every child of tf loads
    sync = device_sync()
    kind = devices()[0].kind
    env = {**env_mod.fingerprint(backends.facts()), "peak": measure_env(sync=sync, log=log)}
    guard = Guard("tensorflow", sync)
    guard.check("start", START_WARM_SECONDS, warm_target(env["peak"], guard.n))
    if given.kind == "onnx" and "tf" in names:
        log("tf: cannot load an ONNX file (nothing converts from ONNX here); onnxruntime is the reference")
    reference, work, scores, note = _reference(given, model, artifact, images, config, sync, log)
    guard.check("after the probe")  # the reference's figures stand between two bursts, as a run's epochs do
    if note:
        log(note)
    stability = verdict([b.to_dict() for b in guard.bursts],
                        {"per-image latency": (list(reference.inference.times_ms), " ms")}, [], kind=kind)
    record = RunResult(
        task="classify", base=given.name, complete=True, config=config.to_dict(), env=env,
        dataset=DatasetInfo(source=source, train_images=int(len(images.y["train"])),
                            test_images=int(len(images.y["test"])), classes=images.counts,
                            skipped_files=images.skipped_files),
        train=TrainResult(epochs=0, batch_size=config.batch_size, epoch_seconds=(), total_seconds=0.0,
                          first_epoch_seconds=None, steady_epoch_seconds=None),
        weights=f"the file's own ({given.path})", model=_model_facts(given, model, size),
        inference=reference.inference, accuracy={"test_accuracy": scores["test_accuracy"]},
        notes={"given_model": NO_TRAINING, "reference_runtime": reference.runtime,
               **({"accuracy": note} if note else {})},
        utilisation=_utilisation(model, size, env["peak"], reference.inference, kind),
        devices={"count": 1, "kind": kind, "inference": "one device: the latency probe serves one image at a time"},
        stability=stability,
    ).to_dict()
    save(record)
    return measure(Path(config.output_dir), record, reference, work, runtimes, precision, log=log, save=save,
                   load=load, names=names)
