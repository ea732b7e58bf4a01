"""`infer --model PATH`: a model file timed as it is, without training, into a run folder of a classify run's
shape (harness.given_classifier), or of a detect run's for a detector (harness.given_detector).

The data are read as the task reads them (--data, tfds:, or the stand-in); the env and the peak are measured as
for any run, with the stability guard's bursts; the reference is timed in this process (tf, or onnxruntime for
an ONNX file); then the other runtimes and the LoadGen scenarios run as `infer RUN_DIR` runs them
(harness.infer.measure). The record's `train` holds no epoch: nothing was trained.
"""

from __future__ import annotations

from pathlib import Path

from l40sbench.core.results import RunResult, TrainResult
from l40sbench.core.task import Save
from l40sbench.core.text import Log
from l40sbench.harness.given_file import NO_TRAINING
from l40sbench.modelfile.files import ModelFile


def infer_model(given: ModelFile, config, names: tuple[str, ...], precision: str, *, log: Log, save: Save,
                load=None, label_map: Path | None = None, nms_iou: float | None = None) -> dict:
    """Times the file on `names` (and under `load`'s LoadGen scenarios) into config.output_dir; saves the record
    after the reference and after each row, and returns it. `config`: a ClassifyConfig, or a DetectConfig for
    a detector file (given.task "detect", whose classes `label_map` names; a YOLO head's NMS at `nms_iou`).

    Raises:
      UserError: a file that does not load, data that cannot be read, --image-size against the model's own.
      KeyboardInterrupt: after what was measured was saved.
    """
    from l40sbench import backends
    from l40sbench.backends.tf_device import device_sync, devices
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
    log(f"loading {given.path} ({given.kind}{', a detector' if given.task == 'detect' else ''}) ...")
    if given.task == "detect":
        from l40sbench.harness.given_detector import detector
        prepared = detector(given, config, load, label_map, log, nms_iou)
    else:
        from l40sbench.harness.given_classifier import classifier

        prepared = classifier(given, config, load, log)
    config = prepared.config
    sync = device_sync()
    kind = devices()[0].kind
    env = {**env_mod.fingerprint(backends.facts()), "peak": measure_env(sync=sync, log=log)}
    guard = Guard("tensorflow", sync)
    guard.check("start", START_WARM_SECONDS, warm_target(env["peak"], guard.n))
    if given.kind == "onnx" and "tf" in names:
        log("tf: cannot load an ONNX file (nothing converts from ONNX here); onnxruntime is the reference")
    reference, work, accuracy, note = prepared.reference(sync, log)
    guard.check("after the probe")  # the reference's figures stand between two bursts, as a run's epochs do
    if note:
        log(note)
    stability = verdict([b.to_dict() for b in guard.bursts],
                        {"per-image latency": (list(reference.inference.times_ms), " ms")}, [], kind=kind)
    record = RunResult(
        task=prepared.task, base=given.name, complete=True, config=config.to_dict(), env=env,
        dataset=prepared.dataset,
        train=TrainResult(epochs=0, batch_size=config.batch_size, epoch_seconds=(), total_seconds=0.0,
                          first_epoch_seconds=None, steady_epoch_seconds=None),
        weights=f"the file's own ({given.path})", model=prepared.model, inference=reference.inference,
        accuracy=accuracy, notes={"given_model": NO_TRAINING, "reference_runtime": reference.runtime,
                                  **({"accuracy": note} if note else {})},
        utilisation=prepared.utilisation(env["peak"], reference.inference, kind),
        devices={"count": 1, "kind": kind, "inference": "one device: the latency probe serves one image at a time"},
        stability=stability,
    ).to_dict()
    save(record)
    return measure(Path(config.output_dir), record, reference, work, runtimes, precision, log=log, save=save,
                   load=load, names=names)
