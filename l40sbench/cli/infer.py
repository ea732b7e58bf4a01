"""`infer`: a finished run's fine-tuned model timed again on any runtime, and under MLPerf LoadGen scenarios."""

from __future__ import annotations

import contextlib
from pathlib import Path

from l40sbench.cli.common import EXIT_INTERRUPTED, log, make_config, output_dir_for, run_id
from l40sbench.cli.device_flags import add_cpu_flag, gate_devices, one_device
from l40sbench.cli.loadgen_flags import add_scenario_flags, load_config
from l40sbench.cli.run_flags import (
    add_preprocess_flag,
    add_runtime_flags,
    add_tfds_flags,
    data_flags,
    preprocess_without_model,
)
from l40sbench.cli.values import finite
from l40sbench.errors import UserError
from l40sbench.modelfile.detector_formats import FORMATS as DETECTOR_FORMATS
from l40sbench.modelfile.detector_formats import YOLO_FORMATS
from l40sbench.modelfile.files import LAYOUTS


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "infer",
        help="time a finished run's fine-tuned model, or a model file of yours, on any inference runtime, "
             "without training",
        description=(
            "Reads RUN_DIR (a classify or detect run folder: result.json and the fine-tuned model, model.keras "
            "or the SavedModel), reads the run's test split again with its own settings, times the model on tf "
            "in this process (the reference) and on each other runtime in a child process, images one at a "
            "time with the warm-up excluded, and scores each against the labels and against tf. The rows "
            "replace that runtime's earlier rows in RUN_DIR/result.json; the run's own tf figures stay. "
            "With --model PATH instead, a model file of yours (a .keras file, a SavedModel folder or an .onnx "
            "file) is timed as it is on the data of --data, into a new run folder of the same shape: uint8 "
            "pixels go in, scaled as --preprocess says (an ONNX file taking (batch, 3, h, w) gets them so). "
            "Any one output is timed; accuracy is scored where the model's outputs are the data's classes and "
            "its input scaling is known (--preprocess, or its own Rescaling or Normalization layer first); "
            "otherwise the runtimes' agreement only (the largest output gap for a feature map), and the record "
            "says why. A batch the file is fixed at is read from it, and a batch beyond it refused at once. A "
            "detector file (a SavedModel or ONNX file with the Object Detection API's outputs: detection_boxes, "
            "detection_scores, detection_classes, num_detections) is timed on a VOC set into a detect run's "
            "folder, scored by COCO mAP."
        ),
    )
    p.add_argument("run_dir", type=Path, nargs="?", metavar="RUN_DIR", help="a finished classify or detect run folder")
    _add_model_flags(p)
    add_runtime_flags(p, default=("all",))
    add_cpu_flag(p)
    add_scenario_flags(p)
    p.set_defaults(func=run)


LABEL_MAP_HELP = ("with --model of a detector: its class ids' names (the Object Detection API's label_map.pbtxt, or "
                  "JSON {\"id\": \"name\"}), matched to the data's classes by name (default: its ids are the data's "
                  "classes in name order from 1, as detect numbers them)")
SCORE_HELP = "with --model of a detector: detections below this score are not scored (default: 0.05, detect's)"


def _add_model_flags(p) -> None:
    """--model and the data flags it takes (classify's)."""
    g = p.add_argument_group("a model file of yours (instead of RUN_DIR)")
    g.add_argument("--model", type=Path, metavar="PATH",
                   help="a .keras file, a SavedModel folder or an .onnx file, timed as it is: tf (onnxruntime for an "
                        "ONNX file) in this process is the reference; the runtimes that can load it follow")
    g.add_argument("--data", help="with --model: as classify's --data, a folder-per-class set or tfds:NAME "
                                  "(default: the stand-in); for a detector file, as detect's, a Pascal VOC folder "
                                  "or tfds:NAME (default: detect's stand-in)")
    add_tfds_flags(g)
    g.add_argument("--image-size", type=int, help="with --model: the square input size where the model takes any "
                                                  "(default: the size it declares, else 224); for a detector file, "
                                                  "the square size LoadGen's library holds each test image at "
                                                  "(default: 640, detect's), as MLPerf's RetinaNet library holds "
                                                  "its images at 800 px; a YOLO or torchvision file's library "
                                                  "holds each image at its own size")
    g.add_argument("--limit", type=int, help="with --model: at most N images per split, classes balanced")
    g.add_argument("--strict", action="store_true", help="with --model: fail on an unreadable image instead of "
                                                        "skipping it")
    g.add_argument("--output-dir", type=Path, help="with --model: where the run folder goes "
                                                   "(default: results/<stamp>-infer-<model name>/)")
    add_preprocess_flag(g)
    g.add_argument("--label-map", type=Path, metavar="FILE", help=LABEL_MAP_HELP)
    g.add_argument("--score-threshold", type=finite, metavar="S", help=SCORE_HELP)
    g.add_argument("--detector-format", choices=DETECTOR_FORMATS,
                   help="with --model FILE.onnx: the detector format of its outputs, over the suite's guess from the "
                        "file (od-api: the Object Detection API's outputs; yolo: an Ultralytics raw head (1, 4 + "
                        "classes, anchors), letterboxed in, decoded and NMS'd out; yolo-end2end: (1, K, 6), NMS "
                        "inside; torchvision: boxes, labels, scores)")
    g.add_argument("--nms-iou", type=finite, metavar="IOU",
                   help="with --model of a YOLO raw head: the IoU above which NMS drops a box of the same class "
                        "(default: 0.7, Ultralytics' for validation; its conf is --score-threshold, default 0.001)")
    g.add_argument("--layout", choices=LAYOUTS,
                   help="with --model FILE.onnx: where its input's channels go, where the file leaves it open (all "
                        "dimensions symbolic, and the graph does not show it); its height and width then come from "
                        "--image-size (default: read from the file)")


MODEL_ONLY = ("--data", "--tfds-data-dir", "--tfds-splits", "--image-size", "--limit", "--strict", "--output-dir",
              "--layout", "--label-map", "--score-threshold", "--detector-format", "--nms-iou")


def _given_flags(args) -> list[str]:
    """The --model-only flags given on the command line."""
    return [flag for flag in MODEL_ONLY if getattr(args, flag[2:].replace("-", "_")) not in (None, False)]


def _model_run(args, load):
    """(run folder, the call that times --model into it) after the checks: its kind, its input, its fixed batch
    against the batches asked for, the scaling and the label map asked for; then the GPU gate, then a SavedModel's
    signature (a detector's outputs, or one output), which reads TensorFlow's proto."""
    from l40sbench.harness.given_file import check_batches
    from l40sbench.harness.infer_model import infer_model
    from l40sbench.modelfile import given as given_file

    given = given_file.check(args.model, args.layout, args.detector_format)
    if given.kind != "savedmodel":  # a SavedModel's batch is read with its signature, after the gate
        check_batches(given, load)
    if args.label_map is not None:
        from l40sbench.modelfile.detector import read_label_map

        read_label_map(args.label_map)
    _gate(args)
    given = given_file.with_task(given)
    if given.kind == "savedmodel":
        check_batches(given, load)
    output_dir = args.output_dir or Path("results") / run_id("infer", given.name)
    config = _detector_config(args, given, output_dir) if given.task == "detect" else _classifier_config(
        args, given, output_dir)
    return output_dir, lambda load, save: infer_model(given, config, args.runtimes, args.runtime_precision, log=log,
                                                       save=save, load=load, label_map=args.label_map,
                                                       nms_iou=args.nms_iou)


def _classifier_config(args, given, output_dir: Path):
    from l40sbench.classify.config import ClassifyConfig

    for flag, value in (("--label-map", args.label_map), ("--score-threshold", args.score_threshold),
                        ("--nms-iou", args.nms_iou)):
        if value is not None:
            raise UserError(f"{flag} is for a detector file; {given.path.name} has one output, not a detector's")
    return make_config(ClassifyConfig, base=given.name, model=args.model, **data_flags(args), epochs=None,
                       image_size=args.image_size, weights=str(args.model), limit=args.limit, strict=args.strict,
                       output_dir=output_dir, runtimes=args.runtimes, runtime_precision=args.runtime_precision,
                       preprocess=args.preprocess)


def _detector_config(args, given, output_dir: Path):
    from l40sbench.detect.config import DetectConfig
    from l40sbench.runtimes.yolo import CONF

    for flag, value in (("--preprocess", args.preprocess), ("--layout", args.layout)):
        if value is not None:
            raise UserError(f"{flag} is not for a detector file: {given.path.name} "
                            + ("takes each image at its own size, as uint8 pixels it scales itself"
                               if given.detector_format == "od-api" else
                               f"is a {given.detector_format} export, fed as its format says"))
    yolo_head = given.detector_format in YOLO_FORMATS
    if args.nms_iou is not None and given.detector_format != "yolo":
        raise UserError(f"--nms-iou is for a YOLO raw head; {given.path.name} is a {given.detector_format} export "
                        "(its NMS, if any, is inside it)")
    if args.nms_iou is not None and not 0 < args.nms_iou <= 1:
        raise UserError(f"--nms-iou {args.nms_iou:g}: an IoU in (0, 1]")
    threshold = args.score_threshold if args.score_threshold is not None else CONF if yolo_head else None
    return make_config(DetectConfig, base=given.name, **data_flags(args), limit=args.limit, strict=args.strict,
                       output_dir=output_dir, runtimes=args.runtimes, runtime_precision=args.runtime_precision,
                       **({} if threshold is None else {"score_threshold": threshold}),
                       **({} if args.image_size is None else {"image_size": args.image_size}))


def _gate(args) -> None:
    """The devices the figures run on: tf (the reference of a run folder or a Keras file) on the GPU where it can
    use one; an ONNX file's reference, onnxruntime, and OpenVINO beside it on the CPU whatever the host has, so
    TensorFlow's view of the GPUs neither stops nor names that run."""
    from l40sbench.modelfile.files import kind_of

    if args.model is not None and kind_of(args.model) == "onnx":
        from l40sbench.backends.gpu_gate import choose

        choose(None, cpu=True, why_cpu="an ONNX file: onnxruntime (the reference) and OpenVINO time it on the CPU")
        log(f"infer --model {args.model}: on the CPU (onnxruntime's CPU provider is the reference)")
        return
    gate_devices(args, "tensorflow")  # the reference, tf, runs here


def _folder_run(args):
    """(run folder, the call that times RUN_DIR's model again)."""
    from l40sbench.harness.infer import infer

    if _given_flags(args):
        raise UserError(f"{_given_flags(args)[0]} goes with --model: a run folder's test split is read again with "
                        "the run's own settings")
    _gate(args)
    return args.run_dir, lambda load, save: infer(args.run_dir, args.runtimes, args.runtime_precision, log=log,
                                                  save=save, load=load)


def run(args) -> int:
    from l40sbench.core.records import write_result
    from l40sbench.report import beside_mlperf, lines, scenario_tables, tables
    from l40sbench.runtimes.registry import resolve

    if (args.run_dir is None) == (args.model is None):
        raise UserError("infer takes RUN_DIR (a finished run folder) or --model PATH (a model file), one of them")
    resolve(args.runtimes)  # an unknown name fails before anything is read
    one_device(args)
    load = load_config(args)
    preprocess_without_model(args)
    folder, measure = _model_run(args, load) if args.model is not None else _folder_run(args)
    saved: dict = {}

    def save(record: dict) -> None:
        saved["path"], saved["record"] = write_result(folder, record), record

    try:
        with output_dir_for(folder) if args.model is not None else contextlib.nullcontext():
            record = measure(load, save)
    except KeyboardInterrupt:
        from l40sbench.core.stops import signal_name, what

        if "path" in saved:
            save({**saved["record"], "stopped_by": signal_name()})
        kept = f"; the rows and tests finished so far are in {saved['path']}" if "path" in saved else ""
        log(f"{what()}{kept}")
        return EXIT_INTERRUPTED
    print()
    print(f"Inference by runtime: {record['base']} from {args.model or args.run_dir} (batch 1, fastest first; "
          "precision: what the runtime runs, and what it was asked for where that differs)")
    # a new run with tf alone: its probe's line (a run folder's `inference` keeps the run's own figures)
    print(tables.runtime_table(record) or (tables.inference_table([record]) if args.model is not None else ""))
    if (record.get("notes") or {}).get("accuracy"):
        print(f"  {record['notes']['accuracy']}")
    if args.model is not None:  # a new run: what a classify run's summary says of it
        from l40sbench.core.stability import line as stability_line

        print(lines.model_lines(record))
        print(stability_line(record.get("stability")))
    if load is not None:
        for scenario in load.scenarios:
            print()
            print(scenario_tables.scenario_title(record, scenario))
            print(scenario_tables.scenario_table(record, scenario, runtimes=record["notes"]["infer_runs"][-1]["runtimes"]))
        print(f"LoadGen logs: {folder / 'loadgen'}")
    audit_said, failed = scenario_tables.audit_lines(record, load)
    for line in audit_said:
        print(line)
    print(f"results: {saved['path']}")
    if beside_mlperf.is_yolo(record):
        print(f"beside MLPerf Inference v6.0's YOLO11 rows (L40S): ./run.sh report {folder} mlperf-v6.0")
    return 1 if failed else 0
