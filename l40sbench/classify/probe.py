"""classify's latency probe: the test images one at a time through the compiled forward, and the accuracy of
those same predictions."""

from __future__ import annotations

import numpy as np

from l40sbench.classify.config import ClassifyConfig
from l40sbench.core.results import InferenceResult
from l40sbench.core.task import Probe
from l40sbench.core.timing import probe_latency
from l40sbench.data import folders

TEST_METRIC = "test_accuracy"


def make_forward(model, image_size: int, xla: bool, backend: str = "tensorflow"):
    """The compiled single-image forward call that the latency probe times (the backend's own)."""
    from l40sbench.backends import load

    return load(backend).forward(model, image_size, xla)


def measure_inference(model, images: folders.ImageSet, config: ClassifyConfig, sync) -> Probe:
    """Latency of the test images one at a time, and the accuracy of those same predictions
    (outputs: the stacked probabilities, None where no image was predicted)."""
    forward = make_forward(model, config.image_size, config.xla, config.backend)
    probabilities: list[np.ndarray] = []

    def predict(image: np.ndarray) -> np.ndarray:
        probabilities.append(forward(image))
        return probabilities[-1]  # on the host: the clock's sync has nothing to wait for

    stats = probe_latency(predict, images.x["test"], warmup=config.warmup, sync=sync)
    inference = InferenceResult.from_stats(stats, warmup=config.warmup, batch_size=1)
    if not probabilities:
        return Probe(inference, {TEST_METRIC: None})
    stacked = np.stack(probabilities)
    if stacked.ndim != 2:  # a model file's feature or segmentation map: timed, agreement by the output gap only
        return Probe(inference, {TEST_METRIC: None}, stacked)
    return Probe(inference, {TEST_METRIC: float(np.mean(np.argmax(stacked, axis=1) == images.y["test"]))}, stacked)
