"""`infer --model` of a file of one output (a classifier, a backbone, a segmenter): a .keras file, a SavedModel or
an ONNX file, fed as its input scaling is decided (modelfile.scaling), into a run folder of a classify run's
shape."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from l40sbench.core.records import written_whole
from l40sbench.core.results import DatasetInfo, InferenceResult
from l40sbench.core.text import Log
from l40sbench.errors import UserError
from l40sbench.harness.given_file import NO_FLOPS_ONNX, NO_TRAINING, ONNX_REFERENCE, Prepared, probe
from l40sbench.modelfile.files import ANY_SIZE, ModelFile

SCALING_UNKNOWN = ("test accuracy left out: the file does not say how its input is scaled, and --preprocess did not "
                   "(fed 0-255 as they are); the runtimes' agreement is reported")


def _size(given: ModelFile, asked: int | None) -> int:
    """The image size to feed: --image-size where the model takes any, else the model's own.

    Raises:
      UserError: --image-size differs from the size the model declares.
    """
    if given.size is not None and asked is not None and asked != given.size:
        raise UserError(f"--image-size {asked}: {given.path.name} takes {given.size} px images only")
    return given.size or asked or ANY_SIZE


def _labels(outputs, test, decided) -> tuple:
    """The labels a file's outputs are scored against, and why none: outputs that are not the data's classes, or
    an input scaling the suite does not know (an accuracy on wrongly scaled pixels would be near chance)."""
    from l40sbench.classify import runtimes as cl_runtimes

    labels, note = cl_runtimes.labels_for(outputs, test.y["test"], len(test.classes))
    if labels is not None and not decided.known:
        return None, SCALING_UNKNOWN
    return labels, note


def classifier(given: ModelFile, config, load, log: Log) -> Prepared:
    """A file of one output (a classifier, a backbone, a segmenter), fed as its scaling is decided."""
    from l40sbench.classify import runtimes as cl_runtimes
    from l40sbench.classify.probe import measure_inference
    from l40sbench.classify.task import load_dataset
    from l40sbench.modelfile import files, keras_file, onnx_file, scaling
    from l40sbench.runtimes import agreement

    model = None
    if given.kind != "onnx":
        model, given, decided = keras_file.served(given, config.preprocess)
    else:
        decided = scaling.decide(config.preprocess, given.own_scaling)
    size = _size(given, config.image_size)
    config = dataclasses.replace(config, image_size=size)
    log(f"input scaling: {decided.mode.name} ({decided.mode.description}): {decided.how}")
    found: list = []  # the test split's files, where the data is a folder: each row times file to label too
    test, source = load_dataset(config, size, log, found)
    test_files = found[0]["test"] if found else None
    artifact = given.path  # a SavedModel's children load it as it is, its signature fed its own type
    if given.kind == "onnx":  # its image fixed and its scaling as nodes where either is needed, else as given
        artifact = onnx_file.fed(given, size, decided.mode, Path(config.output_dir))
    if given.kind == "keras" or (given.kind == "savedmodel" and not decided.mode.identity):
        # the folder holds its model as a classify run's does (`infer RUN_DIR` times it again); uint8 in, scaled
        artifact = Path(config.output_dir) / cl_runtimes.MODEL_FILE
        with written_whole(artifact) as partial:
            model.save(partial)  # what every child of tf loads

    def reference(sync, log: Log) -> tuple:
        if model is not None:
            log(f"tf (reference): {len(test.y['test'])} test images one at a time, first {config.warmup} "
                "excluded ...")
            measured = measure_inference(model, test, config, sync, test_files)
            if measured.outputs is None:
                raise UserError("the test split is empty: nothing to time")
            outputs, inference = measured.outputs, measured.inference
        else:
            row, stacked = probe(ONNX_REFERENCE, artifact, ONNX_REFERENCE, given.exporter,
                                 [image[None] for image in test.x["test"]], config.warmup, sync, log)
            outputs, inference = next(iter(stacked.values())), row.inference
        labels, note = _labels(outputs, test, decided)
        scores = agreement.classification(outputs, outputs, labels)
        work = cl_runtimes.workload(model, test.x["test"], labels, outputs, config.warmup, "fp32",
                                    test_files.paths if test_files is not None else ())
        if model is not None:
            return (cl_runtimes.reference_row(inference, outputs, labels, artifact, "fp32", False, given.exporter),
                    work, {"test_accuracy": scores["test_accuracy"]}, note)
        work = dataclasses.replace(work, export=onnx_file.export(artifact))
        return dataclasses.replace(row, accuracy=scores), work, {"test_accuracy": scores["test_accuracy"]}, note

    def utilisation(peak: dict, inference: InferenceResult, kind: str) -> dict:
        return _utilisation(model, size, peak, inference, kind)

    dataset = DatasetInfo(source=source, train_images=int(len(test.y["train"])), test_images=int(len(test.y["test"])),
                          classes=test.counts, skipped_files=test.skipped_files)
    facts = {"name": given.name, "input_size": size, "kind": given.kind, "file": files.identity(given.path),
             "layout": given.layout, "fixed_batch": given.batch, "preprocess": decided.to_dict(),
             "parameters": int(model.count_params()) if model is not None else None, "given": NO_TRAINING}
    return Prepared("classify", config, dataset, facts, reference, utilisation)


def _utilisation(model, size: int, peak: dict, inference: InferenceResult, kind: str) -> dict:
    """Inference's GFLOP/s over the peak, by the one convention (a TensorFlow graph's count); none for ONNX."""
    from l40sbench.backends import tensorflow as ops
    from l40sbench.core.utilisation import run_utilisation

    if model is None:
        return {"flop_counter": NO_FLOPS_ONNX}
    try:
        forward = ops.forward_gflops(model, size, "uint8")
    except ValueError as exc:
        return {"flop_counter": f"{ops.FLOP_COUNTER}: utilisation unavailable ({exc})"}
    return {"flop_counter": ops.FLOP_COUNTER, **run_utilisation(
        peak, "fp32", forward, train_gflops_per_image=None, train_convention="", train_images_per_second=None,
        inference_images_per_second=inference.images_per_second, devices=1, device_kind=kind)}
