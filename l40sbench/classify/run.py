"""One classification benchmark: data -> model -> timed fit -> accuracy -> latency probe.

The core owns every clock; this module only hands it callables. Library code:
it reports through `log` and `save` and never prints or exits.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

from l40sbench import paths, peak
from l40sbench.data import tfds_source
from l40sbench.data import folders as data_mod
from l40sbench.classify import runtimes as cl_runtimes
from l40sbench.classify.bases import BASES
from l40sbench.classify.config import ClassifyConfig
from l40sbench.classify.model import build_base, build_classifier
from l40sbench.classify.standin import ensure_standin
from l40sbench.core import env as env_mod
from l40sbench.core.results import DatasetInfo, InferenceResult, RunResult, TrainResult
from l40sbench.core.timing import EpochClock, eta_seconds, probe_latency
from l40sbench.errors import UserError
from l40sbench.runtimes.measure import measure_runtimes
from l40sbench.runtimes.registry import resolve
from l40sbench.settings import keras_policy

Log = Callable[[str], None]
Save = Callable[[dict], None]


def standin_path() -> Path:
    return paths.datasets_dir() / "standin" / "cats_and_dogs"


def resolve_data(config: ClassifyConfig, log: Log) -> tuple[data_mod.Layout, str]:
    """The layout to train on and its `source` label for the result."""
    if config.data is None:
        root = ensure_standin(standin_path())
        log(f"data: generated stand-in for Kaggle 'Cats and Dogs image classification' at {root} (not the real set)")
        return data_mod.scan(root), "stand-in"
    return data_mod.scan(config.data), str(Path(config.data).resolve())


def load_dataset(config: ClassifyConfig, image_size: int, log: Log) -> tuple[data_mod.ImageSet, str]:
    """Both splits decoded at image_size (through the decoded cache), and the data's `source` label."""
    if tfds_source.is_tfds(config.data):
        ref = tfds_source.TfdsRef.parse(config.data, config.tfds_data_dir, config.tfds_splits)
        return tfds_source.load_classification(ref, image_size, limit=config.limit, strict=config.strict,
                                               cache_dir=paths.cache_dir(), log=log)
    layout, source = resolve_data(config, log)
    images = data_mod.load_images(
        layout.limited(config.limit), image_size, strict=config.strict, cache_dir=paths.cache_dir(), log=log
    )
    return images, source


def resolve_image_size(config: ClassifyConfig) -> int:
    spec = BASES.get(config.base)
    size = config.image_size or spec.default_size
    if size < spec.min_size:
        raise UserError(f"--image-size {size} is below {spec.name}'s minimum of {spec.min_size}")
    return size


def _set_up_keras(config: ClassifyConfig) -> None:
    import keras

    from l40sbench.backends import set_random_seed

    set_random_seed(config.seed)
    keras.mixed_precision.set_global_policy(keras_policy(config.precision))


def _epoch_callback(clock: EpochClock, on_epoch: Callable[[int, float, dict], None]):
    import keras

    class EpochTimer(keras.callbacks.Callback):
        """Hands epoch boundaries to the core clock; it does no timing itself."""

        def on_epoch_begin(self, epoch, logs=None):
            clock.start()

        def on_epoch_end(self, epoch, logs=None):
            on_epoch(epoch, clock.stop(), dict(logs or {}))

    return EpochTimer()


def make_forward(model, image_size: int, xla: bool, backend: str = "tensorflow"):
    """The compiled single-image forward call that the latency probe times (the backend's own)."""
    from l40sbench.backends import load

    return load(backend).forward(model, image_size, xla)


def _compiled_model(config: ClassifyConfig, image_size: int, num_classes: int, log: Log, placement=None):
    """Returns (compiled model, weights label), built and compiled under `placement`'s strategy if any;
    imports the backend on first use."""
    import contextlib

    from l40sbench.backends import load

    load(config.backend).version()  # heavy: the backend is imported once the inputs are known good
    _set_up_keras(config)
    import keras

    spec = BASES.get(config.base)
    with placement.scope() if placement is not None else contextlib.nullcontext():
        base, weights_label = build_base(spec, image_size, config.weights, log)
        model = build_classifier(spec, base, image_size, num_classes, config.trainable_top_layers)
        model.compile(
            optimizer=keras.optimizers.Adam(1e-3),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            jit_compile=load(config.backend).training_compile(config.xla)[0],
        )
    return model, weights_label


def _measure_inference(model, images: data_mod.ImageSet, image_size: int, config: ClassifyConfig, sync):
    """Latency of the test images one at a time, and the accuracy of those same predictions."""
    forward = make_forward(model, image_size, config.xla, config.backend)
    probabilities: list[np.ndarray] = []
    stats = probe_latency(
        lambda image: probabilities.append(forward(image)), images.x["test"], warmup=config.warmup, sync=sync
    )
    if not probabilities:
        return stats, None, None
    stacked = np.stack(probabilities)
    return stats, float(np.mean(np.argmax(stacked, axis=1) == images.y["test"])), stacked


def _utilisation(model, config: ClassifyConfig, image_size: int, device_peak: dict, train: TrainResult,
                 train_images: int, inference: InferenceResult) -> dict:
    """Training and inference FLOP/s over the peak of the run's precision."""
    from l40sbench.backends import load

    forward_gflops = load(config.backend).forward_gflops
    if config.trainable_top_layers is None:  # the base is frozen: no gradient flows through it
        per_forward, convention = 1, "1 x forward (base frozen: forward only; the head's backward is negligible)"
    elif config.trainable_top_layers < 0:
        per_forward, convention = 3, "3 x forward (forward, then gradients for activations and weights)"
    else:
        per_forward, convention = 3, (f"at most 3 x forward (top {config.trainable_top_layers} base layers train: "
                                      "an upper bound)")
    epoch_seconds = train.steady_epoch_seconds or train.first_epoch_seconds  # the first holds tracing
    return {"flop_counter": load(config.backend).FLOP_COUNTER, **peak.run_utilisation(
        device_peak, config.precision, forward_gflops(model, image_size, "uint8"),
        train_flops_per_forward=per_forward, train_convention=convention,
        train_images_per_second=train_images / epoch_seconds if epoch_seconds else None,
        inference_images_per_second=inference.images_per_second,
    )}


# Measured here (vgg19, 96 px, 2 logical CPU devices): evaluate() between fit epochs under MirroredStrategy
# made a later epoch take 17 s instead of 3 (the step traced again), and even a plain compiled forward
# between epochs slowed the next ones by half; across hosts evaluate does not run at all (across_hosts).
SCORING_UNDER_A_STRATEGY = ("per-epoch test scoring is skipped under a tf.distribute strategy: between epochs it "
                            "slows the next epochs (an epoch traced again); the test split is scored once, after "
                            "training, by the latency probe")


def one_device(ops):
    """Where a run on another backend than tensorflow trains: its first device, no strategy."""
    from l40sbench.tf_device import Placement

    kind, name = ops.device()
    return Placement(None, 1, kind, (name,), facts={"strategy": f"none (one device; {ops.NAME})"})


def run_classify(config: ClassifyConfig, *, log: Log, save: Save) -> RunResult:
    """Runs the protocol; calls save() after every epoch and at the end.

    Raises:
      UserError: bad data, flags or weights file.
      KeyboardInterrupt: re-raised after the finished epochs were saved.
    """
    spec = BASES.get(config.base)
    image_size = resolve_image_size(config)
    if config.weights not in ("imagenet", "none") and not Path(config.weights).is_file():
        raise UserError(f"weights file not found: {config.weights} (use imagenet, none or a file path)")
    from l40sbench import backends
    from l40sbench.tf_device import place_early, place_for

    backends.select(config.backend)
    ops = backends.load(config.backend)
    placement = place_early(config) if config.backend == "tensorflow" else None
    images, source = load_dataset(config, image_size, log)
    dataset = DatasetInfo(
        source=source,
        train_images=int(len(images.y["train"])),
        test_images=int(len(images.y["test"])),
        classes=images.counts,
        skipped_files=images.skipped_files,
    )

    log(f"loading {config.backend} and building {spec.name} at {image_size}x{image_size} ...")
    placement = placement or (place_for(config) if config.backend == "tensorflow" else one_device(ops))
    model, weights_label = _compiled_model(config, image_size, len(images.classes), log, placement)
    devices = {**placement.record(config.batch_size),
               "compile": {"training": ops.training_compile(config.xla)[1], "inference": ops.forward_label(config.xla)}}
    if placement.strategy is not None:
        devices["per_epoch_test_scoring"] = SCORING_UNDER_A_STRATEGY
    sync = ops.sync()
    effective = dataclasses.replace(config, image_size=image_size).to_dict()
    env = {**env_mod.fingerprint(), "peak": peak.measure_env(sync=sync, log=log, backend=config.backend)}
    model_info = {
        "name": model.name,
        "input_size": image_size,
        "parameters": int(model.count_params()),
        "trainable_parameters": int(sum(np.prod(w.shape) for w in model.trainable_weights)),
        "fine_tune": config.fine_tune,
    }
    clock = EpochClock(sync=sync)
    losses: list[float] = []
    test_accuracy: list[float] = []
    wall: dict[str, float] = {}
    wall_at_epoch: list[float] = []

    def record(complete: bool, inference=None, accuracy=None, utilisation=None) -> RunResult:
        return RunResult(
            task="classify",
            base=spec.name,
            complete=complete,
            config=effective,
            env=env,
            dataset=dataset,
            train=TrainResult.from_times(clock.summary(), config.batch_size, losses, "test_accuracy", test_accuracy,
                                         wall_seconds=wall.get("seconds"), wall_seconds_at_epoch=wall_at_epoch),
            weights=weights_label,
            model=model_info,
            inference=inference,
            accuracy=accuracy or {},
            utilisation=utilisation or {},
            devices=devices,
        )

    def on_epoch(epoch: int, seconds: float, logs: dict) -> None:
        done = epoch + 1
        losses.append(logs.get("loss", float("nan")))
        if placement.strategy is None:  # see SCORING_UNDER_A_STRATEGY
            # The clock has stopped: scoring the test split is not epoch time.
            scores = model.evaluate(images.x["test"], images.y["test"], batch_size=config.batch_size, verbose=0,
                                    return_dict=True)
            test_accuracy.append(scores["accuracy"])
            logs = {**logs, "test_accuracy": scores["accuracy"]}
        wall_at_epoch.append(time.perf_counter() - wall["started"])
        eta = eta_seconds(clock.epoch_seconds, config.epochs - done)
        metrics = "  ".join(f"{k} {v:.4f}" for k, v in sorted(logs.items()) if isinstance(v, (int, float)))
        log(f"epoch {done}/{config.epochs}: {seconds:.3f} s  {metrics}  ETA {eta:.0f} s")
        save(record(False).to_dict())

    save(record(False).to_dict())
    global_batch = devices["global_batch"]
    log(f"training {config.epochs} epoch(s), batch {global_batch}, {dataset.train_images} images"
        + (f", {config.batch_size} per device on {placement.replicas} replicas ({placement.facts['strategy']}: "
           f"{', '.join(placement.names)})" if placement.strategy is not None else "") + " ...")
    before = [np.array(w) for w in model.trainable_weights]
    wall["started"] = time.perf_counter()
    try:
        if placement.workers > 1:
            from l40sbench.classify.across_hosts import TRAINING_LOOP, fit_across_hosts

            devices["training_loop"] = TRAINING_LOOP
            fit_across_hosts(model, images.x["train"], images.y["train"], global_batch=global_batch,
                             epochs=config.epochs, strategy=placement.strategy, seed=config.seed,
                             callback=_epoch_callback(clock, on_epoch))
        else:
            model.fit(
                images.x["train"],
                images.y["train"],
                batch_size=global_batch,
                epochs=config.epochs,
                shuffle=True,
                verbose=1 if sys.stdout.isatty() else 0,  # Keras draws its bar on stdout
                callbacks=[_epoch_callback(clock, on_epoch)],
            )
    except BaseException:
        wall["seconds"] = time.perf_counter() - wall["started"]
        save(record(False).to_dict())
        raise
    sync()
    wall["seconds"] = time.perf_counter() - wall["started"]
    devices.update(placement.after_training(model.trainable_weights, before))

    log(f"inference: {dataset.test_images} test images one at a time, first {config.warmup} excluded ...")
    stats, accuracy, probabilities = _measure_inference(model, images, image_size, config, sync)
    inference = InferenceResult.from_stats(stats, warmup=config.warmup, batch_size=1)
    utilisation = _utilisation(model, config, image_size, env["peak"], record(False).train, dataset.train_images,
                               inference)
    result = record(True, inference, {"test_accuracy": accuracy}, utilisation)
    save(result.to_dict())
    if config.output_dir is None or probabilities is None or config.backend != "tensorflow":
        return result  # the other runtimes take their models through TensorFlow's exporters
    model_file = config.output_dir / cl_runtimes.MODEL_FILE
    log(f"saving the fine-tuned model to {model_file} (for `infer` and the other runtimes) ...")
    model.save(model_file)
    reference = cl_runtimes.reference_row(inference, probabilities, images.y["test"], model_file,
                                          config.precision, config.xla)
    work = cl_runtimes.workload(model, images.x["test"], images.y["test"], probabilities, config.warmup,
                                config.precision)

    def on_row(rows) -> None:
        save(record(True, dataclasses.replace(inference, runtimes=rows), {"test_accuracy": accuracy},
                    utilisation).to_dict())

    rows = measure_runtimes(resolve(config.runtimes), work, config.runtime_precision,
                            config.output_dir / "runtimes", reference, log, on_row)
    return record(True, dataclasses.replace(inference, runtimes=rows), {"test_accuracy": accuracy}, utilisation)



def infer_setup(record: dict, model_file: Path, log: Log):
    """(tf reference row, workload) for `infer`: the saved model reloaded and probed again on tf."""
    import keras

    import l40sbench.classify.layers  # noqa: F401  (registers the Preprocess layer model.keras holds)
    from l40sbench.runtimes.infer import config_from_record

    config = config_from_record(ClassifyConfig, record["config"])
    images, _ = load_dataset(config, config.image_size, log)
    log(f"loading {model_file} ...")
    model = keras.saving.load_model(model_file)
    log(f"tf (reference): {len(images.y['test'])} test images one at a time, first {config.warmup} excluded ...")
    from l40sbench.tf_device import device_sync

    stats, _, probabilities = _measure_inference(model, images, config.image_size, config, device_sync())
    if probabilities is None:
        raise UserError("the run's test split is empty: nothing to time")
    inference = InferenceResult.from_stats(stats, warmup=config.warmup, batch_size=1)
    reference = cl_runtimes.reference_row(inference, probabilities, images.y["test"], model_file,
                                          config.precision, config.xla)
    return reference, cl_runtimes.workload(model, images.x["test"], images.y["test"], probabilities, config.warmup,
                                           config.precision)
