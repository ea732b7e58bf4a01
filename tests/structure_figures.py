"""Exact structure of every registered model: parameters and the profiler's forward FLOPs, the figures
tests/benchmarks/baseline.json holds under "exact".

The timed gates compare the product with a reference, so a change both sides share (a layer doubled in
synthetic/papers.py, a head changed in classify/model.py) moves neither ratio. These figures catch it: they are
deterministic, so tests/test_structure_figures.py compares them with the baseline exactly and fails naming the
model and the figure until the baseline is deliberately updated:

    .venv/bin/python -m tests.structure_figures --update

Each model is built as the product builds it (the classify pipeline's compiled model with its head, Model
Garden's task for the detectors, the sweep's registry), with random weights, at a fixed size; once per model,
in the merge tier's parallel part (not in the timed benchmarks, which run alone).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from l40sbench.classify.bases import NAMED
from l40sbench.detect.bases import DETECTORS, STUDIED
from l40sbench.synthetic.models import MODELS

BASELINE = Path(__file__).resolve().parent / "benchmarks" / "baseline.json"

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


def synthetic_model(name: str, check=None):
    """`check(spec, model)`, where given, runs on the built model before it is counted (its citation)."""
    from l40sbench.synthetic.listing import model_facts

    facts = model_facts(name, check)
    return facts["params"], facts["gflops"]


# The models the gate's structure figures cover: the bases the suite has always named, the study's detectors
# (not every keras.applications model or Model Garden experiment a user may pick), every synthetic model.
FAMILIES = {"classify": (NAMED, classify_model), "detect": (STUDIED, detect_model),
            "synthetic": (tuple(MODELS.names()), synthetic_model)}


def figures(family: str, name: str, check=None):
    """(parameters, forward GFLOP per image) of one registered model, its Keras sessions cleared after; `check`
    goes to a synthetic model's builder."""
    import keras
    import tf_keras

    try:
        builder = FAMILIES[family][1]
        return builder(name) if check is None else builder(name, check)  # a check: synthetic models only
    finally:
        keras.backend.clear_session()
        tf_keras.backend.clear_session()


def names(family: str, name: str) -> tuple[str, str]:
    """The figures' names in tests/benchmarks/baseline.json."""
    return f"structure.{family}.{name}.parameters", f"structure.{family}.{name}.forward_gflops"


def every_model() -> list[tuple[str, str]]:
    return [(family, name) for family, (covered, _) in FAMILIES.items() for name in covered]


def update() -> None:
    """Every model's figures, written into the baseline's "exact" section (its timed figures kept)."""
    baseline = json.loads(BASELINE.read_text())
    exact = {}
    for family, name in every_model():
        parameters, gflops = figures(family, name)
        parameter_name, gflops_name = names(family, name)
        exact[parameter_name], exact[gflops_name] = int(parameters), float(gflops)
        print(f"{family} {name}: {int(parameters):,} parameters, {gflops:.6g} GFLOP", file=sys.stderr)
    BASELINE.write_text(json.dumps({**baseline, "exact": dict(sorted(exact.items()))}, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        print("usage: python -m tests.structure_figures --update", file=sys.stderr)
        sys.exit(2)
    update()
