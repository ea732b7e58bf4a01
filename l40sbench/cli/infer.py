"""`infer`: a finished run's fine-tuned model timed again on any runtime, and under MLPerf LoadGen scenarios."""

from __future__ import annotations

import contextlib
from pathlib import Path

from l40sbench.cli.common import (
    EXIT_INTERRUPTED,
    Renamed,
    add_cpu_flag,
    add_preprocess_flag,
    add_runtime_flags,
    add_tfds_flags,
    data_flags,
    finite,
    float_list,
    gate_devices,
    int_list,
    log,
    make_config,
    name_list,
    one_device,
    output_dir_for,
    preprocess_without_model,
    run_id,
)
from l40sbench.errors import UserError
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
    _add_scenario_flags(p)
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
                                                  "(default: the size it declares, else 224)")
    g.add_argument("--limit", type=int, help="with --model: at most N images per split, classes balanced")
    g.add_argument("--strict", action="store_true", help="with --model: fail on an unreadable image instead of "
                                                        "skipping it")
    g.add_argument("--output-dir", type=Path, help="with --model: where the run folder goes "
                                                   "(default: results/<stamp>-infer-<model name>/)")
    add_preprocess_flag(g)
    g.add_argument("--label-map", type=Path, metavar="FILE", help=LABEL_MAP_HELP)
    g.add_argument("--score-threshold", type=finite, metavar="S", help=SCORE_HELP)
    g.add_argument("--layout", choices=LAYOUTS,
                   help="with --model FILE.onnx: where its input's channels go, where the file leaves it open (all "
                        "dimensions symbolic, and the graph does not show it); its height and width then come from "
                        "--image-size (default: read from the file)")


MODEL_ONLY = ("--data", "--tfds-data-dir", "--tfds-splits", "--image-size", "--limit", "--strict", "--output-dir",
              "--layout", "--label-map", "--score-threshold")


def _add_scenario_flags(p) -> None:
    """The MLPerf LoadGen flags of `infer`."""
    from l40sbench.loadgen.config import AUDIT_ROUNDS, DURATION_S, SAMPLES_PER_QUERY, SCENARIOS

    g = p.add_argument_group(
        "load (MLPerf LoadGen)",
        "With --scenario, each runtime measured above then runs under MLPerf's LoadGen: the test images, decoded "
        "once and held in memory, are the query sample library; a queue feeds --workers callers, each gathering up "
        "to --max-batch-size queued samples into one call. LoadGen's logs go to RUN_DIR/loadgen/<runtime>-<precision>/<test>/, "
        "and inference.scenarios in result.json gets one entry per test. Defaults are MLPerf's where it has them; "
        "LoadGen's generation hints come from each runtime's own probe.")
    g.add_argument("--scenario", type=name_list, metavar="LIST",
                   help=f"LoadGen scenarios to run, from {','.join(SCENARIOS)}, or all")
    g.add_argument("--duration", type=finite, default=DURATION_S, metavar="S",
                   help=f"minimum seconds of each test (LoadGen's min_duration; default {DURATION_S:g}; MLPerf "
                        "submissions run 600)")
    g.add_argument("--min-queries", type=int, metavar="N", help="minimum queries of each test (default: LoadGen's, 100)")
    g.add_argument("--batch", type=int_list, dest="batch", action=Renamed, new="--max-batch-size")
    g.add_argument("--max-batch-size", type=int_list, dest="batch", default=(1,), metavar="LIST",
                   help="most samples one call takes (dynamic batching); a list runs one test per batch "
                        "(default: 1; single-stream is always 1)")
    g.add_argument("--batch-timeout-ms", type=finite, default=0.0, metavar="T",
                   help="how long a call waits for more samples after its first (default: 0, what is queued)")
    g.add_argument("--workers", type=int, default=1, metavar="K",
                   help="callers running at once, each with its own copy of the model and cores/K threads "
                        "(tf and savedmodel share one model and TensorFlow's pool) (default: 1)")
    g.add_argument("--latency-bound-ms", type=finite, metavar="MS",
                   help="server: the bound 99%% of queries must meet (default: MLPerf's, 15 for classify "
                        "(ResNet-50), 100 for detect (RetinaNet))")
    g.add_argument("--target-qps", type=float_list, metavar="LIST",
                   help="server: Poisson arrival rates to offer, one test each (default: half the runtime's "
                        "one-image rate)")
    g.add_argument("--find-max-qps", action="store_true",
                   help="server: search the highest rate LoadGen calls VALID (short runs doubling or halving from "
                        "the one-image rate, then bisection, at most 10), then confirm it with one full run")
    g.add_argument("--samples-per-query", type=int, default=SAMPLES_PER_QUERY, metavar="N",
                   help=f"multi-stream: samples in each query (default: MLPerf's, {SAMPLES_PER_QUERY})")
    g.add_argument("--expected-qps", type=finite, metavar="QPS",
                   help="offline: the rate LoadGen sizes its one query for (default: 1.5x the one-image rate, twice "
                        "that with --max-batch-size or --workers above 1); too low ends early and INVALID")
    g.add_argument("--audit", type=name_list, metavar="LIST",
                   help="MLPerf's compliance tests to run and check beside each performance test, from TEST01 (the "
                        "responses of performance mode equal the accuracy run's; speed within 10%%), TEST04 (the same "
                        "sample every query is not over 10%% faster), TEST05 (LoadGen's alternate seeds: speed within "
                        "5%%), or all; the baseline and the audit run in turns, twice each; one PASS or FAIL line per "
                        "test, exit 1 on a FAIL; never recorded as results (default scenarios: single-stream,offline)")
    g.add_argument("--audit-rounds", type=int, default=AUDIT_ROUNDS, metavar="N",
                   help=f"with --audit: turns of the baseline and each test (default {AUDIT_ROUNDS}: A B A B); the "
                        "verdict is on the median of the paired ratios, so more rounds steady it on a host whose speed "
                        "moves")
    g.add_argument("--mode", choices=("performance", "accuracy", "both"), default="performance",
                   help="LoadGen's test mode: performance (default), accuracy (every sample once, LoadGen's accuracy "
                        "log scored and checked against the probe's accuracy), or both, as MLPerf submissions run")


def _load_config(args):
    """The --scenario flags as a checked loadgen LoadConfig, or None without --scenario."""
    from l40sbench.loadgen.config import AUDIT_SCENARIOS, AUDITS, SCENARIOS, LoadConfig

    defaults = LoadConfig(scenarios=())
    given = [flag for flag, value in (
        ("--min-queries", args.min_queries), ("--latency-bound-ms", args.latency_bound_ms),
        ("--target-qps", args.target_qps), ("--expected-qps", args.expected_qps), ("--find-max-qps", args.find_max_qps),
        ("--max-batch-size", args.batch != defaults.batches), ("--workers", args.workers != defaults.workers),
        ("--batch-timeout-ms", args.batch_timeout_ms != defaults.batch_timeout_ms),
        ("--duration", args.duration != defaults.duration_s),
        ("--samples-per-query", args.samples_per_query != defaults.samples_per_query),
        ("--mode", args.mode != "performance"), ("--audit-rounds", args.audit_rounds != defaults.audit_rounds)) if value]
    audits = tuple(AUDITS) if args.audit == ("all",) else tuple(name.upper() for name in args.audit or ())
    if args.audit is not None and args.scenario is None:
        args.scenario = AUDIT_SCENARIOS
    if args.scenario is None:
        if given:
            raise UserError(f"{given[0]} goes with --scenario")
        return None
    scenarios = tuple(SCENARIOS) if args.scenario == ("all",) else args.scenario
    config = LoadConfig(scenarios=scenarios, batches=args.batch, batch_timeout_ms=args.batch_timeout_ms,
                        workers=args.workers, duration_s=args.duration, min_queries=args.min_queries,
                        latency_bound_ms=args.latency_bound_ms, target_qps=args.target_qps or (),
                        samples_per_query=args.samples_per_query, expected_qps=args.expected_qps,
                        find_max_qps=args.find_max_qps,
                        modes=("performance", "accuracy") if args.mode == "both" else (args.mode,), audits=audits,
                        audit_rounds=args.audit_rounds)
    config.check()
    return config


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

    given = given_file.check(args.model, args.layout)
    check_batches(given, load)
    if args.label_map is not None:
        from l40sbench.modelfile.detector import read_label_map

        read_label_map(args.label_map)
    _gate(args)
    given = given_file.with_task(given)
    output_dir = args.output_dir or Path("results") / run_id("infer", given.name)
    config = _detector_config(args, given, output_dir) if given.task == "detect" else _classifier_config(
        args, given, output_dir)
    return output_dir, lambda load, save: infer_model(given, config, args.runtimes, args.runtime_precision, log=log,
                                                       save=save, load=load, label_map=args.label_map)


def _classifier_config(args, given, output_dir: Path):
    from l40sbench.classify.config import ClassifyConfig

    for flag, value in (("--label-map", args.label_map), ("--score-threshold", args.score_threshold)):
        if value is not None:
            raise UserError(f"{flag} is for a detector file; {given.path.name} has one output, not a detector's")
    return make_config(ClassifyConfig, base=given.name, model=args.model, **data_flags(args), epochs=None,
                       image_size=args.image_size, weights=str(args.model), limit=args.limit, strict=args.strict,
                       output_dir=output_dir, runtimes=args.runtimes, runtime_precision=args.runtime_precision,
                       preprocess=args.preprocess)


def _detector_config(args, given, output_dir: Path):
    from l40sbench.detect.config import DetectConfig

    for flag, value in (("--preprocess", args.preprocess), ("--image-size", args.image_size),
                        ("--layout", args.layout)):
        if value is not None:
            raise UserError(f"{flag} is not for a detector file: {given.path.name} takes each image at its own "
                            "size, as uint8 pixels it scales itself")
    return make_config(DetectConfig, base=given.name, **data_flags(args), limit=args.limit, strict=args.strict,
                       output_dir=output_dir, runtimes=args.runtimes, runtime_precision=args.runtime_precision,
                       **({} if args.score_threshold is None else {"score_threshold": args.score_threshold}))


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
    from l40sbench.report import scenario_tables, tables
    from l40sbench.runtimes.registry import resolve

    if (args.run_dir is None) == (args.model is None):
        raise UserError("infer takes RUN_DIR (a finished run folder) or --model PATH (a model file), one of them")
    resolve(args.runtimes)  # an unknown name fails before anything is read
    one_device(args)
    load = _load_config(args)
    preprocess_without_model(args)
    folder, measure = _model_run(args, load) if args.model is not None else _folder_run(args)
    saved: dict = {}

    def save(record: dict) -> None:
        saved["path"] = write_result(folder, record)

    try:
        with output_dir_for(folder) if args.model is not None else contextlib.nullcontext():
            record = measure(load, save)
    except KeyboardInterrupt:
        kept = f"; the rows and tests finished so far are in {saved['path']}" if "path" in saved else ""
        log(f"interrupted{kept}")
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

        print(tables.utilisation_line(record))
        print(stability_line(record.get("stability")))
    if load is not None:
        for scenario in load.scenarios:
            print()
            print(scenario_tables.scenario_title(record, scenario))
            print(scenario_tables.scenario_table(record, scenario, runtimes=record["notes"]["infer_runs"][-1]["runtimes"]))
        print(f"LoadGen logs: {folder / 'loadgen'}")
    failed = _audit_lines(record, load)
    print(f"results: {saved['path']}")
    return 1 if failed else 0


def _audit_lines(record: dict, load) -> bool:
    """The audits of this call, a line each; whether any FAILed."""
    from l40sbench.loadgen.audits import line

    if load is None:
        return False
    runtimes = record["notes"]["infer_runs"][-1]["runtimes"]
    audits = [a for a in (record["inference"] or {}).get("audits") or ()
              if "verdict" in a and (a["runtime"] in runtimes or "all" in runtimes) and a["test"] in load.audits
              and a.get("scenario_name") in load.scenarios]
    if audits:
        print()
        print("MLPerf compliance audits (checked as MLCommons' verification checks them; never results):")
    for audit in audits:
        print(f"  {audit['runtime']:<12} {line(audit)}")
    return any(a["verdict"] == "FAIL" for a in audits)
