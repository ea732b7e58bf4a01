"""Classification hot paths: the latency probe, one compiled forward, one training step, an epoch's feed.

vgg19 at 64 px, random weights: the article's plainest base, at a size where one
forward takes about ten milliseconds on two cores and is mostly convolution, so
its time tracks the calibration convolution across CPU generations.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from l40sbench.classify.probe import make_forward
from l40sbench.classify.task import epoch_callback
from l40sbench.core.timing import EpochClock
from tests.benchmarks.conftest import (
    RATIO_BOUND,
    SLOWDOWN,
    References,
    gate_probe_over_bare_loop,
    record_gate,
    run_pedantic,
)

SIZE = 64
BATCH = 16


@pytest.fixture(scope="module")
def model():
    """The model `classify` trains and probes, built and compiled by the product with its defaults
    (base frozen, dropout and softmax head, Adam, accuracy metric, no XLA)."""
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.classify.task import compiled_model

    config = ClassifyConfig(base="vgg19", image_size=SIZE, weights="none", seed=0)
    classifier, _ = compiled_model(config, SIZE, 2, print)
    return classifier


@pytest.fixture(scope="module")
def plain():
    """The same network built the plain Keras way, not through l40sbench: the reference the
    product's forward and training step are divided by. It runs the same convolutions, so
    a CPU (or oneDNN instruction set) that is slower at them is slower on both sides."""
    import keras

    base = keras.applications.VGG19(include_top=False, weights=None, input_shape=(SIZE, SIZE, 3))
    base.trainable = False
    model = keras.Sequential([base, keras.layers.GlobalAveragePooling2D(), keras.layers.Dropout(0.2),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (64, SIZE, SIZE, 3), dtype=np.uint8), rng.integers(0, 2, 64).astype(np.int32)


def test_latency_probe_against_a_bare_loop(benchmark, model, images):
    """The probe's per-call bookkeeping (two clock readings and a sync per image) stays invisible."""
    forward = make_forward(model, SIZE, xla=False)
    test = images[0][:21]  # 21 images: the first is the probe's warm-up, 20 timed
    gate_probe_over_bare_loop(benchmark, forward, test, "probe_over_bare_loop",
                              "latency probe / bare loop over the same compiled call, per image")


def test_single_image_forward(benchmark, model, plain, images, conv_kernel):
    import tensorflow as tf

    forward = make_forward(model, SIZE, xla=False)
    image = images[0][0]
    compiled = tf.function(lambda x: plain(x, training=False))
    as_float = tf.constant(image[None].astype(np.float32))
    references = References(warmup_rounds=3, plain=lambda: compiled(as_float).numpy(), conv=conv_kernel)
    run_pedantic(benchmark, forward, references, rounds=40, args=(image,))
    if not benchmark.disabled:
        record_gate(benchmark, "forward_over_plain_keras", references.ratio(benchmark, "plain"), baseline=True,
                    what="l40sbench's compiled single-image forward (vgg19, 64 px) / the plain Keras model's")


def test_training_step(benchmark, model, plain, images):
    x, y = images[0][:BATCH], images[1][:BATCH]
    x_float = x.astype(np.float32)
    references = References(warmup_rounds=2, plain=lambda: plain.train_on_batch(x_float, y))
    run_pedantic(benchmark, model.train_on_batch, references, rounds=12, args=(x, y))
    if not benchmark.disabled:
        record_gate(benchmark, "train_step_over_plain_keras", references.ratio(benchmark, "plain"), baseline=True,
                    what="one l40sbench training step (vgg19, 64 px, batch 16, classify's defaults: base frozen) / "
                         "the plain Keras model's")


def slowed_batches():
    """A callback that stretches each training step SLOWDOWN times, inside the epoch clock."""
    import keras

    class SlowBatches(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.started = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            time.sleep((SLOWDOWN - 1) * (time.perf_counter() - self.started))

    return SlowBatches()


def test_epoch_from_the_decoded_arrays_against_batched_tensors(benchmark, model, images):
    """The product's feed (fit on the cached uint8 arrays, shuffled) costs no more than tensors
    already batched in memory (docs/performance-log.md, "Input pipeline")."""
    import tensorflow as tf

    x, y = images  # four steps an epoch: a fixed per-epoch cost shows, and the steps' noise averages out
    in_memory = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).cache()
    for _ in in_memory:  # fill the cache
        pass

    def epoch(slow=False, **feed):
        clock = EpochClock()
        callbacks = [epoch_callback(clock.start, lambda *_: clock.stop())] + ([slowed_batches()] if slow and SLOWDOWN != 1 else [])
        model.fit(epochs=1, verbose=0, callbacks=callbacks, **feed)
        return clock.epoch_seconds[0]

    # The epoch clock (the suite's own) is the measurement on both sides; the benchmark's
    # timer around fit() would add Keras' per-fit set-up, which a 10-epoch run pays once.
    product, memory = [], []
    references = References(warmup_rounds=1, memory=lambda: memory.append(epoch(x=in_memory, shuffle=False)))
    run_pedantic(benchmark, lambda: product.append(epoch(slow=True, x=x, y=y, batch_size=BATCH, shuffle=True)),
                 references, rounds=9)
    if not benchmark.disabled:
        # Each product epoch over the reference epoch just before it: a pair shares the machine's
        # state, so a slow spell on a shared host moves both sides of a ratio together.
        ratio = float(np.median(np.array(product[1:]) / np.array(memory[1:])))
        record_gate(benchmark, "epoch_cache_over_memory", ratio, maximum=RATIO_BOUND, minimum=1 / RATIO_BOUND,
                    what="epoch fed from the decoded uint8 arrays / from batched tensors in memory")

