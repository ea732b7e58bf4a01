"""Detection on other inference runtimes: the workload the runtime rows are measured on.

The runtimes get the run's SavedModel (the serving signature the tf probe timed) through their own
converters; a runtime's detections are scored with pycocotools on the test split and matched box by
box against tf's detections of the same images.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from l40sbench.core.results import InferenceResult, RuntimeResult
from l40sbench.detect.evaluate import evaluate, to_coco_detections
from l40sbench.modelfile import detector
from l40sbench.runtimes import agreement, responses
from l40sbench.runtimes.measure import Workload, tf_row
from l40sbench.runtimes.registry import convert_saved_model
from l40sbench.runtimes.responses import Answers, ResponseFormat

SAVED_MODEL_DIR = "saved_model"
MAP_BOUND = 0.01  # a runtime whose mAP@.5:.95 is more than this below tf's is an accuracy-mismatch


def coco_detections(outputs: dict, score_threshold: float, sizes: list | None = None,
                    table: np.ndarray | None = None) -> list[dict]:
    """Stacked serving outputs (one image per row) -> COCO results in original-image pixels.

    Each image's boxes are scaled back with the image_info the same outputs carry (Model Garden's [original
    size, resized size, scale, offset]), else, normalised (the Object Detection API's), by its (height, width)
    in `sizes`; a detector file's class ids go through `table` (modelfile.detector.class_ids).
    """
    outputs = detector.data_classes(outputs, table)
    detections = []
    for i in range(len(outputs["num_detections"])):
        n = int(np.asarray(outputs["num_detections"][i]).reshape(-1)[0])
        detections += to_coco_detections(
            i + 1, outputs["detection_boxes"][i][:n], np.asarray(outputs["detection_classes"][i][:n]).astype(int),
            outputs["detection_scores"][i][:n], scale_yx=detector.scale_yx(outputs, i, sizes[i] if sizes else None),
            score_threshold=score_threshold,
        )
    return detections


def score(outputs: dict, tf_outputs: dict, ground_truth: dict, score_threshold: float, sizes: list | None = None,
          table: np.ndarray | None = None) -> dict:
    """mAP of a runtime's detections and their agreement with tf's."""
    accuracy = evaluate(ground_truth, coco_detections(outputs, score_threshold, sizes, table))
    return {**accuracy, **agreement.detection(tf_outputs, outputs, len(outputs["num_detections"]), score_threshold)}


def library(images: list, size: int) -> list:
    """LoadGen's query sample library of a detector: each test image resized to size x size, its aspect not kept, as
    MLPerf's RetinaNet library holds every image at 800 x 800. Every sample then costs the same (TEST04's one
    repeated sample and TEST05's other draws measure the SUT, not the images' sizes), and a model that resizes to its
    own input size does no resize inside a latency. A box normalised to a library image is normalised to its
    original too."""
    from l40sbench.data.images import resize_square

    return [resize_square(np.asarray(image)[0], size)[None] for image in images]


OWN_SIZE_NOTE = ("each test image at its own size, as the runtime rows take it and as MLPerf's YOLO harness hands "
                 "each sample's own image to Ultralytics: the file's own letterbox is inside every query")


def library_note(size: int) -> str:
    return (f"each test image resized to {size} x {size} (aspect not kept), as MLPerf's RetinaNet library holds "
            "its images at 800 x 800; the runtime rows take each image at its own size")


def answers(ground_truth: dict, score_threshold: float, sizes: tuple, table: np.ndarray | None) -> Answers:
    """LoadGen's responses on the library (each sample's (height, width) as fed, `sizes`): each image's detections
    as accuracy-coco.py reads them (normalised, scaled back by the original's size in the ground truth), scored by
    the suite as that script scores them."""
    form = ResponseFormat("coco", score_threshold=score_threshold, sizes=tuple(tuple(int(v) for v in hw) for hw in sizes),
                          table=None if table is None else tuple(int(v) for v in table))
    return Answers(form, lambda samples: evaluate(ground_truth, responses.coco_detections_of(
        samples, ground_truth["images"])), ground_truth=ground_truth)


def workload(saved_model: Path, images: list, tf_outputs: dict, ground_truth: dict, score_threshold: float,
             warmup: int, trained_precision: str, library_size: int | None, export=None, sizes: list | None = None,
             table: np.ndarray | None = None, decoding: dict | None = None) -> Workload:
    """The rows' workload, and LoadGen's library at `library_size` (None: the rows' images at their own sizes, as
    a YOLO or torchvision file is served: MLPerf's YOLO harness hands each sample's own image to Ultralytics);
    `export` (runtime, precision, folder) -> Artifact: by default the runtimes' converters from `saved_model`."""
    own = library_size is None
    return Workload(
        images=images,
        export=export or (lambda runtime, precision, folder: convert_saved_model(saved_model, runtime, precision,
                                                                                 folder)),
        score=lambda outputs: score(outputs, tf_outputs, ground_truth, score_threshold, sizes, table),
        mismatch=lambda accuracy, tf: accuracy["map_50_95"] < tf["map_50_95"] - MAP_BOUND,
        warmup=warmup, trained_precision=trained_precision,
        answers=answers(ground_truth, score_threshold, [image.shape[1:3] for image in images] if own else
                        [(library_size, library_size)] * len(images), table),
        library=None if own else (lambda: library(images, library_size)),
        library_note=OWN_SIZE_NOTE if own else library_note(library_size),
        decoding=decoding,
    )


def reference_row(inference: InferenceResult, tf_outputs: dict, accuracy: dict, saved_model: Path,
                  precision: str, score_threshold: float) -> RuntimeResult:
    """The tf row: the probe of the serving signature, with tf's mAP (`accuracy`, already scored) beside
    its agreement with itself."""
    images = len(tf_outputs["num_detections"])
    return tf_row(inference, saved_model, "tf.saved_model.save", precision, "tf.function (serving signature)",
                  {**accuracy, **agreement.detection(tf_outputs, tf_outputs, images, score_threshold)})
