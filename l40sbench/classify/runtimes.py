"""Classification on other inference runtimes: the workload the runtime rows are measured on.

The fine-tuned Keras model is exported with Keras' own `Model.export`; a runtime's predictions are
scored on the test labels and against tf's predictions on the same images.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from l40sbench.core.results import InferenceResult, RuntimeResult
from l40sbench.runtimes import agreement, responses
from l40sbench.runtimes.measure import Workload, tf_row
from l40sbench.runtimes.registry import export_keras
from l40sbench.runtimes.responses import Answers, ResponseFormat

MODEL_FILE = "model.keras"
ACCURACY_BOUND = 0.01  # a runtime more than 1 point less accurate than tf is an accuracy-mismatch
LABELS_UNMATCHED = ("its outputs are {outputs} classes, the data's {classes}: no accuracy against labels, the "
                    "runtimes' agreement only")
MAP_OUTPUT = ("its output is a map of shape {shape} per image, not one score per class: no accuracy, the runtimes' "
              "agreement by the largest output gap")


def labels_for(outputs: np.ndarray, labels: np.ndarray, classes: int) -> tuple[np.ndarray | None, str]:
    """The labels to score against, and why none where the model's outputs are not the data's classes."""
    if outputs.ndim != 2:
        return None, MAP_OUTPUT.format(shape=tuple(outputs.shape[1:]))
    if outputs.shape[-1] == classes:
        return labels, ""
    return None, LABELS_UNMATCHED.format(outputs=outputs.shape[-1], classes=classes)


def probabilities_of(outputs: dict, reference: np.ndarray) -> np.ndarray:
    """The classifier's output among a runtime's outputs: the one output, or the one of tf's shape where a
    converter exposed inner tensors as outputs too (OpenVINO does for EfficientNetV2's activations).

    Raises:
      ValueError: no output, or several, of tf's shape (the row fails, saying so).
    """
    if len(outputs) == 1:
        return next(iter(outputs.values()))
    shaped = [value for value in outputs.values() if value.shape == reference.shape]
    if len(shaped) != 1:
        raise ValueError(f"{len(outputs)} outputs, {len(shaped)} of them of tf's shape {reference.shape}: which is "
                         "the classifier's is not known")
    return shaped[0]


def answers(tf_probabilities: np.ndarray, labels: np.ndarray | None) -> Answers:
    """LoadGen's responses: the predicted class (MLPerf's, as accuracy-imagenet.py reads it) where the model scores
    classes; every output value where it does not (one score per image, a map), so the log still shows its gap."""
    if tf_probabilities.ndim == 2 and tf_probabilities.shape[1] > 1:
        reference = np.argmax(tf_probabilities, axis=1)

        def score(samples: list[bytes]) -> dict:
            predicted = responses.classes_of(samples)
            return {"test_accuracy": None if labels is None else float(np.mean(predicted == labels)),
                    "agreement_with_tf": float(np.mean(predicted == reference))}

        return Answers(ResponseFormat("class", classes=int(tf_probabilities.shape[1])), score, labels=labels)
    return Answers(ResponseFormat("raw"), lambda samples: agreement.classification(
        tf_probabilities, responses.raw_of(samples, tf_probabilities.shape[1:]), labels))


def workload(model, test_images: np.ndarray, labels: np.ndarray | None, tf_probabilities: np.ndarray, warmup: int,
             trained_precision: str, files: tuple[str, ...] = ()) -> Workload:
    return Workload(
        images=[image[None] for image in test_images],
        export=lambda runtime, precision, folder: export_keras(model, runtime, precision, folder),
        score=lambda outputs: agreement.classification(tf_probabilities, probabilities_of(outputs, tf_probabilities),
                                                       labels),
        mismatch=lambda accuracy, tf: (labels is not None
                                       and accuracy["test_accuracy"] < tf["test_accuracy"] - ACCURACY_BOUND),
        warmup=warmup, trained_precision=trained_precision, answers=answers(tf_probabilities, labels),
        files=files, image_size=int(test_images.shape[1]) if files else None,
    )


def reference_row(inference: InferenceResult, tf_probabilities: np.ndarray, labels: np.ndarray | None,
                  model_file: Path, precision: str, xla: bool, exporter: str = "keras Model.save") -> RuntimeResult:
    """The tf row: the run's own probe, in the training process."""
    return tf_row(inference, model_file, exporter, precision, "tf.function" + (" (XLA)" if xla else ""),
                  agreement.classification(tf_probabilities, tf_probabilities, labels))
