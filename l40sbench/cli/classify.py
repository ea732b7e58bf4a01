"""`classify`: fine-tune a keras.applications base; time training and per-image inference."""

from __future__ import annotations

from pathlib import Path

from l40sbench.classify.bases import BASES
from l40sbench.cli import input_flags
from l40sbench.cli.common import make_config
from l40sbench.cli.device_flags import add_device_flags, add_xla_flag, backend_flag, device_counts
from l40sbench.cli.run_flags import (
    add_preprocess_flag,
    add_run_flags,
    add_runtime_flags,
    data_flags,
    preprocess_without_model,
)
from l40sbench.cli.runs import run_device_counts
from l40sbench.errors import UserError
from l40sbench.settings import INPUTS, ONE_DEVICE_OFF_TENSORFLOW


def add(subparsers) -> None:
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
    p.add_argument("--base", default=None,
                   help=f"base model: any of the {len(BASES.names())} keras.applications models, by name in any case: "
                        "the studies' xception, inceptionv3 and vgg19, or efficientnetv2b0, convnexttiny, resnet50, "
                        "... (--list-bases lists them) (default: xception; not with --model)")
    p.add_argument("--model", type=Path, metavar="FILE.keras",
                   help="your own Keras model file as the base instead of --base: the head goes on its output "
                        "(pooled where it is a feature map); it gets its pixels as --preprocess says and computes in "
                        "--precision (its float32 layers set to it, its weights kept); a batch size it is fixed at "
                        "is kept to; the record names the file, its size, its SHA-256, its scaling and the dtypes "
                        "its layers computed in")
    add_preprocess_flag(p)
    p.add_argument("--list-bases", action="store_true",
                   help="list every --base with its default and smallest input size and its parameters, and stop")
    p.add_argument("--data", help="DIR with DIR/train/<class>/* and DIR/test/<class>/*, or tfds:NAME[:VERSION], a "
                                   "TensorFlow Datasets set (default: the stand-in)")
    p.add_argument("--epochs", type=int, default=10, help="training epochs (default: 10, the article's)")
    p.add_argument("--batch-size", type=int, default=16, help="training batch size (default: 16)")
    p.add_argument("--image-size", type=int, help="square input size in pixels (default: the base's own, e.g. 299 for xception)")
    p.add_argument(
        "--weights",
        help="imagenet (Keras cache, else download, else random with a warning), none (random), or PATH of a weights "
             "file; not with --model, whose file holds its weights (default: imagenet)",
    )
    p.add_argument(
        "--fine-tune", default="head",
        help="head: base frozen (default); all: whole base trainable; N: the top N base layers trainable",
    )
    p.add_argument("--limit", type=int, help="at most N images per split, classes balanced (quick runs)")
    p.add_argument("--epoch-scoring", choices=("on", "off"), default="on",
                   help="score the test split after each epoch (default: on; its time is recorded apart and left "
                        "out of the studies' time per epoch); off: no per-epoch accuracy, so `cost --target` "
                        "cannot price the run")
    add_run_flags(p)
    add_xla_flag(p, "the training step and the timed forward call")
    add_device_flags(p, hosts=True)
    add_runtime_flags(p)
    input_flags.add(p, INPUTS)
    p.set_defaults(func=run)


def list_bases() -> int:
    from importlib.metadata import version

    from l40sbench.classify import bases
    from l40sbench.core.text import format_table

    specs = [bases.BASES.get(name) for name in bases.BASES.names()]
    print(format_table(("base", "keras.applications", "default px", "smallest px", "parameters (no top)",
                        "preprocess_input of"),
                       [(s.name, s.application, s.default_size, s.min_size, f"{s.parameters:,}", s.module)
                        for s in specs]))
    installed = version("keras")
    print(f"\n{len(specs)} bases: every keras.applications model of keras {bases.KERAS_VERSION}"
          + ("" if installed == bases.KERAS_VERSION else f" (installed: keras {installed}; "
             "python -m l40sbench.classify.applications lists its own)")
          + "; --base takes any, in any case; --model FILE.keras takes your own")
    return 0


DEFAULT_BASE = "xception"


def run(args) -> int:
    from l40sbench.classify.config import ClassifyConfig
    from l40sbench.classify.model import spec_for

    if args.list_bases:
        return list_bases()
    if args.model is not None and args.weights is not None:
        raise UserError("--weights does not apply with --model: the file holds its weights")
    if args.model is not None and args.base is not None:
        raise UserError(f"--base {args.base} does not apply with --model: the file is the base (give one of them)")
    preprocess_without_model(args)
    args.base = args.base or DEFAULT_BASE

    config = make_config(
        ClassifyConfig,
        base=args.model.stem if args.model is not None else args.base.lower(), model=args.model,
        preprocess=args.preprocess,
        **data_flags(args), epochs=args.epochs, batch_size=args.batch_size, image_size=args.image_size, weights=args.weights or "imagenet", fine_tune=args.fine_tune, limit=args.limit,
        output_dir=args.output_dir, seed=args.seed, precision=args.precision, xla=args.xla, strict=args.strict,
        runtimes=args.runtimes, runtime_precision=args.runtime_precision,
        worker_hosts=args.worker_hosts, task_index=args.task_index, backend=backend_flag(args, "classify"),
        epoch_scoring=args.epoch_scoring == "on", input=args.input, input_threads=args.input_threads, bound=args.bound,
    )
    spec_for(config.base, config.model)  # an unknown base or a file that is not a model fails before anything loads
    if config.backend == "tensorflow":
        return run_device_counts("classify", config, device_counts(args.devices))
    if args.devices not in ((1,), ("all",), ("cpu",)):
        raise UserError(f"--devices {','.join(map(str, args.devices))}: "
                        f"{ONE_DEVICE_OFF_TENSORFLOW.format(backend=config.backend)}")
    return run_device_counts("classify", config, (1,))
