"""Command line: argument parsing and talking to the user, nothing else.

Each subcommand builds a config and calls one library function. TensorFlow is
imported only inside the subcommands that train, so --help starts instantly.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import math
import os
import sys
import tempfile
from pathlib import Path

from l40sbench.classify.bases import BASES
from l40sbench.errors import UserError
from l40sbench.settings import PRECISIONS

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line (exit 2) instead of usage + error."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _add_tfds_flags(p) -> None:
    p.add_argument("--tfds-data-dir", type=Path, metavar="DIR",
                   help="where TFDS sets are prepared (default: $TFDS_DATA_DIR, else ~/tensorflow_datasets)")
    p.add_argument("--tfds-splits", metavar="TRAIN,TEST",
                   help="the two splits of a tfds: set, in TFDS slicing syntax, e.g. 'train[:80%%],train[80%%:]' "
                        "(default: train,test when the set has both)")


def _data_flags(args) -> dict:
    """--data and the --tfds-* flags as config values; a tfds: reference is checked here, before anything loads."""
    if args.data is None or not args.data.startswith("tfds:"):
        if args.tfds_splits or args.tfds_data_dir:
            raise UserError("--tfds-data-dir and --tfds-splits go with --data tfds:NAME")
        return {"data": None if args.data is None else Path(args.data)}
    from l40sbench.tfds_source import TfdsRef

    ref = TfdsRef.parse(args.data, args.tfds_data_dir, args.tfds_splits)
    return {"data": args.data, "tfds_data_dir": ref.data_dir, "tfds_splits": ref.splits}


def _add_run_flags(p) -> None:
    """Flags every benchmark run takes."""
    _add_tfds_flags(p)
    p.add_argument("--output-dir", type=Path, help="where result.json and result.csv go; detect also writes the COCO ground truth "
                        "and detections it scored there (default: results/<run-id>/)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument(
        "--precision", default="fp32", choices=PRECISIONS,
        help="mixed-precision policy (default: fp32)",
    )
    p.add_argument("--strict", action="store_true", help="fail on an unreadable image instead of skipping it")


def _add_runtime_flags(p, default: tuple[str, ...] = ("tf",)) -> None:
    """--runtimes and --runtime-precision: the inference runtimes a fine-tuned model is timed on."""
    from l40sbench.runtimes.registry import ORDER, PRECISIONS as RUNTIME_PRECISIONS

    p.add_argument("--runtimes", type=_name_list, default=default, metavar="LIST",
                   help=f"inference runtimes to time the fine-tuned model on, from {','.join(ORDER)}, "
                        "or all (every installed one). tf, the training process's own path, always runs: every "
                        "other runtime's accuracy is checked against it. Each other runtime gets the model through "
                        f"its library's own exporter and is timed in a child process (default: {','.join(default)})")
    p.add_argument("--runtime-precision", choices=RUNTIME_PRECISIONS, default="fp32",
                   help="the precision every runtime but tf is told to run in (OpenVINO's inference precision "
                        "hint, LiteRT's fp16 or dynamic-range int8 conversion); a runtime that cannot is marked "
                        "so in its row (default: fp32)")


def _add_classify(subparsers) -> None:
    p = subparsers.add_parser(
        "classify",
        help="fine-tune a keras.applications base and time training and per-image inference",
        description=(
            "Transfer learning on a folder-per-class image set, timed the way the seed article did: "
            "per-epoch training time, then the test images one at a time through a compiled forward "
            "call with the first image excluded as warm-up. Without --data a generated stand-in "
            "with the Kaggle cats/dogs split sizes is used."
        ),
    )
    p.add_argument("--base", default="xception", help=f"base model: {', '.join(BASES.names())} (default: xception)")
    p.add_argument("--data", help="DIR with DIR/train/<class>/* and DIR/test/<class>/*, or tfds:NAME[:VERSION], a "
                                   "TensorFlow Datasets set (default: the stand-in)")
    p.add_argument("--epochs", type=int, default=10, help="training epochs (default: 10, the article's)")
    p.add_argument("--batch-size", type=int, default=16, help="training batch size (default: 16)")
    p.add_argument("--image-size", type=int, help="square input size in pixels (default: the base's own, e.g. 299 for xception)")
    p.add_argument(
        "--weights", default="imagenet",
        help="imagenet (Keras cache, else download, else random with a warning), none (random), or PATH of a weights file",
    )
    p.add_argument(
        "--fine-tune", default="head",
        help="head: base frozen (default); all: whole base trainable; N: the top N base layers trainable",
    )
    p.add_argument("--limit", type=int, help="at most N images per split, classes balanced (quick runs)")
    _add_run_flags(p)
    p.add_argument("--xla", action="store_true", help="compile training and inference with XLA (jit_compile)")
    _add_runtime_flags(p)
    p.set_defaults(func=_cmd_classify)


def _add_detect(subparsers) -> None:
    from l40sbench.detect.bases import DETECTORS

    p = subparsers.add_parser(
        "detect",
        help="fine-tune a Model Garden detector and time training and per-image inference",
        description=(
            "Object detection on a Pascal VOC set with TensorFlow Model Garden, timed the way the seed "
            "article did: per-epoch training time (an epoch is one pass over the training split), then the "
            "test images one at a time through the serving function (NMS included) with the first excluded "
            "as warm-up, and COCO mAP from pycocotools. Without --data a generated stand-in with the Kaggle "
            "fruit set's counts is used. Without a GPU and without --epochs, 1 epoch is trained and the "
            "article's 200-epoch time is projected."
        ),
    )
    p.add_argument("--base", default="ssd_resnet50_fpn",
                   help=f"detector: {', '.join(DETECTORS.names())} (default: ssd_resnet50_fpn)")
    p.add_argument("--data",
                   help="DIR with train_zip/train and test_zip/test (or train/, test/): JPEGs with same-named VOC .xml; "
                        "or tfds:NAME[:VERSION], a TensorFlow Datasets set with objects/bbox and objects/label")
    p.add_argument("--epochs", type=int, help="training epochs (default: 200, the article's; 1 when no GPU is visible)")
    p.add_argument("--batch-size", type=int, default=16, help="training batch size (default: 16)")
    p.add_argument("--image-size", type=int, default=640, help="square model input, a multiple of 32 (default: 640)")
    p.add_argument("--init-checkpoint", help="a Model Garden or backbone checkpoint to start from (default: random init)")
    p.add_argument("--classes", type=_name_list,
                   help="comma-separated class names (default: the sorted names found in the annotations)")
    p.add_argument("--limit", type=int, help="at most N images per split (quick runs)")
    p.add_argument("--score-threshold", type=_finite, default=0.05,
                   help="detections below this score are not evaluated (default: 0.05)")
    p.add_argument("--export", type=Path, metavar="DIR",
                   help="save the trained model as a SavedModel in DIR (new or empty), serving the signature that "
                        "was timed: uint8 image [1, H, W, 3] in, boxes, classes, scores, num_detections out")
    _add_run_flags(p)
    _add_runtime_flags(p)
    p.set_defaults(func=_cmd_detect)


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number")
    return _distinct(values)


def _name_list(text: str) -> tuple[str, ...]:
    values = tuple(v.strip() for v in text.split(",") if v.strip())
    if not values:
        raise argparse.ArgumentTypeError(f"expected at least one comma-separated name, got {text!r}")
    return _distinct(values)


def _distinct(values: tuple) -> tuple:
    """A list flag names each value once: a repeat would measure the same configuration twice."""
    repeated = sorted({str(v) for v in values if values.count(v) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"{', '.join(repeated)} given more than once")
    return values


def _finite(text: str) -> float:
    """A float flag: a number, not nan or inf (an infinite limit or tolerance would never act)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


# Sweep flags --resume takes from the sweep it resumes (their defaults are None so a given one shows).
_SWEEP_FLAGS = ("models", "batch_sizes", "devices", "mode", "precision", "optimizer", "warmup_steps", "steps",
                "memory_limit", "timeout", "worker_hosts")


def _add_synthetic(subparsers) -> None:
    from l40sbench.synthetic.config import STUDY_BATCH_SIZES
    from l40sbench.synthetic.models import STUDY_DEVICE_TABLE, STUDY_ORDER

    p = subparsers.add_parser(
        "synthetic",
        help="tf_cnn_benchmarks-style training/inference throughput on synthetic data (the LeaderGPU tables)",
        description=(
            "Images/s of SGD training steps (or forward passes) on synthetic images made on the device, "
            "over models x batch sizes per device x device counts, as the LeaderGPU study measured with "
            "tf_cnn_benchmarks, on TensorFlow 2 and tf.distribute. Each configuration runs in its own "
            "process: out of memory is recorded as '-*' and the sweep goes on. Rows stream to "
            "OUTPUT_DIR/rows.jsonl; --resume OUTPUT_DIR runs only the missing ones. Without a GPU, N devices "
            "are N logical devices of the CPU (the same MirroredStrategy path)."
        ),
    )
    p.add_argument("--list", action="store_true", help="list the models with input size, parameters and GFLOPs per image")
    p.add_argument("--models", type=_name_list,
                   help=f"comma-separated, from: {','.join(STUDY_ORDER)} "
                        f"(default: the study's GPU-count table, {','.join(STUDY_DEVICE_TABLE)})")
    p.add_argument("--batch-sizes", type=_int_list,
                   help=f"per-device batch sizes (default: the study's, {','.join(map(str, STUDY_BATCH_SIZES))})")
    p.add_argument("--devices", type=_int_list, help="device counts, e.g. 1,2,4,8 (default: 1)")
    p.add_argument("--mode", choices=("train", "inference"), help="SGD training steps (default) or forward passes")
    p.add_argument("--precision", choices=PRECISIONS, help="mixed-precision policy (default: fp32)")
    p.add_argument("--xla", action="store_true", default=None, help="compile the step with XLA (jit_compile)")
    p.add_argument("--optimizer", choices=("sgd", "momentum", "adam"), help="default: sgd, the study's")
    p.add_argument("--warmup-steps", type=int, help="steps run before timing, excluded; at least 1, since the first traces and compiles "
                        "(default: 10)")
    p.add_argument("--steps", type=int, help="timed steps per configuration (default: 100)")
    p.add_argument("--memory-limit", type=_finite, metavar="GB",
                   help="memory cap per configuration: a logical-device limit per GPU, or the child's resident "
                        "memory on the CPU (cgroup where allowed, else a watchdog); over it is out of memory")
    p.add_argument("--timeout", type=_finite, metavar="S", help="seconds a configuration may take (default: no limit)")
    p.add_argument("--find-max-batch", action="store_true",
                   help="instead of timing, find each model's largest per-device batch that fits (doubling, then "
                        "bisection, from the smallest --batch-sizes); needs --memory-limit without a GPU")
    p.add_argument("--worker-hosts", type=_name_list, metavar="HOST:PORT,...",
                   help="run across hosts with MultiWorkerMirroredStrategy: the same list on every host "
                        "(default: TF_CONFIG if set, else this host alone)")
    p.add_argument("--task-index", type=int, default=None, help="this host's index in --worker-hosts (0 is the chief, which writes the result)")
    p.add_argument("--resume", type=Path, metavar="DIR", help="finish the sweep in DIR with its own settings, running only what rows.jsonl lacks")
    p.add_argument("--output-dir", type=Path, help="where results go (default: results/<run-id>/)")
    p.set_defaults(func=_cmd_synthetic)


def _add_cost(subparsers) -> None:
    from l40sbench.cost import CURRENCY_SIGNS, UNIT_SECONDS

    p = subparsers.add_parser(
        "cost",
        help="time and money to process N images on an offer (the LeaderGPU study's cost table)",
        description=(
            "Time for N images = N / (images/s); cost = the billed time x the price. The billed time is "
            "rounded up to --billing and at least --minimum is charged; each row says which rule priced it. "
            "--reference leadergpu-2017 reprices the study's nine rows from its own throughputs and prices."
        ),
    )
    p.add_argument("--reference", choices=("leadergpu-2017",), help="reprice a study's cost table")
    p.add_argument("--images", type=int, default=500_000, help="images to process (default: 500000, the study's)")
    p.add_argument("--throughput", type=_finite, metavar="IMAGES_PER_S", help="measured images/s")
    p.add_argument("--results", nargs="+", metavar="RESULT",
                   help="result files, run folders or references (l40s, leadergpu-2017) of classify, detect or "
                        "synthetic runs to take images/s from, one row per figure")
    p.add_argument("--catalog", type=Path, metavar="FILE",
                   help="offers to price at once, TOML ([[offer]] tables) or JSON ({\"offers\": [...]}), each with "
                        "name, price, and optionally devices, unit, currency, billing, minimum, machine; with --results "
                        "an offer prices the figures measured on as many devices (and on its machine, if named)")
    p.add_argument("--target", type=_finite, metavar="FRACTION",
                   help="cost to accuracy (DAWNBench): with --results, the training time until the per-epoch test "
                        "metric first reached FRACTION (e.g. 0.9), times the price")
    p.add_argument("--price", type=_finite, help="price per --per")
    p.add_argument("--per", choices=tuple(UNIT_SECONDS), default="minute", help="the price's time unit (default: minute)")
    p.add_argument("--currency", choices=tuple(CURRENCY_SIGNS), default="EUR", help="default: EUR")
    p.add_argument("--billing", choices=tuple(UNIT_SECONDS), default="second",
                   help="granularity the billed time is rounded up to (default: second)")
    p.add_argument("--minimum", type=_finite, default=0.0, help="minimum charge per run (default: 0)")
    p.add_argument("--model", default="-", help="model name for the table")
    p.add_argument("--offer", default="offer", help="offer name for the table")
    p.add_argument("--devices", type=int, default=1, help="devices the price buys (for the table; default: 1)")
    p.set_defaults(func=_cmd_cost)


def _add_compare(subparsers) -> None:
    p = subparsers.add_parser(
        "compare",
        help="two results side by side; exit 1 when the new one got slower or less accurate",
        description=(
            "Matches the rows of BASELINE and NEW on task, model, batch, devices, precision and image size, "
            "prints every timing, images/s and accuracy figure of each pair with its ratio new/baseline, and "
            "lists the rows without a partner. Exit 1 when a time grew (or images/s fell) beyond --tolerance "
            "or an accuracy fell beyond --accuracy-tolerance, or a configuration that ran now fails; 0 "
            "otherwise; 2 on bad input. Each side is a result file, a run folder or a reference "
            "(l40s, leadergpu-2017)."
        ),
    )
    p.add_argument("baseline", metavar="BASELINE", help="result file, run folder or reference name")
    p.add_argument("new", metavar="NEW", help="result file, run folder or reference name")
    p.add_argument("--tolerance", type=_finite, default=10.0, metavar="PERCENT",
                   help="how much slower a time may get before it counts as a regression (default: 10)")
    p.add_argument("--accuracy-tolerance", type=_finite, default=2.0, metavar="POINTS",
                   help="how many points accuracy or mAP may fall (2 = 0.02) (default: 2)")
    p.set_defaults(func=_cmd_compare)


def _add_report(subparsers) -> None:
    p = subparsers.add_parser(
        "report",
        help="report.md with plots from results, run folders and the studies' published figures",
        description=(
            "Writes OUT/report.md: the studies' tables for whatever the inputs hold (classification and "
            "detection training and inference; the synthetic GPU-count and batch-size tables; cost), one column "
            "group per machine so several machines sit side by side, each machine's environment block, and "
            "PNG plots: time per epoch (first against steady), the per-image latency distribution with "
            "p50/p90/p99, images/s against batch size and device count with ideal scaling, cost per N images. "
            "Inputs are result files, run folders, or the references l40s and leadergpu-2017."
        ),
    )
    p.add_argument("inputs", nargs="+", metavar="RESULT", help="result file, run folder, or l40s / leadergpu-2017")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for report.md and its PNGs")
    p.add_argument("--catalog", type=Path, metavar="FILE",
                   help="offers (TOML/JSON, as for cost --catalog) to price every images/s figure on")
    p.add_argument("--images", type=int, default=500_000, help="images the cost section prices (default: 500000)")
    p.set_defaults(func=_cmd_report)


def _add_infer(subparsers) -> None:
    p = subparsers.add_parser(
        "infer",
        help="time a finished run's fine-tuned model again, on any inference runtime, without retraining",
        description=(
            "Reads RUN_DIR (a classify or detect run folder: result.json and the fine-tuned model, model.keras "
            "or the SavedModel), reads the run's test split again with its own settings, times the model on tf "
            "in this process (the reference) and on each other runtime in a child process, images one at a "
            "time with the warm-up excluded, and scores each against the labels and against tf. The rows "
            "replace that runtime's earlier rows in RUN_DIR/result.json; the run's own tf figures stay."
        ),
    )
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a finished classify or detect run folder")
    _add_runtime_flags(p, default=("all",))
    _add_scenario_flags(p)
    p.set_defaults(func=_cmd_infer)


def _float_list(text: str) -> tuple[float, ...]:
    return _distinct(tuple(_finite(v) for v in text.split(",") if v.strip()) or (_finite(text),))


def _add_scenario_flags(p) -> None:
    """The MLPerf LoadGen flags of `infer`."""
    from l40sbench.loadgen.config import DURATION_S, SAMPLES_PER_QUERY, SCENARIOS

    g = p.add_argument_group(
        "load (MLPerf LoadGen)",
        "With --scenario, each runtime measured above then runs under MLPerf's LoadGen: the test images, decoded "
        "once and held in memory, are the query sample library; a queue feeds --workers callers, each gathering up "
        "to --batch queued samples into one call. LoadGen's logs go to RUN_DIR/loadgen/<runtime>-<precision>/<test>/, "
        "and inference.scenarios in result.json gets one entry per test. Defaults are MLPerf's where it has them; "
        "LoadGen's generation hints come from each runtime's own probe.")
    g.add_argument("--scenario", type=_name_list, metavar="LIST",
                   help=f"LoadGen scenarios to run, from {','.join(SCENARIOS)}, or all")
    g.add_argument("--duration", type=_finite, default=DURATION_S, metavar="S",
                   help=f"minimum seconds of each test (LoadGen's min_duration; default {DURATION_S:g}; MLPerf "
                        "submissions run 600)")
    g.add_argument("--min-queries", type=int, metavar="N", help="minimum queries of each test (default: LoadGen's, 100)")
    g.add_argument("--batch", type=_int_list, default=(1,), metavar="LIST",
                   help="most samples one call takes (dynamic batching); a list runs one test per batch "
                        "(default: 1; single-stream is always 1)")
    g.add_argument("--batch-timeout-ms", type=_finite, default=0.0, metavar="T",
                   help="how long a call waits for more samples after its first (default: 0, what is queued)")
    g.add_argument("--workers", type=int, default=1, metavar="K",
                   help="callers running at once, each with its own copy of the model and cores/K threads "
                        "(tf and savedmodel share one model and TensorFlow's pool) (default: 1)")
    g.add_argument("--latency-bound-ms", type=_finite, metavar="MS",
                   help="server: the bound 99%% of queries must meet (default: MLPerf's, 15 for classify "
                        "(ResNet-50), 100 for detect (RetinaNet))")
    g.add_argument("--target-qps", type=_float_list, metavar="LIST",
                   help="server: Poisson arrival rates to offer, one test each (default: half the runtime's "
                        "one-image rate)")
    g.add_argument("--find-max-qps", action="store_true",
                   help="server: search the highest rate LoadGen calls VALID (short runs doubling or halving from "
                        "the one-image rate, then bisection, at most 10), then confirm it with one full run")
    g.add_argument("--samples-per-query", type=int, default=SAMPLES_PER_QUERY, metavar="N",
                   help=f"multi-stream: samples in each query (default: MLPerf's, {SAMPLES_PER_QUERY})")
    g.add_argument("--expected-qps", type=_finite, metavar="QPS",
                   help="offline: the rate LoadGen sizes its one query for (default: 1.5x the one-image rate, twice "
                        "that with --batch or --workers above 1); too low ends early and INVALID")


def _load_config(args):
    """The --scenario flags as a checked loadgen LoadConfig, or None without --scenario."""
    from l40sbench.loadgen.config import SCENARIOS, LoadConfig

    defaults = LoadConfig(scenarios=())
    given = [flag for flag, value in (
        ("--min-queries", args.min_queries), ("--latency-bound-ms", args.latency_bound_ms),
        ("--target-qps", args.target_qps), ("--expected-qps", args.expected_qps), ("--find-max-qps", args.find_max_qps),
        ("--batch", args.batch != defaults.batches), ("--workers", args.workers != defaults.workers),
        ("--batch-timeout-ms", args.batch_timeout_ms != defaults.batch_timeout_ms),
        ("--duration", args.duration != defaults.duration_s),
        ("--samples-per-query", args.samples_per_query != defaults.samples_per_query)) if value]
    if args.scenario is None:
        if given:
            raise UserError(f"{given[0]} goes with --scenario")
        return None
    scenarios = tuple(SCENARIOS) if args.scenario == ("all",) else args.scenario
    config = LoadConfig(scenarios=scenarios, batches=args.batch, batch_timeout_ms=args.batch_timeout_ms,
                        workers=args.workers, duration_s=args.duration, min_queries=args.min_queries,
                        latency_bound_ms=args.latency_bound_ms, target_qps=args.target_qps or (),
                        samples_per_query=args.samples_per_query, expected_qps=args.expected_qps,
                        find_max_qps=args.find_max_qps)
    config.check()
    return config


def _add_datasets(subparsers) -> None:
    p = subparsers.add_parser("datasets", help="inspect data sets", description="Inspect data sets.")
    sub = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    stats = sub.add_parser(
        "stats",
        help="per-split, per-class image counts and unreadable files",
        description="Print the article's dataset table (images per split and class) and list unreadable files.",
    )
    stats.add_argument(
        "--data",
        help="DIR: folder-per-class (train/<class>/, test/<class>/) or Pascal VOC (train_zip/train/*.jpg + .xml, "
             "or train/, test/); or tfds:NAME[:VERSION] (default: the stand-in of --task)",
    )
    _add_tfds_flags(stats)
    stats.add_argument(
        "--task", choices=("classify", "detect"),
        help="which layout to read (default: VOC when the train folder holds .xml files, else folder-per-class)",
    )
    stats.set_defaults(func=_cmd_datasets_stats)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="l40sbench",
        description=(
            "Honest fine-tuning and inference timings for image models, measured the same way on "
            "every machine. Results go to results/<run-id>/result.json and result.csv."
        ),
    )
    from l40sbench import __version__

    parser.add_argument("--version", action="version", version=f"l40sbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_classify(subparsers)
    _add_detect(subparsers)
    _add_synthetic(subparsers)
    _add_cost(subparsers)
    _add_compare(subparsers)
    _add_report(subparsers)
    _add_infer(subparsers)
    _add_datasets(subparsers)
    return parser


def _run_id(task: str, base: str) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{task}-{base}"


def _prepare_output_dir(path: Path) -> None:
    """Results go to a directory that can be made and written now, before any data is read."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise UserError(f"cannot write results to {path}: {exc.strerror or exc}") from None


def _run_and_report(task: str, config, runner) -> int:
    """Runs runner(config, log, save) writing results as it goes, then prints the summary."""
    from l40sbench.core.records import write_result
    from l40sbench.report import tables

    output_dir = config.output_dir or Path("results") / _run_id(task, config.base)
    _prepare_output_dir(output_dir)
    config = dataclasses.replace(config, output_dir=output_dir)  # the runner may write files of its own there
    saved: dict = {}

    def save(record: dict) -> None:
        saved["path"] = write_result(output_dir, record)
        saved["record"] = record

    try:
        result = runner(config, log=_log, save=save).to_dict()
    except KeyboardInterrupt:
        if "path" in saved:
            record = saved["record"]
            rows = len((record.get("inference") or {}).get("runtimes") or ())
            if record.get("complete") and rows:  # training and tf's probe were done: a runtime was stopped
                _log(f"interrupted: the run and {rows} runtime row(s) kept in {saved['path']}")
            else:
                _log(f"interrupted: {record['train']['epochs']} finished epoch(s) kept in {saved['path']} "
                     "(complete: false)")
        else:
            _log("interrupted before anything was measured")
        return EXIT_INTERRUPTED
    print()
    print(tables.environment_block(result["env"]))
    print()
    print(f"Data: {result['dataset']['source']}  weights: {result['weights']}  "
          f"input: {result['config']['image_size']}px  precision: {result['config']['precision']}")
    print()
    print(tables.training_table([result]))
    print()
    print(tables.inference_table([result]))
    print()
    runtimes = tables.runtime_table(result)
    if runtimes:
        print("Inference by runtime (batch 1, fastest first; precision: what the runtime runs, and what it was "
              "asked for where that differs):")
        print(runtimes)
        print()
    print(tables.accuracy_lines(result))
    print(tables.utilisation_line(result))
    print(f"results: {saved['path']} and result.csv")
    return 0


def _config(cls, **values):
    try:
        return cls(**values)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _cmd_classify(args) -> int:
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.classify.run import run_classify

    config = _config(
        ClassifyConfig,
        base=args.base, **_data_flags(args), epochs=args.epochs, batch_size=args.batch_size,
        image_size=args.image_size, weights=args.weights, fine_tune=args.fine_tune, limit=args.limit,
        output_dir=args.output_dir, seed=args.seed, precision=args.precision, xla=args.xla, strict=args.strict,
        runtimes=args.runtimes, runtime_precision=args.runtime_precision,
    )
    BASES.get(config.base)  # an unknown base fails before anything is loaded
    return _run_and_report("classify", config, run_classify)


def _cmd_detect(args) -> int:
    from l40sbench.detect.bases import DETECTORS
    from l40sbench.detect.config import DetectConfig
    from l40sbench.detect.run import run_detect

    classes = args.classes
    config = _config(
        DetectConfig,
        base=args.base, **_data_flags(args), epochs=args.epochs, batch_size=args.batch_size,
        image_size=args.image_size, init_checkpoint=args.init_checkpoint, classes=classes, limit=args.limit,
        output_dir=args.output_dir, seed=args.seed, score_threshold=args.score_threshold, precision=args.precision,
        export=args.export, strict=args.strict, runtimes=args.runtimes, runtime_precision=args.runtime_precision,
    )
    DETECTORS.get(config.base)
    return _run_and_report("detect", config, run_detect)


def _cluster_from_env() -> tuple[tuple[str, ...], int]:
    """Worker hosts and this task's index from TF_CONFIG, as tf.distribute reads it."""
    import json

    try:
        config = json.loads(os.environ.get("TF_CONFIG") or "{}")
        hosts = tuple(config.get("cluster", {}).get("worker", ()))
        return hosts, int(config.get("task", {}).get("index", 0))
    except (ValueError, AttributeError) as exc:
        raise UserError(f"TF_CONFIG is not the JSON tf.distribute expects: {exc}") from None


def _cmd_synthetic(args) -> int:
    from l40sbench.synthetic.config import STUDY_BATCH_SIZES, SweepConfig
    from l40sbench.synthetic.job import StepSettings
    from l40sbench.synthetic.models import STUDY_DEVICE_TABLE

    if args.list:
        from l40sbench.synthetic.listing import print_models

        print_models(log=_log)
        return 0
    if args.resume is not None:
        given = [f"--{n.replace('_', '-')}" for n in _SWEEP_FLAGS if getattr(args, n) is not None]
        if given or args.output_dir is not None:
            raise UserError(f"--resume takes its settings from {args.resume}/sweep.json; drop "
                            f"{', '.join(given + (['--output-dir'] if args.output_dir else []))}")
        from l40sbench.synthetic.sweep import SWEEP_FILE, read_state

        saved = read_state(args.resume)["config"]
        try:
            config = SweepConfig.from_dict({**saved, "output_dir": str(args.resume)})
        except (TypeError, ValueError) as exc:
            raise UserError(f"cannot resume {args.resume}: its {SWEEP_FILE} does not hold a sweep's settings ({exc})") from None
    else:
        hosts, index = (args.worker_hosts, args.task_index or 0) if args.worker_hosts else _cluster_from_env()
        if args.task_index is not None and not args.worker_hosts and not hosts:
            raise UserError("--task-index needs --worker-hosts (or TF_CONFIG)")
        config = _config(
            SweepConfig,
            models=args.models or STUDY_DEVICE_TABLE, batch_sizes=args.batch_sizes or STUDY_BATCH_SIZES,
            devices=args.devices or (1,), settings=_config(
                StepSettings, mode=args.mode or "train", precision=args.precision or "fp32", xla=bool(args.xla),
                optimizer=args.optimizer or "sgd", warmup_steps=10 if args.warmup_steps is None else args.warmup_steps,
                steps=100 if args.steps is None else args.steps, memory_limit_gb=args.memory_limit),
            timeout_s=args.timeout, find_max_batch=args.find_max_batch, worker_hosts=hosts, task_index=index,
            output_dir=args.output_dir or Path("results") / _run_id("synthetic", "sweep"),
        )
    return _run_sweep(config, resume=args.resume is not None)


def _run_sweep(config, resume: bool) -> int:
    from l40sbench.report.tables import environment_block
    from l40sbench.synthetic import sweep, tables

    if config.is_chief:
        _prepare_output_dir(config.output_dir)
    written: dict = {}

    def on_result(result) -> None:
        written["path"] = sweep.write_outputs(config.output_dir, result)

    try:
        result = sweep.run_sweep(config, log=_log, resume=resume, on_result=on_result).to_dict()
    except KeyboardInterrupt:
        kept = len(sweep.load_rows(config.output_dir)) if config.is_chief else 0
        _log(f"interrupted: {kept} finished configuration(s) kept in {config.output_dir / sweep.ROWS_FILE}; "
             f"`l40sbench synthetic --resume {config.output_dir}` runs the rest")
        return EXIT_INTERRUPTED
    if not config.is_chief:
        _log(f"worker {config.task_index} done; the chief (task 0) writes the result")
        return 0
    print()
    print(tables.markdown(result, environment_block(result["env"])))
    print(f"results: {written['path']}, tables.md" + ("" if config.find_max_batch else ", rows.jsonl and the tables as CSV"))
    return 0


def _offers(args) -> list:
    """The offers to price: a --catalog, or the one the price flags describe."""
    from l40sbench import cost
    from l40sbench.report.inputs import read_catalog

    if (args.catalog is None) == (args.price is None):
        raise UserError("give --price (with --per, --currency, ...) or --catalog FILE, not both")
    if args.catalog is not None:
        return read_catalog(args.catalog)
    try:
        return [cost.Offer(args.offer, args.devices, args.price, args.per, args.currency, args.billing, args.minimum)]
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _print_priced(rows, checked=()) -> None:
    from l40sbench import cost
    from l40sbench.report.tables import format_table

    body = []
    for index, row in enumerate(rows):
        cells = [row.model, f"{row.offer.devices}x", row.offer.name, f"{row.images:,}", cost.duration(row.seconds),
                 f"{cost.CURRENCY_SIGNS[row.offer.currency]}{row.offer.price:g}/{row.offer.per}",
                 cost.money(row.cost, row.offer.currency), row.rule]
        if checked:
            _, study_time, study_cost = checked[index]
            cells += [study_time, f"€{study_cost:.2f}"]
        body.append(cells)
    headers = ["model", "devices", "offer", "images", "time", "price", "total cost", "priced by"]
    print(format_table(headers + (["study's time", "study's cost"] if checked else []), body))
    comparisons = [c for c in cost.compare(rows) if c.times_as_fast >= 1]
    if comparisons:
        print()
    for c in comparisons:
        print(f"{c.model}: {c.offer} is {c.times_as_fast:.2f}x as fast as {c.other} "
              f"and {abs(c.percent_cheaper):.1f} % {'cheaper' if c.percent_cheaper >= 0 else 'dearer'}")


def _cmd_cost(args) -> int:
    from l40sbench import cost
    from l40sbench.report.inputs import load_all, machine

    if args.reference:
        if args.throughput is not None or args.price is not None or args.catalog or args.results or args.target:
            raise UserError("--reference reprices the study's own rows; drop --throughput, --results, --price, "
                            "--catalog and --target")
        checked = cost.reference_rows()
        _print_priced([row for row, _, _ in checked], checked)
        return 0
    if args.target is not None:
        if args.results is None or args.throughput is not None:
            raise UserError("--target reads the per-epoch test metric of --results files; give --results")
        if not 0 < args.target <= 1:
            raise UserError(f"--target is a fraction of 1 (0.9 for 90 %). Received: {args.target}")
        return _cost_to_target(args, load_all(args.results), _offers(args))
    if (args.throughput is None) == (args.results is None):
        raise UserError("give one of --throughput or --results (or --reference leadergpu-2017)")
    offers = _offers(args)
    if args.results is None:
        figures = [(cost.Figure(args.model, args.throughput, args.devices), "")]
    else:
        figures = [(figure, machine(item.record)) for item in load_all(args.results)
                   for figure in cost.throughputs(item.record)]
        if not figures:
            raise UserError(f"no images/s figure in {', '.join(args.results)}")
    try:
        rows = [cost.price(figure.label, args.images, figure.images_per_second, offer)
                for figure, on in figures for offer in offers
                if args.catalog is None or args.results is None or offer.prices(figure, on)]
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not rows:
        raise UserError(f"no offer of {args.catalog} rents as many devices as a figure of "
                        f"{', '.join(args.results)} was measured on (or its machine differs)")
    _print_priced(rows)
    return 0


def _cost_to_target(args, loaded, offers) -> int:
    from l40sbench import cost
    from l40sbench.report.inputs import machine
    from l40sbench.report.tables import format_table, format_duration

    body, without = [], []
    for item in loaded:
        reached = cost.time_to_target(item.record, args.target)
        if reached is None:
            without.append(f"{item.origin} ({item.record.get('base')})")
            continue
        for offer in offers:
            if reached.seconds is None:
                cells = ["not reached", f"in {reached.epochs} epochs", "-", "-"]
            else:
                _, money, rule = cost.charge(reached.seconds, offer)
                cells = [f"epoch {reached.epoch}/{reached.epochs}", f"{format_duration(reached.seconds)} ({reached.clock})",
                         cost.money(money, offer.currency), rule]
            body.append([item.record.get("base"), machine(item.record), f"{reached.metric} >= {args.target:g}",
                         cells[0], cells[1], offer.name, *cells[2:]])
    if not body:
        raise UserError(f"no per-epoch test metric in {', '.join(args.results)} (classify runs record one; "
                        f"detect runs and the studies' tables do not)")
    print(format_table(["model", "machine", "target", "reached", "training time", "offer", "total cost",
                        "priced by"], body))
    if without:
        print(f"\nno per-epoch test metric, not priced: {', '.join(without)}")
    return 0


def _cmd_report(args) -> int:
    from l40sbench.report.inputs import load_all, read_catalog

    loaded = load_all(args.inputs)
    offers = read_catalog(args.catalog) if args.catalog else []
    if args.images < 1:
        raise UserError(f"--images must be >= 1. Received: {args.images}")
    _prepare_output_dir(args.out)
    from l40sbench.report.document import write_report

    path = write_report(loaded, args.out, offers=offers, images=args.images)
    pngs = sorted(p.name for p in args.out.glob("*.png"))
    print(f"report: {path} ({len(loaded)} record(s); plots: {', '.join(pngs) or 'none'})")
    return 0


def _figure(value) -> str:
    return "-" if value is None else f"{value:.4g}" if abs(value) < 1000 else f"{value:.1f}"


def _cmd_infer(args) -> int:
    from l40sbench.core.records import write_result
    from l40sbench.report import tables
    from l40sbench.runtimes.infer import infer
    from l40sbench.runtimes.registry import resolve

    resolve(args.runtimes)  # an unknown name fails before anything is read
    load = _load_config(args)
    saved: dict = {}

    def save(record: dict) -> None:
        saved["path"] = write_result(args.run_dir, record)

    try:
        record = infer(args.run_dir, args.runtimes, args.runtime_precision, log=_log, save=save, load=load)
    except KeyboardInterrupt:
        kept = f"; the rows and tests finished so far are in {saved['path']}" if "path" in saved else ""
        _log(f"interrupted{kept}")
        return EXIT_INTERRUPTED
    print()
    print(f"Inference by runtime: {record['base']} from {args.run_dir} (batch 1, fastest first; precision: what "
          "the runtime runs, and what it was asked for where that differs)")
    print(tables.runtime_table(record))
    if load is not None:
        for scenario in load.scenarios:
            print()
            print(tables.scenario_title(record, scenario))
            print(tables.scenario_table(record, scenario, runtimes=record["notes"]["infer_runs"][-1]["runtimes"]))
        print(f"LoadGen logs: {args.run_dir / 'loadgen'}")
    print(f"results: {saved['path']}")
    return 0


def _cmd_compare(args) -> int:
    from l40sbench.peak import rates as machine_rates
    from l40sbench.report import compare
    from l40sbench.report.inputs import load_all, machine
    from l40sbench.report.tables import format_table

    sides = {"baseline": load_all([args.baseline]), "new": load_all([args.new])}  # both readable before any output
    for name, item in (("baseline", args.baseline), ("new", args.new)):
        machines = ", ".join(dict.fromkeys(machine(loaded.record) for loaded in sides[name]))
        rates = [rate for loaded in sides[name] if (rate := machine_rates(loaded.record.get("env") or {})[0])]
        calibration = f"; float32 matmul peak {rates[0]:.1f} GFLOP/s" if rates else ""
        print(f"{name}: {item} ({machines}{calibration})")
    try:
        result = compare.compare([x.record for x in sides["baseline"]], [x.record for x in sides["new"]],
                                 args.tolerance, args.accuracy_tolerance)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if result.rows:
        print()
        print(format_table(("row", "figure", "baseline", "new", "new/baseline", "verdict"),
                           [(r.line, r.figure, _figure(r.baseline), _figure(r.new),
                             "-" if r.ratio is None else f"{r.ratio:.3f}", r.verdict) for r in result.rows]))
    for title, labels in (("only in the baseline", result.only_baseline), ("only in the new", result.only_new)):
        if labels:
            print(f"\nrows {title} (no partner):")
            for label in labels:
                print(f"  {label}")
    if not result.rows:
        raise UserError(f"no row of {args.baseline} matches a row of {args.new}: nothing to compare")
    print()
    if result.regressions:
        print(f"REGRESSION: {len(result.regressions)} figure(s) got worse beyond the tolerance: "
              + "; ".join(f"{r.line} {r.figure}" for r in result.regressions))
        return 1
    print(f"no regression: {len(result.rows)} figure(s) within {args.tolerance:g} % "
          f"(accuracy {args.accuracy_tolerance:g} points)")
    return 0


def _is_voc(root: Path) -> bool:
    from l40sbench.detect.voc import SPLIT_DIRS

    return any(any((root / d).glob("*.xml")) for d in SPLIT_DIRS["train"] if (root / d).is_dir())


def _cmd_datasets_stats(args) -> int:
    from l40sbench.report import tables

    if args.data is not None and args.data.startswith("tfds:"):
        return _tfds_stats(args)
    args.data = _data_flags(args)["data"]

    task = args.task or ("detect" if args.data is not None and _is_voc(args.data) else "classify")
    if task == "detect":
        from l40sbench.detect import voc
        from l40sbench.detect.run import standin_path as fruit_path
        from l40sbench.detect.standin import ensure_standin as fruit_standin

        root = args.data if args.data is not None else fruit_standin(fruit_path())
        splits = {split: voc.load_split(root, split, log=_log) for split in ("train", "test")}
        counts = {split: voc.object_counts(a) for split, (a, _) in splits.items()}
        images = {split: len(a) for split, (a, _) in splits.items()}
        print(f"{root}{' (generated stand-in)' if args.data is None else ''}: objects per class")
        print(tables.dataset_table(counts, images))
        _print_unreadable([path for _, skipped in splits.values() for path in skipped])
        return 0

    from l40sbench.classify import data as data_mod
    from l40sbench.classify.run import standin_path
    from l40sbench.classify.standin import ensure_standin

    root = args.data if args.data is not None else ensure_standin(standin_path())
    checked = data_mod.decode_layout(data_mod.scan(root), None)
    print(f"{root}{' (generated stand-in)' if args.data is None else ''}: images per class")
    print(tables.dataset_table(checked.counts))
    _print_unreadable(checked.skipped_files)
    return 0


def _tfds_stats(args) -> int:
    from l40sbench import tfds_source
    from l40sbench.report import tables

    ref = tfds_source.TfdsRef.parse(args.data, args.tfds_data_dir, args.tfds_splits)
    builder = tfds_source.open_builder(ref, _log)
    splits = tfds_source.resolve_splits(builder, ref)
    task = args.task or ("detect" if "objects" in builder.info.features.keys() else "classify")
    counts, images = tfds_source.split_counts(builder, splits, task)
    print(f"{tfds_source.source_label(builder, ref, splits)}: {'objects' if task == 'detect' else 'images'} per class")
    print(tables.dataset_table(counts, images))
    print("\nunreadable files: not checked here for TFDS sets (classify and detect skip and list them)")
    return 0


def _print_unreadable(paths) -> None:
    if paths:
        print(f"\nunreadable files ({len(paths)}):")
        for path in paths:
            print(f"  {path}")
    else:
        print("\nunreadable files: none")


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"l40sbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        _log("interrupted")
        return EXIT_INTERRUPTED
