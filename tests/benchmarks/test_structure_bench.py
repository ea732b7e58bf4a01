"""Exact structure of every registered model: parameters and the profiler's forward FLOPs.

The timed gates compare the product with a reference, so a change both sides
share (a layer doubled in synthetic/papers.py, a head changed in
classify/model.py) moves neither ratio. These figures catch it: they are
deterministic, so benchmarks/gate.py compares them with benchmarks/baseline.json
exactly and fails naming the model and the figure until the baseline is
deliberately updated (`./run.sh test --benchmarks --update-baseline`).

Each model is built as the product builds it (the classify pipeline's compiled
model with its head, Model Garden's task for the detectors, the sweep's
registry), with random weights, at a fixed size. What the benchmark times (the
build and the count) is not gated.
"""

from __future__ import annotations

import pytest

from l40sbench.classify.bases import BASES
from l40sbench.detect.bases import DETECTORS
from l40sbench.synthetic.models import MODELS
from tests.benchmarks.conftest import record_gate

CLASSIFY_SIZE = 96  # above every base's minimum
DETECT_SIZE = 128  # the smallest size every detector's feature levels fit
DETECT_CLASSES = 3


def classify_model(name: str):
    from l40sbench.backends.tf_flops import forward_gflops
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.classify.task import compiled_model

    config = ClassifyConfig(base=name, image_size=CLASSIFY_SIZE, weights="none")
    model, _ = compiled_model(config, CLASSIFY_SIZE, 2, lambda message: None)
    return model.count_params(), forward_gflops(model, CLASSIFY_SIZE, "uint8")


def detect_model(name: str):
    import numpy as np
    from official import vision  # noqa: F401  (registers Model Garden's experiments and tasks)
    from official.core import task_factory

    from l40sbench.detect.bases import experiment_config
    from l40sbench.detect.garden import forward_gflops, serving

    experiment = experiment_config(DETECTORS.get(name), num_classes=DETECT_CLASSES, image_size=DETECT_SIZE,
                                   batch_size=1, train_path="unused", eval_path="unused")
    model = task_factory.get_task(experiment.task).build_model()
    parameters = int(sum(np.prod(w.shape) for w in model.weights))
    return parameters, forward_gflops(serving(experiment, model, DETECT_SIZE), DETECT_SIZE)


def synthetic_model(name: str):
    from l40sbench.backends.tf_flops import forward_gflops

    spec = MODELS.get(name)
    model = spec.build()
    return model.count_params(), forward_gflops(model, spec.size)


FAMILIES = {"classify": (BASES, classify_model), "detect": (DETECTORS, detect_model),
            "synthetic": (MODELS, synthetic_model)}


@pytest.mark.parametrize("family, name", [(family, name) for family, (registry, _) in FAMILIES.items()
                                          for name in registry.names()])
def test_model_structure(benchmark, family, name):
    import keras
    import tf_keras

    counted = {}

    def count():
        counted["figures"] = FAMILIES[family][1](name)

    benchmark.pedantic(count, rounds=1, iterations=1)
    keras.backend.clear_session()
    tf_keras.backend.clear_session()
    parameters, gflops = counted["figures"]
    assert parameters > 0 and gflops > 0
    if not benchmark.disabled:
        record_gate(benchmark, f"structure.{family}.{name}.parameters", int(parameters), exact=True,
                    what=f"{family} model {name}: parameter count")
        record_gate(benchmark, f"structure.{family}.{name}.forward_gflops", float(gflops), exact=True,
                    what=f"{family} model {name}: forward GFLOP per image (2 x MACs of convolutions and matmuls, TensorFlow profiler)")
