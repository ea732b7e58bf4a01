"""Classification hot paths: the latency probe, one compiled forward, one training step, an epoch's feed.

vgg19 at 32 px (its minimum), random weights: the article's smallest-ops base, at
a size where one call takes milliseconds on two cores.
"""

from __future__ import annotations

import numpy as np
import pytest

from l40sbench.classify.bases import BASES
from l40sbench.classify.model import build_base, build_classifier
from l40sbench.classify.run import _epoch_callback, make_forward
from l40sbench.core.timing import EpochClock, probe_latency
from tests.benchmarks.conftest import References, record_gate, run_pedantic

SIZE = 32
BATCH = 16


@pytest.fixture(scope="module")
def model():
    import keras

    keras.utils.set_random_seed(0)
    spec = BASES.get("vgg19")
    base, _ = build_base(spec, SIZE, "none", print)
    classifier = build_classifier(spec, base, SIZE, 2, trainable_top_layers=-1)  # the whole base trains
    classifier.compile(optimizer=keras.optimizers.Adam(1e-4), loss="sparse_categorical_crossentropy")
    return classifier


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (64, SIZE, SIZE, 3), dtype=np.uint8), rng.integers(0, 2, 64).astype(np.int32)


def test_latency_probe_against_a_bare_loop(benchmark, model, images):
    """The probe's per-call bookkeeping (two clock readings and a sync per image) stays invisible."""
    forward = make_forward(model, SIZE, xla=False)
    test = images[0][:21]  # 21 images: the first is the probe's warm-up, 20 timed

    def bare_loop():
        for image in test[1:]:
            forward(image)

    references = References(warmup_rounds=2, bare_loop=bare_loop)
    probe = run_pedantic(benchmark, lambda: probe_latency(forward, test), references, rounds=15)
    if probe is not None:
        # The probe makes 21 calls, the bare loop 20: compare per timed image.
        ratio = (probe * 20 / 21) / references.median("bare_loop")
        record_gate(benchmark, "probe_over_bare_loop", ratio, maximum=1.10,
                    what="latency probe / bare loop over the same compiled call, per image")


def test_single_image_forward(benchmark, model, images, conv_kernel):
    forward = make_forward(model, SIZE, xla=False)
    image = images[0][0]
    forward(image)
    references = References(warmup_rounds=3, conv=conv_kernel)
    seconds = run_pedantic(benchmark, forward, references, rounds=40, args=(image,))
    if seconds is not None:
        record_gate(benchmark, "forward_per_conv", seconds / references.median("conv"), baseline=True,
                    what="one compiled single-image forward (vgg19, 32 px) / calibration convolution")


def test_training_step(benchmark, model, images, conv_kernel):
    x, y = images[0][:BATCH], images[1][:BATCH]
    references = References(warmup_rounds=2, conv=conv_kernel)
    seconds = run_pedantic(benchmark, model.train_on_batch, references, rounds=12, args=(x, y))
    if seconds is not None:
        record_gate(benchmark, "train_step_per_conv", seconds / references.median("conv"), baseline=True,
                    what="one training step (vgg19, 32 px, batch 16, whole base trainable) / calibration convolution")


def test_epoch_from_the_decoded_arrays_against_batched_tensors(benchmark, model, images):
    """The product's feed (fit on the cached uint8 arrays, shuffled) costs no more than tensors
    already batched in memory (docs/PERFORMANCE.md section 2)."""
    import tensorflow as tf

    x, y = images
    in_memory = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).cache()
    for _ in in_memory:  # fill the cache
        pass

    def epoch(**feed):
        clock = EpochClock()
        callback = _epoch_callback(clock, lambda *_: None)
        model.fit(epochs=1, verbose=0, callbacks=[callback], **feed)
        return clock.epoch_seconds[0]

    # The epoch clock (the suite's own) is the measurement on both sides; the benchmark's
    # timer around fit() would add Keras' per-fit set-up, which a 10-epoch run pays once.
    product, memory = [], []
    references = References(warmup_rounds=1, memory=lambda: memory.append(epoch(x=in_memory)))
    run_pedantic(benchmark, lambda: product.append(epoch(x=x, y=y, batch_size=BATCH, shuffle=True)), references,
                 rounds=6)
    if not benchmark.disabled:
        ratio = float(np.median(product[1:]) / np.median(memory[1:]))
        record_gate(benchmark, "epoch_cache_over_memory", ratio, maximum=1.10,
                    what="epoch fed from the decoded uint8 arrays / from batched tensors in memory")

