"""Each inference runtime's probe against a bare loop of the same call.

The classifier `classify` fine-tunes (vgg19 at 64 px, random weights) is exported once per runtime with
the product's exporter and loaded with the product's loader, in this process: the gate is on what the
probe adds to each runtime's own call, which must stay invisible however fast the runtime is.
"""

from __future__ import annotations

import numpy as np
import pytest

from l40sbench.runtimes.registry import RUNTIMES
from tests.benchmarks.conftest import gate_probe_over_bare_loop

SIZE = 64
RUNTIME_NAMES = ("savedmodel", "onnxruntime", "openvino", "litert")
IMAGES = 11  # the first is the probe's warm-up: 10 timed a round, 15 rounds


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.classify.task import compiled_model

    model, _ = compiled_model(ClassifyConfig(base="vgg19", image_size=SIZE, weights="none", seed=0), SIZE, 2, print)
    return model, tmp_path_factory.mktemp("exported")


@pytest.mark.parametrize("runtime", RUNTIME_NAMES)
def test_probe_over_each_runtimes_bare_call(benchmark, exported, runtime):
    from l40sbench.runtimes.measure import threads
    from l40sbench.runtimes.registry import export_keras, load

    missing = RUNTIMES.get(runtime).missing()
    assert not missing, f"the [runtimes] extra is not installed: {missing}"
    model, folder = exported
    artifact = export_keras(model, runtime, "fp32", folder / runtime)
    call = load(runtime, artifact.path, "fp32", threads(), artifact.precision).call
    test = [image[None] for image in np.random.default_rng(0).integers(0, 256, (IMAGES, SIZE, SIZE, 3), dtype=np.uint8)]
    gate_probe_over_bare_loop(benchmark, call, test, f"probe_over_bare_loop_{runtime}",
                              f"latency probe / bare loop over the same {runtime} call, per image")
