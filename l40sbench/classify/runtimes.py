"""Classification on other inference runtimes: the workload the runtime rows are measured on.

The fine-tuned Keras model is exported with Keras' own `Model.export`; a runtime's predictions are
scored on the test labels and against tf's predictions on the same images.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from l40sbench.core.results import InferenceResult, RuntimeResult
from l40sbench.runtimes import agreement
from l40sbench.runtimes.measure import Workload, tf_row
from l40sbench.runtimes.registry import export_keras

MODEL_FILE = "model.keras"
ACCURACY_BOUND = 0.01  # a runtime more than 1 point less accurate than tf is an accuracy-mismatch


def _only(outputs: dict) -> np.ndarray:
    (probabilities,) = outputs.values()
    return probabilities


def workload(model, test_images: np.ndarray, labels: np.ndarray, tf_probabilities: np.ndarray, warmup: int,
             trained_precision: str) -> Workload:
    return Workload(
        images=[image[None] for image in test_images],
        export=lambda runtime, precision, folder: export_keras(model, runtime, precision, folder),
        score=lambda outputs: agreement.classification(tf_probabilities, _only(outputs), labels),
        mismatch=lambda accuracy, tf: accuracy["test_accuracy"] < tf["test_accuracy"] - ACCURACY_BOUND,
        warmup=warmup, trained_precision=trained_precision,
    )


def reference_row(inference: InferenceResult, tf_probabilities: np.ndarray, labels: np.ndarray, model_file: Path,
                  precision: str, xla: bool) -> RuntimeResult:
    """The tf row: the run's own probe, in the training process."""
    return tf_row(inference, model_file, "keras Model.save", precision, "tf.function" + (" (XLA)" if xla else ""),
                  agreement.classification(tf_probabilities, tf_probabilities, labels))
