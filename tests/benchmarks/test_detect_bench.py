"""One detection serving call (preprocess + model + NMS) at 128 px, against the bare model call.

Both sides hand the same four detection tensors back to the host (the model
stage returns only what the signature returns), so the ratio is the cost of
the serving wrapper and its preprocessing: about 1.00 on an honest run.
"""

from __future__ import annotations

import numpy as np
import pytest

from l40sbench.detect.bases import DETECTORS, experiment_config
from tests.benchmarks.conftest import RATIO_BOUND, References, record_gate, run_pedantic

SIZE = 128


@pytest.fixture(scope="module")
def serving():
    import tensorflow as tf
    from official import vision  # noqa: F401  (registers Model Garden's experiments and tasks)
    from official.core import task_factory

    from l40sbench.detect.garden import SIGNATURE, serving

    tf.keras.utils.set_random_seed(0)
    experiment = experiment_config(DETECTORS.get("ssd_resnet50_fpn"), num_classes=3, image_size=SIZE, batch_size=1,
                                   train_path="unused", eval_path="unused")
    model = task_factory.get_task(experiment.task).build_model()
    _, signatures, preprocess, forward = serving(experiment, model, SIZE)
    return signatures[SIGNATURE], preprocess, forward


def test_serving_call_against_the_bare_model(benchmark, serving, conv_kernel):
    import tensorflow as tf

    serve, preprocess, forward = serving
    image = tf.constant(np.random.default_rng(0).integers(0, 256, (1, 150, 200, 3), dtype=np.uint8))
    prepared = preprocess(image)

    def host(structure):
        return tf.nest.map_structure(lambda t: t.numpy(), structure)

    references = References(warmup_rounds=2, model=lambda: host(forward(*prepared)), conv=conv_kernel)
    run_pedantic(benchmark, lambda: host(serve(image)), references, rounds=10)
    if not benchmark.disabled:
        record_gate(benchmark, "serving_over_model", references.ratio(benchmark, "model"), maximum=RATIO_BOUND,
                    minimum=1 / RATIO_BOUND, baseline=True,
                    what="serving signature (preprocess, model, NMS) / bare model call, ssd_resnet50_fpn 128 px")
