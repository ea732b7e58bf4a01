"""One detection benchmark: VOC data -> TFRecords -> Model Garden task -> timed
epochs -> serving-path latency -> pycocotools mAP.

Model Garden does the modelling (configs, parser, losses, train_step, serving
module); this module is the thin adapter that hands its calls to the core
clocks. Library code: it reports through `log` and `save` only.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from l40sbench import paths, peak
from l40sbench.data import tfds_source
from l40sbench.core import env as env_mod
from l40sbench.core.records import to_json, write_atomic
from l40sbench.core.results import DatasetInfo, InferenceResult, RunResult, TrainResult
from l40sbench.core.timing import EpochClock, eta_seconds, probe_interleaved, probe_latency
from l40sbench.data import voc
from l40sbench.detect.bases import DETECTORS, experiment_config
from l40sbench.detect.config import ARTICLE_EPOCHS, DetectConfig
from l40sbench.detect import runtimes as det_runtimes
from l40sbench.detect.evaluate import coco_ground_truth, evaluate
from l40sbench.detect.runtimes import coco_detections
from l40sbench.detect.standin import ensure_standin
from l40sbench.errors import UserError
from l40sbench.runtimes.child import stack_outputs
from l40sbench.runtimes.measure import measure_runtimes
from l40sbench.runtimes.registry import resolve
from l40sbench.settings import COMPUTE_DTYPES
from l40sbench.data.images import decode_rgb

Log = Callable[[str], None]
Save = Callable[[dict], None]
BASE_LEARNING_RATE = 0.01  # per 16 images; SGD momentum 0.9, no tuning (as the article)
SIGNATURE = "serving_default"  # uint8 [1, H, W, 3] in; boxes, classes, scores, num_detections out
DETECTION_OUTPUTS = ("detection_boxes", "detection_classes", "detection_scores", "num_detections")


def standin_path() -> Path:
    return paths.datasets_dir() / "standin" / "fruits"


def load_annotations(config: DetectConfig, log: Log):
    """(train, test, classes, source, skipped files, images dropped per split) from --data (a VOC folder or
    a TFDS set) or the stand-in, --limit applied."""
    if tfds_source.is_tfds(config.data):
        ref = tfds_source.TfdsRef.parse(config.data, config.tfds_data_dir, config.tfds_splits)
        got = tfds_source.load_detection(ref, config.classes, strict=config.strict, cache_dir=paths.cache_dir(),
                                         log=log)
        return (_spread(got.train, config.limit), _spread(got.test, config.limit), got.classes, got.source,
                got.skipped_files, got.dropped)
    if config.data is None:
        root = ensure_standin(standin_path())
        log(f"data: generated stand-in for Kaggle 'Fruit Images for Object Detection' at {root} (not the real set)")
        source = "stand-in"
    else:
        root, source = Path(config.data), str(Path(config.data).resolve())
        if not root.is_dir():
            raise UserError(f"data directory not found: {root}")
    train, skipped_train = voc.load_split(root, "train", config.classes, log, config.strict)
    test, skipped_test = voc.load_split(root, "test", config.classes, log, config.strict)
    classes = config.classes or voc.class_names(train + test)
    if not classes:
        raise UserError(f"no objects in the annotations under {root}")
    return (_spread(train, config.limit), _spread(test, config.limit), tuple(classes), source,
            tuple(skipped_train + skipped_test), {})


def _spread(annotations: list, limit: int | None) -> list:
    """At most `limit` images, evenly spaced over the sorted files so every kind is kept."""
    if limit is None or limit >= len(annotations):
        return annotations
    return [annotations[i * len(annotations) // limit] for i in range(limit)]


def _check_checkpoint(path: str | None) -> None:
    if path is None:
        return
    # A TF checkpoint is a directory, a file, or a prefix whose .index file exists.
    if not (Path(path).exists() or Path(f"{path}.index").exists()):
        raise UserError(f"init checkpoint not found: {path}")


def _optimizer(task, experiment, batch_size: int, total_steps: int):
    from official.modeling import optimization

    rate = BASE_LEARNING_RATE * batch_size / 16
    optimizer_config = optimization.OptimizationConfig({
        "optimizer": {"type": "sgd", "sgd": {"momentum": 0.9, "global_clipnorm": 10.0}},
        "learning_rate": {"type": "constant", "constant": {"learning_rate": rate}},
        "warmup": {"type": "linear",
                   "linear": {"warmup_steps": max(1, min(100, total_steps // 10)), "warmup_learning_rate": rate / 10}},
    })
    return task.create_optimizer(optimizer_config, experiment.runtime)


def _train_step(task, experiment, model, optimizer, placement):
    """(one training step -> its loss, the loss-component metrics), called inside the placement's scope.

    One device: the task's own train_step in a tf.function, as always. Several: Model Garden's Trainer,
    which feeds each replica its share of the global batch (orbit's distributed dataset) and runs the
    task's train_step under strategy.run, the loss scaled by the replica count as the task does it.
    """
    import tensorflow as tf

    if placement.strategy is None:
        batches = iter(task.build_inputs(experiment.task.train_data))
        metrics = task.build_metrics(training=True)  # Model Garden's loss components, averaged per epoch
        step = tf.function(lambda inputs: task.train_step(inputs, model, optimizer, metrics=metrics))
        return (lambda: float(step(next(batches))["loss"])), metrics
    from official.core import base_trainer

    trainer = base_trainer.Trainer(experiment, task, model=model, optimizer=optimizer, train=True, evaluate=False)
    batches = iter(trainer.train_dataset)
    step = tf.function(lambda: trainer.train_step(batches))

    def run() -> float:
        trainer.train_loss.reset_state()  # a running mean: reset, it holds this step's loss alone
        step()
        return float(trainer.train_loss.result())

    return run, trainer.train_metrics


def _serving(experiment, model, image_size: int):
    """Model Garden's export module, its serving signature, and that signature's two stages.

    The signature timed here is the very concrete function --export saves, so
    the latency measured is the latency a deployed SavedModel serves.
    """
    import tensorflow as tf
    from official.vision.serving.detection import DetectionModule

    module = DetectionModule(experiment, batch_size=1, input_image_size=[image_size, image_size], model=model)
    signatures = module.get_inference_signatures({"image_tensor": SIGNATURE})
    preprocess = tf.function(module.preprocess, input_signature=[tf.TensorSpec([1, None, None, 3], tf.uint8)])

    @tf.function(autograph=False)  # straight-line code: nothing for AutoGraph to convert
    def forward(images, anchor_boxes, image_info):
        outputs = model.call(images=images, image_shape=image_info[:, 1, :], anchor_boxes=anchor_boxes, training=False)
        # What the serving signature hands back, and no more: the raw per-level outputs (and Faster
        # R-CNN's backbone features) copied to the host would make this stage slower than serving.
        return {key: outputs[key] for key in DETECTION_OUTPUTS}

    return module, signatures, preprocess, forward


def save_serving(model, signatures: dict, path: Path) -> None:
    """Writes a SavedModel of the serving signatures and the weights they read, and nothing else.

    Saving Model Garden's export module whole also writes every TF-Keras layer of
    the model with traced calls (for reloading it as a Keras model): 10 to 16 times
    as long at 128 px (26 to 55 s against 2 to 6 s, docs/PERFORMANCE.md section 16).
    The runtimes' converters and `infer` read the signature only, and its outputs
    are the same either way.
    """
    import tensorflow as tf

    root = tf.Module()
    root.weights = list(model.variables)  # tracked, so the signature's captured variables are saved
    tf.saved_model.save(root, str(path), signatures=signatures)


def _numpy(structure):
    """Host copies of every tensor in a structure (this waits for all of them)."""
    import tensorflow as tf

    return tf.nest.map_structure(lambda t: t.numpy(), structure)


def _measure_inference(serving, test, classes, config: DetectConfig, sync, notes: dict, log: Log):
    """Per-image latency of the serving signature, its stages timed in rotation, and mAP."""
    import tensorflow as tf

    _, signatures, preprocess, forward = serving
    serve = signatures[SIGNATURE]
    images = [tf.convert_to_tensor(decode_rgb(a.image_path.read_bytes())[None]) for a in test]
    prepared: list = []  # the timed preprocess feeds the model probe that follows it on the same image
    outputs: list = []

    def run_preprocess(i: int) -> None:
        out = preprocess(images[i])
        _numpy(out)  # waits for the values
        prepared.append(out)  # kept as tensors: numpy inputs would retrace `forward` per image

    def progress(done: int, seconds: float) -> None:
        if done % 10 == 0:
            log(f"  inference {done}/{len(images)} images  ETA {seconds / done * (len(images) - done):.0f} s")

    stats = probe_interleaved(
        {
            "preprocess": run_preprocess,  # first in each rotation: prepared[i] exists when the model runs
            "model_with_postprocess": lambda i: _numpy(forward(*prepared[i])),
            "total": lambda i: outputs.append(_numpy(serve(images[i]))),
        },
        range(len(images)), warmup=config.warmup, sync=sync,
        progress=progress,
    )
    tf_outputs = stack_outputs(outputs)
    detections = coco_detections(tf_outputs, config.score_threshold)
    ground_truth = coco_ground_truth(test, classes)
    if config.output_dir is not None:  # what was scored, for any COCO tool to score again
        write_atomic(config.output_dir / "coco_ground_truth.json", to_json(ground_truth))
        write_atomic(config.output_dir / "coco_detections.json", to_json(detections))
    accuracy = evaluate(ground_truth, detections)
    stages = {name: stat.mean_ms for name, stat in stats.items()}
    if stages["model_with_postprocess"]:
        notes["serving_over_model"] = stages["total"] / stages["model_with_postprocess"]
        notes["preprocess_share"] = stages["preprocess"] / stages["total"]
    total = stats["total"]
    inference = InferenceResult.from_stats(total, warmup=config.warmup, batch_size=1, stages_mean_ms=stages)
    return inference, accuracy, Probed([image.numpy() for image in images], tf_outputs, ground_truth)


@dataclass(frozen=True)
class Probed:
    """What the tf probe saw, for the other runtimes: the decoded images, tf's outputs, the ground truth."""

    images: list
    tf_outputs: dict
    ground_truth: dict


def _forward_gflops(serving, image_size: int) -> float:
    """GFLOP of the detector's forward pass (model.call on one preprocessed image; NMS is not arithmetic)."""
    import tensorflow as tf

    from l40sbench.flops import graph_gflops

    _, _, preprocess, forward = serving
    prepared = preprocess(tf.zeros([1, image_size, image_size, 3], tf.uint8))
    return graph_gflops(forward.get_concrete_function(*prepared).graph)


def _check_export_dir(path: Path | None) -> None:
    """An export goes to a new or empty directory that can be made now, before any training."""
    if path is None:
        return
    if path.exists() and not (path.is_dir() and not any(path.iterdir())):
        raise UserError(f"export directory must be new or empty: {path}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create export directory {path}: {exc.strerror}") from None


def run_detect(config: DetectConfig, *, log: Log, save: Save) -> RunResult:
    """Runs the protocol; calls save() after every epoch and at the end.

    Raises:
      UserError: bad data, flags or checkpoint path.
      KeyboardInterrupt: re-raised after the finished epochs were saved.
    """
    spec = DETECTORS.get(config.base)
    if config.image_size < spec.min_size:
        raise UserError(f"--image-size {config.image_size} is below {spec.name}'s minimum of {spec.min_size} "
                        f"(its coarsest feature level has a stride of {spec.min_size})")
    _check_checkpoint(config.init_checkpoint)
    _check_export_dir(config.export)
    from l40sbench.tf_device import device_sync, has_gpu, place_early, place_for

    placement = place_early(config)
    train, test, classes, source, skipped, dropped = load_annotations(config, log)
    dataset = DatasetInfo(
        source=source, train_images=len(train), test_images=len(test),
        classes={"train": voc.object_counts(train), "test": voc.object_counts(test)}, skipped_files=skipped,
    )

    log(f"loading TensorFlow and Model Garden, building {spec.name} at {config.image_size}x{config.image_size} ...")
    import tensorflow as tf
    from official import vision  # noqa: F401  (registers Model Garden's experiments and tasks)
    from official.core import task_factory
    from official.modeling import performance

    from l40sbench.detect.tfrecords import cached_tfrecord

    placement = placement or place_for(config)
    devices = placement.record(config.batch_size)
    global_batch = devices["global_batch"]
    tf.keras.utils.set_random_seed(config.seed)
    dtype = COMPUTE_DTYPES[config.precision]
    performance.set_mixed_precision_policy(dtype)
    cache = paths.cache_dir()
    experiment = experiment_config(
        spec, num_classes=len(classes), image_size=config.image_size, batch_size=global_batch,
        train_path=str(cached_tfrecord(train, classes, cache, "train")),
        eval_path=str(cached_tfrecord(test, classes, cache, "test")),
        init_checkpoint=config.init_checkpoint,
    )
    experiment.runtime.mixed_precision_dtype = dtype
    task = task_factory.get_task(experiment.task)
    with placement.scope():
        model = task.build_model()
        task.initialize(model)

    components: dict[str, list[float]] = {}
    notes: dict = {"loss_components_per_epoch": components}
    if dropped:
        notes["images_dropped_without_selected_class"] = dropped
    epochs = config.epochs
    if epochs is None:
        epochs = ARTICLE_EPOCHS if has_gpu() else 1
        if epochs == 1:
            log(f"no GPU visible: training 1 epoch instead of the article's {ARTICLE_EPOCHS} (give --epochs to choose)")
            notes["epochs_defaulted_for_cpu"] = True
    steps_per_epoch = math.ceil(len(train) / global_batch)
    with placement.scope():
        optimizer = _optimizer(task, experiment, global_batch, epochs * steps_per_epoch)
        train_step, metrics = _train_step(task, experiment, model, optimizer, placement)

    sync = device_sync()
    clock = EpochClock(sync=sync)
    losses: list[float] = []
    effective = dataclasses.replace(config, epochs=epochs, classes=classes).to_dict()
    env = {**env_mod.fingerprint(), "peak": peak.measure_env(sync=sync, log=log)}
    model_info = {
        "name": spec.name, "architecture": spec.architecture, "model_garden_experiment": spec.experiment,
        "input_size": config.image_size, "num_classes": len(classes) + 1, "classes": list(classes),
        "parameters": int(sum(np.prod(w.shape) for w in model.weights)), "steps_per_epoch": steps_per_epoch,
        # What --precision did: the dtypes the layers run in and keep weights in, and float16's loss scaling.
        "compute_dtype": model.compute_dtype, "variable_dtype": model.variable_dtype,
        "loss_scaling": type(optimizer).__name__ == "LossScaleOptimizer",
    }
    weights = f"checkpoint {config.init_checkpoint}" if config.init_checkpoint else "random"
    wall: dict[str, float] = {}
    wall_at_epoch: list[float] = []

    def record(complete: bool, inference=None, accuracy=None, utilisation=None) -> RunResult:
        return RunResult(
            task="detect", base=spec.name, complete=complete, config=effective, env=env, dataset=dataset,
            train=TrainResult.from_times(clock.summary(), config.batch_size, losses,
                                         wall_seconds=wall.get("seconds"), wall_seconds_at_epoch=wall_at_epoch),
            weights=weights, model=model_info, inference=inference, accuracy=accuracy or {}, notes=notes,
            utilisation=utilisation or {}, devices=devices,
        )

    save(record(False).to_dict())
    log(f"training {epochs} epoch(s) of {steps_per_epoch} step(s), batch {global_batch}, "
        f"{len(train)} images, {len(classes)} classes"
        + (f", on {placement.replicas} replicas ({', '.join(placement.names)})" if placement.strategy else "") + " ...")
    before = [np.array(w) for w in model.trainable_weights]
    started = time.perf_counter()
    try:
        for epoch in range(epochs):
            for metric in metrics:
                metric.reset_state()
            clock.start()
            step_losses, step_seconds = [], []  # step times for the progress line only; the epoch clock measures
            for step in range(steps_per_epoch):
                begun = time.perf_counter()
                step_losses.append(train_step())
                step_seconds.append(time.perf_counter() - begun)
                if epoch == 0:
                    left = eta_seconds(step_seconds, steps_per_epoch - step - 1)
                    log(f"  epoch 1 step {step + 1}/{steps_per_epoch}: loss {step_losses[-1]:.4f}  "
                        f"{step_seconds[-1]:.1f} s  epoch ETA {left:.0f} s")
            seconds = clock.stop()
            losses.append(float(np.mean(step_losses)))
            wall_at_epoch.append(time.perf_counter() - started)
            for metric in metrics:
                components.setdefault(metric.name, []).append(float(metric.result()))
            eta = eta_seconds(clock.epoch_seconds, epochs - epoch - 1)
            parts = "  ".join(f"{name} {values[-1]:.4f}" for name, values in components.items())
            log(f"epoch {epoch + 1}/{epochs}: {seconds:.3f} s  loss {losses[-1]:.4f}  {parts}  ETA {eta:.0f} s")
            save(record(False).to_dict())
    except BaseException:
        wall["seconds"] = time.perf_counter() - started
        save(record(False).to_dict())
        raise
    sync()
    wall["seconds"] = time.perf_counter() - started
    devices.update(placement.after_training(model.trainable_weights, before))
    if notes.get("epochs_defaulted_for_cpu"):
        projected = clock.epoch_seconds[0] * ARTICLE_EPOCHS
        notes["projected_article_protocol_seconds"] = projected
        log(f"projected time of the article's {ARTICLE_EPOCHS}-epoch protocol here: {projected / 3600:.1f} h "
            "(from the first epoch, which includes tracing)")

    log(f"inference: {len(test)} test images one at a time through the serving function, "
        f"first {config.warmup} excluded ...")
    serving = _serving(experiment, model, config.image_size)
    inference, accuracy, probed = _measure_inference(serving, test, classes, config, sync, notes, log)
    train_result = record(False).train
    epoch_seconds = train_result.steady_epoch_seconds or train_result.first_epoch_seconds  # the first holds tracing
    utilisation = peak.run_utilisation(
        env["peak"], config.precision, _forward_gflops(serving, config.image_size),
        train_flops_per_forward=3, train_convention="3 x forward (every layer trains: forward, then gradients "
                                                    "for activations and weights)",
        train_images_per_second=steps_per_epoch * global_batch / epoch_seconds if epoch_seconds else None,
        inference_images_per_second=inference.images_per_second,
    )
    result = record(True, inference, accuracy, utilisation)
    save(result.to_dict())
    saved_model = config.export or (config.output_dir / det_runtimes.SAVED_MODEL_DIR if config.output_dir else None)
    if saved_model is None:
        return result
    log(f"exporting the trained model as a SavedModel to {saved_model} (for `infer` and the other runtimes) ...")
    save_serving(serving[0].model, serving[1], saved_model)
    notes["export_dir"] = str(saved_model.resolve())
    result = record(True, inference, accuracy, utilisation)
    save(result.to_dict())
    if config.output_dir is None:
        return result
    reference = det_runtimes.reference_row(inference, probed.tf_outputs, accuracy, saved_model, config.precision,
                                           config.score_threshold)
    work = det_runtimes.workload(saved_model, probed.images, probed.tf_outputs, probed.ground_truth,
                                 config.score_threshold, config.warmup, config.precision)

    def on_row(rows) -> None:
        save(record(True, dataclasses.replace(inference, runtimes=rows), accuracy, utilisation).to_dict())

    rows = measure_runtimes(resolve(config.runtimes), work, config.runtime_precision,
                            config.output_dir / "runtimes", reference, log, on_row)
    return record(True, dataclasses.replace(inference, runtimes=rows), accuracy, utilisation)


def infer_setup(record: dict, saved_model: Path, log: Log):
    """(tf reference row, workload) for `infer`: the run's SavedModel reloaded and probed again on tf."""
    import tensorflow as tf

    from l40sbench.runtimes.infer import config_from_record
    from l40sbench.tf_device import device_sync

    config = config_from_record(DetectConfig, record["config"])
    _, test, classes, _, _, _ = load_annotations(config, log)
    if not test:
        raise UserError("the run's test split is empty: nothing to time")
    log(f"loading {saved_model} ...")
    serve = tf.saved_model.load(str(saved_model)).signatures[SIGNATURE]
    images = [decode_rgb(a.image_path.read_bytes())[None] for a in test]
    outputs: list = []
    log(f"tf (reference): {len(images)} test images one at a time through the reloaded SavedModel, "
        f"first {config.warmup} excluded ...")
    stats = probe_latency(lambda image: outputs.append(_numpy(serve(tf.convert_to_tensor(image)))), images,
                          warmup=config.warmup, sync=device_sync())
    tf_outputs = stack_outputs(outputs)
    ground_truth = coco_ground_truth(test, classes)
    inference = InferenceResult.from_stats(stats, warmup=config.warmup, batch_size=1)
    accuracy = evaluate(ground_truth, coco_detections(tf_outputs, config.score_threshold))
    reference = det_runtimes.reference_row(inference, tf_outputs, accuracy, saved_model, config.precision,
                                           config.score_threshold)
    return reference, det_runtimes.workload(saved_model, images, tf_outputs, ground_truth, config.score_threshold,
                                            config.warmup, config.precision)
