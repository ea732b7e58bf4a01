"""`infer --model` of a detector file: a SavedModel or an ONNX file with the Object Detection API's serving
outputs (modelfile.detector), timed untrained on a VOC set (--data, tfds:, or the stand-in) into a run folder of
a detect run's shape: per-image latency, COCO mAP by pycocotools against the set's boxes, every runtime that can
load it, LoadGen's scenarios.

The reference is timed in this process: TensorFlow's SavedModel loader (the row named tf), or onnxruntime for an
ONNX file. Each test image is fed at its own size, as `detect` serves it; LoadGen's library holds each at
--image-size (detect.runtimes.library), a YOLO or torchvision file's at its own size (letterboxed or resized by
the file's own way inside each query).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from l40sbench.core.results import DatasetInfo
from l40sbench.core.text import Log
from l40sbench.errors import UserError
from l40sbench.harness.given_file import NO_FLOPS_ONNX, NO_TRAINING, ONNX_REFERENCE, Prepared, probe
from l40sbench.modelfile.detector_formats import YOLO_FORMATS
from l40sbench.modelfile.files import ModelFile
from l40sbench.runtimes.staged import Decoding
from l40sbench.runtimes.yolo import IOU

NO_FLOPS = ("none: a detector file's work depends on each image's size and on its post-processing; "
            "`detect` counts its own model's")


def detector(given: ModelFile, config, load, label_map: Path | None, log: Log,
             nms_iou: float | None = None) -> Prepared:
    """The detector file ready to time on config's data (a DetectConfig); a YOLO or torchvision export with its
    host stages (runtimes.staged: letterbox, decode and NMS at `nms_iou`, default Ultralytics' 0.7,
    config.score_threshold as its conf).

    Raises:
      UserError: an empty test split, a label map that does not parse or names none of the data's classes,
        --max-batch-size above 1.
    """
    from l40sbench.data import voc
    from l40sbench.data.images import decode_rgb
    from l40sbench.detect import runtimes as det_runtimes
    from l40sbench.detect.data import load_annotations
    from l40sbench.detect.evaluate import coco_ground_truth, evaluate
    from l40sbench.harness.tasks import load_task
    from l40sbench.modelfile import detector as det_file
    from l40sbench.modelfile import files, onnx_file
    from l40sbench.runtimes import agreement

    if load is not None:
        load_task("detect").check_scenarios(load, {})
    names = det_file.read_label_map(label_map) if label_map is not None else given.class_names
    train, test, classes, source, skipped, _ = load_annotations(config, log)
    if not test:
        raise UserError("the test split is empty: nothing to time")
    decoding = None
    if given.detector_format not in (None, "od-api"):
        if names is None and given.detector_format != "torchvision":  # a YOLO head's ids count from 0
            names = dict(enumerate(classes))
        unknown = [name for name in classes if names is not None and name not in names.values()]
        if unknown:
            log(f"the model does not know {', '.join(unknown)} (its classes: {', '.join(names.values())}): their "
                "objects are scored as missed")
        decoding = Decoding(given.detector_format, given.size, config.score_threshold,
                            IOU if nms_iou is None else nms_iou).to_dict()
    table = det_file.class_ids(names, classes)
    images = [decode_rgb(a.image_path.read_bytes())[None] for a in test]
    sizes = [image.shape[1:3] for image in images]
    ground_truth = coco_ground_truth(test, classes)
    onnx = given.kind == "onnx"
    artifact = given.path if decoding is None else onnx_file.fed_detector(given, Path(config.output_dir))

    def reference(sync, log: Log) -> tuple:
        label = ONNX_REFERENCE if onnx else "tf"
        row, outputs = probe(ONNX_REFERENCE if onnx else "savedmodel", artifact, label, given.exporter, images,
                             config.warmup, sync, log, decoding)
        missing = set(det_file.OUTPUTS) - set(outputs)
        if missing:  # a signature can say one thing and return another
            raise UserError(f"--model {given.path}: its outputs lack {', '.join(sorted(missing))}")
        accuracy = evaluate(ground_truth, det_runtimes.coco_detections(outputs, config.score_threshold, sizes, table))
        scores = {**accuracy, **agreement.detection(outputs, outputs, len(images), config.score_threshold)}
        work = det_runtimes.workload(given.path, images, outputs, ground_truth, config.score_threshold,
                                     config.warmup, "fp32", config.image_size if decoding is None else None,
                                     export=onnx_file.export(artifact) if onnx else None,
                                     sizes=sizes, table=table, decoding=decoding)
        return dataclasses.replace(row, accuracy=scores), work, accuracy, ""

    dataset = DatasetInfo(source=source, train_images=len(train), test_images=len(test),
                          classes={"train": voc.object_counts(train), "test": voc.object_counts(test)},
                          skipped_files=skipped)
    facts = {"name": given.name, "input_size": "each image at its own size", "kind": given.kind,
             "file": files.identity(given.path), "num_classes": len(classes) + 1, "classes": list(classes),
             **det_file.facts(label_map, table, classes, _read_from(given, label_map)), "given": NO_TRAINING,
             **({"detector_format": given.detector_format, "decoding": decoding} if decoding else {})}
    return Prepared("detect", config, dataset, facts, reference,
                    lambda peak, inference, kind: {"flop_counter": NO_FLOPS_ONNX if onnx else NO_FLOPS})


def _read_from(given: ModelFile, label_map: Path | None) -> str | None:
    """How a YOLO file's class ids were named, where no --label-map named them (None: by name order from 1)."""
    if label_map is not None or given.detector_format not in YOLO_FORMATS:
        return None
    return ("the file's own names (Ultralytics' metadata)" if given.class_names is not None else
            "the model's class ids are the data's classes in name order from 0, as Ultralytics numbers them")
