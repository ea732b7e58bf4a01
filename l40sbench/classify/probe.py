"""classify's latency probe: the test images one at a time through the compiled forward, and the accuracy of
those same predictions."""

from __future__ import annotations

import numpy as np

from l40sbench.classify.config import ClassifyConfig
from l40sbench.core.results import InferenceResult
from l40sbench.core.task import Probe
from l40sbench.core.timing import probe_interleaved
from l40sbench.data import folders
from l40sbench.data.images import MODEL_CALL, file_stages

TEST_METRIC = "test_accuracy"


def make_forward(model, image_size: int, xla: bool, backend: str = "tensorflow"):
    """The compiled single-image forward call that the latency probe times (the backend's own)."""
    from l40sbench.backends import load

    return load(backend).forward(model, image_size, xla)


def measure_inference(model, images: folders.ImageSet, config: ClassifyConfig, sync, files=None) -> Probe:
    """Latency of the test images one at a time (the model's call on the decoded image: the record's figure),
    and the accuracy of those same predictions (outputs: the stacked probabilities, None where no image was
    predicted). Given the test split's files (inputs.SplitFiles), each image's file-to-label time and its
    stages are timed in the same rotation (core.timing.probe_interleaved), as detect times its stages."""
    forward = make_forward(model, config.image_size, config.xla, config.backend)
    probabilities: list[np.ndarray] = []
    test = images.x["test"]

    def predict(i: int) -> np.ndarray:
        probabilities.append(forward(test[i]))
        return probabilities[-1]  # on the host: the clock's sync has nothing to wait for

    calls = {MODEL_CALL: predict}
    if files is not None and len(files.paths) == len(test):
        calls.update(file_stages(files.paths, config.image_size, forward, lambda out: int(np.argmax(out))))
    stats = probe_interleaved(calls, range(len(test)), warmup=config.warmup, sync=sync)
    stages = {name: stat.mean_ms for name, stat in stats.items()} if len(calls) > 1 else {}
    inference = InferenceResult.from_stats(stats[MODEL_CALL], warmup=config.warmup, batch_size=1,
                                           stages_mean_ms=stages)
    if not probabilities:
        return Probe(inference, {TEST_METRIC: None})
    stacked = np.stack(probabilities)
    if stacked.ndim != 2:  # a model file's feature or segmentation map: timed, agreement by the output gap only
        return Probe(inference, {TEST_METRIC: None}, stacked)
    return Probe(inference, {TEST_METRIC: float(np.mean(np.argmax(stacked, axis=1) == images.y["test"]))}, stacked)
