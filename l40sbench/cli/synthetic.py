"""`synthetic`: the tf_cnn_benchmarks-style sweep over models, batch sizes and devices (the LeaderGPU tables)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from l40sbench.cli.common import EXIT_INTERRUPTED, log, make_config, output_dir_for, run_id
from l40sbench.cli.device_flags import (
    CPU_DEVICES,
    CPU_HELP,
    add_backend_flag,
    backend_flag,
    device_list,
    gate_devices,
    keep_device_choice,
)
from l40sbench.cli.values import finite, int_list, name_list
from l40sbench.errors import UserError
from l40sbench.settings import PRECISIONS

# Sweep flags --resume takes from the sweep it resumes (their defaults are None so a given one shows).
_SWEEP_FLAGS = ("models", "batch_sizes", "devices", "mode", "precision", "optimizer", "warmup_steps", "steps",
                "memory_limit", "timeout", "worker_hosts", "backend")


def add(subparsers) -> None:
    from l40sbench.synthetic.config import STUDY_BATCH_SIZES
    from l40sbench.synthetic.models import STUDY_DEVICE_TABLE, STUDY_ORDER

    p = subparsers.add_parser(
        "synthetic",
        help="tf_cnn_benchmarks-style training/inference throughput on synthetic data (the LeaderGPU tables)",
        description=(
            "Images/s of SGD training steps (or forward passes) on synthetic images made on the device, "
            "over models x batch sizes per device x device counts, as the LeaderGPU study measured with "
            "tf_cnn_benchmarks, on Keras 3: TensorFlow with tf.distribute (the default), JAX with "
            "keras.distribution.DataParallel, or PyTorch on one device (--backend). Each configuration runs in its own "
            "process: out of memory is recorded as '-*' and the sweep goes on. Rows stream to "
            "OUTPUT_DIR/rows.jsonl; --resume OUTPUT_DIR runs only the missing ones. Without a GPU, N devices "
            "are N logical devices of the CPU (the same multi-device path)."
        ),
    )
    p.add_argument("--list", action="store_true", help="list the models with input size, parameters and GFLOPs per image")
    p.add_argument("--models", type=name_list,
                   help=f"comma-separated, from: {','.join(STUDY_ORDER)} "
                        f"(default: the study's GPU-count table, {','.join(STUDY_DEVICE_TABLE)})")
    p.add_argument("--batch-sizes", type=int_list,
                   help=f"per-device batch sizes (default: the study's, {','.join(map(str, STUDY_BATCH_SIZES))})")
    p.add_argument("--devices", type=device_list, metavar="LIST|cpu",
                   help=f"device counts, e.g. 1,2,4,8; {CPU_HELP} (default: 1)")
    p.add_argument("--mode", choices=("train", "inference"), help="SGD training steps (default) or forward passes")
    p.add_argument("--precision", choices=PRECISIONS, help="mixed-precision policy (default: fp32)")
    p.add_argument("--xla", action="store_true", default=None, help="compile the step with XLA (jit_compile)")
    p.add_argument("--optimizer", choices=("sgd", "momentum", "adam"), help="default: sgd, the study's")
    p.add_argument("--warmup-steps", type=int, help="steps run before timing, excluded; at least 1, since the first traces and compiles "
                        "(default: 10)")
    p.add_argument("--steps", type=int, help="timed steps per configuration (default: 100)")
    p.add_argument("--memory-limit", type=finite, metavar="GiB",
                   help="memory cap per configuration: a logical-device limit per GPU, or the child's resident "
                        "memory on the CPU (cgroup where allowed, else a watchdog); over it is out of memory")
    p.add_argument("--timeout", type=finite, metavar="S", help="seconds a configuration may take (default: no limit)")
    p.add_argument("--find-max-batch", action="store_true",
                   help="instead of timing, find each model's largest per-device batch that fits (doubling, then "
                        "bisection, from the smallest --batch-sizes); needs --memory-limit without a GPU")
    p.add_argument("--worker-hosts", type=name_list, metavar="HOST:PORT,...",
                   help="run across hosts with MultiWorkerMirroredStrategy: the same list on every host "
                        "(default: TF_CONFIG if set, else this host alone)")
    p.add_argument("--task-index", type=int, default=None, help="this host's index in --worker-hosts (0 is the chief, which writes the result)")
    add_backend_flag(p, note="; jax spreads over --devices with DataParallel, torch takes one device")
    p.add_argument("--resume", type=Path, metavar="DIR", help="finish the sweep in DIR with its own settings, running only what rows.jsonl lacks")
    p.add_argument("--output-dir", type=Path, help="where results go (default: results/<run-id>/)")
    p.set_defaults(func=run)


def _cluster_from_env() -> tuple[tuple[str, ...], int]:
    """Worker hosts and this task's index from TF_CONFIG, as tf.distribute reads it."""
    import json

    try:
        config = json.loads(os.environ.get("TF_CONFIG") or "{}")
        hosts = tuple(config.get("cluster", {}).get("worker", ()))
        return hosts, int(config.get("task", {}).get("index", 0))
    except (ValueError, AttributeError) as exc:
        raise UserError(f"TF_CONFIG is not the JSON tf.distribute expects: {exc}") from None


def _counts(devices: tuple | None) -> tuple[int, ...]:
    if devices == ("all",):
        raise UserError("--devices all: give the sweep's counts, e.g. 1,2,4,8")
    return (1,) if devices in (None, (CPU_DEVICES,)) else devices


def run(args) -> int:
    from l40sbench.synthetic.config import STUDY_BATCH_SIZES, SweepConfig
    from l40sbench.synthetic.job import StepSettings
    from l40sbench.synthetic.models import STUDY_DEVICE_TABLE

    if args.list:
        from l40sbench.synthetic.listing import print_models

        print_models(log=log)
        return 0
    if args.resume is not None:
        given = [f"--{n.replace('_', '-')}" for n in _SWEEP_FLAGS if getattr(args, n) is not None]
        if given or args.output_dir is not None:
            raise UserError(f"--resume takes its settings from {args.resume}/sweep.json; drop "
                            f"{', '.join(given + (['--output-dir'] if args.output_dir else []))}")
        from l40sbench.synthetic.store import SWEEP_FILE, read_state

        state = read_state(args.resume)
        try:
            config = SweepConfig.from_dict({**state["config"], "output_dir": str(args.resume)})
        except (TypeError, ValueError) as exc:
            raise UserError(f"cannot resume {args.resume}: its {SWEEP_FILE} does not hold a sweep's settings ({exc})") from None
        keep_device_choice(args, (state.get("env") or {}).get("device_choice"), args.resume)
        gate_devices(args, config.settings.backend)
    else:
        hosts, index = (args.worker_hosts, args.task_index or 0) if args.worker_hosts else _cluster_from_env()
        if args.task_index is not None and not args.worker_hosts and not hosts:
            raise UserError("--task-index needs --worker-hosts (or TF_CONFIG)")
        config = make_config(
            SweepConfig,
            models=args.models or STUDY_DEVICE_TABLE, batch_sizes=args.batch_sizes or STUDY_BATCH_SIZES,
            devices=_counts(args.devices), settings=make_config(
                StepSettings, mode=args.mode or "train", precision=args.precision or "fp32", xla=bool(args.xla),
                optimizer=args.optimizer or "sgd", warmup_steps=10 if args.warmup_steps is None else args.warmup_steps,
                steps=100 if args.steps is None else args.steps, memory_limit_gb=args.memory_limit,
                backend=backend_flag(args, "synthetic")),
            timeout_s=args.timeout, find_max_batch=args.find_max_batch, worker_hosts=hosts, task_index=index,
            output_dir=args.output_dir or Path("results") / run_id("synthetic", "sweep"),
        )
    return _run_sweep(config, resume=args.resume is not None)


def _run_sweep(config, resume: bool) -> int:
    from l40sbench.core.stability import line as stability_line
    from l40sbench.report.tables import environment_block
    from l40sbench.synthetic import store, sweep, tables

    written: dict = {}

    def on_result(result) -> None:
        written["path"] = store.write_outputs(config.output_dir, result, environment_block)

    try:
        with output_dir_for(config.output_dir) if config.is_chief else contextlib.nullcontext():
            result = sweep.run_sweep(config, log=log, resume=resume, on_result=on_result).to_dict()
    except KeyboardInterrupt:
        from l40sbench.core.stops import what

        kept = len(store.load_rows(config.output_dir)) if config.is_chief else 0
        log(f"{what()}: {kept} finished configuration(s) kept in {config.output_dir / store.ROWS_FILE}; "
             f"`l40sbench synthetic --resume {config.output_dir}` runs the rest")
        return EXIT_INTERRUPTED
    if not config.is_chief:
        log(f"worker {config.task_index} done; the chief (task 0) writes the result")
        return 0
    print()
    print(tables.markdown(result, environment_block(result["env"])))
    print(f"results: {written['path']}, tables.md" + ("" if config.find_max_batch else ", rows.jsonl and the tables as CSV"))
    print(stability_line(result.get("stability")))
    return 0
