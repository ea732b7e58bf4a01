"""The one adapter to TensorFlow Model Garden: its experiment, task, optimizer, train step and serving module.

Model Garden does the modelling (configs, parser, losses, train_step, serving module); these functions
hand its calls to the detection task in the shapes the harness times.
"""

from __future__ import annotations

from pathlib import Path

from l40sbench.modelfile import detector

BASE_LEARNING_RATE = 0.01  # per 16 images; SGD momentum 0.9, no tuning (as the article)
SIGNATURE = "serving_default"  # uint8 [1, H, W, 3] in; boxes, classes, scores, num_detections out
DETECTION_OUTPUTS = detector.OUTPUTS  # the Object Detection API's serving outputs


def task_and_model(spec, classes: tuple[str, ...], config, global_batch: int, train, test, placement):
    """(experiment config, Model Garden task, model built and initialised under the placement's scope)."""
    import tensorflow as tf
    from official import vision  # noqa: F401  (registers Model Garden's experiments and tasks)
    from official.core import task_factory
    from official.modeling import performance

    from l40sbench import paths
    from l40sbench.detect.bases import experiment_config
    from l40sbench.detect.tfrecords import cached_tfrecord
    from l40sbench.settings import COMPUTE_DTYPES

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
    return experiment, task, model


def optimizer(task, experiment, batch_size: int, total_steps: int):
    """SGD with momentum at the article's rate scaled to the batch, after a linear warm-up."""
    from official.modeling import optimization

    rate = BASE_LEARNING_RATE * batch_size / 16
    optimizer_config = optimization.OptimizationConfig({
        "optimizer": {"type": "sgd", "sgd": {"momentum": 0.9, "global_clipnorm": 10.0}},
        "learning_rate": {"type": "constant", "constant": {"learning_rate": rate}},
        "warmup": {"type": "linear",
                   "linear": {"warmup_steps": max(1, min(100, total_steps // 10)), "warmup_learning_rate": rate / 10}},
    })
    return task.create_optimizer(optimizer_config, experiment.runtime)


def train_inputs(task, experiment, threads: int | None = None):
    """Model Garden's training pipeline (its parser: decode, augmentation, anchor labelling; repeated), on
    `threads` threads where given (tf.data's private thread pool), else tf.data's own."""
    import tensorflow as tf

    dataset = task.build_inputs(experiment.task.train_data)
    if threads is None:
        return dataset
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    return dataset.with_options(options)


def train_step(task, experiment, model, optimizer, placement, xla: bool = False, threads: int | None = None):
    """(one training step -> its loss, the loss-component metrics, the same step on a given batch -> its loss
    (None on several replicas)), called inside the placement's scope. The pipeline runs on `threads` threads.

    One device: the task's own train_step in a tf.function. Several: Model Garden's Trainer, which feeds
    each replica its share of the global batch (orbit's distributed dataset) and runs the task's
    train_step under strategy.run, the loss scaled by the replica count as the task does it. With `xla`
    (one device) the task's train_step (forward, losses, gradients, update) is compiled by XLA (jit_compile).
    """
    import tensorflow as tf

    if xla:
        task.train_step = tf.function(task.train_step, jit_compile=True)
    if placement.strategy is None:
        batches = iter(train_inputs(task, experiment, threads))
        metrics = task.build_metrics(training=True)  # Model Garden's loss components, averaged per epoch
        step = tf.function(lambda inputs: task.train_step(inputs, model, optimizer, metrics=metrics))
        return (lambda: float(step(next(batches))["loss"])), metrics, (lambda inputs: float(step(inputs)["loss"]))
    from official.core import base_trainer

    trainer = base_trainer.Trainer(experiment, task, model=model, optimizer=optimizer, train=True, evaluate=False)
    batches = iter(trainer.train_dataset)
    step = tf.function(lambda: trainer.train_step(batches))

    def run() -> float:
        trainer.train_loss.reset_state()  # a running mean: reset, it holds this step's loss alone
        step()
        return float(trainer.train_loss.result())

    return run, trainer.train_metrics, None


TRAIN_COUNTER = ("TensorFlow's profiler over the traced training step of one image (Model Garden's train_step: "
                 "forward with training=True on the sampled regions, losses, gradients, optimizer update)")


def train_step_graph(task, experiment, model, optimizer, metrics, placement):
    """The graph of one training step on one image: Model Garden's train_step traced (not run) on an input of
    the training pipeline's shapes with a batch of one, so Faster R-CNN's second stage sees the regions it
    samples for training, not the serving proposals. On several replicas the step is traced under
    strategy.run, once per replica. Trace it after training: the optimizer's slots exist then."""
    import tensorflow as tf

    spec = task.build_inputs(experiment.task.train_data).element_spec
    one = tf.nest.map_structure(lambda s: tf.TensorSpec([1, *s.shape[1:]], s.dtype), spec)

    plain = getattr(task.train_step, "python_function", task.train_step)  # under --xla, the step XLA compiled

    def step(inputs):
        return plain(inputs, model, optimizer, metrics=metrics)

    if placement.strategy is None:
        return tf.function(step).get_concrete_function(one).graph
    return tf.function(lambda inputs: placement.strategy.run(step, (inputs,))).get_concrete_function(one).graph


def train_step_gflops(task, experiment, model, optimizer, metrics, placement) -> float:
    """GFLOP of one training step per image (train_step_graph; per replica where there are several)."""
    from l40sbench.backends.tf_flops import graph_gflops

    graph = train_step_graph(task, experiment, model, optimizer, metrics, placement)
    return graph_gflops(graph) / placement.replicas


def serving(experiment, model, image_size: int):
    """Model Garden's export module, its serving signatures, and that signature's two stages.

    The signature timed is the very concrete function an export saves, so the latency measured is the
    latency a deployed SavedModel serves.
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

    Saving Model Garden's export module whole also writes every TF-Keras layer of the model with
    traced calls (for reloading it as a Keras model): 10 to 16 times as long at 128 px
    (docs/PERFORMANCE.md, "Saving the detection SavedModel"). The runtimes' converters and `infer` read the
    signature only, and its outputs are the same either way.
    """
    import tensorflow as tf

    root = tf.Module()
    root.weights = list(model.variables)  # tracked, so the signature's captured variables are saved
    tf.saved_model.save(root, str(path), signatures=signatures)


def local_copy(experiment, task, model, image_size: int):
    """(the model built again outside any strategy with the trained weights, its serving signatures): a
    signature that reads variables distributed across hosts (MultiWorkerMirroredStrategy) cannot be saved."""
    copy = task.build_model()
    copy.set_weights(model.get_weights())
    return copy, serving(experiment, copy, image_size)[1]


def forward_gflops(serving_parts, image_size: int) -> float:
    """GFLOP of the detector's forward pass (model.call on one preprocessed image; NMS is not arithmetic)."""
    import tensorflow as tf

    from l40sbench.backends.tf_flops import graph_gflops

    _, _, preprocess, forward = serving_parts
    prepared = preprocess(tf.zeros([1, image_size, image_size, 3], tf.uint8))
    return graph_gflops(forward.get_concrete_function(*prepared).graph)


def host(structure):
    """Host copies of every tensor in a structure (this waits for all of them)."""
    import tensorflow as tf

    return tf.nest.map_structure(lambda t: t.numpy(), structure)
