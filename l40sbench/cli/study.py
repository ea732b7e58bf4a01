"""`study`: one command from a freshly rented machine to its verdict beside the published rows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from l40sbench.cli.common import EXIT_INTERRUPTED, Renamed, log, prepare_output_dir
from l40sbench.cli.device_flags import (
    add_backend_flag,
    add_cpu_flag,
    add_xla_flag,
    gate_devices,
    keep_device_choice,
    one_device,
)
from l40sbench.cli.values import finite
from l40sbench.cost import UNIT_SECONDS
from l40sbench.errors import UserError


def add(subparsers) -> None:
    p = subparsers.add_parser(
        "study",
        help="run a whole study (l40s, leadergpu or all) on this machine and judge it beside the published rows",
        description=(
            "Runs a study's protocol as ordinary runs, one folder each under the study's folder, then writes "
            "report.md: this machine's figures beside the study's published rows (each as a ratio, with its "
            "interval and its run's stability verdict), the cost of the study's work here and the time to first "
            "result. l40s: xception, inceptionv3 and vgg19 fine-tuned 10 epochs at batch 16 at their native "
            "sizes, and the three detectors at 640 px (200 epochs on a GPU; 1 epoch on a CPU, the 200-epoch time "
            "projected and labelled so). leadergpu: the synthetic tables' grid on every device count here. "
            "The plan (every step with its estimated time) prints first; --plan prints it and stops. --budget "
            "cuts the plan to fit, the detectors' epochs first, then the classifiers'. A killed study resumes "
            "with --resume DIR, running only the steps it lacks; a step that fails costs its row."
        ),
    )
    p.add_argument("study", metavar="STUDY", nargs="?",
                   help="l40s, leadergpu or all (with --resume it may be left out: the folder's study.json names it)")
    p.add_argument("--plan", action="store_true", help="print the plan and its total time, and stop")
    p.add_argument("--quick", action="store_true",
                   help="a check of the whole path in minutes: each classifier at its smallest size on 8 images "
                        "for 2 epochs, each detector at 128 px on 4 images for 1 epoch, the sweep on lenet and "
                        "alexnet at batch 4 for 2 steps")
    p.add_argument("--budget", metavar="DURATION", help="fit the plan into this time (45m, 1h30m, 900s)")
    p.add_argument("--resume", type=Path, metavar="DIR",
                   help="finish the study in DIR with the plan it made: only its missing steps run")
    p.add_argument("--only", metavar="STEP,...", help="run only these steps of the plan (names as the plan prints)")
    p.add_argument("--output-dir", type=Path, metavar="DIR",
                   help="the study's folder (default: results/study-STUDY-<UTC time>)")
    p.add_argument("--data-classify", metavar="DIR", help="classify's data (as classify --data); the stand-in otherwise")
    p.add_argument("--data-detect", metavar="DIR", help="detect's data (as detect --data); the stand-in otherwise")
    p.add_argument("--model", action="append", default=[], metavar="FILE",
                   help="a detector file of yours (an Ultralytics YOLO or torchvision ONNX export, an Object "
                        "Detection API SavedModel), once per file: the l40s study adds a step `infer --model FILE` "
                        "on detect's data with LoadGen's single-stream and offline, and sets it beside MLPerf "
                        "Inference v6.0's YOLO11 rows on the L40S (reference mlperf-v6.0) (default: none)")
    p.add_argument("--price", type=finite, metavar="PRICE", help="this machine's rental price per --per, to price "
                   "the study's work (default: none, unpriced)")
    p.add_argument("--per", choices=tuple(UNIT_SECONDS), default="minute",
                   help="the price's time unit, as for cost (default: minute)")
    p.add_argument("--price-per-minute", type=finite, dest="price", action=Renamed, new="--price (with --per minute)")
    add_backend_flag(p, note=" for classify and the sweep; detection needs TensorFlow and is skipped on another "
                             "backend")
    add_xla_flag(p, "every step's training (classify, detect) and the sweep's step; its estimates do not count "
                    "XLA's compile time")
    add_cpu_flag(p)
    p.set_defaults(func=run)


def _machine(peak_file: Path, backend: str):
    """This machine's float32 peak (measured once, kept in `peak_file` for every step, unless
    $L40SBENCH_PEAK_FILE names a kept one already) and its GPUs."""
    from l40sbench.backends import cuda_driver
    from l40sbench.peak.cache import PEAK_FILE_VARIABLE
    from l40sbench.peak.cache import peak_file as backend_file
    from l40sbench.study.plan import Machine

    peak_file = Path(os.environ.get(PEAK_FILE_VARIABLE) or peak_file)
    if not backend_file(peak_file, backend).exists():
        log(f"measuring this machine's peak on {backend} for the plan's estimates ...")
        env = {**os.environ, PEAK_FILE_VARIABLE: str(peak_file), "KERAS_BACKEND": backend}
        done = subprocess.run([sys.executable, "-m", "l40sbench.peak"], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise UserError(f"cannot measure this machine's peak on {backend}: "
                            f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    peak = json.loads(backend_file(peak_file, backend).read_text())
    gpu = peak.get("device_kind") == "GPU"
    machine = Machine(peak["matmul"]["float32"]["gflops"], gpu, max(1, len(cuda_driver.devices())) if gpu else 1,
                      _room(gpu))
    kept = os.environ.get(PEAK_FILE_VARIABLE)
    return machine, (f"the estimates rest on {peak.get('device') or peak.get('device_kind')}, float32 matmul "
                     f"{machine.peak_gflops:.0f} GFLOP/s ({'kept in ' + kept if kept else 'measured now'})")


def _room(gpu: bool):
    """The memory one step may use: the smallest GPU's (a step runs on one), else the host's RAM available now."""
    from l40sbench.backends import cuda_driver
    from l40sbench.core.memory import host_available_mb
    from l40sbench.study.memory import Room

    boards = cuda_driver.devices()
    if gpu and boards:
        board = min(boards, key=lambda d: d.memory_mb)
        return Room(board.memory_mb, f"the GPU's {board.memory_mb / 1024:.1f} GiB ({board.name})")
    return Room(*host_available_mb())


def _plan_lines(plan) -> list[str]:
    from l40sbench.study.plan import duration

    lines = [f"plan: study {plan.study}{' (--quick)' if plan.quick else ''}, {len(plan.steps)} step(s), about "
             f"{duration(plan.total_s)} in all (estimates: docs/study.md)"]
    for i, step in enumerate(plan.steps):
        lines.append(f"  {i + 1}. {step.name:<34} {duration(step.estimate_s):>8}  l40sbench {' '.join(step.argv)}"
                     + "".join(f"  [{note}]" for note in (step.cut, step.memory) if note))
    lines += [f"  budget cut: {cut}" for cut in plan.cuts]
    left_out = [step.name for step in plan.steps if not step.fits]
    if left_out:
        lines.append(f"  out of memory: {', '.join(left_out)} will not start (the total leaves "
                     f"{'them' if len(left_out) > 1 else 'it'} out; its line offers a batch to run on its own)")
    return lines


def check_inputs(args) -> None:
    """The study's inputs, checked before anything is measured: each data folder exists (a tfds: name is the
    step's to check), and --only names at least one step.

    Raises:
      UserError: the first input that cannot be used.
    """
    for flag, value in (("--data-classify", args.data_classify), ("--data-detect", args.data_detect)):
        if value is not None and not value.startswith("tfds:") and not Path(value).expanduser().is_dir():
            raise UserError(f"{flag} {value}: no such folder")
    for model in args.model:
        if not Path(model).expanduser().exists():
            raise UserError(f"--model {model}: no such file or folder")
    if args.only is not None and not any(name.strip() for name in args.only.split(",")):
        raise UserError("--only names no step: give the plan's step names, separated by commas")


def run(args) -> int:
    from l40sbench.backends import requested
    from l40sbench.core.startup import CommandClock
    from l40sbench.study import budget as budgets
    from l40sbench.study import plan as plans
    from l40sbench.study.preflight import preflight_lines, what_fits
    from l40sbench.study.run import KIND, read_state

    started = CommandClock.started if CommandClock.started is not None else time.perf_counter()  # the budget's start

    if args.study is None and args.resume is None:
        raise UserError("STUDY is required (l40s, leadergpu or all), unless --resume names a study's folder")
    if args.study is not None:
        plans.check_study(args.study)  # before a resume folder is read or a peak measured
    budget = plans.parse_budget(args.budget) if args.budget is not None else None
    if args.price is not None and args.price <= 0:
        raise UserError(f"--price must be above 0. Received: {args.price:g}")
    args.price_per_minute = None if args.price is None else args.price * 60 / UNIT_SECONDS[args.per]
    check_inputs(args)
    one_device(args)
    if args.resume is not None:
        state = read_state(args.resume)
        if args.study is None:  # the folder names its study and how it was planned
            args.study, args.quick = state["study"], state["quick"]
        if state["study"] != args.study or state["quick"] != args.quick:
            raise UserError(f"{args.resume} holds study {state['study']}{' --quick' if state['quick'] else ''}, "
                            f"not {args.study}{' --quick' if args.quick else ''}")
        root, plan = args.resume, plans.Plan.from_dict(state["plan"])
        args.backend = state["backend"]
        keep_device_choice(args, state.get("device_choice"), args.resume)
        gate_devices(args, args.backend)
    else:
        args.backend = requested(args.backend)
        root = args.output_dir or Path("results") / f"study-{args.study}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        state = {"kind": KIND, "study": args.study, "quick": args.quick, "budget_s": budget, "backend": args.backend}
        only = tuple(name.strip() for name in (args.only or "").split(",") if name.strip())
        models = tuple(str(Path(m).expanduser().resolve()) for m in args.model)

        def planned(machine):
            plan = plans.build(args.study, machine, quick=args.quick, data_classify=args.data_classify,
                               data_detect=args.data_detect, with_detect=args.backend == "tensorflow", models=models)
            return plan.only(only) if only else plan

        planned(plans.Machine(1.0, False))  # an unknown --only name fails before the peak is measured
        state["device_choice"] = gate_devices(args, args.backend)
        with tempfile.TemporaryDirectory() as scratch:  # the folder is made once the plan is known to fit
            machine, rests_on = _machine(Path(scratch) / "peak.json", args.backend)
            plan = planned(machine)
            if budget is not None:
                try:
                    plan = budgets.fit(plan, budget, machine)
                except UserError as exc:
                    fits = what_fits(plan, machine, budget, quick=args.quick, data_classify=args.data_classify,
                                     data_detect=args.data_detect, with_detect=args.backend == "tensorflow",
                                     models=models)
                    raise UserError(f"{exc}; {fits}") from None
            if args.xla:
                plan = plan.with_flags("--xla")
            if not args.plan:
                prepare_output_dir(root)
                for kept in Path(scratch).glob("peak*.json"):  # measured here (peak.json, peak.jax.json): every step reads it
                    shutil.copy(kept, root / kept.name)
        state["plan"] = plan.to_dict()
    if args.backend != "tensorflow" and args.study != "leadergpu":
        log(f"detection needs TensorFlow: its steps are left out on {args.backend}")
    price = None if args.price is None else (args.price_per_minute, f"{args.price:g} per {args.per}")
    before = [] if args.resume is not None else preflight_lines(plan, root, rests_on, args.data_classify,
                                                                args.data_detect, price, started=not args.plan)
    for line in _plan_lines(plan) + before:
        print(line)
    if args.plan:
        return 0
    return _run_study(args, plan, root, state, started)


def _run_study(args, plan, root: Path, state: dict, started: float) -> int:
    """Runs the plan's steps, within the budget (state's budget_s, from `started` on) where there is one, and
    writes the report and the budget's use."""
    from l40sbench.core.records import write_atomic
    from l40sbench.peak.cache import PEAK_FILE_VARIABLE
    from l40sbench.study.report import write_report
    from l40sbench.study.run import STATE, run_plan, step_folder

    write_atomic(root / STATE, json.dumps(state, indent=2))
    os.environ.setdefault(PEAK_FILE_VARIABLE, str(root / "peak.json"))  # one peak for every step
    os.environ["KERAS_BACKEND"] = args.backend
    budget = state.get("budget_s")
    try:
        outcomes = run_plan(plan, root, state, log, deadline=started + budget if budget else None)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the running step saved what it measured (core.stops)
        from l40sbench.core.stops import what

        log(f"{what()}: the steps finished so far are kept in {root}; `l40sbench study --resume {root}` runs the "
            "rest")
        return EXIT_INTERRUPTED
    if budget:
        used = time.perf_counter() - started
        state["budget"] = {"budget_s": budget, "used_s": used, "slack_s": budget - used}
        write_atomic(root / STATE, json.dumps(state, indent=2))
    folders = [step_folder(root, i, step) for i, step in enumerate(plan.steps)]
    path, verdict = write_report(root, plan, outcomes, folders, args.price_per_minute, state.get("budget"), log)
    print()
    print(verdict)
    print(f"report: {path}")
    failed = [o for o in outcomes if o.status == "failed"]
    return 1 if failed and len(failed) == len(outcomes) else 0
