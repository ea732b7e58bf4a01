"""The classification task: a keras.applications base fine-tuned on a folder-per-class set (or TFDS),
then the test images one at a time through the compiled forward, scored for accuracy.

What differs from detection lives here; the harness (l40sbench.harness) runs it and owns every clock.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from l40sbench import paths
from l40sbench.classify import inputs, train_flops
from l40sbench.classify import runtimes as cl_runtimes
from l40sbench.classify.config import ClassifyConfig
from l40sbench.classify.model import build_base, build_classifier, file_facts, file_scaling, spec_for
from l40sbench.classify.probe import TEST_METRIC, measure_inference
from l40sbench.classify.standin import ensure_standin, standin_path
from l40sbench.core.records import written_whole
from l40sbench.core.results import DatasetInfo
from l40sbench.core.task import Built, Data, Flops, Probe
from l40sbench.core.text import Log
from l40sbench.data import folders, tfds_source
from l40sbench.data.images import MODEL_CALL
from l40sbench.errors import UserError
from l40sbench.settings import keras_policy

# Measured here (vgg19, 96 px, 2 logical CPU devices): evaluate() between fit epochs under MirroredStrategy
# made a later epoch take 17 s instead of 3 (the step traced again), and even a plain compiled forward
# between epochs slowed the next ones by half; across hosts evaluate does not run at all (across_hosts).
SCORING_UNDER_A_STRATEGY = ("per-epoch test scoring is skipped under a tf.distribute strategy: between epochs it "
                            "slows the next epochs (an epoch traced again); the test split is scored once, after "
                            "training, by the latency probe")


def resolve_data(config: ClassifyConfig, log: Log) -> tuple[folders.Layout, str]:
    """The layout to train on and its `source` label for the result."""
    if config.data is None:
        root = ensure_standin(standin_path())
        log(f"data: generated stand-in for Kaggle 'Cats and Dogs image classification' at {root} (not the real set)")
        return folders.scan(root), "stand-in"
    return folders.scan(config.data), str(Path(config.data).resolve())


def load_dataset(config: ClassifyConfig, image_size: int, log: Log,
                 files: list | None = None) -> tuple[folders.ImageSet, str]:
    """Both splits decoded at image_size (through the decoded cache), and the data's `source` label; a list
    given as `files` receives each split's files (inputs.split_files) where the data is a folder."""
    if tfds_source.is_tfds(config.data):
        ref = tfds_source.TfdsRef.parse(config.data, config.tfds_data_dir, config.tfds_splits)
        return tfds_source.load_classification(ref, image_size, limit=config.limit, strict=config.strict,
                                               cache_dir=paths.cache_dir(), log=log)
    layout, source = resolve_data(config, log)
    layout = layout.limited(config.limit)
    images = folders.load_images(layout, image_size, strict=config.strict, cache_dir=paths.cache_dir(), log=log)
    if files is not None:
        files.append(inputs.split_files(layout, images.skipped_files))
    return images, source


def resolve_image_size(config: ClassifyConfig) -> int:
    spec = spec_for(config.base, config.model)
    size = config.image_size or spec.default_size
    if size < spec.min_size:
        raise UserError(f"--image-size {size} is below {spec.name}'s minimum of {spec.min_size}")
    if spec.path is not None and spec.min_size == spec.default_size and size != spec.default_size:
        raise UserError(f"--image-size {size}: {spec.name} takes {spec.default_size} px images only")
    return size


def _set_up_keras(config: ClassifyConfig) -> None:
    import keras

    from l40sbench.backends import set_random_seed

    set_random_seed(config.seed)
    keras.mixed_precision.set_global_policy(keras_policy(config.precision))


def epoch_callback(begin: Callable[[], None], end: Callable[[int, dict], None]):
    """A Keras callback that hands epoch boundaries on: begin() and end(epoch index, Keras' logs).
    It reads no clock itself."""
    import keras

    class EpochBoundaries(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            begin()

        def on_epoch_end(self, epoch, logs=None):
            end(epoch, dict(logs or {}))

    return EpochBoundaries()


def compiled_model(config: ClassifyConfig, image_size: int, num_classes: int, log: Log, placement=None):
    """Returns (compiled model, weights label), built and compiled under `placement`'s strategy if any;
    imports the backend on first use."""
    import contextlib

    from l40sbench.backends import load

    load(config.backend).version()  # heavy: the backend is imported once the inputs are known good
    _set_up_keras(config)
    import keras

    spec = spec_for(config.base, config.model)
    with placement.scope() if placement is not None else contextlib.nullcontext():
        base, weights_label = build_base(spec, image_size, config.weights, log)
        model = build_classifier(spec, base, image_size, num_classes, config.trainable_top_layers,
                                 file_scaling(config))
        model.compile(
            optimizer=keras.optimizers.Adam(1e-3),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            jit_compile=load(config.backend).training_compile(config.xla)[0],
        )
    return model, weights_label


def _train_convention(config: ClassifyConfig) -> tuple[int, str]:
    """(training FLOPs per forward, the convention in words) for the layers --fine-tune trains."""
    if config.trainable_top_layers is None:  # the base is frozen: no gradient flows through it
        return 1, "1 x forward (base frozen: forward only; the head's backward is negligible)"
    if config.trainable_top_layers < 0:
        return 3, "3 x forward (forward, then gradients for activations and weights)"
    return 3, train_flops.CONVENTION  # the top N base layers train: counted per layer (classify.train_flops)


class ClassifyTask:
    name = "classify"
    keras3 = True
    inference_call = MODEL_CALL  # the interleaved probe's call on the decoded image (classify.probe)

    def check(self, config: ClassifyConfig) -> ClassifyConfig:
        image_size = resolve_image_size(config)
        if config.weights not in ("imagenet", "none") and not Path(config.weights).is_file():
            raise UserError(f"weights file not found: {config.weights} (use imagenet, none or a file path)")
        file_scaling(config)  # a model file's batch and scaling, read before anything heavy is imported
        return dataclasses.replace(config, image_size=image_size)

    def load(self, config: ClassifyConfig, log: Log) -> Data:
        files: list = []
        images, source = load_dataset(config, config.image_size, log, files)
        info = DatasetInfo(source=source, train_images=int(len(images.y["train"])),
                           test_images=int(len(images.y["test"])), classes=images.counts,
                           skipped_files=images.skipped_files)
        return Data(info, images, files[0] if files else None)

    def build(self, config: ClassifyConfig, data: Data, placement, devices: dict, log: Log) -> Built:
        from l40sbench.backends import load

        ops = load(config.backend)
        spec = spec_for(config.base, config.model)
        log(f"loading {config.backend} and building {spec.name} at {config.image_size}x{config.image_size} ...")
        model, weights_label = compiled_model(config, config.image_size, len(data.splits.classes), log, placement)
        devices["compile"] = {"training": ops.training_compile(config.xla)[1],
                              "inference": ops.forward_label(config.xla)}
        if placement.strategy is not None:
            devices["per_epoch_test_scoring"] = SCORING_UNDER_A_STRATEGY
        model_info = {
            "name": model.name,
            "input_size": config.image_size,
            "parameters": int(model.count_params()),
            "trainable_parameters": int(sum(np.prod(w.shape) for w in model.trainable_weights)),
            "fine_tune": config.fine_tune,
        }
        model_info.update(file_facts(config, model))
        global_batch = devices["global_batch"]
        line = (f"training {config.epochs} epoch(s), batch {global_batch}, {data.info.train_images} images"
                + (f", {config.batch_size} per device on {placement.replicas} replicas "
                   f"({placement.facts['strategy']}: {', '.join(placement.names)})"
                   if placement.strategy is not None else "") + " ...")
        return Built(base=spec.name, model=model, config=config, weights=weights_label, model_info=model_info,
                     devices=devices, epochs=config.epochs, train_images_per_epoch=data.info.train_images,
                     training_line=line, test_metric=TEST_METRIC, state=placement)

    def train(self, built: Built, data: Data, loop) -> None:
        config, model, placement, images = built.config, built.model, built.state, data.splits

        def score() -> float:  # the epoch clock has stopped: scoring the test split is not epoch time
            return model.evaluate(images.x["test"], images.y["test"], batch_size=config.batch_size, verbose=0,
                                  return_dict=True)["accuracy"]

        def end(epoch: int, logs: dict) -> None:
            shown = {k: v for k, v in sorted(logs.items()) if isinstance(v, (int, float))}
            scored = config.epoch_scoring and placement.strategy is None  # see SCORING_UNDER_A_STRATEGY
            loop.end(logs.get("loss", float("nan")), shown, (TEST_METRIC, score) if scored else None)

        callback = epoch_callback(loop.begin, end)
        global_batch = built.devices["global_batch"]
        if placement.workers > 1:
            from l40sbench.classify.across_hosts import TRAINING_LOOP, fit_across_hosts

            built.devices["training_loop"] = TRAINING_LOOP
            fit_across_hosts(model, images.x["train"], images.y["train"], global_batch=global_batch,
                             epochs=config.epochs, strategy=placement.strategy, seed=config.seed, callback=callback)
            return
        model.fit(**self._fit_input(built, data, inputs.threads_for(config.input, config.input_threads)),
                  epochs=config.epochs, verbose=1 if sys.stdout.isatty() else 0,  # Keras draws its bar on stdout
                  callbacks=[callback])

    def _fit_input(self, built: Built, data: Data, threads: int | None) -> dict:
        config = built.config
        return inputs.fit_input(config.input, data.splits, data.feed, config.image_size,
                                built.devices["global_batch"], threads, config.seed)

    def bound_parts(self, built: Built, data: Data):
        placement, config = built.state, built.config
        several = (f"{placement.replicas} replicas step together under {placement.facts['strategy']}"
                   if placement.strategy is not None else "")
        threads = inputs.threads_for(config.input, config.input_threads)
        steps = -(-data.info.train_images // built.devices["global_batch"])
        return inputs.bound_parts(built.model, config.input, lambda n: self._fit_input(built, data, n),
                                  config.backend, steps, threads, several)

    def after_training(self, built: Built, train: dict, log: Log) -> None:
        pass

    def probe(self, built: Built, data: Data, sync, log: Log) -> Probe:
        log(f"inference: {data.info.test_images} test images one at a time, first {built.config.warmup} excluded ...")
        return measure_inference(built.model, data.splits, built.config, sync, (data.feed or {}).get("test"))

    def flops(self, built: Built, probe: Probe) -> Flops:
        from l40sbench.backends import load

        ops = load(built.config.backend)
        per_forward, convention = _train_convention(built.config)
        counter = ops.FLOP_COUNTER
        try:
            forward = ops.forward_gflops(built.model, built.config.image_size, "uint8")
        except ValueError as exc:  # a count that is not positive: no utilisation rather than a wrong one
            forward, counter = None, f"{counter}: utilisation unavailable ({exc})"
        train = None
        if convention == train_flops.CONVENTION and forward:
            base = next(layer for layer in built.model.layers if hasattr(layer, "layers"))  # the nested base
            train, _ = train_flops.fine_tune_gflops(base, forward)
        return Flops(forward, per_forward, convention, counter, train_gflops=train)

    def export(self, built: Built, data: Data, probe: Probe, log: Log):
        config = built.config
        if config.output_dir is None or probe.outputs is None or config.backend != "tensorflow":
            return None  # the other runtimes take their models through TensorFlow's exporters
        model_file = config.output_dir / cl_runtimes.MODEL_FILE
        log(f"saving the fine-tuned model to {model_file} (for `infer` and the other runtimes) ...")
        with written_whole(model_file) as partial:
            built.model.save(partial)
        return self._rows(built.model, data.splits, probe, model_file, config, (data.feed or {}).get("test"))

    def _rows(self, model, images: folders.ImageSet, probe: Probe, model_file: Path, config: ClassifyConfig,
              files=None):

        labels, _ = cl_runtimes.labels_for(probe.outputs, images.y["test"], len(images.classes))  # a given model's may not be
        reference = cl_runtimes.reference_row(probe.inference, probe.outputs, labels, model_file, config.precision,
                                              config.xla)
        return reference, cl_runtimes.workload(model, images.x["test"], labels, probe.outputs, config.warmup,
                                               config.precision, files.paths if files is not None else ())

    def model_path(self, run_dir: Path, record: dict) -> Path:
        path = run_dir / cl_runtimes.MODEL_FILE
        given = (record.get("model") or {}).get("file") if (record.get("notes") or {}).get("given_model") else None
        if not path.is_file() and given:
            raise UserError(f"{run_dir} timed {given['path']} as it was given: time it again with "
                            f"`infer --model {given['path']}`")
        if not path.is_file():
            raise UserError(f"{run_dir} holds no fine-tuned model ({cl_runtimes.MODEL_FILE}): it was run before "
                            "models were kept, or without an output folder")
        return path

    def reload(self, record: dict, model_file: Path, log: Log):
        import keras

        import l40sbench.backends.layers  # noqa: F401  (registers the Preprocess layer model.keras holds)
        from l40sbench.backends.tf_device import device_sync

        config = ClassifyConfig.from_record(record["config"])
        files: list = []
        images, _ = load_dataset(config, config.image_size, log, files)
        log(f"loading {model_file} ...")
        model = keras.saving.load_model(model_file)
        log(f"tf (reference): {len(images.y['test'])} test images one at a time, first {config.warmup} excluded ...")
        probe = measure_inference(model, images, config, device_sync(), files[0]["test"] if files else None)
        if probe.outputs is None:
            raise UserError("the run's test split is empty: nothing to time")
        return self._rows(model, images, probe, model_file, config, files[0]["test"] if files else None)

    def check_scenarios(self, load, record: dict) -> None:
        pass


TASK = ClassifyTask()
