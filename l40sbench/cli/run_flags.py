"""What a run reads and where it writes: --data's TFDS flags, the flags every run takes, --preprocess for a
user's model file, and the inference runtimes a fine-tuned model is timed on."""

from __future__ import annotations

from pathlib import Path

from l40sbench.cli.device_flags import add_backend_flag
from l40sbench.cli.values import name_list
from l40sbench.errors import UserError
from l40sbench.settings import PRECISIONS


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
