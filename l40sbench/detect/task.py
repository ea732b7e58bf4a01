"""The detection task: VOC data -> TFRecords -> a Model Garden detector trained step by step -> the
serving signature timed per image, its stages in rotation -> pycocotools mAP.

What differs from classification lives here and in detect/garden.py (Model Garden's side); the harness
(l40sbench.harness) runs it and owns every clock.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from l40sbench.backends.tf_flops import COUNTER
from l40sbench.core.records import to_json, write_atomic, written_whole
from l40sbench.core.results import DatasetInfo, InferenceResult
from l40sbench.core.task import Built, Data, Flops, Probe
from l40sbench.core.text import Log
from l40sbench.core.timing import probe_interleaved, probe_latency
from l40sbench.data import voc
from l40sbench.data.images import decode_rgb
from l40sbench.detect import garden
from l40sbench.detect import runtimes as det_runtimes
from l40sbench.detect.bases import DETECTORS
from l40sbench.detect.config import ARTICLE_EPOCHS, DetectConfig, check_paths
from l40sbench.detect.data import load_annotations
from l40sbench.detect.evaluate import coco_ground_truth, evaluate
from l40sbench.detect.runtimes import coco_detections
from l40sbench.errors import UserError
from l40sbench.runtimes.child import stack_outputs

TRAIN_CONVENTION = f"counted: {garden.TRAIN_COUNTER}"


@dataclass(frozen=True)
class Splits:
    """The annotations a run trains and tests on, --limit applied."""

    train: list
    test: list
    classes: tuple[str, ...]


@dataclass(frozen=True)
class Probed:
    """What the tf probe saw, for the other runtimes: the decoded images, tf's outputs, the ground truth."""

    images: list
    tf_outputs: dict
    ground_truth: dict


@dataclass(frozen=True)
class Trainer:
    """The built detector's Model Garden side: its experiment, task and optimizer, one training step, the loss
    components, and where it trains."""

    experiment: object
    task: object
    optimizer: object
    placement: object
    step: object
    metrics: list
    steps_per_epoch: int
    components: dict  # metric name -> its value per epoch (the record's notes hold it)
    on_batch: object = None  # the step on a given batch -> its loss (one device), for the bound block


def measure_inference(serving, test, classes, config: DetectConfig, sync, notes: dict, log: Log) -> Probe:
    """Per-image latency of the serving signature, its stages timed in rotation, and mAP."""
    import tensorflow as tf

    _, signatures, preprocess, forward = serving
    serve = signatures[garden.SIGNATURE]
    images = [tf.convert_to_tensor(decode_rgb(a.image_path.read_bytes())[None]) for a in test]
    prepared: list = []  # the timed preprocess feeds the model probe that follows it on the same image
    outputs: list = []

    def run_preprocess(i: int):
        out = preprocess(images[i])
        prepared.append(out)  # kept as tensors: numpy inputs would retrace `forward` per image
        return garden.host(out)  # waits for the values

    def run_total(i: int):
        outputs.append(garden.host(serve(images[i])))
        return outputs[-1]

    def progress(done: int, seconds: float) -> None:
        if done % 10 == 0:
            log(f"  inference {done}/{len(images)} images  ETA {seconds / done * (len(images) - done):.0f} s")

    stats = probe_interleaved(
        {
            "preprocess": run_preprocess,  # first in each rotation: prepared[i] exists when the model runs
            "model_with_postprocess": lambda i: garden.host(forward(*prepared[i])),
            "total": run_total,
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
    inference = InferenceResult.from_stats(stats["total"], warmup=config.warmup, batch_size=1, stages_mean_ms=stages)
    return Probe(inference, accuracy, (serving, Probed([image.numpy() for image in images], tf_outputs, ground_truth)))


def _rows(inference, probed: Probed, accuracy: dict, saved_model: Path, config: DetectConfig):
    reference = det_runtimes.reference_row(inference, probed.tf_outputs, accuracy, saved_model, config.precision,
                                           config.score_threshold)
    return reference, det_runtimes.workload(saved_model, probed.images, probed.tf_outputs, probed.ground_truth,
                                            config.score_threshold, config.warmup, config.precision,
                                            config.image_size)


class DetectTask:
    name = "detect"
    keras3 = False  # Model Garden builds with tf_keras (Keras 2)
    inference_call = "total"  # the interleaved probe's whole serving call

    def check(self, config: DetectConfig) -> DetectConfig:
        spec = DETECTORS.get(config.base)
        if config.image_size < spec.min_size:
            raise UserError(f"--image-size {config.image_size} is below {spec.name}'s minimum of {spec.min_size} "
                            f"(its coarsest feature level has a stride of {spec.min_size})")
        check_paths(config)
        return config

    def load(self, config: DetectConfig, log: Log) -> Data:
        train, test, classes, source, skipped, dropped = load_annotations(config, log)
        info = DatasetInfo(source=source, train_images=len(train), test_images=len(test),
                           classes={"train": voc.object_counts(train), "test": voc.object_counts(test)},
                           skipped_files=skipped)
        return Data(info, (Splits(train, test, classes), dropped))

    def build(self, config: DetectConfig, data: Data, placement, devices: dict, log: Log) -> Built:
        from l40sbench.backends.tensorflow import training_compile
        from l40sbench.backends.tf_device import has_gpu

        spec = DETECTORS.get(config.base)
        splits, dropped = data.splits
        log(f"loading TensorFlow and Model Garden, building {spec.name} at {config.image_size}x{config.image_size} ...")
        global_batch = devices["global_batch"]
        experiment, task, model = garden.task_and_model(spec, splits.classes, config, global_batch, splits.train,
                                                        splits.test, placement)
        components: dict[str, list[float]] = {}
        notes: dict = {"loss_components_per_epoch": components}
        if dropped:
            notes["images_dropped_without_selected_class"] = dropped
        epochs = config.epochs
        if epochs is None:
            epochs = ARTICLE_EPOCHS if has_gpu() else 1
            if epochs == 1:
                log(f"no GPU visible: training 1 epoch instead of the article's {ARTICLE_EPOCHS} "
                    "(give --epochs to choose)")
                notes["epochs_defaulted_for_cpu"] = True
        steps_per_epoch = math.ceil(len(splits.train) / global_batch)
        with placement.scope():
            optimizer = garden.optimizer(task, experiment, global_batch, epochs * steps_per_epoch)
            step, metrics, on_batch = garden.train_step(task, experiment, model, optimizer, placement, config.xla,
                                                        config.input_threads)
        devices["compile"] = {"training": training_compile(config.xla)[1],
                              "inference": "tf.function (the serving signature), no XLA"}
        classes = splits.classes
        model_info = {
            "name": spec.name, "architecture": spec.architecture, "model_garden_experiment": spec.experiment,
            "input_size": config.image_size, "num_classes": len(classes) + 1, "classes": list(classes),
            "parameters": int(sum(np.prod(w.shape) for w in model.weights)),
            "trainable_parameters": int(sum(np.prod(w.shape) for w in model.trainable_weights)),
            "steps_per_epoch": steps_per_epoch,
            # What --precision did: the dtypes the layers run in and keep weights in, and float16's loss scaling.
            "compute_dtype": model.compute_dtype, "variable_dtype": model.variable_dtype,
            "loss_scaling": type(optimizer).__name__ == "LossScaleOptimizer",
        }
        line = (f"training {epochs} epoch(s) of {steps_per_epoch} step(s), batch {global_batch}, "
                f"{len(splits.train)} images, {len(classes)} classes"
                + (f", on {placement.replicas} replicas ({', '.join(placement.names)})" if placement.strategy else "")
                + " ...")
        return Built(
            base=spec.name, model=model, config=dataclasses.replace(config, epochs=epochs, classes=classes),
            weights=f"checkpoint {config.init_checkpoint}" if config.init_checkpoint else "random",
            model_info=model_info, devices=devices, epochs=epochs,
            train_images_per_epoch=steps_per_epoch * global_batch, training_line=line, notes=notes,
            state=Trainer(experiment, task, optimizer, placement, step, metrics, steps_per_epoch, components, on_batch),
        )

    def train(self, built: Built, data: Data, loop) -> None:
        trainer = built.state
        for _ in range(built.epochs):
            for metric in trainer.metrics:
                metric.reset_state()
            loop.begin()
            losses = loop.steps(trainer.step, trainer.steps_per_epoch)
            for metric in trainer.metrics:
                trainer.components.setdefault(metric.name, []).append(float(metric.result()))
            loss = float(np.mean(losses))
            loop.end(loss, {"loss": loss, **{name: values[-1] for name, values in trainer.components.items()}})

    def bound_parts(self, built: Built, data: Data):
        from l40sbench.detect.bound import bound_parts

        return bound_parts(built, garden.train_inputs)

    def after_training(self, built: Built, train: dict, log: Log) -> None:
        from l40sbench.core.projection import projection

        if built.notes.get("epochs_defaulted_for_cpu"):
            projected, _, how = projection(train, ARTICLE_EPOCHS)
            built.notes["projected_article_protocol_seconds"] = projected
            log(f"projected time of the article's {ARTICLE_EPOCHS}-epoch protocol here: {projected / 3600:.1f} h "
                f"({how})")

    def probe(self, built: Built, data: Data, sync, log: Log) -> Probe:
        config, (splits, _) = built.config, data.splits
        log(f"inference: {len(splits.test)} test images one at a time through the serving function, "
            f"first {config.warmup} excluded ...")
        serving = garden.serving(built.state.experiment, built.model, config.image_size)
        return measure_inference(serving, splits.test, splits.classes, config, sync, built.notes, log)

    def flops(self, built: Built, probe: Probe) -> Flops:
        serving, _ = probe.outputs
        trainer = built.state
        train = garden.train_step_gflops(trainer.task, trainer.experiment, built.model, trainer.optimizer,
                                         trainer.metrics, trainer.placement)
        return Flops(garden.forward_gflops(serving, built.config.image_size), 3, TRAIN_CONVENTION, COUNTER,
                     train_gflops=train)

    def export(self, built: Built, data: Data, probe: Probe, log: Log):
        config = built.config
        saved_model = config.export or (config.output_dir / det_runtimes.SAVED_MODEL_DIR if config.output_dir else None)
        if saved_model is None:
            return None
        serving, probed = probe.outputs
        log(f"exporting the trained model as a SavedModel to {saved_model} (for `infer` and the other runtimes) ...")
        model, signatures, trainer = serving[0].model, serving[1], built.state
        if trainer.placement.workers > 1:
            model, signatures = garden.local_copy(trainer.experiment, trainer.task, model, config.image_size)
        with written_whole(saved_model) as partial:
            garden.save_serving(model, signatures, partial)
        built.notes["export_dir"] = str(saved_model.resolve())
        if config.output_dir is None:
            return None
        return _rows(probe.inference, probed, probe.accuracy, saved_model, config)

    def model_path(self, run_dir: Path, record: dict) -> Path:
        # The run folder's own copy first: the folder may have moved since export_dir was written.
        candidates = [run_dir / det_runtimes.SAVED_MODEL_DIR] + ([Path(record["notes"]["export_dir"])]
                                                                 if record["notes"].get("export_dir") else [])
        path = next((c for c in candidates if (c / "saved_model.pb").is_file()), candidates[-1])
        if not (path / "saved_model.pb").is_file():
            raise UserError(f"{run_dir} holds no fine-tuned model (a SavedModel at {path}): it was run before "
                            "models were kept, or without an output folder")
        return path

    def reload(self, record: dict, saved_model: Path, log: Log):
        import tensorflow as tf

        from l40sbench.backends.tf_device import device_sync

        config = DetectConfig.from_record(record["config"])
        _, test, classes, _, _, _ = load_annotations(config, log)
        if not test:
            raise UserError("the run's test split is empty: nothing to time")
        log(f"loading {saved_model} ...")
        serve = tf.saved_model.load(str(saved_model)).signatures[garden.SIGNATURE]
        images = [decode_rgb(a.image_path.read_bytes())[None] for a in test]
        outputs: list = []
        log(f"tf (reference): {len(images)} test images one at a time through the reloaded SavedModel, "
            f"first {config.warmup} excluded ...")
        stats = probe_latency(lambda image: outputs.append(garden.host(serve(tf.convert_to_tensor(image)))), images,
                              warmup=config.warmup, sync=device_sync())
        tf_outputs = stack_outputs(outputs)
        ground_truth = coco_ground_truth(test, classes)
        inference = InferenceResult.from_stats(stats, warmup=config.warmup, batch_size=1)
        accuracy = evaluate(ground_truth, coco_detections(tf_outputs, config.score_threshold))
        return _rows(inference, Probed(images, tf_outputs, ground_truth), accuracy, saved_model, config)

    def check_scenarios(self, load, record: dict) -> None:
        if max(load.batches) > 1:
            raise UserError("the detection SavedModel takes one image per call ([1, H, W, 3], each image its own "
                            "size): --max-batch-size must be 1 for a detect run; --workers K runs K calls at once")


TASK = DetectTask()
