"""Child of test_synthetic_bench's jax gate (KERAS_BACKEND=jax): the sweep's jax step against a bare one.

The product side is the sweep's own step (l40sbench.backends.jax.sweep_step: DataParallel over one device,
Keras' SGD through stateless_apply). The reference is written here and shares none of that code: the same
registry model's stateless_call under jax.value_and_grad, cross-entropy and plain SGD by hand, one jax.jit.
Both run on the same synthetic batch, in turns, each call waited for. Then the latency probe: the product's
jax forward (l40sbench.backends.jax.forward) through core.timing.probe_latency with the backend's sync, against
a bare jax.jit loop over the same images with block_until_ready on each output and its host copy, in turns. Prints one JSON line.

Usage: KERAS_BACKEND=jax python tests/benchmarks/jax_step_child.py MODEL BATCH ROUNDS
"""

from __future__ import annotations

import json
import statistics
import sys
import time


def main(model_name: str, batch: int, rounds: int) -> dict:
    import jax
    import jax.numpy as jnp
    import keras

    from l40sbench.backends import jax as ops
    from l40sbench.synthetic.job import Job, StepSettings
    from l40sbench.synthetic.models import MODELS
    from l40sbench.synthetic.worker import _optimizer

    spec = MODELS.get(model_name)
    product, _, _, _ = ops.sweep_step(spec, Job(model_name, batch, 1, StepSettings(backend="jax")),
                                      _optimizer("sgd", "fp32"), keras.losses.sparse_categorical_crossentropy)
    keras.distribution.set_distribution(None)

    model = spec.build()
    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    x = jax.random.uniform(jax.random.key(2), (batch, spec.size, spec.size, 3))
    y = jax.random.randint(jax.random.key(3), (batch,), 0, 1000)

    def loss_of(trainable, non_trainable):
        probabilities, non_trainable = model.stateless_call(trainable, non_trainable, x, training=True)
        picked = jnp.take_along_axis(probabilities.astype(jnp.float32), y[:, None], axis=1)
        return -jnp.mean(jnp.log(jnp.clip(picked, 1e-7, 1.0))), non_trainable

    @jax.jit
    def bare(trainable, non_trainable):
        (loss, non_trainable), grads = jax.value_and_grad(loss_of, has_aux=True)(trainable, non_trainable)
        return loss, jax.tree.map(lambda w, g: w - 0.005 * g, trainable, grads), non_trainable

    state = {"trainable": trainable, "non_trainable": non_trainable}

    def reference():
        loss, state["trainable"], state["non_trainable"] = bare(state["trainable"], state["non_trainable"])
        return loss

    def timed(call) -> float:
        start = time.perf_counter()
        jax.block_until_ready(call())
        return time.perf_counter() - start

    for _ in range(2):  # compile, then one more untimed each
        timed(product)
        timed(reference)
    pairs = [(timed(product), timed(reference)) for _ in range(rounds)]
    return {"ratio": statistics.median(p / r for p, r in pairs), "ratios": [p / r for p, r in pairs],
            "product_median_s": statistics.median(p for p, _ in pairs),
            "reference_median_s": statistics.median(r for _, r in pairs), "rounds": rounds,
            **probe_against_bare_loop(PROBE_MODEL, PROBE_IMAGES, PROBE_ROUNDS)}


PROBE_MODEL, PROBE_IMAGES, PROBE_ROUNDS = "lenet", 24, 25  # a forward of a fraction of a millisecond: a sync
# that waits on every live array (weights, optimizer slots: hundreds) inside the clock shows in the ratio


def probe_against_bare_loop(model_name: str, count: int, rounds: int) -> dict:
    """Per-image time of the product's probe over a bare jitted loop's, median of paired rounds."""
    import jax
    import numpy as np

    from l40sbench.backends import jax as ops
    from l40sbench.core.timing import probe_latency
    from l40sbench.synthetic.models import MODELS

    spec = MODELS.get(model_name)
    model = spec.build()
    images = [np.asarray(jax.random.uniform(jax.random.key(10 + i), (spec.size, spec.size, 3))) for i in range(count)]
    forward = ops.forward(model, spec.size, False)
    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    bare_call = jax.jit(lambda t, n, x: model.stateless_call(t, n, x, training=False)[0])

    def probe() -> float:  # the first image is the probe's warm-up, as in a run
        return probe_latency(forward, images, warmup=1, sync=ops.sync()).mean_ms / 1000

    def bare() -> float:  # waited for, then copied to the host as the product's call must (what it serves)
        start = time.perf_counter()
        for image in images[1:]:
            np.asarray(jax.block_until_ready(bare_call(trainable, non_trainable, image[None])))
        return (time.perf_counter() - start) / (len(images) - 1)

    probe(), bare()  # compile both
    pairs = [(probe(), bare()) for _ in range(rounds)]
    return {"probe_ratio": statistics.median(p / b for p, b in pairs), "probe_ratios": [p / b for p, b in pairs],
            "probe_median_ms": statistics.median(p for p, _ in pairs) * 1000,
            "bare_median_ms": statistics.median(b for _, b in pairs) * 1000, "probe_rounds": rounds}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
