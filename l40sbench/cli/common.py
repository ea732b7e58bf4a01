"""What several commands share: the one-line argparse errors, exit codes, the data, run and runtime
flag groups, list and number flag types, the run id and output folder. A classify or detect run's folder
and summary are in `runs`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import math
import sys
import tempfile
from pathlib import Path

from l40sbench.backends.cuda_driver import LIMIT_SECONDS
from l40sbench.errors import UserError
from l40sbench.settings import PRECISIONS

EXIT_FAILED = 1  # the command could not finish (a full disk): what it measured is kept
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line (exit 2) instead of usage + error."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Renamed(argparse.Action):
    """An old spelling of a flag, kept for one release: it sets the new flag's value and says so in one line.
    Hidden from --help, where only the one name per idea shows (tests/test_cli.py checks them)."""

    def __init__(self, option_strings, dest, new: str, **kwargs):
        self.new = new  # no default of its own: the new flag's stands, whichever was added first
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        log(f"notice: {option_string} is now {self.new}, its name on every command; {option_string} goes in the "
            "next release")
        setattr(namespace, self.dest, values)


def add_tfds_flags(p) -> None:
    p.add_argument("--tfds-data-dir", type=Path, metavar="DIR",
                   help="where TFDS sets are prepared (default: $TFDS_DATA_DIR, else ~/tensorflow_datasets)")
    p.add_argument("--tfds-splits", metavar="TRAIN,TEST",
                   help="the two splits of a tfds: set, in TFDS slicing syntax, e.g. 'train[:80%%],train[80%%:]' "
                        "(default: train,test when the set has both)")


def data_flags(args) -> dict:
    """--data and the --tfds-* flags as config values; a tfds: reference is checked here, before anything loads."""
    if args.data is None or not args.data.startswith("tfds:"):
        if args.tfds_splits or args.tfds_data_dir:
            raise UserError("--tfds-data-dir and --tfds-splits go with --data tfds:NAME")
        return {"data": None if args.data is None else Path(args.data)}
    from l40sbench.data.tfds_source import TfdsRef

    ref = TfdsRef.parse(args.data, args.tfds_data_dir, args.tfds_splits)
    return {"data": args.data, "tfds_data_dir": ref.data_dir, "tfds_splits": ref.splits}


def add_run_flags(p) -> None:
    """Flags every benchmark run takes."""
    add_tfds_flags(p)
    p.add_argument("--output-dir", type=Path, help="where result.json and result.csv go; detect also writes the COCO ground truth "
                        "and detections it scored there (default: results/<run-id>/)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument(
        "--precision", default="fp32", choices=PRECISIONS,
        help="mixed-precision policy (default: fp32)",
    )
    p.add_argument("--strict", action="store_true", help="fail on an unreadable image instead of skipping it")
    add_backend_flag(p)


def add_backend_flag(p, note: str = "") -> None:
    from l40sbench.backends import NAMES

    p.add_argument("--backend", choices=NAMES, help="the Keras backend to compute on (default: $KERAS_BACKEND, else "
                                                   f"tensorflow){note}")


def backend_flag(args, task: str) -> str:
    """--backend, else $KERAS_BACKEND, else tensorflow; detection refuses any but tensorflow. Then the device
    choice (gate_devices): a backend that cannot use the GPUs the driver shows stops the command here."""
    from l40sbench.backends import requested

    name = requested(args.backend)
    if task == "detect" and name != "tensorflow":
        raise UserError(f"detect runs on the tensorflow backend only (Model Garden is TensorFlow's); got {name} "
                        f"from {'--backend' if args.backend else 'KERAS_BACKEND'}")
    gate_devices(args, name)
    return name


def gate_devices(args, backend: str) -> dict:
    """Before anything is measured: --devices cpu hides the GPUs from `backend`; otherwise a backend that sees
    none of the GPUs the CUDA driver shows stops the command in one line (backends.gpu_gate)."""
    from l40sbench.backends.gpu_gate import choose

    choice = choose(backend, cpu=getattr(args, "devices", None) == (CPU_DEVICES,))
    for line in choice.get("notices") or ():
        log(line)
    return choice


def keep_device_choice(args, saved: dict | None, folder) -> None:
    """--resume of a study or a sweep: the device choice it began with (gate_devices' choice, kept in its state)
    holds again, said in one line, so a study begun on the CPU on purpose does not resume on the GPU."""
    if (saved or {}).get("why") == "--devices cpu":
        args.devices = (CPU_DEVICES,)
        log(f"--resume {folder}: on the CPU, as it began (--devices cpu)")


def add_preprocess_flag(p) -> None:
    """--preprocess: how a model file of the user's gets its pixels (classify --model, infer --model)."""
    from l40sbench.modelfile.scaling import MODES

    p.add_argument("--preprocess", metavar="MODE", help=(
        "with --model: how its input is scaled, applied to the uint8 pixels before the model on every runtime ("
        + "; ".join(f"{n}: {MODES.get(n).description}" for n in MODES.names()) + "). Default: none; where the "
        "model's first layer is not Rescaling or Normalization the scaling is then not known, and an untrained "
        "file's test accuracy is left out (the runtimes' agreement stands)"))


def preprocess_without_model(args) -> None:
    """Raises UserError for --preprocess without --model (a base or a run's model has its own), or unknown."""
    if args.preprocess is not None and args.model is None:
        raise UserError(f"--preprocess {args.preprocess} goes with --model: a run folder or a keras.applications "
                        "base is fed as it was built")
    if args.preprocess is not None:
        from l40sbench.modelfile.scaling import MODES

        MODES.get(args.preprocess)  # an unknown mode: one line, before anything loads


def add_runtime_flags(p, default: tuple[str, ...] = ("tf",)) -> None:
    """--runtimes and --runtime-precision: the inference runtimes a fine-tuned model is timed on."""
    from l40sbench.runtimes.registry import ORDER
    from l40sbench.runtimes.registry import PRECISIONS as RUNTIME_PRECISIONS

    p.add_argument("--runtimes", type=name_list, default=default, metavar="LIST",
                   help=f"inference runtimes to time the fine-tuned model on, from {','.join(ORDER)}, "
                        "or all (every installed one). tf, the training process's own path, always runs: every "
                        "other runtime's accuracy is checked against it. Each other runtime gets the model through "
                        f"its library's own exporter and is timed in a child process (default: {','.join(default)})")
    p.add_argument("--runtime-precision", choices=RUNTIME_PRECISIONS, default="fp32",
                   help="the precision every runtime but tf is told to run in (OpenVINO's inference precision "
                        "hint, LiteRT's fp16 or dynamic-range int8 conversion); a runtime that cannot is marked "
                        "so in its row (default: fp32)")


CPU_DEVICES = "cpu"
# What every command that computes says of --devices cpu and of picking GPUs.
CPU_HELP = ("cpu: on the CPU on purpose, though the CUDA driver shows GPUs; the driver is then never asked. "
            f"Otherwise the driver is asked first, within {LIMIT_SECONDS:.0f} s (a stuck driver stops the command), and "
            "where it shows GPUs the backend cannot compute on (the build, the driver's age, a busy board, MIG, "
            "CUDA_VISIBLE_DEVICES hiding every one), the command stops before measuring and says why. "
            "CUDA_VISIBLE_DEVICES picks the GPUs a run may use")


def add_device_flags(p, hosts: bool) -> None:
    """--devices (and, where the pipeline runs across hosts, --worker-hosts and --task-index)."""
    p.add_argument("--devices", type=device_list, default=(1,), metavar="N|all|LIST|cpu",
                   help="train on N devices under tf.distribute.MirroredStrategy, the batch given per device "
                        "(global batch = batch x N): N GPUs, or N logical devices of the CPU where there is no "
                        "GPU (they share its cores); all: every GPU; a list such as 1,2,4 runs once per count "
                        f"and reports the scaling efficiency; {CPU_HELP}. Inference stays on one device "
                        "(default: 1)")
    if hosts:
        p.add_argument("--worker-hosts", type=name_list, default=(), metavar="HOST:PORT,...",
                       help="train across hosts with MultiWorkerMirroredStrategy: start the same command on every "
                            "host with the same list and its own --task-index; the chief (0) writes the record "
                            "(default: this host alone)")
        p.add_argument("--task-index", type=int, default=0, help="this host's index in --worker-hosts (default: 0)")


def add_xla_flag(p, what: str) -> None:
    """--xla, one spelling on every command that trains; `what` says what it compiles there."""
    p.add_argument("--xla", action="store_true", help=f"compile {what} with XLA (jit_compile) (default: off)")


def add_cpu_flag(p) -> None:
    """--devices for a command that computes on one device: the GPU where the backend can use it, or cpu."""
    p.add_argument("--devices", type=device_list, default=(1,), metavar="1|cpu",
                   help=f"1: one device, the first GPU where there is one, else the CPU; {CPU_HELP} (default: 1)")


def one_device(args) -> None:
    """add_cpu_flag's --devices: 1 or cpu."""
    if args.devices not in ((1,), (CPU_DEVICES,)):
        raise UserError(f"--devices takes 1 or cpu here. Received: {','.join(map(str, args.devices))}")


def device_list(text: str) -> tuple:
    return (text.strip(),) if text.strip() in ("all", CPU_DEVICES) else int_list(text)


def device_counts(values: tuple) -> tuple[int, ...]:
    """--devices as counts: `all` is every GPU (TensorFlow asked), or 1 where there is none; cpu is one."""
    if values == (CPU_DEVICES,):
        return (1,)
    if values != ("all",):
        if min(values) < 1:
            raise UserError(f"--devices must be at least 1. Received: {min(values)}")
        return tuple(values)
    from l40sbench.backends.tf_device import devices
    from l40sbench.core.devices import gpus as gpus_of

    gpus = len(gpus_of(devices()))
    if not gpus:
        log("--devices all: no GPU visible, so one device")
    return (gpus or 1,)


def int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number")
    return distinct(values)


def name_list(text: str) -> tuple[str, ...]:
    values = tuple(v.strip() for v in text.split(",") if v.strip())
    if not values:
        raise argparse.ArgumentTypeError(f"expected at least one comma-separated name, got {text!r}")
    return distinct(values)


def distinct(values: tuple) -> tuple:
    """A list flag names each value once: a repeat would measure the same configuration twice."""
    repeated = sorted({str(v) for v in values if values.count(v) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"{', '.join(repeated)} given more than once")
    return values


def finite(text: str) -> float:
    """A float flag: a number, not nan or inf (an infinite limit or tolerance would never act)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def float_list(text: str) -> tuple[float, ...]:
    return distinct(tuple(finite(v) for v in text.split(",") if v.strip()) or (finite(text),))


def run_id(task: str, base: str) -> str:
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{task}-{base}"


def prepare_output_dir(path: Path) -> None:
    """Results go to a directory that can be made and written now, before any data is read."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise UserError(f"cannot write results to {path}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def output_dir_for(path: Path):
    """prepare_output_dir for a run, and the folders it made removed again at the end where the run left
    them empty: a run refused after the check (bad data, a backend missing) leaves no folder behind."""
    made = [folder for folder in (path, *path.parents) if not folder.exists()]  # deepest first
    prepare_output_dir(path)
    try:
        yield path
    finally:
        for folder in made:
            with contextlib.suppress(OSError):  # only an empty folder can be removed
                folder.rmdir()


def make_config(cls, **values):
    try:
        return cls(**values)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def figure(value) -> str:
    return "-" if value is None else f"{value:.4g}" if abs(value) < 1000 else f"{value:.1f}"
